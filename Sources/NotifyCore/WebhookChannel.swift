import HTTPTransport
import VitalsCrypto
import VitalsKit

/// `json://` and `jsons://`: a generic JSON webhook (Apprise's names), POSTing the
/// notification record, or Alertmanager's v4 webhook body with `?format=alertmanager`.
/// `?sign=github` adds `X-Hub-Signature-256`, `?sign=standard` the Standard Webhooks headers,
/// both keyed by `?secret=`.
final class WebhookChannel: Channel {
    let id: String
    let tags: [String]
    private let url: String
    private let format: Format
    private let signing: Signing?
    private let headers: [String]
    private let tls: TLSOptions
    private let user: String?
    private let password: String?

    enum Format: String { case notify, alertmanager }
    enum Signing {
        case github([UInt8])
        case standard([UInt8])
    }

    /// notify's own parameters, not passed on to the server.
    static let ownParameters: Set<String> = ["format", "sign", "secret", "header", "cafile", "insecure", "method"]

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        let secure = parsed.scheme == "jsons"
        url =
            (secure ? "https://" : "http://") + parsed.authority() + parsed.rawPath
            + parsed.passthroughQuery(excluding: WebhookChannel.ownParameters)
        guard let format = Format(rawValue: parsed.parameter("format") ?? "notify") else {
            throw UsageError("'\(parsed.display)': format is notify or alertmanager, not '\(parsed.parameter("format") ?? "")'")
        }
        self.format = format
        switch parsed.parameter("sign") {
        case nil:
            signing = nil
        case "github"?:
            guard let secret = parsed.parameter("secret"), !secret.isEmpty else {
                throw UsageError("'\(parsed.display)': sign=github needs secret=${NAME} or secret=${file:PATH}")
            }
            signing = .github(Array(secret.utf8))
        case "standard"?:
            guard let secret = parsed.parameter("secret"), !secret.isEmpty else {
                throw UsageError("'\(parsed.display)': sign=standard needs secret=${NAME} (whsec_... as the receiver shows it)")
            }
            // Standard Webhooks: the key is the Base64 after the `whsec_` prefix.
            let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
            guard let key = Base64.decode(encoded), !key.isEmpty else {
                throw UsageError("'\(parsed.display)': a Standard Webhooks secret is whsec_ followed by Base64")
            }
            signing = .standard(key)
        case let other?:
            throw UsageError("'\(parsed.display)': sign is github or standard, not '\(other)'")
        }
        headers = try WebhookChannel.extraHeaders(parsed)
        tls = WebhookChannel.tlsOptions(parsed)
        user = parsed.user
        password = parsed.password
    }

    /// `?header=Name:%20value` parameters (repeatable).
    static func extraHeaders(_ parsed: ChannelURL) throws(UsageError) -> [String] {
        var headers: [String] = []
        for header in parsed.parameters("header") {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex,
                !header.contains("\r"), !header.contains("\n")
            else {
                throw UsageError("'\(parsed.display)': header=\(header) is not 'Name: value'")
            }
            headers.append(header)
        }
        return headers
    }

    /// `?cafile=PATH` and `?insecure=yes`.
    static func tlsOptions(_ parsed: ChannelURL) -> TLSOptions {
        var tls = TLSOptions()
        tls.collectCertificates = false
        tls.caFile = parsed.parameter("cafile")
        if parsed.flag("insecure") { tls.verify = false }
        return tls
    }

    /// A POST of JSON to `url`, fresh and bounded, keeping the answer's headers (Retry-After).
    static func post(
        _ url: String, body: [UInt8], headers: [String], tls: TLSOptions, timeoutMs: Int,
        contentType: String = "application/json"
    ) -> HTTPRequest {
        var request = HTTPRequest(url: url, method: "POST", timeoutMs: timeoutMs, userAgent: "vitals-notify/\(Vitals.version)")
        request.body = body
        request.headers = ["Content-Type: \(contentType)", "Expect:"] + headers
        request.tls = tls
        request.maxRedirects = 0
        request.bodyPolicy = .collect(limit: 64 * 1024)
        request.keepResponseHeaders = true
        return request
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        let body: [UInt8] = format == .alertmanager ? AlertmanagerBody.encode(notification) : NotificationRecord.payload(notification)
        var extra = headers
        switch signing {
        case .github(let secret)?:
            extra.append("X-Hub-Signature-256: sha256=" + SHA256.hex(HMACSHA256.authenticationCode(key: secret, message: body)))
        case .standard(let key)?:
            // Standard Webhooks: HMAC-SHA256 of "id.timestamp.body", Base64, as "v1,<sig>".
            let timestamp = String(nowMs / 1000)
            let signed = Array("\(notification.id).\(timestamp).".utf8) + body
            extra.append("webhook-id: \(notification.id)")
            extra.append("webhook-timestamp: \(timestamp)")
            extra.append("webhook-signature: v1," + Base64.encode(HMACSHA256.authenticationCode(key: key, message: signed)))
        case nil:
            break
        }
        var request = WebhookChannel.post(url, body: body, headers: extra, tls: tls, timeoutMs: timeoutMs)
        request.username = user
        request.password = password
        return .http(request)
    }
}

/// Alertmanager's webhook body, version 4: one alert per monitor, firing or resolved.
enum AlertmanagerBody {
    static func encode(_ notification: Notification) -> [UInt8] {
        let resolved = notification.event == .recovered || notification.event == .placeBack
        let severity = notification.status == "degraded" ? "warning" : "critical"
        var alerts: [JSONValue] = notification.monitors.map { change in
            var labels = JSONObject()
            labels["alertname"] = .string(alertName(notification))
            labels["monitor"] = .string(change.monitor)
            labels["name"] = .string(change.name)
            labels["severity"] = .string(severity)
            var annotations = JSONObject()
            annotations["summary"] = .string(notification.grouped ? "\(change.name): \(change.status)" : notification.body)
            annotations["description"] = .string(change.message ?? "")
            var alert = JSONObject()
            alert["status"] = .string(resolved ? "resolved" : "firing")
            alert["labels"] = .object(labels)
            alert["annotations"] = .object(annotations)
            alert["startsAt"] = .string(Timestamp.format(milliseconds: change.since ?? notification.at))
            alert["endsAt"] = .string(resolved ? Timestamp.format(milliseconds: notification.at) : "0001-01-01T00:00:00Z")
            alert["generatorURL"] = .string(change.target ?? "")
            alert["fingerprint"] = .string(
                String(SHA256.hexDigest(Array((alertName(notification) + "|" + change.monitor).utf8)).prefix(16)))
            return .object(alert)
        }
        if let place = notification.place {
            // One alert for the place, whatever monitors it concerns.
            var labels = JSONObject()
            labels["alertname"] = .string(alertName(notification))
            labels["agent"] = .string(place)
            labels["severity"] = .string(severity)
            var annotations = JSONObject()
            annotations["summary"] = .string(notification.body)
            var alert = JSONObject()
            alert["status"] = .string(resolved ? "resolved" : "firing")
            alert["labels"] = .object(labels)
            alert["annotations"] = .object(annotations)
            alert["startsAt"] = .string(Timestamp.format(milliseconds: notification.at))
            alert["endsAt"] = .string(resolved ? Timestamp.format(milliseconds: notification.at) : "0001-01-01T00:00:00Z")
            alert["generatorURL"] = .string("")
            alert["fingerprint"] = .string(String(SHA256.hexDigest(Array((alertName(notification) + "|" + place).utf8)).prefix(16)))
            alerts = [.object(alert)]
        }
        var groupLabels = JSONObject()
        groupLabels["alertname"] = .string(alertName(notification))
        var common = JSONObject()
        common["alertname"] = .string(alertName(notification))
        common["severity"] = .string(severity)
        if !notification.grouped, let single = notification.single {
            common["monitor"] = .string(single.monitor)
            common["name"] = .string(single.name)
        }
        var commonAnnotations = JSONObject()
        commonAnnotations["summary"] = .string(notification.title + ": " + notification.body)
        var body = JSONObject()
        body["version"] = .string("4")
        body["groupKey"] = .string("{}:{alertname=\"\(alertName(notification))\"}")
        body["truncatedAlerts"] = .integer(0)
        body["status"] = .string(resolved ? "resolved" : "firing")
        body["receiver"] = .string("vitals-notify")
        body["groupLabels"] = .object(groupLabels)
        body["commonLabels"] = .object(common)
        body["commonAnnotations"] = .object(commonAnnotations)
        body["externalURL"] = .string("")
        body["alerts"] = .array(alerts)
        return JSONValue.object(body).encoded()
    }

    /// MonitorDown or MonitorDegraded (a recovery resolves the alert that fired); PlaceCutOff or
    /// PlaceSilent for an agent (its `place_back` resolves the one its key names).
    static func alertName(_ notification: Notification) -> String {
        if notification.event.isPlace { return notification.key.hasSuffix(".silent") ? "PlaceSilent" : "PlaceCutOff" }
        switch notification.event {
        case .degraded, .stillDegraded: return "MonitorDegraded"
        case .recovered:
            return notification.monitors.allSatisfy { $0.previousStatus == "degraded" } ? "MonitorDegraded" : "MonitorDown"
        default: return "MonitorDown"
        }
    }
}

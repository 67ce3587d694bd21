import Foundation
import HTTPTransport
import VitalsCrypto
import VitalsKit

/// `apns://HOST/BUNDLE_ID?team=TEAM_ID&key_id=KEY_ID&key_file=PATH`: Apple push to every
/// registered device, as OnlineTracker's server does: one push per monitor event (never grouped:
/// the app opens the monitor a push names), HTTP/2, token authentication with an ES256 JWT from
/// the `.p8` key (kept in the state, renewed after 50 minutes and never sooner than 20),
/// OnlineTracker's payload, at most 4 KB. HOST `production` is api.push.apple.com and `sandbox`
/// api.sandbox.push.apple.com.
final class APNsChannel: Channel {
    let id: String
    let tags: [String]
    let fansOut = true
    let groupsMonitors = false
    private let base: String
    private let topic: String
    private let teamID: String
    private let keyID: String
    private let key: ES256PrivateKey
    private let pushType: String
    private let priority: String?
    private let sound: String
    private let badge: Int?
    private let tls: TLSOptions
    /// Where the integer ids come from for monitors whose samples carried none (`--db`), and
    /// who says when a push has none; set by the command after the channel is made.
    var monitorIDs: MonitorIDs?

    /// Apple: a provider token is valid for an hour; renew it at most every 20 minutes.
    static let renewAfterSeconds: Int64 = 50 * 60
    static let renewNotBeforeSeconds: Int64 = 20 * 60
    /// Apple's limit for an alert payload.
    static let maxPayloadBytes = 4096

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        let host: String
        switch parsed.host {
        case "production": host = "api.push.apple.com"
        case "sandbox", "development": host = "api.sandbox.push.apple.com"
        default: host = parsed.authority()
        }
        base = "https://" + host
        topic = parsed.path.split(separator: "/").first.map(String.init) ?? ""
        guard !topic.isEmpty else { throw UsageError("'\(parsed.display)': name the app's bundle id: apns://HOST/BUNDLE_ID") }
        guard let team = parsed.parameter("team"), !team.isEmpty else { throw UsageError("'\(parsed.display)': needs team=TEAM_ID") }
        guard let keyID = parsed.parameter("key_id"), !keyID.isEmpty else { throw UsageError("'\(parsed.display)': needs key_id=KEY_ID") }
        guard let keyFile = parsed.parameter("key_file") else { throw UsageError("'\(parsed.display)': needs key_file=PATH (the .p8 key)") }
        guard let pem = FileManager.default.contents(atPath: keyFile) else {
            throw UsageError("'\(parsed.display)': cannot read the key file \(keyFile)")
        }
        do {
            key = try ES256PrivateKey(pem: Array(pem))
        } catch {
            throw UsageError("'\(parsed.display)': \(keyFile): \(error)")
        }
        teamID = team
        self.keyID = keyID
        pushType = parsed.parameter("push_type") ?? "alert"
        if let priority = parsed.parameter("priority"), !["5", "10", "1"].contains(priority) {
            throw UsageError("'\(parsed.display)': priority is 10, 5 or 1, not '\(priority)'")
        }
        priority = parsed.parameter("priority")
        sound = parsed.parameter("sound") ?? "default"
        badge = parsed.parameter("badge").map { Int($0) ?? 1 } ?? 1
        tls = WebhookChannel.tlsOptions(parsed)
    }

    private var tokenKey: String { teamID + "." + keyID }

    func legs(_ state: StateBox) -> [String?] { state.deviceTokens().map { Optional($0) } }

    /// The provider token: the cached one while younger than 50 minutes, else a new one.
    func providerToken(_ state: StateBox, nowMs: Int64) throws -> String {
        let now = nowMs / 1000
        if let cached = state.state.providerTokens[tokenKey], now - cached.issuedAt < APNsChannel.renewAfterSeconds, now >= cached.issuedAt
        {
            return cached.jwt
        }
        let jwt = try key.jwt(headerJSON: #"{"alg":"ES256","kid":"\#(keyID)"}"#, claimsJSON: #"{"iss":"\#(teamID)","iat":\#(now)}"#)
        state.state.providerTokens[tokenKey] = ProviderToken(jwt: jwt, issuedAt: now)
        return jwt
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        guard let device = leg else { return .resolved(.failed(code: nil, error: "no device token")) }
        let jwt: String
        do {
            jwt = try providerToken(state, nowMs: nowMs)
        } catch {
            return .resolved(.failed(code: nil, error: "cannot sign the provider token: \(error)"))
        }
        var request = HTTPRequest(
            url: base + "/3/device/" + device, method: "POST", timeoutMs: timeoutMs,
            userAgent: "vitals-notify/\(Vitals.version)")
        request.httpVersion = .http2
        var pushed = notification
        if let single = notification.single, single.monitorID == nil, Int(single.monitor) == nil {
            pushed.monitors[0].monitorID = monitorIDs?.id(of: single.monitor)
        }
        request.body = APNsPayload.encode(pushed, sound: sound, badge: badge)
        request.headers = [
            "authorization: bearer " + jwt, "apns-topic: " + topic, "apns-push-type: " + pushType,
            "apns-priority: " + (priority ?? (notification.isBad ? "10" : "5")),
            "apns-collapse-id: " + APNsChannel.collapseID(notification.key),
            "apns-id: " + APNsChannel.uuid(notification.id + "/" + device),
            "content-type: application/json",
        ]
        request.tls = tls
        request.maxRedirects = 0
        request.bodyPolicy = .collect(limit: 16 * 1024)
        request.keepResponseHeaders = true
        return .http(request)
    }

    /// Apple's answers (Handling notification responses from APNs): 200 sent; 410 the device
    /// is gone (removed from the devices); 403 ExpiredProviderToken renews the token (not
    /// sooner than 20 minutes after the last) and retries; 429 and 5xx are retried; the rest
    /// (bad token, topic, payload, provider token) are refused for good.
    func judge(_ result: HTTPResult, leg: String?, state: StateBox, nowMs: Int64) -> DeliveryVerdict {
        if let failure = result.failure {
            return .retry(code: nil, error: "\(failure.rawValue): \(result.curlMessage)", afterMs: nil)
        }
        let code = result.httpCode
        if code == 200 { return .accepted(code: code) }
        let reason = (try? JSONParser.parse(result.body))?.objectValue?["reason"]?.stringValue ?? "no reason given"
        let words = "APNs \(code) \(reason)"
        switch (code, reason) {
        case (410, _):
            if let leg { state.removeDevice(leg) }
            return .gone(code: code, error: words + ": device removed")
        case (403, "ExpiredProviderToken"):
            let now = nowMs / 1000
            if let cached = state.state.providerTokens[tokenKey] {
                let age = now - cached.issuedAt
                if age >= APNsChannel.renewNotBeforeSeconds {
                    state.state.providerTokens[tokenKey] = nil
                    return .retry(code: code, error: words + ": token renewed", afterMs: 0)
                }
                return .retry(
                    code: code, error: words + ": the token is renewed 20 minutes after its issue at the soonest",
                    afterMs: (APNsChannel.renewNotBeforeSeconds - age) * 1000)
            }
            return .retry(code: code, error: words, afterMs: 0)
        case (429, _), (500..<600, _):
            return .retry(code: code, error: words, afterMs: HTTPJudgement.retryAfter(result, nowMs: nowMs))
        default:
            return .failed(code: code, error: words)
        }
    }

    /// apns-collapse-id is at most 64 bytes.
    static func collapseID(_ key: String) -> String {
        key.utf8.count <= 64 ? key : String(SHA256.hexDigest(Array(key.utf8)).prefix(64))
    }

    /// A UUID (8-4-4-4-12 hex) derived from `text`, so retries of one push keep one apns-id.
    static func uuid(_ text: String) -> String {
        let hex = Array(SHA256.hexDigest(Array(text.utf8)).prefix(32))
        func part(_ range: Range<Int>) -> String { String(hex[range]) }
        return [part(0..<8), part(8..<12), "4" + part(13..<16), "8" + part(17..<20), part(20..<32)].joined(separator: "-").uppercased()
    }
}

/// OnlineTracker's push payload: `aps.alert.title/body`, `sound`, `badge`, then `monitor_id`
/// (the integer id of store-samples' views, as the app reads it with `as? Int`: the samples'
/// `monitor_id`, else the monitor id when it is a whole number, else the store's with `--db`, else
/// null, said in a warning), `monitor_name`,
/// `status` in the app's words only, `details`. Shortened to fit 4 KB.
enum APNsPayload {
    static func encode(_ notification: Notification, sound: String, badge: Int?) -> [UInt8] {
        var details = notification.single?.message ?? (notification.grouped ? Notification.nameList(notification.monitors.map(\.name)) : "")
        var body = notification.body
        var monitors = notification.monitors.map(\.monitor)
        var name = notification.single?.name ?? ""
        var title = notification.title
        func shorten(_ text: inout String) -> Bool {
            guard text.count > 16 else { return false }
            text = String(text.prefix(text.count / 2)) + "…"
            return true
        }
        while true {
            let bytes = render(
                notification, title: title, body: body, name: name, details: details, monitors: monitors,
                sound: sound, badge: badge)
            if bytes.count <= APNsChannel.maxPayloadBytes { return bytes }
            if monitors.count > 1 {
                monitors = Array(monitors.prefix(monitors.count / 2))
                continue
            }
            // The longest text is halved first.
            let longest = [details.utf8.count, body.utf8.count, name.utf8.count, title.utf8.count].max()!
            if longest == details.utf8.count, shorten(&details) { continue }
            if longest == body.utf8.count, shorten(&body) { continue }
            if longest == name.utf8.count, shorten(&name) { continue }
            if shorten(&title) || shorten(&details) || shorten(&body) || shorten(&name) { continue }
            return bytes
        }
    }

    /// The app's `MonitorStatus` has up, down, degraded and unknown: isitup's `error` (a check
    /// that could not complete) is `down` to it, anything else `unknown`.
    static func appStatus(_ status: String) -> String {
        switch status {
        case "up", "down", "degraded", "unknown": return status
        case "error": return "down"
        default: return "unknown"
        }
    }

    private static func render(
        _ notification: Notification, title: String, body: String, name: String, details: String,
        monitors: [String], sound: String, badge: Int?
    ) -> [UInt8] {
        var alert = JSONObject()
        alert["title"] = .string(title)
        alert["body"] = .string(body)
        var aps = JSONObject()
        aps["alert"] = .object(alert)
        aps["sound"] = .string(sound)
        if let badge { aps["badge"] = .integer(badge) }
        var payload = JSONObject()
        payload["aps"] = .object(aps)
        if let single = notification.single {
            payload["monitor_id"] = (single.monitorID ?? Int(single.monitor)).map { .integer($0) } ?? .null
            payload["monitor_name"] = .string(name)
            payload["monitor"] = .string(single.monitor)
        } else {
            payload["monitor_id"] = .null
            payload["monitor_name"] = .null
            payload["monitors"] = .array(monitors.map { .string($0) })
        }
        payload["status"] = .string(appStatus(notification.status))
        payload["details"] = .string(details)
        payload["event"] = .string(notification.event.rawValue)
        return JSONValue.object(payload).encoded()
    }
}

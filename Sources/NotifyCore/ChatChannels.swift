import HTTPTransport
import VitalsKit

/// The colours of OnlineTracker's statuses: up green, down red, degraded amber.
enum StatusColor {
    static func hex(_ notification: Notification) -> String {
        switch notification.status {
        case "up": return "#22C55E"
        case "degraded": return "#F59E0B"
        default: return "#EF4444"
        }
    }

    static func integer(_ notification: Notification) -> Int { Int(hex(notification).dropFirst(), radix: 16) ?? 0 }
}

/// Shared by the chat and push-service webhooks: an https URL built from the channel URL,
/// its TLS settings and extra headers.
struct HTTPSEndpoint {
    let url: String
    let tls: TLSOptions
    let headers: [String]

    static let ownParameters: Set<String> = [
        "cafile", "insecure", "header", "priority", "tags", "click", "token", "format", "username", "avatar",
    ]

    init(_ parsed: ChannelURL, secure: Bool = true, path: String? = nil) throws(UsageError) {
        url =
            (secure ? "https://" : "http://") + parsed.authority() + (path ?? parsed.rawPath)
            + parsed.passthroughQuery(excluding: HTTPSEndpoint.ownParameters)
        tls = WebhookChannel.tlsOptions(parsed)
        headers = try WebhookChannel.extraHeaders(parsed)
    }

    func post(_ body: [UInt8], extra: [String] = [], timeoutMs: Int, contentType: String = "application/json") -> AttemptRequest {
        .http(WebhookChannel.post(url, body: body, headers: headers + extra, tls: tls, timeoutMs: timeoutMs, contentType: contentType))
    }
}

/// Masks the secret part of a webhook path (`/services/T000/B000/***`): the last segment.
func maskLastSegment(_ display: String) -> String {
    guard let query = display.firstIndex(of: "?") ?? Optional(display.endIndex),
        let slash = display[..<query].lastIndex(of: "/"),
        display[..<slash].contains("://"), display.distance(from: slash, to: query) > 1,
        !display[display.index(after: slash)..<query].hasPrefix("${")
    else { return display }
    return String(display[...slash]) + "***" + display[query...]
}

/// `ntfy://` / `ntfys://HOST/TOPIC`: a POST of the text with Title, Priority, Tags and Click
/// headers; `USER:PASSWORD@` logs in, `?token=` sends a bearer token.
final class NtfyChannel: Channel {
    let id: String
    let tags: [String]
    private let endpoint: HTTPSEndpoint
    private let priority: String?
    private let extraTags: [String]
    private let click: String?
    private let token: String?
    private let user: String?
    private let password: String?

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        let topic = parsed.path.split(separator: "/").last.map(String.init) ?? ""
        guard !topic.isEmpty else { throw UsageError("'\(parsed.display)': name the topic: ntfy://HOST/TOPIC") }
        endpoint = try HTTPSEndpoint(parsed, secure: parsed.scheme == "ntfys")
        if let text = parsed.parameter("priority") {
            guard ["1", "2", "3", "4", "5", "min", "low", "default", "high", "max", "urgent"].contains(text) else {
                throw UsageError("'\(parsed.display)': priority is 1-5 or min, low, default, high, max, not '\(text)'")
            }
            priority = text
        } else {
            priority = nil
        }
        extraTags = parsed.parameter("tags")?.split(separator: ",").map(String.init) ?? []
        click = parsed.parameter("click")
        token = parsed.parameter("token")
        user = parsed.user
        password = parsed.password
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        let priority =
            self.priority
            ?? {
                switch notification.event {
                case .down, .stillDown, .placeCutOff, .placeSilent: return "5"
                case .degraded, .stillDegraded: return "4"
                case .recovered, .placeBack: return "3"
                }
            }()
        let emoji: String
        switch notification.status {
        case "up": emoji = "white_check_mark"
        case "degraded": emoji = "warning"
        default: emoji = "rotating_light"
        }
        var headers = [
            "Title: " + headerSafe(notification.title), "Priority: " + priority,
            "Tags: " + ([emoji, notification.event.rawValue] + extraTags).joined(separator: ","),
        ]
        if let click = click ?? notification.single?.target, click.hasPrefix("http") { headers.append("Click: " + headerSafe(click)) }
        if let token { headers.append("Authorization: Bearer " + token) }
        guard
            case .http(var request) = endpoint.post(
                Array(notification.text.utf8), extra: headers, timeoutMs: timeoutMs,
                contentType: "text/plain; charset=utf-8")
        else { fatalError() }
        request.username = user
        request.password = password
        return .http(request)
    }
}

/// Header values carry no line breaks; non-ASCII is sent as UTF-8, which ntfy accepts.
func headerSafe(_ text: String) -> String {
    String(text.map { $0 == "\r" || $0 == "\n" ? " " : $0 })
}

/// `slack://hooks.slack.com/services/T/B/X` (an incoming webhook; `slack://T/B/X` for short).
final class SlackChannel: Channel {
    let id: String
    let tags: [String]
    private let endpoint: HTTPSEndpoint

    init(_ parsed: ChannelURL) throws(UsageError) {
        tags = parsed.tags
        if parsed.host.contains(".") || parsed.host == "localhost" || parsed.port != nil {
            endpoint = try HTTPSEndpoint(parsed)
            id = maskLastSegment(parsed.display)
        } else {
            // Apprise's short form: the three tokens of the webhook.
            let parts = [parsed.host] + parsed.path.split(separator: "/").map(String.init)
            guard parts.count == 3 else { throw UsageError("'\(parsed.display)': slack://T.../B.../X... or slack://HOST/PATH") }
            let long = try ChannelURL("slack://hooks.slack.com/services/" + parts.joined(separator: "/"), environment: [:])
            endpoint = try HTTPSEndpoint(long)
            id = maskLastSegment(parsed.display)
        }
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        var attachment = JSONObject()
        attachment["color"] = .string(StatusColor.hex(notification))
        attachment["title"] = .string(notification.title)
        attachment["text"] = .string(notification.text)
        attachment["footer"] = .string("vitals notify")
        attachment["ts"] = .integer(Int(notification.at / 1000))
        var body = JSONObject()
        body["text"] = .string("*\(slackEscape(notification.title))*: \(slackEscape(notification.text))")
        body["attachments"] = .array([.object(attachment)])
        return endpoint.post(JSONValue.object(body).encoded(), timeoutMs: timeoutMs)
    }

    /// Slack's three escapes: &, <, >.
    private func slackEscape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(
            of: ">", with: "&gt;")
    }
}

/// `discord://discord.com/api/webhooks/ID/TOKEN` (or `discord://ID/TOKEN`): an embed in the status colour.
final class DiscordChannel: Channel {
    let id: String
    let tags: [String]
    private let endpoint: HTTPSEndpoint
    private let username: String?
    private let avatar: String?

    init(_ parsed: ChannelURL) throws(UsageError) {
        tags = parsed.tags
        id = maskLastSegment(parsed.display)
        if parsed.host.contains(".") || parsed.host == "localhost" || parsed.port != nil {
            endpoint = try HTTPSEndpoint(parsed)
        } else {
            let parts = [parsed.host] + parsed.path.split(separator: "/").map(String.init)
            guard parts.count == 2 else { throw UsageError("'\(parsed.display)': discord://WEBHOOK_ID/TOKEN or discord://HOST/PATH") }
            endpoint = try HTTPSEndpoint(
                try ChannelURL("discord://discord.com/api/webhooks/" + parts.joined(separator: "/"), environment: [:]))
        }
        username = parsed.parameter("username")
        avatar = parsed.parameter("avatar")
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        var embed = JSONObject()
        embed["title"] = .string(String(notification.title.prefix(256)))
        embed["description"] = .string(String(notification.text.prefix(4096)))
        embed["color"] = .integer(StatusColor.integer(notification))
        embed["timestamp"] = .string(Timestamp.format(milliseconds: notification.at))
        if let single = notification.single {
            embed["fields"] = .array([
                .object(
                    JSONObject([
                        JSONField("name", .string("Monitor")), JSONField("value", .string(single.monitor)),
                        JSONField("inline", .bool(true)),
                    ])),
                .object(
                    JSONObject([
                        JSONField("name", .string("Status")), JSONField("value", .string(single.status)), JSONField("inline", .bool(true)),
                    ])),
            ])
        }
        var body = JSONObject()
        body["username"] = .string(username ?? "vitals")
        if let avatar { body["avatar_url"] = .string(avatar) }
        body["embeds"] = .array([.object(embed)])
        body["allowed_mentions"] = .object(JSONObject([JSONField("parse", .array([]))]))
        return endpoint.post(JSONValue.object(body).encoded(), timeoutMs: timeoutMs)
    }
}

/// `teams://HOST/PATH?QUERY`: a Power Automate Workflows webhook, sent an Adaptive Card.
final class TeamsChannel: Channel {
    let id: String
    let tags: [String]
    private let endpoint: HTTPSEndpoint

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        endpoint = try HTTPSEndpoint(parsed)
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        func block(_ fields: [(String, JSONValue)]) -> JSONValue { .object(JSONObject(fields.map { JSONField($0.0, $0.1) })) }
        var facts: [JSONValue] = notification.monitors.prefix(20).map { change in
            block([("title", .string(change.name)), ("value", .string(change.status + (change.message.map { " — " + $0 } ?? "")))])
        }
        facts.append(block([("title", .string("At")), ("value", .string(Timestamp.format(milliseconds: notification.at)))]))
        let color = notification.status == "up" ? "Good" : (notification.status == "degraded" ? "Warning" : "Attention")
        let card = block([
            ("$schema", .string("http://adaptivecards.io/schemas/adaptive-card.json")),
            ("type", .string("AdaptiveCard")),
            ("version", .string("1.4")),
            (
                "body",
                .array([
                    block([
                        ("type", .string("TextBlock")), ("text", .string(notification.title)), ("weight", .string("Bolder")),
                        ("size", .string("Medium")), ("color", .string(color)), ("wrap", .bool(true)),
                    ]),
                    block([("type", .string("TextBlock")), ("text", .string(notification.body)), ("wrap", .bool(true))]),
                    block([("type", .string("FactSet")), ("facts", .array(facts))]),
                ])
            ),
        ])
        let body = block([
            ("type", .string("message")),
            (
                "attachments",
                .array([
                    block([
                        ("contentType", .string("application/vnd.microsoft.card.adaptive")),
                        ("contentUrl", .null), ("content", card),
                    ])
                ])
            ),
        ])
        return endpoint.post(body.encoded(), timeoutMs: timeoutMs)
    }
}

import HTTPTransport
import VitalsCrypto
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An RFC 5322 message for a notification: plain UTF-8 text, CRLF line ends.
enum MailMessage {
    static func render(_ notification: Notification, from: String, to: [String], nowMs: Int64) -> [UInt8] {
        var lines: [String] = []
        lines.append("Date: " + rfc5322Date(nowMs))
        lines.append("From: " + from)
        lines.append("To: " + to.joined(separator: ", "))
        lines.append("Subject: " + encodedWord(notification.title + ": " + notification.body))
        lines.append("Message-ID: <\(notification.id).\(nowMs)@vitals-notify>")
        lines.append("MIME-Version: 1.0")
        lines.append("Content-Type: text/plain; charset=utf-8")
        lines.append("Content-Transfer-Encoding: 8bit")
        lines.append("Auto-Submitted: auto-generated")
        lines.append("X-Vitals-Event: " + notification.event.rawValue)
        lines.append("")
        lines.append(notification.title)
        lines.append("")
        lines.append(notification.text)
        lines.append("")
        for change in notification.monitors {
            var line = "- \(change.name) (\(change.monitor)): \(change.status)"
            if let message = change.message { line += ", " + message }
            lines.append(line)
        }
        lines.append("")
        lines.append("At " + Timestamp.format(milliseconds: notification.at) + " (notification " + notification.id + ")")
        // No line longer than RFC 5322's 998 characters.
        let text = lines.map { String($0.prefix(990)) }.joined(separator: "\r\n") + "\r\n"
        return Array(text.utf8)
    }

    /// `Tue, 27 Jan 2026 10:30:00 +0000`.
    static func rfc5322Date(_ ms: Int64) -> String {
        let days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let (year, month, day) = Timestamp.civil(fromDays: days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][Int(((days % 7) + 7) % 7)]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let seconds = Int((ms - days * 86_400_000) / 1000)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(day) \(months[month - 1]) \(year) \(two(seconds / 3600)):\(two(seconds / 60 % 60)):\(two(seconds % 60)) +0000"
    }

    /// The text as is when it is printable ASCII, else an RFC 2047 encoded word (Base64).
    static func encodedWord(_ text: String) -> String {
        let clean = text.map { $0 == "\r" || $0 == "\n" ? " " : $0 }
        let plain = String(clean)
        if plain.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return plain }
        return "=?UTF-8?B?" + Base64.encode(Array(plain.utf8)) + "?="
    }
}

/// The envelope addresses of a mail channel.
struct MailAddresses {
    let from: String
    let to: [String]

    init(_ parsed: ChannelURL) throws(UsageError) {
        let to = parsed.parameters("to").flatMap { $0.split(separator: ",").map { String($0).trimmingSpaces } }.filter { !$0.isEmpty }
        guard !to.isEmpty else { throw UsageError("'\(parsed.display)': name the recipients: ?to=ADDRESS[,ADDRESS]") }
        for address in to + [parsed.parameter("from") ?? "x@y"] {
            guard address.contains("@"), !address.contains(where: { $0 == "<" || $0 == ">" || $0 == "\r" || $0 == "\n" || $0 == " " })
            else {
                throw UsageError("'\(parsed.display)': '\(address)' is not a mail address")
            }
        }
        self.to = to
        if let from = parsed.parameter("from") {
            self.from = from
        } else if let user = parsed.user, user.contains("@") {
            self.from = user
        } else {
            var name = [CChar](repeating: 0, count: 256)
            gethostname(&name, name.count)
            let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            self.from = "vitals-notify@" + (host.isEmpty ? "localhost" : host)
        }
    }
}

/// `mailto://[USER[:PASSWORD]@]HOST[:PORT]?to=ADDRESS` (SMTP with STARTTLS required, port
/// 587; `?tls=none` for clear text, port 25) and `mailtos://` (TLS from the start, port 465).
/// With a user, the login must happen: a server that offers no AUTH gets nothing.
final class MailChannel: Channel {
    let id: String
    let tags: [String]
    private let url: String
    private let addresses: MailAddresses
    private let requireTLS: Bool
    private let user: String?
    private let password: String?
    private let tls: TLSOptions

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        addresses = try MailAddresses(parsed)
        let implicitTLS = parsed.scheme == "mailtos"
        switch parsed.parameter("tls") {
        case nil, "starttls"?, "required"?: requireTLS = true
        case "none"?:
            guard !implicitTLS else {
                throw UsageError("'\(parsed.display)': mailtos:// is TLS from the start; tls=none applies to mailto://")
            }
            requireTLS = false
        case let other?: throw UsageError("'\(parsed.display)': tls is none or starttls, not '\(other)'")
        }
        let port = parsed.port ?? (implicitTLS ? 465 : (requireTLS ? 587 : 25))
        url = (implicitTLS ? "smtps://" : "smtp://") + parsed.authority(defaultPort: port)
        user = parsed.user
        password = parsed.password
        tls = WebhookChannel.tlsOptions(parsed)
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        var request = HTTPRequest(url: url, method: "POST", timeoutMs: timeoutMs, userAgent: "vitals-notify/\(Vitals.version)")
        request.protocols = "smtp,smtps"
        var envelope = MailEnvelope(from: addresses.from, recipients: addresses.to)
        envelope.requireTLS = requireTLS
        envelope.requireAuth = user != nil
        request.mail = envelope
        request.username = user
        request.password = password
        request.tls = tls
        request.body = MailMessage.render(notification, from: addresses.from, to: addresses.to, nowMs: nowMs)
        return .http(request)
    }

    func judge(_ result: HTTPResult, leg: String?, state: StateBox, nowMs: Int64) -> DeliveryVerdict {
        let code = result.httpCode == 0 ? nil : result.httpCode
        if result.curlCode == 0 { return .accepted(code: code) }
        let words = result.curlMessage
        // libcurl: 67 login denied, 64 TLS required and not offered (STARTTLS missing).
        if result.curlCode == 67 { return .failed(code: code, error: "login refused: \(words)") }
        if result.curlCode == 64 {
            return .failed(
                code: code, error: "the server does not offer STARTTLS, and TLS is required (tls=none allows clear text): \(words)")
        }
        if words.hasPrefix("the server did not offer AUTH") { return .failed(code: code, error: words) }
        if let code, (400..<500).contains(code) { return .retry(code: code, error: words, afterMs: nil) }
        if let code, (500..<600).contains(code) { return .failed(code: code, error: words) }
        switch result.failure {
        case .tls?: return .failed(code: code, error: "TLS: \(words)")
        default: return .retry(code: code, error: words, afterMs: nil)
        }
    }
}

/// `sendmail://[PATH]?to=ADDRESS`: the message handed to the local mail system
/// (`/usr/sbin/sendmail` unless a PATH is given: `sendmail:///usr/lib/sendmail?to=...`).
final class SendmailChannel: Channel {
    let id: String
    let tags: [String]
    private let executable: String
    private let addresses: MailAddresses

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        addresses = try MailAddresses(parsed)
        executable = parsed.path.isEmpty || parsed.path == "/" ? "/usr/sbin/sendmail" : parsed.path
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        let message = MailMessage.render(notification, from: addresses.from, to: addresses.to, nowMs: nowMs)
        return .process(
            ProcessRequest(executable: executable, arguments: ["-oi", "-f", addresses.from, "--"] + addresses.to, input: message))
    }
}

import Foundation
import VitalsKit

/// Makes channels from URLs (`--to`) and configuration files (`--config`: one `[tags=]URL` a line).
enum ChannelFactory {
    /// The schemes notify knows, for messages.
    static let schemes = [
        "json", "jsons", "ntfy", "ntfys", "slack", "discord", "teams", "mailto", "mailtos", "sendmail",
        "apns", "desktop", "exec",
    ]

    /// The channel for one URL.
    static func make(_ parsed: ChannelURL, environment: [String: String]) throws(UsageError) -> Channel {
        switch parsed.scheme {
        case "json", "jsons": return try WebhookChannel(parsed)
        case "ntfy", "ntfys": return try NtfyChannel(parsed)
        case "slack": return try SlackChannel(parsed)
        case "discord": return try DiscordChannel(parsed)
        case "teams": return try TeamsChannel(parsed)
        case "mailto", "mailtos": return try MailChannel(parsed)
        case "sendmail": return try SendmailChannel(parsed)
        case "desktop": return try DesktopChannel(parsed)
        case "exec": return try ExecChannel(parsed)
        case "apns": return try APNsChannel(parsed)
        default:
            throw UsageError("'\(parsed.display)': unknown channel scheme '\(parsed.scheme)' (one of \(schemes.joined(separator: ", ")))")
        }
    }

    /// The `[tags=]URL` lines of a configuration file; blank lines and `#` comments are skipped.
    static func readConfig(_ path: String, environment: [String: String], diagnostics: Diagnostics) throws -> [ChannelURL] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ToolError("cannot read the configuration \(path)")
        }
        var urls: [ChannelURL] = []
        for (index, rawLine) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        {
            let line = String(rawLine).trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            var tags: [String] = []
            var text = line
            if let scheme = line.range(of: "://"), let equals = line[..<scheme.lowerBound].firstIndex(of: "=") {
                tags = line[..<equals].split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
                text = String(line[line.index(after: equals)...]).trimmingSpaces
            }
            do {
                urls.append(try ChannelURL(text, tags: tags, environment: environment))
            } catch {
                throw UsageError("\(path):\(index + 1): \(error.message)")
            }
        }
        return urls
    }
}

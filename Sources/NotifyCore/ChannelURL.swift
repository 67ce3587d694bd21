import Foundation
import VitalsKit

/// A channel URL split into parts, secrets expanded, percent-escapes decoded.
///
/// Secrets never need to stand in the URL itself: `${NAME}` is replaced by the environment
/// variable NAME and `${file:PATH}` by the contents of PATH (one trailing newline dropped),
/// after the URL is split, so a secret may hold any character. The URL as written (with
/// the references, not their values, and any literal password redacted) names the channel
/// in records, diagnostics and the state file.
struct ChannelURL {
    /// The URL as written, redacted: the channel's name everywhere.
    let display: String
    /// The scheme, lowercased.
    let scheme: String
    /// User and password, decoded and expanded.
    let user: String?
    let password: String?
    /// The host as written (case kept, for exec:// command names), expanded.
    let host: String
    let port: Int?
    /// The path, decoded and expanded, with its leading `/` (may be empty).
    let path: String
    /// The path as written (still percent-encoded), expanded: for URLs built from this one.
    let rawPath: String
    /// Query parameters in order, decoded and expanded.
    let parameters: [(String, String)]
    /// Query parameters in order, expanded but still percent-encoded.
    private let rawParameters: [(String, String)]
    /// Tags from a configuration line (`ops,db=URL`).
    let tags: [String]
    /// Whether the URL as written carries a secret literally (a password, a secret-looking
    /// parameter) rather than by reference.
    let hasLiteralSecret: Bool

    /// The last value of a parameter.
    func parameter(_ name: String) -> String? { parameters.last { $0.0 == name }?.1 }
    /// Every value of a parameter.
    func parameters(_ name: String) -> [String] { parameters.filter { $0.0 == name }.map(\.1) }

    /// Parses `text`; `environment` and the file system resolve `${...}` references.
    init(_ text: String, tags: [String] = [], environment: [String: String]) throws(UsageError) {
        let original = text.trimmingSpaces
        // `${...}` references may hold any character (a file path's slashes): set them aside
        // while the URL is split, and put them back in each part.
        var references: [String] = []
        var masked = ""
        var scan = Substring(original)
        while let open = scan.range(of: "${"), let close = scan[open.upperBound...].firstIndex(of: "}") {
            masked += scan[..<open.lowerBound] + "\u{1}\(references.count)\u{2}"
            references.append(String(scan[open.lowerBound...close]))
            scan = scan[scan.index(after: close)...]
        }
        masked += scan
        func restore<S: StringProtocol>(_ part: S) -> String {
            guard part.contains("\u{1}") else { return String(part) }
            var out = String(part)
            for (index, reference) in references.enumerated() { out = out.replacingOccurrences(of: "\u{1}\(index)\u{2}", with: reference) }
            return out
        }
        let written = masked
        guard let separator = written.range(of: "://") else {
            throw UsageError("'\(ChannelURL.redact(original))' is not a channel URL (scheme://...; see notify(1), CHANNELS)")
        }
        scheme = written[..<separator.lowerBound].lowercased()
        self.tags = tags
        display = ChannelURL.redact(original)
        var rest = Substring(written[separator.upperBound...])
        var queryText: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        if let hash = queryText.firstIndex(of: "#") { queryText = queryText[..<hash] }
        var authority = rest
        var pathText: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            pathText = rest[slash...]
        }
        var literalSecret = false
        var userText: Substring?
        var passwordText: Substring?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                userText = userInfo[..<colon]
                passwordText = userInfo[userInfo.index(after: colon)...]
                if !passwordText!.hasPrefix("\u{1}") { literalSecret = true }
            } else {
                userText = userInfo
            }
        }
        var hostText = authority
        var port: Int?
        if !authority.hasPrefix("["), let colon = authority.lastIndex(of: ":") {
            let portText = authority[authority.index(after: colon)...]
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw UsageError("'\(display)': the port '\(portText)' is not a number from 1 to 65535")
            }
            port = number
            hostText = authority[..<colon]
        } else if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = Int(after.dropFirst()), (1...65_535).contains(number) else {
                    throw UsageError("'\(display)': the port is not a number from 1 to 65535")
                }
                port = number
            }
        }
        self.port = port
        let display = self.display
        func expand(_ part: Substring) throws(UsageError) -> String {
            try ChannelURL.expand(restore(URLText.percentDecoded(part)), environment: environment, channel: display)
        }
        user = try userText.map(expand)
        password = try passwordText.map(expand)
        host = try expand(hostText)
        path = try expand(pathText)
        rawPath = try ChannelURL.expand(restore(pathText), environment: environment, channel: display)
        var parameters: [(String, String)] = []
        var rawParameters: [(String, String)] = []
        for pair in queryText.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = restore(URLText.percentDecoded(parts[0])).lowercased()
            let raw = parts.count > 1 ? parts[1] : ""
            if Redaction.isSecretParameter(name), !raw.hasPrefix("\u{1}"), !raw.isEmpty,
                !name.hasSuffix("_file"), !ChannelURL.notSecret.contains(name)
            {
                literalSecret = true
            }
            parameters.append((name, try expand(raw)))
            rawParameters.append((restore(parts[0]), try ChannelURL.expand(restore(raw), environment: environment, channel: display)))
        }
        self.parameters = parameters
        self.rawParameters = rawParameters
        hasLiteralSecret = literalSecret
    }

    /// notify's policy parameters, which any channel takes and none passes on: `after` (escalation)
    /// and `fallback` (where a delivery that failed for good goes).
    static let policyParameters: Set<String> = ["after", "fallback"]

    /// Parameters whose names look secret but are not: notify's own settings.
    static let notSecret: Set<String> = ["sign", "key_id", "key_file"]

    /// The URL as written with literal secrets replaced by `***`: a password, and the values of
    /// secret-looking query parameters, unless they are `${...}` references (which hold no secret).
    static func redact(_ text: String) -> String {
        guard let separator = text.range(of: "://") else { return Redaction.url(text) }
        var head = String(text[..<separator.upperBound])
        var rest = Substring(text[separator.upperBound...])
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        if let at = rest[..<authorityEnd].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
            let password = rest[rest.index(after: colon)..<at]
            head += rest[..<colon] + ":" + (password.hasPrefix("${") ? String(password) : "***") + rest[at...]
        } else {
            head += rest
        }
        guard let query else { return head }
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard let equals = part.firstIndex(of: "=") else { return String(part) }
            let name = part[..<equals].lowercased()
            let value = part[part.index(after: equals)...]
            if !notSecret.contains(name), !name.hasSuffix("_file"), !value.hasPrefix("${"),
                Redaction.isSecretParameter(name)
            {
                return part[..<equals] + "=***"
            }
            return String(part)
        }
        return head + "?" + parts.joined(separator: "&")
    }

    /// Replaces `${NAME}` and `${file:PATH}`.
    static func expand(_ text: String, environment: [String: String], channel: String) throws(UsageError) -> String {
        guard text.contains("${") else { return text }
        var out = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            out += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw UsageError("'\(channel)': '${' without a closing '}'")
            }
            let reference = String(rest[open.upperBound..<close])
            if reference.hasPrefix("file:") {
                let path = String(reference.dropFirst(5))
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw UsageError("'\(channel)': cannot read the secret file \(path)")
                }
                var value = String(decoding: data, as: UTF8.self)
                if value.hasSuffix("\r\n") { value.removeLast(2) } else if value.hasSuffix("\n") { value.removeLast() }
                out += value
            } else {
                guard let value = environment[reference] else {
                    throw UsageError("'\(channel)': the environment variable \(reference) is not set")
                }
                out += value
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// The query parameters not in `own` (notify's own settings), as written: what is passed
    /// on to the service; empty or `?a=b&c=d`.
    func passthroughQuery(excluding own: Set<String>) -> String {
        let kept = rawParameters.filter { !own.contains($0.0.lowercased()) && !ChannelURL.policyParameters.contains($0.0.lowercased()) }
        return kept.isEmpty ? "" : "?" + kept.map { $0.1.isEmpty ? $0.0 : "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    /// `host[:port]`, with brackets for IPv6.
    func authority(defaultPort: Int? = nil) -> String {
        let hostPart = host.contains(":") ? "[\(host)]" : host
        if let port = port ?? defaultPort { return "\(hostPart):\(port)" }
        return hostPart
    }

    /// Whether a yes/no parameter is yes (`yes`, `true`, `1`, `on`).
    func flag(_ name: String, default value: Bool = false) -> Bool {
        guard let text = parameter(name)?.lowercased() else { return value }
        return ["yes", "true", "1", "on"].contains(text)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// Keeps secrets out of output: URL passwords and secret-looking query values become `***`.
public enum Redaction {
    /// Query parameter names whose values are treated as secrets (matched case-insensitively, as substrings).
    public static let secretParameterHints = ["token", "key", "secret", "password", "passwd", "pass", "sig", "auth", "credential", "session"]

    /// The URL with the password of its user part and secret query values replaced by `***`.
    public static func url(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return text }
        var result = String(text[..<schemeEnd.upperBound])
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                result += userInfo[..<colon] + ":***"
            } else {
                result += userInfo
            }
            result += authority[at...]
        } else {
            result += authority
        }
        let tail = rest[authorityEnd...]
        guard let question = tail.firstIndex(of: "?") else { return result + tail }
        result += tail[...question]
        let queryEnd = tail.firstIndex(of: "#") ?? tail.endIndex
        let query = tail[tail.index(after: question)..<queryEnd]
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard let equals = part.firstIndex(of: "=") else { return String(part) }
            let name = part[..<equals].lowercased()
            if secretParameterHints.contains(where: { name.contains($0) }) {
                return part[..<equals] + "=***"
            }
            return String(part)
        }
        return result + parts.joined(separator: "&") + tail[queryEnd...]
    }
}

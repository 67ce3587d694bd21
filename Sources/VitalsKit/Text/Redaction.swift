/// Keeps secrets out of output: URL passwords and secret-looking query values become `***`.
public enum Redaction {
    /// Query parameter names whose values are treated as secrets (matched case-insensitively, as substrings).
    public static let secretParameterHints = [
        "token", "key", "secret", "password", "passwd", "pass", "signature", "auth", "credential", "session",
    ]

    /// Whether a query parameter's value is treated as a secret: its name contains one of the
    /// hints, or is `sig` (a signature; `sign=github`, which names a scheme, is not one).
    public static func isSecretParameter(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower == "sig" || secretParameterHints.contains { lower.contains($0) }
    }

    /// The URL with the password of its user part and secret query values replaced by `***`;
    /// text that is not a `scheme://` URL is returned as it is.
    public static func url(_ text: String) -> String {
        let parts = URLText(text)
        guard let scheme = parts.scheme else { return text }
        guard parts.userInfo != nil || parts.query != nil else { return text }
        var result = String(text.prefix(scheme.count)) + "://"
        if let userInfo = parts.redactedUserInfo { result += userInfo + "@" }
        result += parts.hostPort + parts.path
        if let query = parts.redactedQuery { result += "?" + query }
        if let fragment = parts.fragment { result += "#" + fragment }
        return result
    }
}

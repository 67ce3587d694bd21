/// A URL split into its parts by scanning bytes once (no Foundation, no percent-decoding):
/// what probes need for ids, names, messages and redaction, at well under a microsecond.
public struct URLText: Sendable, Equatable {
    /// The scheme, lowercased; nil when the text has no `scheme://`.
    public let scheme: String?
    /// What stands before `@` in the authority (`user:password`), if anything.
    public let userInfo: String?
    /// The authority without user info: `host`, `host:port`, `[v6]:port`.
    public let hostPort: String
    /// The host, lowercased, without brackets.
    public let host: String
    /// The port written in the URL, if any.
    public let port: Int?
    /// From the first `/` of the path up to `?` or `#` (may be empty).
    public let path: String
    /// After `?` and before `#`, if there is a `?`.
    public let query: String?
    /// After `#`, if there is one.
    public let fragment: String?

    /// Splits `text`. Text without `scheme://` is read as starting at the authority.
    public init(_ text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        var scheme: String?
        if let separator = URLText.schemeEnd(bytes) {
            scheme = String(decoding: bytes[0..<separator], as: UTF8.self).lowercased()
            index = separator + 3
        }
        let authorityStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") {
            index += 1
        }
        let authorityEnd = index
        var hostStart = authorityStart
        var userInfo: String?
        if let at = bytes[authorityStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            userInfo = String(decoding: bytes[authorityStart..<at], as: UTF8.self)
            hostStart = at + 1
        }
        var hostEnd = authorityEnd
        var port: Int?
        var bracketEnd = hostStart
        if hostStart < authorityEnd, bytes[hostStart] == UInt8(ascii: "["),
            let close = bytes[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]"))
        {
            bracketEnd = close
        }
        if let colon = bytes[bracketEnd..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
            port = Int(String(decoding: bytes[(colon + 1)..<authorityEnd], as: UTF8.self))
        }
        var host = String(decoding: bytes[hostStart..<hostEnd], as: UTF8.self).lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let pathStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "?"), bytes[index] != UInt8(ascii: "#") { index += 1 }
        let path = String(decoding: bytes[pathStart..<index], as: UTF8.self)
        var query: String?
        if index < bytes.count, bytes[index] == UInt8(ascii: "?") {
            let queryStart = index + 1
            index = queryStart
            while index < bytes.count, bytes[index] != UInt8(ascii: "#") { index += 1 }
            query = String(decoding: bytes[queryStart..<index], as: UTF8.self)
        }
        var fragment: String?
        if index < bytes.count { fragment = String(decoding: bytes[(index + 1)...], as: UTF8.self) }
        self.scheme = scheme
        self.userInfo = userInfo
        self.hostPort = String(decoding: bytes[hostStart..<authorityEnd], as: UTF8.self)
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// The offset of `://` after a valid scheme (letters, digits, `+`, `-`, `.`, starting
    /// with a letter), or nil.
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        guard let first = bytes.first, isLetter(first) else { return nil }
        var index = 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") {
                return index + 2 < bytes.count && bytes[index + 1] == UInt8(ascii: "/") && bytes[index + 2] == UInt8(ascii: "/")
                    ? index : nil
            }
            guard
                isLetter(byte) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: ".")
            else { return nil }
            index += 1
        }
        return nil
    }

    @inline(__always)
    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// The query with the values of secret-looking parameters replaced by `***`.
    public var redactedQuery: String? {
        guard let query else { return nil }
        return query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard let equals = part.firstIndex(of: "=") else { return String(part) }
            if Redaction.isSecretParameter(String(part[..<equals])) {
                return part[..<equals] + "=***"
            }
            return String(part)
        }.joined(separator: "&")
    }

    /// The user info with its password replaced by `***`.
    public var redactedUserInfo: String? {
        guard let userInfo else { return nil }
        guard let colon = userInfo.firstIndex(of: ":") else { return userInfo }
        return userInfo[..<colon] + ":***"
    }
}

extension URLText {
    /// Percent-decodes `text` (RFC 3986 §2.1): `%` followed by exactly two hexadecimal digits
    /// is that byte; any other `%` is kept as it is (so `%+1`, `%G0` and a `%` at the end stay
    /// literal); with `plusAsSpace`, `+` is a space (HTML form encoding, for query strings).
    /// Bytes that do not form UTF-8 are replaced with U+FFFD.
    public static func percentDecoded<S: StringProtocol>(_ text: S, plusAsSpace: Bool = false) -> String {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) || (plusAsSpace && bytes.contains(UInt8(ascii: "+"))) else { return String(text) }
        return String(decoding: percentDecodedBytes(bytes, plusAsSpace: plusAsSpace), as: UTF8.self)
    }

    /// The bytes `percentDecoded` decodes, without the UTF-8 repair.
    public static func percentDecodedBytes(_ bytes: [UInt8], plusAsSpace: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexDigitValue(bytes[index + 1]), let low = hexDigitValue(bytes[index + 2])
            {
                out.append(high << 4 | low)
                index += 3
                continue
            }
            out.append(plusAsSpace && byte == UInt8(ascii: "+") ? 0x20 : byte)
            index += 1
        }
        return out
    }

    /// Percent-encodes every byte of `text` outside RFC 3986's unreserved set
    /// (`A-Z a-z 0-9 - . _ ~`), with upper-case hexadecimal digits.
    public static func percentEncoded(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// RFC 3986's unreserved characters: `ALPHA / DIGIT / "-" / "." / "_" / "~"`.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// The value of a hexadecimal digit (either case), or nil for any other byte.
    public static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

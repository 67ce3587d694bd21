import VitalsCrypto
import VitalsKit

/// Monitor ids: trimmed, derived from the URL when missing, unique within one run.
public struct TargetIDs {
    private var seen: [String: (source: String, line: Int)] = [:]
    private var suffixes: [String: Int] = [:]

    /// Creates an empty registry.
    public init() {}

    /// The id as written, trimmed; nil when it is empty after trimming.
    static func normalize(_ raw: String) -> String? {
        let trimmed = raw.trimmingSpaces
        return trimmed.isEmpty ? nil : trimmed
    }

    /// A stable, readable id for a URL: the redacted URL without `https://` and credentials,
    /// lowercased, with every run of characters other than letters, digits and dots turned
    /// into one `-` (`http://` URLs keep an `http-` prefix, so they never collide with their
    /// https twin). Ids longer than 80 characters end in 8 hex digits of the URL's SHA-256.
    public static func derive(from url: String) -> String { derive(from: URLText(url)) }

    /// A derived id for a URL already split (see `derive(from:)`).
    public static func derive(from parts: URLText) -> String {
        var text = parts.hostPort + parts.path
        if let query = parts.redactedQuery { text += "?" + query }
        if parts.scheme == "http" { text = "http-" + text }
        var slug: [UInt8] = []
        slug.reserveCapacity(text.utf8.count)
        var pendingDash = false
        for var byte in text.utf8 {
            if byte >= 0x41 && byte <= 0x5A { byte += 0x20 }
            if (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: ".") {
                if pendingDash && !slug.isEmpty { slug.append(UInt8(ascii: "-")) }
                pendingDash = false
                slug.append(byte)
            } else {
                pendingDash = true
            }
        }
        if slug.isEmpty { return "target" }
        if slug.count > 80 {
            return String(decoding: slug[0..<71], as: UTF8.self) + "-" + String(SHA256.hexDigest(Array(text.utf8)).prefix(8))
        }
        return String(decoding: slug, as: UTF8.self)
    }

    /// Registers `id` seen at `source:line`. Returns the id to use and, for a duplicate,
    /// where the first one was (the duplicate gets `-2`, `-3`, ...).
    mutating func register(_ id: String, source: String, line: Int) -> (id: String, firstSeen: (source: String, line: Int)?) {
        guard let first = seen[id] else {
            seen[id] = (source, line)
            return (id, nil)
        }
        var counter = suffixes[id] ?? 1
        var candidate: String
        repeat {
            counter += 1
            candidate = "\(id)-\(counter)"
        } while seen[candidate] != nil
        suffixes[id] = counter
        seen[candidate] = (source, line)
        return (candidate, first)
    }
}

extension TargetIDs {
    /// Registers `id` seen at `source:line`; a duplicate gets the next free `-2`, `-3`, ...
    /// suffix, which is returned, and a warning naming where the first one was. isitup's
    /// ServiceStore regenerates a duplicate id silently, so a file it accepts is no error here:
    /// the warning (once, when the targets are read) does not change the exit status.
    public mutating func unique(_ id: String, source: String, line: Int, diagnostics: Diagnostics) -> String {
        let (unique, first) = register(id, source: source, line: line)
        if let first {
            diagnostics.warning(
                "duplicate id '\(id)' (first on \(first.source):\(first.line)); probing this one as '\(unique)'",
                source: source, line: line)
        }
        return unique
    }
}

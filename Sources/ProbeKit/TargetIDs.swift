import VitalsCrypto
import VitalsKit

/// Monitor ids: trimmed, derived from the URL when missing, unique within one run.
public struct TargetIDs {
    private var seen: [String: (source: String, line: Int)] = [:]
    private var suffixes: [String: Int] = [:]

    /// Creates an empty registry.
    public init() {}

    /// The id as written, trimmed; nil when it is empty after trimming.
    public static func normalize(_ raw: String) -> String? {
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
    public mutating func register(_ id: String, source: String, line: Int) -> (id: String, firstSeen: (source: String, line: Int)?) {
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

/// isitup's "check one service" matching: exact normalized name, exact normalized host,
/// partial name, partial host, in that order; the first target in input order wins each step.
public enum NameMatcher {
    /// Lowercased, trimmed, every run of non-alphanumerics turned into one space.
    public static func normalize(_ text: String) -> String {
        var out = ""
        var pendingSpace = false
        for character in text.lowercased() {
            if character.isLetter || character.isNumber {
                if pendingSpace && !out.isEmpty { out.append(" ") }
                pendingSpace = false
                out.append(character)
            } else {
                pendingSpace = true
            }
        }
        return out
    }

    /// The index of the best match for `query` among `targets`, or nil.
    public static func bestMatch(_ query: String, in targets: [(name: String, host: String)]) -> Int? {
        let wanted = normalize(query)
        guard !wanted.isEmpty else { return nil }
        let names = targets.map { normalize($0.name) }
        let hosts = targets.map { normalize($0.host) }
        if let index = names.firstIndex(of: wanted) { return index }
        if let index = hosts.firstIndex(of: wanted) { return index }
        if let index = names.firstIndex(where: { $0.contains(wanted) }) { return index }
        if let index = hosts.firstIndex(where: { $0.contains(wanted) }) { return index }
        return nil
    }

    /// Up to `limit` names closest to `query`, for a "no match" message.
    public static func closestNames(_ query: String, among names: [String], limit: Int = 3) -> [String] {
        let wanted = Array(normalize(query).utf8)
        let scored = names.map { name -> (String, Int) in
            (name, ArgumentParser.editDistance(wanted, Array(normalize(name).utf8)))
        }
        var unique: [String] = []
        for (name, _) in scored.sorted(by: { $0.1 < $1.1 }) where !unique.contains(name) {
            unique.append(name)
            if unique.count == limit { break }
        }
        return unique
    }
}

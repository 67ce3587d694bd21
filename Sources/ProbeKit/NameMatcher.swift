import VitalsKit

/// isitup's "check one service" matching: exact normalized name, exact normalized host,
/// partial name, partial host, in that order; the first target in input order wins each step.
enum NameMatcher {
    /// Lowercased, trimmed, every run of non-alphanumerics turned into one space.
    static func normalize(_ text: String) -> String {
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

    /// The index of the target whose id is `query`: the same text, else the same letters in
    /// another case (isitup's UUIDs are written either way), else `query` less a `/ipv4` or
    /// `/ipv6` suffix (the monitor of one family of a target probed over both); nil for none.
    static func idMatch(_ query: String, in ids: [String]) -> Int? {
        if let index = ids.firstIndex(of: query) { return index }
        let lowered = query.lowercased()
        if let index = ids.firstIndex(where: { $0.lowercased() == lowered }) { return index }
        for suffix in ["/ipv4", "/ipv6"] where query.hasSuffix(suffix) {
            return idMatch(String(query.dropLast(suffix.count)), in: ids)
        }
        return nil
    }

    /// The index of the best match for `query` among `targets`, or nil.
    static func bestMatch(_ query: String, in targets: [(name: String, host: String)]) -> Int? {
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
    static func closestNames(_ query: String, among names: [String], limit: Int = 3) -> [String] {
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

import VitalsCrypto
import VitalsKit

/// HealthProbe's HashService: the type hash, the snapshot checksum and the type-set hash.
enum Hashing {
    /// SHA-256 (lowercase hex) of `typeIdentifier|count|earliest|latest`, the dates as
    /// ISO 8601 UTC with milliseconds (`2019-05-10T15:30:00.000Z`), empty when absent.
    static func typeHash(_ typeIdentifier: String, count: Int64, earliest: Int64?, latest: Int64?) -> String {
        var text: [UInt8] = Array(typeIdentifier.utf8)
        text.append(UInt8(ascii: "|"))
        JSONText.appendInt(count, to: &text)
        text.append(UInt8(ascii: "|"))
        if let earliest { Timestamp.append(milliseconds: earliest, to: &text) }
        text.append(UInt8(ascii: "|"))
        if let latest { Timestamp.append(milliseconds: latest, to: &text) }
        return SHA256.hexDigest(text)
    }

    /// SHA-256 of the type hashes of the complete types, concatenated in identifier order.
    /// The filter is the quality (`== complete`), never whether a hash exists: a partial or
    /// failed type has a hash too, and letting it in would make the checksum depend on
    /// how far a failing fetch got.
    static func checksum(_ types: [TypeCount]) -> String {
        var text: [UInt8] = []
        for type in types.filter({ $0.quality == .complete }).sorted(by: {
            $0.typeIdentifier.utf8.lexicographicallyPrecedes($1.typeIdentifier.utf8)
        }) {
            text.append(contentsOf: type.typeHash.utf8)
        }
        return SHA256.hexDigest(text)
    }

    /// SHA-256 of the monitored types' identifiers, sorted, one per line (`\n` between them):
    /// the registry's, or without one the types the snapshot counted (HealthProbe's "sorted
    /// active typeIdentifiers").
    static func typeSetHash(_ monitored: [String]) -> String {
        let sorted = monitored.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return SHA256.hexDigest(Array(sorted.joined(separator: "\n").utf8))
    }
}

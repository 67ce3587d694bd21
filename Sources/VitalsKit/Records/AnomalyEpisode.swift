/// Where a sample stands in the anomaly episodes detect-anomaly marks: the `state` of its
/// `anomaly.episode` object (vitals-records(7), ANOMALY). The readers of samples (digest, notify)
/// read it with this one function.
public enum AnomalyEpisodeState: UInt8, Sendable, Equatable {
    /// The sample that starts an episode: its one new detection.
    case onset = 1
    /// A sample inside an episode after its onset.
    case ongoing = 2
    /// The sample that closes an episode (not part of it).
    case end = 3

    /// The state in the `anomaly` value of a sample line (`field`, the `anomaly` field's range in
    /// `line`); nil when it is not an object or has no episode. The compact form detect-anomaly
    /// writes (`"episode":{"state":"onset"`) is read in place; any other form of an object that
    /// names an episode (spaces, other key orders) is parsed.
    /// Read through `LineBytes`, bounds-checked: no bench line of digest's or notify's carries an
    /// `anomaly`, so the checks cost them nothing there.
    public static func read(_ line: LineBytes, _ field: FieldRange) -> AnomalyEpisodeState? {
        let value = line[field.valueStart..<field.valueEnd]
        guard value.first == UInt8(ascii: "{"), let key = find(episodeKey, in: value) else { return nil }
        let rest = value[(key + episodeKey.count)...]
        if starts(rest, with: nullText) { return nil }
        for (text, state) in compact where starts(rest, with: text) { return state }
        guard let state = (try? JSONParser.parse(Array(value)))?.objectValue?["episode"]?.objectValue?["state"]?.stringValue else {
            return nil
        }
        switch state {
        case "onset": return .onset
        case "ongoing": return .ongoing
        case "end": return .end
        default: return nil
        }
    }

    private static let episodeKey = Array("\"episode\"".utf8)
    private static let nullText = Array(":null".utf8)
    private static let compact: [([UInt8], AnomalyEpisodeState)] = [
        (Array(":{\"state\":\"onset\"".utf8), .onset),
        (Array(":{\"state\":\"ongoing\"".utf8), .ongoing),
        (Array(":{\"state\":\"end\"".utf8), .end),
    ]

    /// The position of the first `needle` in `haystack` (an index of the line).
    private static func find(_ needle: [UInt8], in haystack: Slice<LineBytes>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index <= haystack.endIndex - needle.count {
            if haystack[index] == needle[0], starts(haystack[index...], with: needle) { return index }
            index += 1
        }
        return nil
    }

    private static func starts(_ bytes: Slice<LineBytes>, with prefix: [UInt8]) -> Bool {
        bytes.count >= prefix.count && prefix.indices.allSatisfy { bytes[bytes.startIndex + $0] == prefix[$0] }
    }
}

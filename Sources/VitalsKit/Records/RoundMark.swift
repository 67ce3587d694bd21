/// The marks a probe run writes around each round of probes (vitals-records(7) ROUND MARKS):
/// `round_start` when the round's first probe starts, `round_end` after its last sample, both
/// naming the round. A reader that takes samples in rounds (notify) ends a round at its
/// `round_end`, however long the slowest probe took; filters pass both on, in place.
public enum RoundMark: Equatable, Sendable {
    /// A round began.
    case start(round: String)
    /// A round's last sample has been written.
    case end(round: String)

    /// The `type` of a round's first mark.
    public static let startType = "round_start"
    /// The `type` of a round's last mark.
    public static let endType = "round_end"

    /// The mark the line `reader` last read, when it is one (a record of another type for the
    /// sample reader); nil for any other record. A mark without a `round` names the empty round.
    public init?(_ reader: SampleLine) {
        guard let type = reader.field(named: "type"), let name = reader.text(type) else { return nil }
        let round = reader.text(reader.field(named: "round")) ?? ""
        switch name {
        case RoundMark.startType: self = .start(round: round)
        case RoundMark.endType: self = .end(round: round)
        default: return nil
        }
    }
}

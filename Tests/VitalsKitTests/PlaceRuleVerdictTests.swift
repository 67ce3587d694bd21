import Testing

@testable import VitalsKit

/// `PlaceRule.verdict(place:at:...)`: the whole verdict at the moment of one sample (digest counts
/// partial outages by it), each case worked out by hand from vitals(7), PLACES.
@Suite("PlaceRule: the verdict at the moment of one sample")
struct PlaceRuleVerdictTests {
    /// A minute, in ms.
    let minute: Int64 = 60_000

    @Test("paris up 20 s after tokyo down: two fresh places, a majority of two is two, so partial, both named")
    func partial() throws {
        let tokyo = PlaceRule.Vote(place: "tokyo", at: 0, status: .down)
        let verdict = try #require(
            PlaceRule.verdict(place: "paris", at: 20_000, status: .up, others: [tokyo], intervalMs: minute, quorum: .majority))
        #expect(verdict.status == .degraded && verdict.isPartial)
        #expect(verdict.message == "down from tokyo; up from paris")
        #expect(verdict.failing == ["tokyo"])
        // status(...) is the verdict's status.
        #expect(
            PlaceRule.status(place: "paris", at: 20_000, status: .up, others: [tokyo], intervalMs: minute, quorum: .majority) == .degraded)
        // Any one place is enough with --quorum any: down, not partial.
        let any = try #require(
            PlaceRule.verdict(place: "paris", at: 20_000, status: .up, others: [tokyo], intervalMs: minute, quorum: .any))
        #expect(any.status == .down && !any.isPartial)
    }

    @Test("no other place votes beside the sample: nil, and status(...) is the sample's own")
    func alone() {
        // Its own place, a vote after it, one more than two intervals before it, and an unknown one do not vote.
        let others = [
            PlaceRule.Vote(place: "paris", at: 0, status: .up),
            PlaceRule.Vote(place: "tokyo", at: 20_001, status: .up),
            PlaceRule.Vote(place: "nyc", at: 20_000 - 2 * minute - 1, status: .up),
            PlaceRule.Vote(place: "", at: 10_000, status: .unknown),
        ]
        #expect(PlaceRule.verdict(place: "paris", at: 20_000, status: .down, others: others, intervalMs: minute, quorum: .majority) == nil)
        #expect(PlaceRule.verdict(place: "paris", at: 20_000, status: .down, others: [], intervalMs: minute, quorum: .majority) == nil)
        #expect(PlaceRule.status(place: "paris", at: 20_000, status: .down, others: others, intervalMs: minute, quorum: .majority) == .down)
        // Votes that all say what the sample says: its own status, nothing to judge; one older
        // disagreeing vote of a place (tokyo's down before its up) is judged, and its newest counts.
        let agreeing = [PlaceRule.Vote(place: "tokyo", at: 0, status: .down), PlaceRule.Vote(place: "nyc", at: 1_000, status: .down)]
        #expect(PlaceRule.verdict(place: "paris", at: 20_000, status: .down, others: agreeing, intervalMs: minute, quorum: .any) == nil)
        let changed = [PlaceRule.Vote(place: "tokyo", at: 0, status: .down), PlaceRule.Vote(place: "tokyo", at: 10_000, status: .up)]
        #expect(
            PlaceRule.verdict(place: "paris", at: 20_000, status: .up, others: changed, intervalMs: minute, quorum: .majority)?.status
                == .up)
        #expect(
            PlaceRule.verdict(place: "paris", at: 20_000, status: .down, others: changed, intervalMs: minute, quorum: .majority)?.isPartial
                == true)
        // Exactly two intervals before it still votes: local, up, so partial.
        let edge = PlaceRule.verdict(
            place: "paris", at: 20_000, status: .down, others: [PlaceRule.Vote(place: "", at: 20_000 - 2 * minute, status: .up)],
            intervalMs: minute, quorum: .majority)
        #expect(edge?.message == "down from paris; up from local")
    }
}

import Testing

@testable import VitalsKit

/// The place rule, held to verdicts worked out by hand from its statement in vitals(7): each
/// case says the places' latest samples, the interval and quorum, and what the rule gives.
@Suite("PlaceRule: a monitor seen from several places")
struct PlaceRuleTests {
    /// A minute, in ms.
    let minute: Int64 = 60_000

    func report(_ agent: String?, _ at: Int64, _ status: SampleStatus, _ reason: String? = nil, _ message: String? = nil) -> PlaceReport {
        PlaceReport(agent: agent, at: at, status: status, reason: reason, message: message)
    }

    @Test("one place: its status, reason and words, whatever the quorum (today's behaviour)")
    func onePlace() {
        let down = report(nil, 0, .down, "http_status", "HTTP 503 in 12ms")
        for quorum in [Quorum.majority, .all, .any, .count(3)] {
            let verdict = PlaceRule.judge([down], intervalMs: minute, quorum: quorum)
            #expect(verdict.status == .down)
            #expect(verdict.reason == "http_status")
            #expect(verdict.message == "HTTP 503 in 12ms")
            #expect(!verdict.isPartial)
        }
        let error = PlaceRule.judge([report("tokyo", 5, .error, "timeout", "timed out")], intervalMs: minute, quorum: .majority)
        #expect(error.status == .error && error.reason == "timeout" && error.failing == ["tokyo"])
        // A place long silent is still the only place: the monitor is what it last said.
        let old = PlaceRule.judge([report("paris", -100 * minute, .up)], intervalMs: minute, quorum: .majority)
        #expect(old.status == .up)
    }

    @Test("two places, one failing: a majority of two is two, so degraded, partial, the places named")
    func twoPlacesOneFailing() {
        let verdict = PlaceRule.judge(
            [report("tokyo", 0, .down, "connect", "refused"), report("paris", 1_000, .up, nil, "HTTP 200 in 40ms")],
            intervalMs: minute, quorum: .majority)
        #expect(verdict.status == .degraded)
        #expect(verdict.reason == "partial")
        #expect(verdict.message == "down from tokyo; up from paris")
        #expect(verdict.failing == ["tokyo"])
        #expect(verdict.quorumNeeded == 2)
        #expect(verdict.isPartial)
        // Any one place is enough with --quorum any: down, in tokyo's words.
        let any = PlaceRule.judge(
            [report("tokyo", 0, .down, "connect", "refused"), report("paris", 1_000, .up)], intervalMs: minute, quorum: .any)
        #expect(any.status == .down && any.reason == "connect" && any.message == "refused")
    }

    @Test("three places: two failing make a majority (down), one failing is partial; error only when every failing place errs")
    func threePlaces() {
        let twoDown = PlaceRule.judge(
            [
                report("tokyo", 0, .down, "http_status", "HTTP 503"), report("nyc", 2_000, .error, "timeout", "timed out"),
                report("paris", 1_000, .up),
            ],
            intervalMs: minute, quorum: .majority)
        // Severities 2, 2, 0: the second worst is 2, a failure; tokyo says down, so down, not error.
        #expect(twoDown.status == .down)
        // The newest report at the agreed severity speaks: nyc's, at 2 s.
        #expect(twoDown.reason == "timeout")
        #expect(twoDown.failing == ["nyc", "tokyo"])
        #expect(!twoDown.isPartial)
        let twoErrors = PlaceRule.judge(
            [report("tokyo", 0, .error, "dns"), report("nyc", 0, .error, "dns"), report("paris", 0, .up)],
            intervalMs: minute, quorum: .majority)
        #expect(twoErrors.status == .error && twoErrors.reason == "dns")
        let oneDown = PlaceRule.judge(
            [report("tokyo", 0, .down), report("nyc", 0, .up), report("paris", 0, .up)], intervalMs: minute, quorum: .majority)
        #expect(oneDown.status == .degraded && oneDown.reason == "partial")
        #expect(oneDown.message == "down from tokyo; up from nyc, paris")
        // With --quorum all, two failing of three is still fewer than all: partial.
        let all = PlaceRule.judge(
            [report("tokyo", 0, .down), report("nyc", 0, .down), report("paris", 0, .up)], intervalMs: minute, quorum: .all)
        #expect(all.status == .degraded && all.isPartial && all.message == "down from nyc, tokyo; up from paris")
        // --quorum 2 of three: two failing are enough.
        let two = PlaceRule.judge(
            [report("tokyo", 0, .down), report("nyc", 0, .down), report("paris", 0, .up)], intervalMs: minute, quorum: .count(2))
        #expect(two.status == .down)
    }

    @Test("degraded by a quorum, a failing minority: degraded and partial; a degraded minority alone leaves it up")
    func degraded() {
        let mixed = PlaceRule.judge(
            [report("tokyo", 0, .degraded, "latency"), report("paris", 0, .degraded, "latency"), report("nyc", 0, .down, "connect")],
            intervalMs: minute, quorum: .majority)
        // Severities 2, 1, 1: the second worst is 1 (degraded), and nyc fails: partial.
        #expect(mixed.status == .degraded && mixed.reason == "partial")
        #expect(mixed.message == "down from nyc; degraded from paris, tokyo")
        let slowQuorum = PlaceRule.judge(
            [report("tokyo", 0, .degraded, "latency", "slow"), report("paris", 10, .degraded, "latency", "slower"), report("nyc", 0, .up)],
            intervalMs: minute, quorum: .majority)
        #expect(slowQuorum.status == .degraded && slowQuorum.reason == "latency" && slowQuorum.message == "slower")
        #expect(!slowQuorum.isPartial)
        let slowMinority = PlaceRule.judge(
            [
                report("tokyo", 0, .degraded, "latency"), report("paris", 0, .up, nil, "HTTP 200"),
                report("nyc", 5, .up, nil, "HTTP 200 late"),
            ],
            intervalMs: minute, quorum: .majority)
        #expect(slowMinority.status == .up && slowMinority.reason == nil && slowMinority.message == "HTTP 200 late")
    }

    @Test("freshness: a place more than two intervals behind the newest vote drops out; exactly two still votes")
    func freshness() {
        // tokyo's last sample is 3 minutes before paris's with a 1-minute interval: stale, so paris alone decides.
        let stale = PlaceRule.judge([report("tokyo", 0, .down), report("paris", 3 * minute, .up)], intervalMs: minute, quorum: .majority)
        #expect(stale.status == .up && stale.fresh.map(\.name) == ["paris"])
        // Exactly two intervals behind: still fresh, so partial.
        let edge = PlaceRule.judge([report("tokyo", 0, .down), report("paris", 2 * minute, .up)], intervalMs: minute, quorum: .majority)
        #expect(edge.status == .degraded && edge.isPartial)
        // One millisecond more: stale.
        let past = PlaceRule.judge(
            [report("tokyo", 0, .down), report("paris", 2 * minute + 1, .up)], intervalMs: minute, quorum: .majority)
        #expect(past.status == .up)
        // A 5-minute interval keeps tokyo fresh at 3 minutes.
        let slow = PlaceRule.judge(
            [report("tokyo", 0, .down), report("paris", 3 * minute, .up)], intervalMs: 5 * minute, quorum: .majority)
        #expect(slow.isPartial)
    }

    @Test("unknown does not vote; nobody voting is unknown; the local place is named 'local'")
    func unknownAndLocal() {
        let one = PlaceRule.judge([report("tokyo", 9, .unknown), report("paris", 0, .down, "dns")], intervalMs: minute, quorum: .majority)
        #expect(one.status == .down && one.reason == "dns")
        #expect(PlaceRule.judge([report("tokyo", 9, .unknown)], intervalMs: minute, quorum: .majority).status == .unknown)
        #expect(PlaceRule.judge([], intervalMs: minute, quorum: .majority).status == .unknown)
        let local = PlaceRule.judge([report(nil, 0, .down), report("paris", 0, .up)], intervalMs: minute, quorum: .majority)
        #expect(local.message == "down from local; up from paris")
    }

    @Test("--quorum's words, and how many must agree")
    func quorumWords() {
        #expect(Quorum("majority") == .majority && Quorum("all") == .all && Quorum("any") == .any && Quorum("3") == .count(3))
        #expect(Quorum("0") == nil && Quorum("most") == nil && Quorum("-1") == nil)
        // A majority: 1 of 1, 2 of 2, 2 of 3, 3 of 4, 3 of 5.
        #expect([1, 2, 3, 4, 5].map { Quorum.majority.needed(of: $0) } == [1, 2, 2, 3, 3])
        #expect([1, 2, 3].map { Quorum.count(2).needed(of: $0) } == [1, 2, 2])
        #expect(Quorum.all.needed(of: 4) == 4 && Quorum.any.needed(of: 4) == 1)
        #expect(PlaceRule.intervalMs(checkIntervalSeconds: nil) == 60_000 && PlaceRule.intervalMs(checkIntervalSeconds: 300) == 300_000)
    }
}

/// `PlaceRule.status` counts what `PlaceRule.verdict` judges, without its words: the two agree on
/// every vote drawn here (a fixed seed, so a failure is the same every run).
@Suite("PlaceRule.status: the status verdict judges, on random votes")
struct PlaceRuleStatusTests {
    /// A small generator with a fixed seed (xorshift64*).
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    @Test("20,000 draws of up to six places, times across the window's edge, every quorum")
    func agreesWithVerdict() {
        var random = Seeded(state: 0x9E37_79B9_7F4A_7C15)
        let statuses: [SampleStatus] = [.up, .degraded, .down, .error, .unknown]
        let places = ["", "a", "b", "c", "d", "e"]
        let quorums: [Quorum] = [.majority, .all, .any, .count(2), .count(4)]
        for _ in 0..<20_000 {
            let interval: Int64 = [60_000, 300_000][Int.random(in: 0...1, using: &random)]
            let at: Int64 = 1_000_000
            let place = places.randomElement(using: &random)!
            let status = statuses.randomElement(using: &random)!
            let others = (0..<Int.random(in: 0...9, using: &random)).map { _ in
                PlaceRule.Vote(
                    place: places.randomElement(using: &random)!, at: at - Int64.random(in: -10_000...(3 * interval), using: &random),
                    status: statuses.randomElement(using: &random)!)
            }
            let quorum = quorums.randomElement(using: &random)!
            let judged =
                PlaceRule.verdict(place: place, at: at, status: status, others: others, intervalMs: interval, quorum: quorum)?.status
                ?? status
            let counted = PlaceRule.status(place: place, at: at, status: status, others: others, intervalMs: interval, quorum: quorum)
            #expect(counted == judged, "\(place) \(status) \(others) \(quorum)")
            if counted != judged { return }
        }
    }
}

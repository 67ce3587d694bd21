import Testing
import VitalsKit

@testable import DigestCore

/// digest and the place rule: each sample's status is the monitor's by `PlaceRule` at its time
/// (digest(1), PLACES), and the status figures count it. Every expected value is worked out by
/// hand from the rule's statement in vitals(7), PLACES, and digest(1)'s FACTS, sample by sample,
/// in the comments beside it: none is read off digest's output.
@Suite("digest: places judged by the place rule")
struct PlacesTests {
    /// One sample of `monitor` at `HH:MM[:SS]` from `agent` (nil: local).
    static func line(_ monitor: String, _ clock: String, _ status: String, _ agent: String?, latency: String = "null", extra: String = "")
        -> String
    {
        DigestInput.line(monitor, clock, status, latency: latency, extra: (agent.map { #","agent":"\#($0)""# } ?? "") + extra)
    }

    /// The issue's trace: six rounds a minute apart, tokyo sees web down at :00, paris up at :20.
    static let twoPlaces: [String] = (0..<6).flatMap { minute in
        [
            line("web", "10:0\(minute):00", "down", "tokyo", extra: #","reason":"connect","message":"connection refused""#),
            line("web", "10:0\(minute):20", "up", "paris", latency: "40", extra: #","message":"HTTP 200 in 40ms""#),
        ]
    }

    /// Three places 10 s apart each minute from 10:00 (tokyo :00, paris :10, nyc :20), five
    /// rounds: tokyo up in the first round and down after; paris down in rounds 2 and 3; nyc up.
    static let threePlaces: [String] = (0..<5).flatMap(threeRound)

    /// Round `round` (0 to 4) of `threePlaces`.
    static func threeRound(_ round: Int) -> [String] {
        let tokyo = round == 0 ? "up" : "down"
        let paris = round == 2 || round == 3 ? "down" : "up"
        let message = round == 0 ? "" : #","message":"HTTP 503""#
        return [
            line("api", "10:0\(round):00", tokyo, "tokyo", extra: message),
            line("api", "10:0\(round):10", paris, "paris", latency: "50"),
            line("api", "10:0\(round):20", "up", "nyc", latency: "30"),
        ]
    }

    /// Words of the facts in `--format text`.
    static func text(_ facts: DigestFacts) -> String { DigestText.render(facts, zone: Zone.parse("UTC")!) }

    @Test("the issue's trace: down at the first sample (only tokyo had spoken), then eleven partial checks: 0% up, no flapping")
    func twoPlaceTrace() throws {
        let web = try DigestInput.service(try DigestInput.facts(Self.twoPlaces), "web")
        // 10:00:00 tokyo down: no other place has spoken, so the sample's own status: down.
        // 10:00:20 paris up: tokyo's down of 10:00:00 is 20 s old, within two intervals (120 s):
        // two voting places, a majority of two is two, severities 2 and 0, the second worst up,
        // and a place fails: degraded, partial. So every later sample: 1 down, 11 partial.
        #expect(web.checks == 12)
        #expect(web.counts == [.down: 1, .degraded: 11])
        #expect(web.partialChecks == 11)
        // Up or degraded, a partial outage not counted: 0 of 12.
        #expect(web.uptimePercent == 0)
        // One outage, 10:00:00 to the next sample not failing (the partial one at 10:00:20): 20 s.
        // Not six outages starting and ending every minute: no flapping.
        #expect(web.outages == 1)
        #expect(web.outageMs == 20_000)
        #expect(web.outageSince == nil)
        #expect(web.longestOutage?.start == DigestInput.at("10:00:00") && web.longestOutage?.end == DigestInput.at("10:00:20"))
        // One partial outage from 10:00:20, going on to the window's end at the newest sample, 10:05:20: 5 min.
        #expect(web.partialOutages == 1)
        #expect(web.partialSince == DigestInput.at("10:00:20"))
        #expect(web.partialMs == 300_000)
        #expect(web.partialWords == "down from tokyo; up from paris")
        // Now: tokyo down at 10:05:00 and paris up at 10:05:20, both fresh: partial.
        #expect(web.status == .degraded && web.lastReason == "partial" && web.partialNow)
        #expect(web.lastMessage == "down from tokyo; up from paris")
        #expect(web.lastAt == DigestInput.at("10:05:20"))
        #expect(
            web.places == [
                PlaceFact(place: "paris", status: .up, at: DigestInput.at("10:05:20"), fresh: true),
                PlaceFact(place: "tokyo", status: .down, at: DigestInput.at("10:05:00"), fresh: true),
            ])
        // Latency over every sample: paris's six 40 ms (tokyo's downs have none).
        #expect(web.latencyChecks == 6 && web.latencyAvgMs == 40)
        let text = Self.text(try DigestInput.facts(Self.twoPlaces))
        #expect(text.hasPrefix("Digest of the 24 hours to 2026-01-27 10:05 UTC: 1 service, 12 checks, 0% up.\n"), "\(text)")
        #expect(
            text.contains(
                "web was down once for <1m (0% up) and has been partly unreachable since 10:00 (down from tokyo; up from paris)."),
            "\(text)")
    }

    @Test("three places: one failing is partial, two failing are a majority (down); --quorum all and any")
    func threePlaces() throws {
        let api = try DigestInput.service(try DigestInput.facts(Self.threePlaces), "api")
        // Majority (two of three), each sample with the others' newest votes:
        // round 0: all up: up, up, up.
        // round 1: 10:01:00 tokyo down, paris and nyc up: severities 2 0 0, the second worst up, a
        //   place fails: partial; 10:01:10 and 10:01:20 the same: partial.
        // round 2: 10:02:00 tokyo down (paris up 10:01:10, nyc up): partial; 10:02:10 paris down
        //   (tokyo down, nyc up): 2 2 0, the second worst down: down; 10:02:20 nyc up: down.
        // round 3: down, down, down. round 4: 10:04:00 tokyo down (paris down 10:03:10): down;
        //   10:04:10 paris up: partial; 10:04:20 nyc up: partial.
        // So U U U P P P P D D D D D D P P: 3 up, 6 partial, 6 down.
        #expect(api.counts == [.up: 3, .degraded: 6, .down: 6])
        #expect(api.partialChecks == 6)
        #expect(api.uptimePercent == 20)  // 3 of 15
        // The outage: 10:02:10 to 10:04:10 (the partial check that ends it): 2 min.
        #expect(api.outages == 1 && api.outageMs == 120_000 && api.outageSince == nil)
        // Partial: 10:01:00 to 10:02:10 (70 s), and 10:04:10 to the window's end 10:04:20 (10 s): 80 s, going on.
        #expect(api.partialOutages == 2 && api.partialMs == 80_000)
        #expect(api.partialSince == DigestInput.at("10:04:10"))
        #expect(api.partialWords == "down from tokyo; up from nyc, paris")
        #expect(api.status == .degraded && api.partialNow && api.lastMessage == "down from tokyo; up from nyc, paris")
        // 80 s is 1m (minutes, rounded down).
        #expect(
            Self.text(try DigestInput.facts(Self.threePlaces)).contains(
                "api was down once for 2m (20.0% up), was partly unreachable twice for 1m in total and has been partly "
                    + "unreachable again since 10:04 (down from tokyo; up from nyc, paris)."))

        // --quorum all: down only when all three fail, and nyc never does: from 10:01:00 every
        // check is partial (tokyo down, or tokyo and paris): 3 up and 12 partial, one partial outage
        // from 10:01:00 to the window's end 10:04:20: 200 s.
        let all = try DigestInput.service(try DigestInput.facts(Self.threePlaces, quorum: .all), "api")
        #expect(all.counts == [.up: 3, .degraded: 12] && all.partialChecks == 12 && all.outages == 0)
        #expect(all.partialOutages == 1 && all.partialMs == 200_000 && all.partialSince == DigestInput.at("10:01:00"))
        #expect(all.uptimePercent == 20)
        #expect(
            Self.text(try DigestInput.facts(Self.threePlaces, quorum: .all)).contains(
                "api has been partly unreachable since 10:01 (20.0% up; down from tokyo; up from nyc, paris)."))

        // --quorum any: the worst any fresh place sees: from 10:01:00 tokyo's down is always fresh,
        // so 3 up and 12 down, one outage from 10:01:00 going on (200 s); tokyo speaks for it now.
        let any = try DigestInput.service(try DigestInput.facts(Self.threePlaces, quorum: .any), "api")
        #expect(any.counts == [.up: 3, .down: 12] && any.partialChecks == 0 && any.partialOutages == 0)
        #expect(any.outages == 1 && any.outageMs == 200_000 && any.outageSince == DigestInput.at("10:01:00"))
        #expect(any.status == .down && any.lastMessage == "HTTP 503" && !any.partialNow)
        #expect(
            Self.text(try DigestInput.facts(Self.threePlaces, quorum: .any)).contains(
                "api has been down since 10:01 (20.0% up; HTTP 503)."))
    }

    @Test("a place that stops reporting is stale two intervals after its last sample, and the others decide")
    func stalePlace() throws {
        // tokyo down at 10:00:00 and 10:01:00, then silent; paris up at 10:00:30 and each minute to 10:04:30.
        func lines(_ extra: String) -> [String] {
            [
                Self.line("web", "10:00:00", "down", "tokyo", extra: extra), Self.line("web", "10:00:30", "up", "paris", extra: extra),
                Self.line("web", "10:01:00", "down", "tokyo", extra: extra),
            ] + ["10:01:30", "10:02:30", "10:03:30", "10:04:30"].map { Self.line("web", $0, "up", "paris", extra: extra) }
        }
        // 60 s: 10:00:00 down (alone); 10:00:30, 10:01:00, 10:01:30 partial; 10:02:30 partial (tokyo
        // 90 s old); 10:03:30 up (tokyo 150 s old, past 120 s: stale, paris alone); 10:04:30 up.
        let web = try DigestInput.service(try DigestInput.facts(lines("")), "web")
        #expect(web.counts == [.down: 1, .degraded: 4, .up: 2] && web.partialChecks == 4)
        #expect(abs(web.uptimePercent - 200 / 7.0) < 1e-9)  // 2 of 7: 28.6%
        #expect(web.outages == 1 && web.outageMs == 30_000)
        // 10:00:30 to 10:03:30: 3 min, over.
        #expect(web.partialOutages == 1 && web.partialMs == 180_000 && web.partialSince == nil)
        // Now tokyo's 10:01:00 is 210 s behind paris's 10:04:30: stale, so up, in paris's words.
        #expect(web.status == .up && !web.partialNow)
        #expect(web.places.map(\.fresh) == [true, false])  // paris, tokyo
        #expect(
            Self.text(try DigestInput.facts(lines(""))).contains(
                "web was down once for <1m (28.6% up) and was partly unreachable once for 3m (down from tokyo; up from paris)."))

        // check_interval 300 (s): tokyo stays fresh for ten minutes, so every paris sample is
        // partial: 1 down, 6 partial, 0% up; partial from 10:00:30 to the end 10:04:30 (4 min), now too.
        let slow = try DigestInput.service(try DigestInput.facts(lines(#","check_interval":300"#)), "web")
        #expect(slow.counts == [.down: 1, .degraded: 6] && slow.uptimePercent == 0)
        #expect(slow.partialOutages == 1 && slow.partialMs == 240_000 && slow.partialSince == DigestInput.at("10:00:30"))
        #expect(slow.status == .degraded && slow.partialNow && slow.places.map(\.fresh) == [true, true])
    }

    @Test("--agent: one place's samples with their own statuses; local is the samples that name none")
    func onePlace() throws {
        // tokyo alone: six downs from 10:00 to 10:05:00, the window's end: one outage of 5 min.
        let tokyo = try DigestInput.facts(Self.twoPlaces, agent: "tokyo")
        let web = try DigestInput.service(tokyo, "web")
        #expect(tokyo.samplesRead == 6 && tokyo.windowEnd == DigestInput.at("10:05:00") && tokyo.agent == "tokyo")
        #expect(web.counts == [.down: 6] && web.uptimePercent == 0 && web.places.isEmpty && web.partialChecks == 0)
        #expect(web.outages == 1 && web.outageMs == 300_000 && web.status == .down && web.lastMessage == "connection refused")
        // paris alone: six ups, 100%.
        let paris = try DigestInput.service(try DigestInput.facts(Self.twoPlaces, agent: "paris"), "web")
        #expect(paris.counts == [.up: 6] && paris.uptimePercent == 100 && paris.outages == 0 && !paris.hadTrouble)
        // The machine itself (no agent) beside paris: "local" in the words, and in --agent.
        let mixed = [
            Self.line("db", "10:00:00", "down", nil), Self.line("db", "10:00:20", "up", "paris"),
            Self.line("db", "10:01:00", "down", nil), Self.line("db", "10:01:20", "up", "paris"),
        ]
        #expect(try DigestInput.service(try DigestInput.facts(mixed), "db").partialWords == "down from local; up from paris")
        let local = try DigestInput.service(try DigestInput.facts(mixed, agent: "local"), "db")
        #expect(local.counts == [.down: 2] && local.places.isEmpty)
        // A place with no samples: nothing read, and the words say from where.
        let none = try DigestInput.facts(Self.twoPlaces, agent: "nyc")
        #expect(none.samplesRead == 0 && none.isEmpty)
        #expect(Self.text(none) == "No data: the input held no samples from nyc, so there is nothing to summarize.\n")
    }

    @Test("one place is today's digest exactly: naming an agent and an interval changes no fact")
    func onePlaceUnchanged() throws {
        // pay: up, down, down, up, error, degraded (one place), and a second monitor.
        let statuses = ["up", "down", "down", "up", "error", "degraded"]
        func lines(_ extra: String) -> [String] {
            let pay = statuses.enumerated().map { minute, status in
                Self.line("pay", "10:0\(minute):00", status, nil, latency: "\(10 + minute)", extra: extra)
            }
            return pay + [Self.line("api", "10:00:00", "up", nil, latency: "5", extra: extra)]
        }
        let plain = try DigestInput.facts(lines(""))
        #expect(try DigestInput.facts(lines(#","agent":"solo","check_interval":1"#)) == plain)
        #expect(try DigestInput.facts(lines(""), quorum: .any).services == plain.services)
        // And the figures are digest(1)'s: 3 of 6 up or degraded, 50%; outages 10:01-10:03 and 10:04-10:05 (3 min).
        let pay = try DigestInput.service(plain, "pay")
        #expect(pay.counts == [.up: 2, .down: 2, .error: 1, .degraded: 1] && abs(pay.uptimePercent - 50) < 1e-9)
        #expect(pay.outages == 2 && pay.outageMs == 180_000 && pay.status == .degraded && pay.places.isEmpty)
    }

    @Test("samples just before the window vote for the checks at its start: no outage made up where the window cuts")
    func windowStart() throws {
        // The window: 200 s to 10:05:20, from 10:02:00, tokyo's down. paris's up of 10:01:20, before
        // the window but 40 s before it (within two intervals), votes: partial, not an outage. So 8
        // checks (10:02:00 to 10:05:20), all partial: 0% up, no outage, one partial outage from
        // 10:02:00 to 10:05:20: 200 s. (Judged alone, 10:02:00 would be down: an outage of 20 s.)
        let end = DigestInput.at("10:05:20")
        let cut = try DigestInput.facts(Self.twoPlaces, now: end, window: 200_000)
        let web = try DigestInput.service(cut, "web")
        #expect(cut.samplesInWindow == 8 && web.counts == [.degraded: 8] && web.uptimePercent == 0)
        #expect(web.outages == 0 && web.partialOutages == 1 && web.partialMs == 200_000)
        #expect(web.partialSince == DigestInput.at("10:02:00"))
        #expect(Self.text(cut).contains("web has been partly unreachable since 10:02 (0% up; down from tokyo; up from paris)."))
        // The same without --now (the window ends at the newest sample, found at the end: a second
        // pass), and out of time order (sorted first).
        #expect(try DigestInput.facts(Self.twoPlaces, window: 200_000).services == cut.services)
        #expect(try DigestInput.facts(Self.twoPlaces.reversed(), window: 200_000).services == cut.services)
    }

    @Test("input out of time order is judged as sorted input is: places' files one after the other, or reversed")
    func anyOrder() throws {
        let sorted = try DigestInput.facts(Self.twoPlaces)
        let tokyoFirst = Self.twoPlaces.filter { $0.contains("tokyo") } + Self.twoPlaces.filter { $0.contains("paris") }
        let parisFirst = Self.twoPlaces.filter { $0.contains("paris") } + Self.twoPlaces.filter { $0.contains("tokyo") }
        #expect(try DigestInput.facts(tokyoFirst) == sorted)
        #expect(try DigestInput.facts(parisFirst) == sorted)
        #expect(try DigestInput.facts(Self.twoPlaces.reversed()) == sorted)
    }
}

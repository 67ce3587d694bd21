import Foundation
import Testing
import VitalsKit

/// A sample of `monitor` from `agent` at 10:00:00 plus `seconds`, with optional extra fields.
func placedSample(_ monitor: String, _ seconds: Double, _ status: String, agent: String?, extra: String = "") -> String {
    let at = traceTime(seconds)
    let agentField = agent.map { #","agent":"\#($0)""# } ?? ""
    let message = status == "up" ? "HTTP 200 in 20ms" : "connection refused"
    return
        #"{"type":"sample","monitor":"\#(monitor)","name":"\#(monitor.capitalized)","at":"\#(at)","status":"\#(status)","message":"\#(message)"\#(agentField)\#(extra)}"#
}

/// A `tick` record, as store-samples follow writes when nothing else happened: time passing.
func tick(_ seconds: Double) -> String { #"{"type":"tick","at":"\#(traceTime(seconds))","tool":"store-samples"}"# }

/// One round, marked as follow marks a stored batch.
func markedRound(_ id: String, _ lines: [String]) -> [String] {
    [#"{"type":"round_start","round":"\#(id)","tool":"store-samples","at":"2026-01-27T10:00:00.000Z"}"#] + lines
        + [#"{"type":"round_end","round":"\#(id)","tool":"store-samples","at":"2026-01-27T10:00:00.000Z","samples":\#(lines.count)}"#]
}

/// notify and places (notify(1), PLACES): each expected notification worked out by hand from the
/// rule (vitals(7), PLACES) and notify(1)'s words for it.
@Suite("notify: places that disagree never flap; cut off, silent and heartbeat", .hangGuard(minutes: 3))
struct NotifyPlacesTests {
    func notify(_ lines: [String], _ arguments: [String] = []) throws -> RunResult {
        try run("notify", arguments, stdin: lines.joined(separator: "\n") + "\n")
    }

    /// The issue's trace: tokyo sees web down at :00, paris sees it up at :20, six minutes.
    static var trace: [String] {
        (0..<6).flatMap { minute in
            [
                placedSample("web", Double(minute * 60), "down", agent: "tokyo"),
                placedSample("web", Double(minute * 60 + 20), "up", agent: "paris"),
            ]
        }
    }

    @Test("the two-place trace: one degraded (partial: down from tokyo) and nothing more, with or without a cooldown, marked or not")
    func twoPlaceTrace() throws {
        // tokyo's first sample is the monitor's first, from an agent: it waits for its places (an
        // interval, or a second place). paris reports 20 s later: two fresh places, a majority of
        // two is both, the worst both report is up, tokyo fails: degraded, partial. From then on
        // the same each round: nothing new.
        for arguments in [["--cooldown", "0s"], []] {
            let result = try notify(Self.trace, arguments)
            #expect(result.status == 0, "\(result.stderr)")
            let records = try result.records()
            let events = try result.events()
            #expect(records.count == 1, "\(arguments): \(events)")
            let record = try #require(records.first)
            #expect(record.string("event") == "degraded" && record.string("reason") == "partial")
            #expect(record.string("message") == "down from tokyo; up from paris")
            #expect(record.string("at") == traceTime(20) && record.string("monitor") == "web")
            #expect(record.string("previous_status") == nil, "first told: the monitor was unknown")
        }
        // As store-samples follow passes them on: each stored batch (here each sample) a marked round.
        let marked = Self.trace.enumerated().flatMap { index, line in markedRound("r\(index)", [line]) }
        #expect(try notify(marked, ["--cooldown", "0s"]).events() == ["degraded web \(traceTime(20))"])
    }

    @Test("a replay changes nothing: the state keeps each place's latest, so samples seen again are skipped")
    func replay() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("notify.json")
        #expect(try notify(Self.trace, ["--state", state]).records().count == 1)
        let again = try notify(Self.trace, ["--state", state, "--summary"])
        #expect(try again.records().isEmpty)
        #expect(again.stderr.contains("12 samples older than their monitor's last skipped"), "\(again.stderr)")
    }

    @Test("three places: one failing is partial (degraded), two failing a majority (down), all back up recovered")
    func threePlaces() throws {
        // Each minute a round: a at :00.0, b at :00.4, c at :00.8 (within notify's 2 s rounds).
        func round(_ minute: Int, _ statuses: [String]) -> [String] {
            zip(["a", "b", "c"], statuses).enumerated().map { index, pair in
                placedSample("m", Double(minute * 60) + Double(index) * 0.4, pair.1, agent: pair.0)
            }
        }
        // 10:00 all up (the monitor's first sample waits for its places; b and c report at once):
        // nothing to tell. 10:01 c down: one of three failing, fewer than the two a majority needs:
        // degraded, partial. 10:02 b down too: two of three: down. 10:03 all up: recovered.
        let lines =
            round(0, ["up", "up", "up"]) + round(1, ["up", "up", "down"]) + round(2, ["up", "down", "down"])
            + round(3, ["up", "up", "up"])
        let result = try notify(lines, ["--cooldown", "0s"])
        // Each round is told at its monitor's last sample in it (c's, at :00.8).
        #expect(try result.events() == ["degraded m \(traceTime(60.8))", "down m \(traceTime(120.8))", "recovered m \(traceTime(180.8))"])
        let records = try result.records()
        try #require(records.count == 3)
        #expect(records[0].string("message") == "down from c; up from a, b" && records[0].string("previous_status") == "up")
        // The episode began when c's outage did (10:01:00.8), the first of the places now not up.
        #expect(records[1].string("since") == traceTime(60.8) && records[1].string("previous_status") == "degraded")
        #expect(records[2].string("body") == "M is up again after 2m")
    }

    @Test("an agent that cannot reach anything: one 'cut off' notification and no per-monitor news; then back")
    func cutOff() throws {
        let monitors = ["a", "b", "c", "d"]
        var lines: [String] = []
        // Minute 0 and 1: tokyo and paris see all four up.
        for minute in 0...1 {
            lines += markedRound("t\(minute)", monitors.map { placedSample($0, Double(minute * 60), "up", agent: "tokyo") })
            lines += markedRound("p\(minute)", monitors.map { placedSample($0, Double(minute * 60 + 20), "up", agent: "paris") })
        }
        // Minute 2: tokyo sees all four down, paris up: tokyo is cut off (4 of 4, at least two and more than half).
        lines += markedRound("t2", monitors.map { placedSample($0, 120, "down", agent: "tokyo") })
        lines += markedRound("p2", monitors.map { placedSample($0, 140, "up", agent: "paris") })
        // Minute 3: still; minute 4: tokyo sees them up again: back.
        lines += markedRound("t3", monitors.map { placedSample($0, 180, "down", agent: "tokyo") })
        lines += markedRound("t4", monitors.map { placedSample($0, 240, "up", agent: "tokyo") })
        let result = try notify(lines, ["--cooldown", "0s"])
        #expect(try result.events() == ["place_cut_off a,b,c,d \(traceTime(120))", "place_back  \(traceTime(240))"])
        let records = try result.records()
        #expect(records.first?.string("body") == "tokyo is cut off: 4 of 4 monitors fail from there and not from other places")
        #expect(records.first?.string("place") == "tokyo" && records.first?.string("title") == "Agent CUT OFF")
        #expect(records.last?.string("body") == "tokyo reaches its monitors again after 2m")
    }

    @Test("silence: an agent quiet for three of its intervals is told silent once, and back when it reports")
    func silence() throws {
        // tokyo reports web each minute (00:00, 01:00, 02:00): its interval is learnt as 60 s.
        var lines = (0...2).map { placedSample("web", Double($0 * 60), "up", agent: "tokyo") }
        // Ticks: at 05:00, 3 min since its last: not more than three intervals; at 05:01, more: silent.
        lines += [tick(300), tick(301), tick(330)]
        // It reports at 06:00: back, after the 4 min since its last sample.
        lines.append(placedSample("web", 360, "up", agent: "tokyo"))
        let result = try notify(lines, ["--cooldown", "0s"])
        #expect(try result.events() == ["place_silent  \(traceTime(301))", "place_back  \(traceTime(360))"])
        let records = try result.records()
        #expect(records.first?.string("body") == "tokyo has sent nothing for 3m (it reports every 1m)", "\(records)")
        #expect(records.last?.string("body") == "tokyo reports again after 4m")
    }

    @Test("another place's clock ahead: the others are told silent once, not again after each of their reports")
    func clockAhead() throws {
        // tokyo and paris report each minute (intervals learnt: 60 s); paris's clock then jumps 14
        // minutes ahead (10:16:40): by the clock tokyo has sent nothing for 14m40s ("14m": whole
        // minutes, DurationText), so it is told
        // silent (at 10:16:40); its next sample (10:03:00) is back. Silence is counted from when a
        // place was last heard by the clock (10:16:40), so its reports at 10:04 and 10:05, heard
        // when paris said 10:17:40 and 10:18:40, keep it from being silent again while paris's
        // clock runs on. Before that rule it was told silent after each report (found by
        // scripts/soak's clock jump: 45 pairs in 15 minutes). Then tokyo stops: last heard at
        // 10:18:40, silent once paris's clock is more than 3 minutes past that: at 10:22:40.
        var lines = (0...2).flatMap {
            [placedSample("web", Double($0 * 60), "up", agent: "tokyo"), placedSample("db", Double($0 * 60), "up", agent: "paris")]
        }
        lines += [placedSample("db", 1000, "up", agent: "paris"), placedSample("web", 180, "up", agent: "tokyo")]
        lines += [placedSample("db", 1060, "up", agent: "paris"), placedSample("web", 240, "up", agent: "tokyo")]
        lines += [placedSample("db", 1120, "up", agent: "paris"), placedSample("web", 300, "up", agent: "tokyo")]
        lines += [1180, 1240, 1300, 1360].map { placedSample("db", Double($0), "up", agent: "paris") }
        let result = try notify(lines, ["--cooldown", "0s"])
        #expect(
            try result.events() == [
                "place_silent  \(traceTime(1000))", "place_back  \(traceTime(180))", "place_silent  \(traceTime(1360))",
            ])
        let records = try result.records()
        #expect(records.first?.string("body") == "tokyo has sent nothing for 14m (it reports every 1m)", "\(records)")
        #expect(records.last?.string("body") == "tokyo has sent nothing for 4m (it reports every 1m)", "\(records)")
        // Two silences of one place: two decisions, two ids (webhook receivers drop an id seen before).
        let ids = records.compactMap { $0.string("id") }
        #expect(ids.count == 3 && Set(ids).count == 3, "\(ids)")
    }

    @Test("an agent whose clock went back is still heard: its samples older than its last are skipped, and it is not told silent")
    func clockBack() throws {
        // paris's clock runs 10 minutes ahead for two reports (10:12:00, 10:13:00), then goes back
        // (10:04:00 on): those samples are older than its last and are skipped, but paris is heard
        // each time, so it is not told silent while tokyo's clock catches up with 10:13:00.
        // tokyo is told silent once when paris's clock leaps (10:12:00: 9 minutes since 10:03:00)
        // and back at its next report, as in the test above.
        var lines = (0...3).flatMap {
            [placedSample("web", Double($0 * 60), "up", agent: "tokyo"), placedSample("db", Double($0 * 60), "up", agent: "paris")]
        }
        lines += [720, 780].map { placedSample("db", Double($0), "up", agent: "paris") }
        for minute in 4...16 {
            lines += [
                placedSample("web", Double(minute * 60), "up", agent: "tokyo"),
                placedSample("db", Double(minute * 60), "up", agent: "paris"),
            ]
        }
        let result = try notify(lines, ["--cooldown", "0s"])
        #expect(try result.events() == ["place_silent  \(traceTime(720))", "place_back  \(traceTime(240))"], "\(result.stdout)")
    }

    @Test("a heartbeat that stops: down, reason silent, after three of its intervals; its next sample recovers it")
    func heartbeat() throws {
        let beat = #","kind":"heartbeat","check_interval":60"#
        let lines = [
            placedSample("backup", 0, "up", agent: nil, extra: beat), placedSample("backup", 60, "up", agent: nil, extra: beat),
            tick(200), tick(241), placedSample("backup", 300, "up", agent: nil, extra: beat),
        ]
        let result = try notify(lines, ["--cooldown", "0s"])
        // 04:01 is more than 3 × 60 s after 01:00: down since 02:00 (one interval after the last sample).
        #expect(try result.events() == ["down backup \(traceTime(241))", "recovered backup \(traceTime(300))"])
        let records = try result.records()
        #expect(records.first?.string("reason") == "silent" && records.first?.string("since") == traceTime(120))
        #expect(records.first?.string("message") == "no sample since 2026-01-27T10:01:00Z (one is expected every 1m)")
    }
}

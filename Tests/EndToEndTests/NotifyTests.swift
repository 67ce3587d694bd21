import FixtureServer
import Foundation
import Testing
import VitalsKit

/// notify's decisions, on traces whose expected notifications are worked out by hand in
/// each test's comments (t is seconds after 2026-01-27T10:00:00Z).
@Suite("notify: transitions, cooldowns, grouping, thresholds, repeats, mutes", .hangGuard(minutes: 2))
struct NotifyDecisionTests {
    func notify(_ lines: [String], _ arguments: [String] = []) throws -> RunResult {
        try run("notify", arguments, stdin: lines.joined(separator: "\n") + "\n")
    }

    @Test(
        "a monitor starts unknown: first seen degraded is news, first seen up is not; down, degraded, error and recovery are each notified once"
    )
    func transitions() throws {
        let result = try notify([
            sampleLine("api", 0, "up"), sampleLine("web", 0.1, "degraded"),  // unknown -> up: nothing; unknown -> degraded: told
            sampleLine("api", 60, "down"),  // api up -> down
            sampleLine("api", 120, "up"), sampleLine("web", 120.1, "up"),  // two recoveries in one round: grouped
            sampleLine("api", 180, "degraded"),  // api up -> degraded (its own key)
            sampleLine("api", 240, "error", message: "Request timeout after 5s"),  // degraded -> error: key api, last used at 60
            sampleLine("api", 300, "down"),  // error -> down: one condition, nothing
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            try result.events() == [
                "degraded web \(traceTime(0.1))", "down api \(traceTime(60))", "recovered api,web \(traceTime(120.1))",
                "degraded api \(traceTime(180))", "down api \(traceTime(240))",
            ])
        let records = try result.records()
        #expect(records[0].string("title") == "Monitor DEGRADED")
        #expect(records[0].string("key") == "web.degrading")
        #expect(records[0].string("previous_status") == nil, "nothing was known of web before")
        let down = records[1]
        #expect(down.string("type") == "notification")
        #expect(down.string("title") == "Monitor DOWN")
        #expect(down.string("body") == "Api is not responding")
        #expect(down.string("message") == "HTTP 503, expected 200-399")
        #expect(down.string("previous_status") == "up")
        #expect(down.string("since") == traceTime(60))
        #expect(down.string("key") == "api")
        #expect(records[2].string("title") == "2 services recovered")
        #expect(records[2].string("body") == "Api, Web")
        #expect(records[2].string("key") == "groupedRecovery")
        #expect(records[3].string("key") == "api.degrading")
        #expect(records[4].string("status") == "error")
        #expect(records[4].string("previous_status") == "degraded")
        #expect(records[4].string("message") == "Request timeout after 5s")
    }

    // Seed 000, 4 Data Model: HealthState has `unknown` (every service before its first check);
    // 6.3: checkAll "collects transition outcomes: transitioned to failure (down/error),
    // transitioned to degrading" and decides the notification from them. unknown -> down is a
    // transition to failure: a service already failing is news on the first run. A first
    // sample that is up is no failure: silent.
    @Test(
        "a monitor first seen down is news (isitup's unknown -> down); one first seen up is not; --baseline keeps the first sample as the baseline"
    )
    func unknownFirst() throws {
        let lines = [sampleLine("api", 0, "down"), sampleLine("web", 0.5, "up")]
        let records = try notify(lines).records()
        #expect(records.count == 1)
        #expect(records.first?.string("title") == "Monitor DOWN")
        #expect(records.first?.string("monitor") == "api")
        #expect(records.first?.string("key") == "api")
        #expect(records.first?.string("previous_status") == nil)
        #expect(records.first?.string("since") == traceTime(0))
        #expect(try notify(lines, ["--baseline"]).events() == [])
        // The next run of the same outage is no news: the state knows api is down.
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        #expect(try run("notify", ["--state", state], stdin: lines.joined(separator: "\n") + "\n").records().count == 1)
        let again = [sampleLine("api", 60, "down"), sampleLine("web", 60.5, "up")]
        #expect(try run("notify", ["--state", state], stdin: again.joined(separator: "\n") + "\n").records().isEmpty)
        #expect(try run("notify", ["--notify-initial"], stdin: "").status == 64, "the old option is gone: it is the default")
    }

    @Test("--cooldown-mode defer: 60 s per key; a change held back is told when the key's cooldown ends, if it still holds")
    func cooldown() throws {
        let result = try notify(
            [
                sampleLine("api", 0, "up"),
                sampleLine("api", 10, "down"),  // down (key api, used at 10)
                sampleLine("api", 20, "up"),  // recovered: recoveries have no cooldown
                sampleLine("api", 30, "down"),  // key api cooling down (30 - 10 < 60): held back
                sampleLine("api", 40, "degraded"),  // degraded: its own key api.degrading, free
                sampleLine("api", 50, "down"),  // key api still cooling down: held back
                sampleLine("api", 75, "down"),  // 75 - 10 = 65 >= 60: told now
                sampleLine("api", 80, "degraded"),  // down -> degraded; key api.degrading used at 40: held back
                sampleLine("api", 100, "degraded"),  // 100 - 40 = 60: told
            ], ["--cooldown-mode", "defer"])
        #expect(
            try result.events() == [
                "down api \(traceTime(10))", "recovered api \(traceTime(20))", "degraded api \(traceTime(40))",
                "down api \(traceTime(75))", "degraded api \(traceTime(100))",
            ])
        let records = try result.records()
        #expect(records[3].string("since") == traceTime(30), "api has not been up since 30")
        #expect(records[4].string("body") == "Api answers again, but degraded")
        // --cooldown 0s tells every change.
        let eager = try notify(
            [
                sampleLine("api", 0, "up"), sampleLine("api", 10, "down"), sampleLine("api", 20, "up"),
                sampleLine("api", 30, "down"),
            ], ["--cooldown", "0s"])
        #expect(try eager.events().count == 3)
    }

    @Test("grouping: monitors newly down in one round make one notification; one newly down while they are still down is told on its own")
    func grouping() throws {
        let lines = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("c", 0, "up"), sampleLine("d", 0, "up"),
            sampleLine("a", 60, "down"), sampleLine("b", 60.1, "down"), sampleLine("c", 60.2, "down"),  // one round: grouped
            sampleLine("d", 90, "down"),  // alone in its round: "Monitor DOWN", key d (free)
            sampleLine("a", 120, "up"), sampleLine("b", 120.1, "up"),  // two recoveries: grouped
            sampleLine("c", 150, "up"),  // one: alone
        ]
        let result = try notify(lines)
        #expect(
            try result.events() == [
                "down a,b,c \(traceTime(60.2))", "down d \(traceTime(90))",
                "recovered a,b \(traceTime(120.1))", "recovered c \(traceTime(150))",
            ])
        let records = try result.records()
        #expect(records[0].string("title") == "3 services down")
        #expect(records[0].string("body") == "A, B, C")
        #expect(records[0].string("key") == "groupedOutage")
        #expect(records[0]["added"] == nil, "no field of the groups that grew")
        #expect(records[1].string("title") == "Monitor DOWN")
        #expect(records[1].string("body") == "D is not responding")
        #expect(records[1].string("key") == "d")
        #expect(records[0]["monitor"] == nil, "a grouped record has no single monitor")
        // --group-min 0 never groups.
        #expect(
            try notify(Array(lines.prefix(7)), ["--group-min", "0"]).events()
                == ["down a \(traceTime(60))", "down b \(traceTime(60.1))", "down c \(traceTime(60.2))"])
        // --group-min 4: three are not enough.
        #expect(try notify(Array(lines.prefix(7)), ["--group-min", "4"]).records().count == 3)
    }

    @Test("a round is --group-wait long by the samples' times: failures 5 s apart are two rounds, or one with --group-wait 10s")
    func rounds() throws {
        let lines = [sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("a", 60, "down"), sampleLine("b", 65, "down")]
        #expect(try notify(lines).events() == ["down a \(traceTime(60))", "down b \(traceTime(65))"])
        #expect(try notify(lines, ["--group-wait", "10s"]).events() == ["down a,b \(traceTime(65))"])
    }

    @Test("--failure-threshold 3 --success-threshold 2 damp a flapping monitor")
    func thresholds() throws {
        let lines = [
            sampleLine("api", 0, "up"),
            sampleLine("api", 10, "down"), sampleLine("api", 20, "down"), sampleLine("api", 30, "up"),  // 2 failures, then broken
            sampleLine("api", 40, "down"), sampleLine("api", 50, "down"), sampleLine("api", 60, "down"),  // 3 in a row: down at 60
            sampleLine("api", 70, "up"), sampleLine("api", 80, "down"),  // 1 up: not recovered
            sampleLine("api", 90, "up"), sampleLine("api", 100, "up"),  // 2 up: recovered at 100
        ]
        let result = try notify(lines, ["--failure-threshold", "3", "--success-threshold", "2"])
        #expect(try result.events() == ["down api \(traceTime(60))", "recovered api \(traceTime(100))"])
        let records = try result.records()
        #expect(records[0].string("since") == traceTime(40), "the outage began with the first of the three failures")
        #expect(records[1].int("duration_ms") == 60_000, "40 to 100")
        // Failed checks in the outage: the three that confirmed it (40, 50, 60) and 80's.
        #expect(records[1].string("body") == "Api is up again after 1m, 4 failed checks")
        #expect(records[1].int("failed_checks") == 4 && records[1].int("checks_not_up") == 4)
        // The defaults (1 and 1, isitup's) tell every flap that the cooldown lets through.
        #expect(try notify(lines).events().count > 2)
    }

    /// `line` with an anomaly object as detect-anomaly writes it, in the episode `id` at `state`.
    func inEpisode(_ line: String, _ state: String, id: Int = 1) -> String {
        let verdict = state == "end" ? "stable" : "degrading"
        return String(line.dropLast()) + ",\"anomaly\":{\"verdict\":\"\(verdict)\",\"detector\":\"envelope\",\"score\":0.1,"
            + "\"episode\":{\"state\":\"\(state)\",\"id\":\(id),\"started_at\":\"2026-01-27T10:01:00.000Z\",\"samples\":1,"
            + "\"duration_ms\":0,\"peak\":0.8}}}"
    }

    // By hand, with --failure-threshold 3 --success-threshold 3: episode 1 begins at 60 (told at
    // once: the detector judged it), holds 120 and 180 (nothing new), ends at 240 (recovered at
    // once); episode 2 the same from 300 to 420 (api.degrading last used at 60: no cooldown); at
    // 480 a degraded sample with no episode (a probe's own) waits for the threshold, and the up at
    // 540 breaks its streak. The same statuses without anomaly objects follow the thresholds:
    // degraded at 180 (since 60, the first of three), and never 3 up samples in a row after it.
    @Test(
        "an anomaly episode is one degradation: told at its onset, nothing for the samples inside it, recovered at its end, whatever the thresholds"
    )
    func episodes() throws {
        let plain = [
            sampleLine("api", 0, "up"),
            sampleLine("api", 60, "degraded"), sampleLine("api", 120, "degraded"), sampleLine("api", 180, "degraded"),
            sampleLine("api", 240, "up"),
            sampleLine("api", 300, "degraded"), sampleLine("api", 360, "degraded"), sampleLine("api", 420, "up"),
            sampleLine("api", 480, "degraded"), sampleLine("api", 540, "up"),
        ]
        var marked = plain
        marked[1] = inEpisode(plain[1], "onset")
        marked[2] = inEpisode(plain[2], "ongoing")
        marked[3] = inEpisode(plain[3], "ongoing")
        marked[4] = inEpisode(plain[4], "end")
        marked[5] = inEpisode(plain[5], "onset", id: 2)
        marked[6] = inEpisode(plain[6], "ongoing", id: 2)
        marked[7] = inEpisode(plain[7], "end", id: 2)
        let thresholds = ["--failure-threshold", "3", "--success-threshold", "3"]
        let result = try notify(marked, thresholds)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            try result.events() == [
                "degraded api \(traceTime(60))", "recovered api \(traceTime(240))",
                "degraded api \(traceTime(300))", "recovered api \(traceTime(420))",
            ])
        let records = try result.records()
        #expect(records[0].string("since") == traceTime(60))
        #expect(records[1].int("duration_ms") == 180_000, "60 to 240")
        #expect(try notify(plain, thresholds).events() == ["degraded api \(traceTime(180))"])
        // An episode whose onset notify never saw (it began before notify's first sample, or the
        // line was filtered out) is not told by its samples inside it.
        let joined = [sampleLine("api", 0, "up")] + (1...3).map { inEpisode(sampleLine("api", Double($0) * 60, "degraded"), "ongoing") }
        #expect(try notify(joined, thresholds).events() == [])
        // With the defaults (1 and 1) the episodes make the same notifications as their statuses.
        #expect(try notify(marked).events() == (try notify(plain).events()))
        #expect(try notify(marked).events().count == 6)
    }

    @Test("--repeat-interval re-sends a still-open outage")
    func repeats() throws {
        let result = try notify(
            [
                sampleLine("api", 0, "up"), sampleLine("api", 10, "down"), sampleLine("api", 40, "down"),
                sampleLine("api", 70, "down"),  // 70 - 10 = 60: still down
                sampleLine("api", 100, "down"),  // 100 - 70 = 30: nothing
                sampleLine("api", 130, "down"),  // 130 - 70 = 60: still down
                sampleLine("api", 140, "up"),
            ], ["--repeat-interval", "1m"])
        #expect(
            try result.events() == [
                "down api \(traceTime(10))", "still_down api \(traceTime(70))",
                "still_down api \(traceTime(130))", "recovered api \(traceTime(140))",
            ])
        let records = try result.records()
        #expect(records[1].string("title") == "Monitor still DOWN")
        // Down since 10; failed checks by 70: 10, 40, 70.
        #expect(records[1].string("body") == "Api has been down for 1m, 3 failed checks")
    }

    @Test("a maintenance window mutes a monitor; what still holds after it is told")
    func mutes() throws {
        let lines = [
            sampleLine("api", 0, "up"), sampleLine("web", 0, "up"),
            sampleLine("api", 40, "down"), sampleLine("web", 40.5, "down"),  // api muted (30 to 90), web told alone
            sampleLine("api", 50, "up"), sampleLine("api", 60, "down"),  // muted
            sampleLine("api", 100, "down"),  // the window is over: told (since 60)
            sampleLine("api", 110, "up"),
        ]
        let expected = ["down web \(traceTime(40.5))", "down api \(traceTime(100))", "recovered api \(traceTime(110))"]
        let result = try notify(lines, ["--mute", "api@2026-01-27T10:00:30Z/1m"])
        #expect(try result.events() == expected)
        #expect(try result.records()[1].string("since") == traceTime(60))
        // The same from a file, with a pattern and a comment.
        let scratch = try ScratchDirectory()
        let file = try scratch.write("mutes", "# nightly maintenance\nap*,db@2026-01-27T10:00:30Z/2026-01-27T10:01:30Z\n")
        #expect(try notify(lines, ["--mute-file", file]).events() == expected)
        // A malformed window is a usage error.
        let bad = try notify(lines, ["--mute", "api@yesterday/1h"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("not an RFC 3339 time"))
    }

    @Test("bad lines are reported with file and line; the rest is still decided; exit 2")
    func badLines() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write(
            "trace.ndjson",
            [
                sampleLine("api", 0, "up"), "{not json", #"{"type":"sample","at":"2026-01-27T10:00:05Z","status":"up"}"#,
                #"{"type":"anomaly","monitor":"api"}"#, sampleLine("api", 10, "down"),
            ].joined(separator: "\n") + "\n")
        let result = try run("notify", [file])
        #expect(result.status == 2)
        #expect(result.stderr.contains("notify: \(file):2: not valid JSON: expected a field name in double quotes at column 2\n"))
        #expect(result.stderr.contains("notify: \(file):3: sample has no 'monitor'\n"))
        #expect(!result.stderr.contains(":4:"), "records of other types are skipped silently")
        #expect(try result.events() == ["down api \(traceTime(10))"])
    }

    @Test("--exit-status: 1 when something was notified, 0 when nothing was")
    func exitStatus() throws {
        #expect(try notify([sampleLine("api", 0, "up"), sampleLine("api", 10, "down")], ["--exit-status"]).status == 1)
        #expect(try notify([sampleLine("api", 0, "up"), sampleLine("api", 10, "up")], ["--exit-status"]).status == 0)
    }
}

/// notify's state across runs: cron runs behave like one stream; dry runs change nothing.
@Suite("notify: state, split runs, dry runs, streaming", .serialized, .hangGuard(minutes: 2))
struct NotifyStateTests {
    /// A trace of 12 cycles, 30 s apart, of three monitors: an outage of two (grouped), a
    /// third joining it, flaps inside cooldowns, recoveries.
    static let cycles: [[String]] = {
        let pattern: [(String, [String])] = [
            ("a", ["up", "down", "down", "down", "up", "down", "up", "up", "down", "down", "down", "up"]),
            ("b", ["up", "down", "down", "up", "up", "up", "up", "degraded", "degraded", "up", "up", "up"]),
            ("c", ["up", "up", "down", "down", "down", "up", "up", "up", "up", "up", "down", "up"]),
        ]
        return (0..<12).map { cycle in
            pattern.enumerated().map { index, item in sampleLine(item.0, Double(cycle * 30) + Double(index) * 0.2, item.1[cycle]) }
        }
    }()

    @Test("a trace split into one run per cycle gives the same notifications as one run")
    func splitRuns() throws {
        let whole = try run("notify", [], stdin: NotifyStateTests.cycles.flatMap { $0 }.joined(separator: "\n") + "\n")
        #expect(whole.status == 0)
        #expect(try whole.records().count >= 6, "the trace exercises grouping, cooldown and recovery: \(whole.stdout)")
        let scratch = try ScratchDirectory()
        var pieces: [String] = []
        for cycle in NotifyStateTests.cycles {
            let part = try run("notify", ["--state", scratch.path("state.json")], stdin: cycle.joined(separator: "\n") + "\n")
            #expect(part.status == 0, "\(part.stderr)")
            pieces += part.lines
        }
        #expect(pieces == whole.lines)
        // The state file is private.
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.path("state.json"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test("samples a monitor already had are skipped, so overlapping replays notify once")
    func overlappingReplays() throws {
        let scratch = try ScratchDirectory()
        let all = NotifyStateTests.cycles.flatMap { $0 }
        let first = try run("notify", ["--state", scratch.path("s.json")], stdin: all.prefix(18).joined(separator: "\n") + "\n")
        let second = try run("notify", ["--state", scratch.path("s.json"), "--summary"], stdin: all.joined(separator: "\n") + "\n")
        let once = try run("notify", [], stdin: all.joined(separator: "\n") + "\n")
        #expect(first.lines + second.lines == once.lines)
        #expect(second.stderr.contains("18 samples older than their monitor's last skipped"))
    }

    @Test("store-samples export | notify --dry-run --state /dev/null replays history; --dry-run leaves a state file as it was")
    func dryRun() throws {
        let scratch = try ScratchDirectory()
        let trace = try scratch.write("trace.ndjson", NotifyStateTests.cycles.flatMap { $0 }.joined(separator: "\n") + "\n")
        let reference = try run("notify", [trace])
        let replay = try shell(
            "store-samples --db vitals.db -q trace.ndjson && store-samples --db vitals.db export --since 7d --now 2026-01-28T00:00:00Z | notify --dry-run --state /dev/null --to 'json://127.0.0.1:9/never'",
            directory: scratch.url)
        #expect(replay.status == 0, "\(replay.stderr)")
        let records = try replay.records()
        #expect(try replay.events() == reference.events())
        #expect(
            records.allSatisfy {
                $0["deliveries"]
                    == .array([
                        .object(
                            JSONObject([
                                JSONField("channel", .string("json://127.0.0.1:9/never")), JSONField("result", .string("dry_run")),
                                JSONField("attempts", .integer(0)), JSONField("code", .null), JSONField("error", .null),
                            ]))
                    ])
            })
        var info = stat()
        #expect(stat("/dev/null", &info) == 0 && (info.st_mode & S_IFMT) == S_IFCHR, "/dev/null is still a device")
        // A real state file is read but not written.
        let state = scratch.path("state.json")
        _ = try run("notify", ["--state", state], stdin: NotifyStateTests.cycles[0].joined(separator: "\n") + "\n")
        let before = try Data(contentsOf: URL(fileURLWithPath: state))
        let dry = try run("notify", ["--state", state, "--dry-run"], stdin: NotifyStateTests.cycles[1].joined(separator: "\n") + "\n")
        #expect(try dry.records().count == 1, "cycle 1 after cycle 0: a and b newly down, grouped")
        #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == before)
        // Without a state file nothing persists either: the same input again is a fresh baseline.
        #expect(!FileManager.default.fileExists(atPath: scratch.path("state.json.tmp")))
    }

    @Test("a state file that is not notify's is refused with words, and left alone")
    func foreignState() throws {
        let scratch = try ScratchDirectory()
        let state = try scratch.write("state.json", "{\"hello\": 1}\n")
        let result = try run("notify", ["--state", state], stdin: sampleLine("api", 0, "up") + "\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains("is not notify state"))
        #expect(try String(contentsOfFile: state, encoding: .utf8) == "{\"hello\": 1}\n")
        let newer = try scratch.write("newer.json", "{\"version\": 99}\n")
        #expect(try run("notify", ["--state", newer], stdin: "").stderr.contains("newer than this notify understands"))
    }

    @Test("SIGTERM while a delivery hangs: exit 143, the notification written as pending and kept in the state")
    func stopWhileDelivering() throws {
        let server = try FixtureServer()
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let hook = "json://127.0.0.1:\(server.port)/hang"
        let tool = try RunningTool("notify", ["--group-wait", "200ms", "--state", state, "--to", hook])
        let lines = [sampleLine("a", 0, "up"), sampleLine("a", 30, "down")]
        tool.input.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        // Wait for the delivery itself: the server has the request and will never answer.
        let deadline = Date().addingTimeInterval(20)
        while server.requests(for: "/hang").isEmpty && Date() < deadline { usleep(10_000) }
        #expect(server.requests(for: "/hang").count == 1)
        let end = tool.stop(SIGTERM)
        #expect(end.status == 143)
        guard case .object(let record) = try JSONParser.parse(end.rest.split(separator: "\n").first.map(String.init) ?? "") else {
            throw TestFailure("no record: \(end.rest) \(end.stderr)")
        }
        #expect(record["deliveries"]?.arrayValue?.first?.objectValue?["result"] == .string("pending"))
        let saved = try String(contentsOfFile: state, encoding: .utf8)
        #expect(saved.contains(record.string("id")!), "the pending delivery is in the state file")
    }

    @Test("streaming: a round closes when the input pauses for --group-wait, and its notification is written at once")
    func streaming() throws {
        let tool = try RunningTool("notify", ["--group-wait", "300ms"])
        let lines = [sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("a", 30, "down"), sampleLine("b", 30.1, "down")]
        tool.input.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        // The input stays open: only the pause can close the round.
        let line = try #require(tool.readLine())
        guard case .object(let record) = try JSONParser.parse(line) else { throw TestFailure("not a record: \(line)") }
        #expect(record.string("event") == "down")
        #expect(record.string("title") == "2 services down")
        let end = tool.stop(SIGTERM)
        #expect(end.status == 143)
    }
}

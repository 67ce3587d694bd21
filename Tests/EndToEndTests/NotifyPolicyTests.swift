import Foundation
import Testing
import VitalsKit

/// A sample of `monitor` at 10:00:00 plus `minute` minutes, naming its parents when it has some.
func dependentSample(_ monitor: String, minute: Int, _ status: String, parents: [String] = []) -> String {
    let field = parents.isEmpty ? "" : #","depends_on":[\#(parents.map { "\"\($0)\"" }.joined(separator: ","))]"#
    return placedSample(monitor, Double(minute * 60), status, agent: nil, extra: field)
}

/// notify's alert policy (issue 38): dependencies, escalation by age, fallbacks, maintenance from a
/// script, reminders with a cap. Every expected notification is worked out by hand from the rules in
/// notify(1), DECISIONS, before the tool ran.
@Suite("notify: dependencies, escalation, fallback, mutes from a script, capped reminders", .serialized, .hangGuard(minutes: 3))
struct NotifyPolicyTests {
    func notify(_ lines: [String], _ arguments: [String] = []) throws -> RunResult {
        try run("notify", arguments, stdin: lines.joined(separator: "\n") + "\n")
    }

    /// A gateway and three services behind it: api and web depend on gw, worker on api. One marked
    /// round a minute, every monitor probed in each.
    static var gatewayTrace: [String] {
        let rounds: [[String: String]] = [
            ["gw": "up", "api": "up", "web": "up", "worker": "up"],  // 10:00
            ["gw": "down", "api": "down", "web": "down", "worker": "down"],  // 10:01 the gateway fails, and all behind it
            ["gw": "down", "api": "down", "web": "down", "worker": "down"],  // 10:02
            ["gw": "up", "api": "up", "web": "down", "worker": "up"],  // 10:03 back; web still fails
            ["gw": "up", "api": "up", "web": "down", "worker": "up"],  // 10:04
            ["gw": "down", "api": "down", "web": "down", "worker": "down"],  // 10:05 the gateway again
            ["gw": "down", "api": "down", "web": "up", "worker": "down"],  // 10:06 web recovers behind a down gateway
            ["gw": "up", "api": "up", "web": "up", "worker": "up"],  // 10:07 all up
        ]
        let parents = ["gw": [], "api": ["gw"], "web": ["gw"], "worker": ["api"]]
        return rounds.enumerated().flatMap { minute, statuses in
            markedRound(
                "r\(minute)",
                ["gw", "api", "web", "worker"].map { dependentSample($0, minute: minute, statuses[$0]!, parents: parents[$0]!) })
        }
    }

    @Test(
        "a gateway and three services: one notification for the gateway naming its dependants; a child still failing after is told; told failures recover"
    )
    func gatewayAndThreeServices() throws {
        let scratch = try ScratchDirectory()
        let hook = try webhookServer(scratch)
        let result = try notify(Self.gatewayTrace, ["--to", "json://\(hook.hostPort)/hook", "--summary"])
        #expect(result.status == 0, "\(result.stderr)")
        // 10:01 gw down: api and web (parent gw down) and worker (parent api down) are held; the
        // gateway's notification counts them: api, web, and worker behind api = 3.
        // 10:03 gw recovers (down since 10:01, failed at 10:01 and 10:02); web is still down with no
        // parent down: told now, in the same round. api and worker were never told: nothing.
        // 10:05 gw down again: api, worker held again; web was told and is still down (nothing new);
        // the gateway's dependants: api, web, worker = 3.
        // 10:06 web recovers: its failure was told, so its recovery is, gateway down or not
        // (down since 10:01; failed at 10:01 to 10:05 = 5 checks).
        // 10:07 gw recovers (since 10:05; 10:05 and 10:06 = 2 failed checks); api and worker recover
        // untold, as their failures were.
        #expect(
            try result.events() == [
                "down gw \(traceTime(60))",
                "down web \(traceTime(180))", "recovered gw \(traceTime(180))",
                "down gw \(traceTime(300))",
                "recovered web \(traceTime(360))",
                "recovered gw \(traceTime(420))",
            ])
        let bodies = try result.records().map { $0.string("body") ?? "" }
        #expect(
            bodies == [
                "Gw is not responding; 3 dependants affected",
                "Web is not responding", "Gw is up again after 2m, 2 failed checks",
                "Gw is not responding; 3 dependants affected",
                "Web is up again after 5m, 5 failed checks",
                "Gw is up again after 2m, 2 failed checks",
            ])
        #expect(try result.records().first?.int("dependants") == 3)
        // Held: api, web, worker at 10:01; api, worker at 10:05.
        #expect(result.stderr.contains("5 failures held behind a failing parent"), "\(result.stderr)")
        // The receiver got the same six, in order.
        #expect(try hook.log().compactMap { try JSONParser.parse($0.string("body") ?? "").objectValue?.string("body") } == bodies)
    }

    @Test("a cycle in depends_on is reported with its line and set aside: no failure is held by it")
    func cycleInSamples() throws {
        let lines = [
            dependentSample("a", minute: 0, "down", parents: ["b"]),
            dependentSample("b", minute: 0, "down", parents: ["a"]),
        ]
        let result = try notify(lines)
        #expect(result.status == 2)
        #expect(result.stderr.contains("<stdin>:2: depends_on makes a cycle (b -> a -> b)"), "\(result.stderr)")
        // a's parent b was not known down when a came; b's parents are set aside: both are told.
        #expect(try result.events() == ["down a,b \(traceTime(0))"])
    }

    /// api down from 10:00 to 10:39 (a sample a minute), up at 10:40; down again 10:50 to 10:55, up at 10:56.
    static var longOutage: [String] {
        (0...56).map { minute in
            dependentSample("api", minute: minute, (0..<40).contains(minute) || (50..<56).contains(minute) ? "down" : "up")
        }
    }

    @Test(
        "escalation: a channel with after=30m hears of an outage once it is 30 minutes old, by webhook and by mail, and of its recovery; a short one never"
    )
    func escalation() throws {
        let scratch = try ScratchDirectory()
        let hook = try webhookServer(scratch)
        let mailScratch = try ScratchDirectory()
        let smtp = try PythonPeer("smtp_server.py", ["--log", mailScratch.path("log.ndjson")], scratch: mailScratch)
        let result = try notify(
            Self.longOutage,
            [
                "--to", "json://\(hook.hostPort)/now", "--to", "json://\(hook.hostPort)/late?after=30m",
                "--to", "mailto://\(smtp.hostPort)?to=oncall@example.com&tls=none&after=30m", "--repeat-interval", "10m",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let posts = try hook.log().map { post -> String in
            let body = try JSONParser.parse(post.string("body") ?? "").objectValue
            return "\(post.string("path") ?? "") \(body?.string("event") ?? "") \(body?.string("at") ?? "") \(body?.string("body") ?? "")"
        }
        // /now: down at 10:00, reminders every 10 minutes (10:10, 10:20, 10:30), recovered at 10:40
        // (40 failed checks, 10:00 to 10:39); the second outage down at 10:50 and up at 10:56
        // (6 failed checks, 10:50 to 10:55).
        // /late (after=30m): once, at 10:30, the first sample at which the outage (since 10:00) is
        // 30 minutes old; failed checks 10:00 to 10:30 = 31; no reminders; its recovery at 10:40.
        // The second outage lasts 6 minutes: never told there, nor its end.
        // Channels deliver side by side: each path's posts are in order, not the two paths together.
        #expect(
            posts.filter { $0.hasPrefix("/now ") } == [
                "/now down \(traceTime(0)) Api is not responding",
                "/now still_down \(traceTime(600)) Api has been down for 10m, 11 failed checks",
                "/now still_down \(traceTime(1200)) Api has been down for 20m, 21 failed checks",
                "/now still_down \(traceTime(1800)) Api has been down for 30m, 31 failed checks",
                "/now recovered \(traceTime(2400)) Api is up again after 40m, 40 failed checks",
                "/now down \(traceTime(3000)) Api is not responding",
                "/now recovered \(traceTime(3360)) Api is up again after 6m, 6 failed checks",
            ], "\(posts)")
        #expect(
            posts.filter { $0.hasPrefix("/late") } == [
                "/late down \(traceTime(1800)) Api has been down for 30m, 31 failed checks",
                "/late recovered \(traceTime(2400)) Api is up again after 40m, 40 failed checks",
            ], "\(posts)")
        // The mail channel, reserved like /late: the same two.
        let subjects = try smtp.log().compactMap { message in
            message.string("data")?.split(separator: "\r\n").first { $0.hasPrefix("Subject: ") }.map(String.init)
        }
        #expect(
            subjects == [
                "Subject: Monitor DOWN: Api has been down for 30m, 31 failed checks",
                "Subject: Monitor RECOVERED: Api is up again after 40m, 40 failed checks",
            ], "\(subjects)")
        let escalated = try result.records().first { $0["escalated_after_ms"] != nil }
        #expect(escalated?.int("escalated_after_ms") == 1_800_000 && escalated?.int("failed_checks") == 31)
    }

    @Test("a delivery that failed for good goes to the fallback channel, which is told the recovery too and nothing else")
    func fallback() throws {
        let scratch = try ScratchDirectory()
        let hook = try webhookServer(scratch, scripts: ["/hook=400"])
        let mailScratch = try ScratchDirectory()
        let smtp = try PythonPeer("smtp_server.py", ["--log", mailScratch.path("log.ndjson")], scratch: mailScratch)
        let lines = [
            dependentSample("api", minute: 0, "up"), dependentSample("db", minute: 0, "up"),
            dependentSample("api", minute: 1, "down"), dependentSample("api", minute: 2, "up"),
            dependentSample("db", minute: 3, "down"),
        ]
        let result = try notify(
            lines,
            [
                "--to", "json://\(hook.hostPort)/hook?fallback=pager", "--to",
                "pager=mailto://\(smtp.hostPort)?to=oncall@example.com&tls=none",
            ])
        // api's down: the hook answers 400 (refused for good): mailed instead. Its recovery: the hook
        // takes it (200), and the mail channel, told of the failure, is told of the recovery too.
        // db's down: the hook takes it; the fallback hears nothing.
        #expect(result.status == 2, "one delivery failed: \(result.stderr)")
        let records = try result.records()
        #expect(try result.events() == ["down api \(traceTime(60))", "recovered api \(traceTime(120))", "down db \(traceTime(180))"])
        let first = records[0]["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(first.map { $0.string("result") ?? "" } == ["failed", "delivered"])
        #expect(first.last?.string("fallback_for") == "json://\(hook.hostPort)/hook?fallback=pager")
        #expect(records[1]["deliveries"]?.arrayValue?.count == 2 && records[2]["deliveries"]?.arrayValue?.count == 1)
        let subjects = try smtp.log().compactMap { message in
            message.string("data")?.split(separator: "\r\n").first { $0.hasPrefix("Subject: ") }.map(String.init)
        }
        #expect(
            subjects == [
                "Subject: Monitor DOWN: Api is not responding", "Subject: Monitor RECOVERED: Api is up again after 1m, 1 failed check",
            ])
    }

    @Test(
        "a deploy muted from a script while a pipeline runs: mute add does not wait for the running notify, which applies it at the next round"
    )
    func deployMutedFromAScript() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("notify.json")
        let live = try RunningTool("notify", ["--state", state])
        func send(_ lines: [String]) { live.input.write(Data((lines.joined(separator: "\n") + "\n").utf8)) }
        send(markedRound("r0", [dependentSample("api", minute: 0, "up"), dependentSample("web", minute: 0, "up")]))
        send(markedRound("r1", [dependentSample("api", minute: 1, "down"), dependentSample("web", minute: 1, "up")]))
        #expect(live.readLineSkippingMarks()?.contains(#""event":"down""#) == true, "api's outage is told")
        send(markedRound("r2", [dependentSample("api", minute: 2, "up"), dependentSample("web", minute: 2, "up")]))
        #expect(live.readLineSkippingMarks()?.contains(#""event":"recovered""#) == true)
        // The deploy script, while notify runs and holds the state's lock: api muted 10:03 to 10:33.
        let added = try run(
            "notify", ["--state", state, "mute", "add", "api", "--from", traceTime(180), "--for", "30m", "--reason", "deploy 4.2"])
        #expect(added.status == 0, "\(added.stderr)")
        let window = try #require(try added.records().first)
        #expect(
            window.string("type") == "maintenance" && window.string("start") == traceTime(180) && window.string("end") == traceTime(1980))
        #expect(window.string("reason") == "deploy 4.2")
        // 10:04 api down (the deploy): muted. 10:05 web down: told, alone. 10:06 api up again:
        // nothing (the channel was last told up). 10:40, after the window, api down: told.
        send(markedRound("r4", [dependentSample("api", minute: 4, "down"), dependentSample("web", minute: 4, "up")]))
        send(markedRound("r5", [dependentSample("api", minute: 5, "down"), dependentSample("web", minute: 5, "down")]))
        let next = try #require(live.readLineSkippingMarks())
        #expect(next.contains(#""event":"down""#) && next.contains(#""monitor":"web""#) && !next.contains(#""monitor":"api""#), "\(next)")
        send(markedRound("r6", [dependentSample("api", minute: 6, "up"), dependentSample("web", minute: 6, "down")]))
        send(markedRound("r40", [dependentSample("api", minute: 40, "down"), dependentSample("web", minute: 40, "down")]))
        let after = try #require(live.readLineSkippingMarks())
        #expect(after.contains(#""monitor":"api""#) && after.contains(#""at":"\#(traceTime(2400))""#), "\(after)")
        try live.input.close()
        let ended = live.stop(SIGTERM)
        #expect(ended.status == 0 || ended.status == 143, "\(ended.stderr)")
        // The list, the removal, and what stays on record; the clock is --now.
        let at = ["--state", state, "--now", traceTime(600)]
        #expect(try run("notify", at + ["mute", "list"]).records().map { $0.string("id") } == [window.string("id")])
        let removed = try run("notify", at + ["mute", "remove", "api"])
        #expect(removed.status == 0 && removed.stdout.contains(#""removed":true"#), "\(removed.stdout)")
        #expect(try run("notify", at + ["mute", "list"]).records().isEmpty)
        #expect(try run("notify", at + ["mute", "list", "--all"]).records().map { $0.string("end") } == [traceTime(600)])
        let unknown = try run("notify", at + ["mute", "remove", "nothing"])
        #expect(unknown.status == 2 && unknown.stderr.contains("no mute has the id nothing"), "\(unknown.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: state + ".mutes")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let noFor = try run("notify", ["--state", state, "mute", "add", "api"])
        #expect(noFor.status == 64 && noFor.stderr.contains("--for"), "\(noFor.stderr)")
    }

    @Test("--repeat-max 2: two reminders of an outage, then none until it ends")
    func cappedReminders() throws {
        let lines = (0...6).map { dependentSample("api", minute: $0 * 10, $0 < 6 ? "down" : "up") }
        let result = try notify(lines, ["--repeat-interval", "10m", "--repeat-max", "2"])
        // Down at 10:00; reminders at 10:10 and 10:20; none at 10:30, 10:40, 10:50; up at 11:00
        // (failed checks 10:00 to 10:50: 6).
        #expect(
            try result.events() == [
                "down api \(traceTime(0))", "still_down api \(traceTime(600))", "still_down api \(traceTime(1200))",
                "recovered api \(traceTime(3600))",
            ])
        #expect(try result.records().last?.string("body") == "Api is up again after 1h, 6 failed checks")
        let alone = try notify(lines, ["--repeat-max", "2"])
        #expect(alone.status == 64 && alone.stderr.contains("--repeat-interval"), "\(alone.stderr)")
    }
}

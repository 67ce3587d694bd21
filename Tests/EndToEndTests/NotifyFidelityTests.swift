import FixtureServer
import Foundation
import Testing
import VitalsKit

/// notify against isitup's and OnlineTracker's words (issue 15): grouping, cooldowns, the push
/// payload the app reads, and the desktop notification's actions. t is seconds after 10:00:00Z.
extension NotifyDecisionTests {
    @Test("grouping defect: a and b recover while c goes down: c alone, under its own key and cooldown")
    func groupingDefectRecoveredAreNotListedDown() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let lines = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("c", 0, "up"),
            sampleLine("a", 60, "down"), sampleLine("b", 60.1, "down"),  // a and b down together: grouped
            sampleLine("a", 120, "up"), sampleLine("b", 120.1, "up"), sampleLine("c", 120.2, "down"),  // a, b back; c down
        ]
        let result = try notify(lines, ["--state", state])
        #expect(result.status == 0, "\(result.stderr)")
        // isitup: one newly failed service is a notification of its own (grouping needs two), under c's key.
        #expect(try result.events() == ["down a,b \(traceTime(60.1))", "down c \(traceTime(120.2))", "recovered a,b \(traceTime(120.1))"])
        let records = try result.records()
        #expect(records[1].string("title") == "Monitor DOWN")
        #expect(records[1].string("body") == "C is not responding")
        #expect(records[1].string("key") == "c")
        #expect(records[2].string("title") == "2 services recovered")
        // c's own 60 s cooldown started at 120.2: c down again at 170 (after a recovery at 150) is inside it.
        let later = try notify([sampleLine("c", 150, "up"), sampleLine("c", 170, "down")], ["--state", state])
        #expect(try later.events() == ["recovered c \(traceTime(150))"], "the down at 170 is inside c's cooldown (170 - 120.2 < 60)")
    }

    // Seed 000, 8.2 Cooldown policy: "60 seconds per cooldown key", for "individual down/error"
    // and "grouped outage"; 8.3 Grouping policy: NotificationGrouper.decide: "grouped if count of
    // newly impacted services >= 2". The issue's trace: a and b down at 10:01, c down at 10:03.
    @Test("one new failure while a group is down is told on its own, under its own key and its own 60 s cooldown")
    func oneNewFailureWhileAGroupIsDown() throws {
        let lines = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("c", 0, "up"), sampleLine("e", 0, "up"),
            sampleLine("f", 0, "up"),
            sampleLine("a", 60, "down"), sampleLine("b", 60.1, "down"),  // 10:01: two newly down: grouped, groupedOutage used at 60.1
            sampleLine("e", 100, "down"), sampleLine("f", 100.1, "down"),  // two newly down, groupedOutage 40 s ago: dropped
            sampleLine("c", 180, "down"),  // 10:03: one newly down (a, b still down): key c, free
            sampleLine("c", 190, "up"),  // recovered (no cooldown)
            sampleLine("c", 220, "down"),  // key c used at 180, 40 s ago: dropped
            sampleLine("c", 300, "up"),  // recovered
        ]
        let result = try notify(lines)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            try result.events() == [
                "down a,b \(traceTime(60.1))", "down c \(traceTime(180))", "recovered c \(traceTime(190))",
                "recovered c \(traceTime(300))",
            ])
        let records = try result.records()
        #expect(records[0].string("title") == "2 services down" && records[0].string("key") == "groupedOutage")
        #expect(records[1].string("title") == "Monitor DOWN")
        #expect(records[1].string("body") == "C is not responding", "c alone, not a grown group")
        #expect(records[1].string("key") == "c")
        #expect(records[1]["grouped"] == .bool(false))
        #expect(!result.stdout.contains("(new:"))
    }

    @Test("cooldown: isitup drops a notification its cooldown blocks; --cooldown-mode defer sends it later if it still holds")
    func cooldownDropsLikeIsitup() throws {
        let trace = [
            sampleLine("api", 0, "up"),
            sampleLine("api", 10, "down"),  // down (key api, used at 10)
            sampleLine("api", 20, "up"),  // recovered: recoveries have no cooldown
            sampleLine("api", 30, "down"),  // key api cooling down (30 - 10 < 60): isitup drops it
            sampleLine("api", 40, "degraded"),  // degraded: its own key api.degrading, free
            sampleLine("api", 50, "down"),  // key api still cooling down: dropped
            sampleLine("api", 75, "down"),  // still down: no change, nothing (the deferred rule tells it now)
            sampleLine("api", 80, "degraded"),  // down -> degraded; key api.degrading used at 40: dropped
            sampleLine("api", 100, "degraded"),  // no change: nothing (deferred: 100 - 40 = 60, told)
            sampleLine("api", 130, "up"),  // recovered
        ]
        let dropped = try notify(trace)
        #expect(
            try dropped.events() == [
                "down api \(traceTime(10))", "recovered api \(traceTime(20))", "degraded api \(traceTime(40))",
                "recovered api \(traceTime(130))",
            ])
        let deferred = try notify(trace, ["--cooldown-mode", "defer"])
        #expect(
            try deferred.events() == [
                "down api \(traceTime(10))", "recovered api \(traceTime(20))", "degraded api \(traceTime(40))",
                "down api \(traceTime(75))", "degraded api \(traceTime(100))", "recovered api \(traceTime(130))",
            ])
        #expect(try notify(trace, ["--cooldown-mode", "later"]).status == 64)
    }
}

extension NotifyPushTests {
    // Seed 001, Push Notification Payload Format: "monitor_id": 1, "monitor_name": "Google DNS";
    // the app navigates with `userInfo["monitor_id"] as? Int` (its AppDelegate). OnlineTracker's
    // server pushes one monitor per notification, so that a tap opens it; isitup's grouping stays
    // for the other channels.
    @Test(
        "Apple push: one push per monitor, each with the integer id the API shows and its name; a webhook still gets the grouped notification"
    )
    func onePushPerMonitor() throws {
        let fake = try fakeAPNs(devices: [NotifyPushTests.deviceA])
        let hookScratch = try ScratchDirectory()
        let hook = try webhookServer(hookScratch)
        let server = try FixtureServer()
        let refused = try RefusingPort()
        let targets = try fake.scratch.write(
            "targets.ndjson",
            """
            {"id":"web","name":"Web shop","url":"\(server.baseURL)/ok"}
            {"id":"api","name":"Payments API","url":"\(server.baseURL)/status/500"}
            {"id":"db","name":"Database","url":"http://127.0.0.1:\(refused.port)/"}
            {"id":"search","name":"Search","url":"\(server.baseURL)/status/503"}
            """)
        let db = fake.scratch.path("vitals.db")
        let piped = try shell(
            "probe-http \"$TARGETS\" | store-samples --db \"$DB\" | notify --state \"$STATE\" --to \"$CHANNEL\" --to \"$HOOK\"",
            environment: [
                "TARGETS": targets, "DB": db, "STATE": fake.state, "CHANNEL": fake.channel,
                "HOOK": "json://\(hook.hostPort)/hook",
            ])
        #expect(piped.status == 0, "\(piped.stderr)")
        // The API's ids, as the app lists them.
        let monitors = try run("store-samples", ["--db", db, "monitors"])
        let listed = try #require(try JSONParser.parse(monitors.stdout).arrayValue?.compactMap(\.objectValue))
        var idByName: [String: Int] = [:]
        for monitor in listed { if let name = monitor.string("name"), let id = monitor.int("id") { idByName[name] = id } }
        #expect(idByName.count == 4)
        // Three pushes, one per monitor down, each read as the app reads it.
        var pushed: [String: Int] = [:]
        for request in try fake.server.log() {
            let body = try #require(request.string("body"))
            let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [AnyHashable: Any])
            let name = try #require(userInfo["monitor_name"] as? String)
            pushed[name] = userInfo["monitor_id"] as? Int
            let aps = try #require(userInfo["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "Monitor DOWN")
            #expect(alert["body"] as? String == "\(name) is not responding")
            #expect(userInfo["status"] as? String == "down")
        }
        #expect(pushed == ["Payments API": idByName["Payments API"]!, "Database": idByName["Database"]!, "Search": idByName["Search"]!])
        // The webhook gets isitup's one grouped notification.
        let hooked = try hook.log().filter { $0.string("path") == "/hook" }
        #expect(hooked.count == 1)
        let grouped = try #require(try JSONParser.parse(hooked.first?.string("body") ?? "").objectValue)
        #expect(grouped.string("title") == "3 services down")
        #expect(grouped["grouped"] == .bool(true))
    }

    @Test("push payload the app can use: monitor_id is the integer id of the views (from store-samples), status only the app's words")
    func pushPayloadTheAppCanUse() throws {
        let fake = try fakeAPNs(devices: [NotifyPushTests.deviceA])
        let db = fake.scratch.path("vitals.db")
        // Two monitors whose ids are names; store-samples numbers them 1 and 2 in its views.
        let samples = [
            sampleLine("google-dns", 0, "up", name: "Google DNS"), sampleLine("shop", 0.1, "up", name: "Shop"),
            sampleLine("shop", 10, "error", name: "Shop", message: "Request timeout after 10s"),
        ]
        let trace = try fake.scratch.write("trace.ndjson", samples.joined(separator: "\n") + "\n")
        let piped = try shell(
            "store-samples --db \"$DB\" \"$TRACE\" | notify --state \"$STATE\" --to \"$CHANNEL\"",
            environment: ["DB": db, "TRACE": trace, "STATE": fake.state, "CHANNEL": fake.channel])
        #expect(piped.status == 0, "\(piped.stderr)")
        let monitors = try run("store-samples", ["--db", db, "monitors"])
        let listed = try #require(try JSONParser.parse(monitors.stdout).arrayValue?.compactMap(\.objectValue))
        let shopID = try #require(listed.first { $0.string("name") == "Shop" }?.int("id"))
        let request = try #require(try fake.server.log().first)
        // The app's own reading, as the seed's AppDelegate does it.
        let body = try #require(request.string("body"))
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [AnyHashable: Any])
        let monitorId = userInfo["monitor_id"] as? Int
        #expect(monitorId == shopID)
        // error is not one of the app's MonitorStatus cases: it is sent as down.
        #expect(userInfo["status"] as? String == "down")
        #expect(["up", "down", "degraded", "unknown"].contains(userInfo["status"] as? String ?? ""))
        #expect(userInfo["monitor_name"] as? String == "Shop")
    }
}

extension NotifyDesktopTests {
    @Test("notification actions: Check now runs the configured command, chosen in dunst's context menu")
    func notificationActionsCheckNow() throws {
        let help = try shell("notify-send --help")
        guard
            try requireGate(
                help.stdout.contains("--action") && help.stdout.contains("--print-id"),
                "the installed notify-send has no --action")
        else { return }
        let scratch = try ScratchDirectory()
        let trace = try scratch.write(
            "trace.ndjson",
            [
                sampleLine("shop", 0, "up", name: "Shop"),
                sampleLine("shop", 10, "down", name: "Shop"),
            ].joined(separator: "\n") + "\n")
        // The check-now command records its arguments (probe-http --only NAME would probe the one service).
        let check = try scratch.write(
            "check.sh",
            "#!/bin/sh\nprintf '%s\\n' \"$*\" > \"$(dirname \"$0\")/checked.tmp\"\nmv \"$(dirname \"$0\")/checked.tmp\" \"$(dirname \"$0\")/checked\"\n"
        )
        // dunst's menu: keep the lines it offers, choose Check now.
        let menu = try scratch.write(
            "menu.sh", "#!/bin/sh\ncat > \"$(dirname \"$0\")/menu\"\ngrep 'Check now' \"$(dirname \"$0\")/menu\"\n")
        for path in [check, menu] { try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path) }
        let channel = "desktop://?check=\(check)&check_arg=--only&check_arg={monitor}&open=xdg-open&open_arg={target}"
        // Inside the desktop: notify delivers and exits; then the user opens the menu and picks Check now.
        let script = """
            notify --to "$1" "$2" > notified.ndjson || exit 1
            dunstctl context
            tries=0
            until [ -s checked ] || [ $tries -gt 200 ]; do tries=$((tries + 1)); sleep 0.05; done
            """
        let session = Binaries.fixtures.appendingPathComponent("notify/desktop_session.sh").path
        let result = try runProcess(
            session, [scratch.url.path, "/bin/sh", "-c", script, "sh", channel, trace], stdin: "",
            environment: toolEnvironment(["DESKTOP_DMENU": menu]), directory: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        let shown = try String(contentsOfFile: scratch.path("shown"), encoding: .utf8)
        #expect(shown == "vitals|Monitor DOWN|Shop is not responding: HTTP 503, expected 200-399|CRITICAL\n")
        let offered = try String(contentsOfFile: scratch.path("menu"), encoding: .utf8)
        #expect(offered.contains("#Check now (Monitor DOWN)") && offered.contains("#Open (Monitor DOWN)"), "\(offered)")
        #expect(try String(contentsOfFile: scratch.path("checked"), encoding: .utf8) == "--only shop\n")
        let notified = try #require(
            try JSONParser.parse(String(contentsOfFile: scratch.path("notified.ndjson"), encoding: .utf8)).objectValue)
        #expect(notified["deliveries"]?.arrayValue?.first?.objectValue?.string("result") == "delivered")
    }
}

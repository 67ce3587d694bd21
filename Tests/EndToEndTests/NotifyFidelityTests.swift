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

    // Seed 000, 6.3: checkAll "collects transition outcomes: transitioned to failure (down/error),
    // transitioned to degrading" and notifies those, never a service back to healthy; seed 001's
    // server pushes "when monitors go down or recover". OnlineTracker's rule stays the default.
    @Test("--no-recoveries: isitup's rule, failures and degradations told, recoveries never; the next failure is still news")
    func noRecoveriesLikeIsitup() throws {
        let trace = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"),
            sampleLine("a", 10, "down"), sampleLine("b", 10.1, "down"),  // grouped outage (groupedOutage at 10.1)
            sampleLine("a", 20, "up"), sampleLine("b", 20.1, "up"),  // both back: isitup says nothing
            sampleLine("a", 100, "degraded"),  // a up -> degraded: told (key a.degrading)
            sampleLine("a", 110, "up"),  // back: nothing
            sampleLine("a", 200, "down"),  // a up -> down: news (key a, never used: the group's key was)
        ]
        let isitup = try notify(trace, ["--no-recoveries"])
        #expect(isitup.status == 0, "\(isitup.stderr)")
        #expect(
            try isitup.events() == ["down a,b \(traceTime(10.1))", "degraded a \(traceTime(100))", "down a \(traceTime(200))"])
        // OnlineTracker's default tells the recoveries too.
        #expect(
            try notify(trace).events() == [
                "down a,b \(traceTime(10.1))", "recovered a,b \(traceTime(20.1))", "degraded a \(traceTime(100))",
                "recovered a \(traceTime(110))", "down a \(traceTime(200))",
            ])
        // Kept in the state between runs: a recovery in a later run is not told either.
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        #expect(
            try notify([sampleLine("c", 0, "up"), sampleLine("c", 10, "down")], ["--state", state, "--no-recoveries"]).events().count == 1)
        #expect(try notify([sampleLine("c", 20, "up")], ["--state", state, "--no-recoveries"]).events().isEmpty)
        #expect(try notify([sampleLine("c", 100, "down")], ["--state", state, "--no-recoveries"]).events() == ["down c \(traceTime(100))"])
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

extension NotifyPushTests {
    // Seed 001: the app opens a monitor with `userInfo["monitor_id"] as? Int`, the id of GET
    // /api/monitors. Before store-samples in a pipe (or without it) the samples carry no such id:
    // notify --db asks the store, and a push that still has none says why.
    @Test("Apple push before store-samples: --db gives each push the store's integer id; without it, a warning says why there is none")
    func pushIDsFromTheStore() throws {
        let fake = try fakeAPNs(devices: [NotifyPushTests.deviceA])
        let server = try FixtureServer()
        let db = fake.scratch.path("vitals.db")
        let targets = try fake.scratch.write(
            "targets.ndjson",
            """
            {"id":"web","name":"Web shop","url":"\(server.baseURL)/ok"}
            {"id":"api","name":"Payments API","url":"\(server.baseURL)/status/500"}
            """)
        // An earlier run stored the monitors; this one tells before anything is stored, as a
        // notify upstream of store-samples (or beside it) does: its samples carry no monitor_id.
        #expect(
            try shell("probe-http \"$TARGETS\" | store-samples --db \"$DB\" --quiet", environment: ["TARGETS": targets, "DB": db]).status
                == 0)
        let listed = try #require(try JSONParser.parse(try run("store-samples", ["--db", db, "monitors"]).stdout).arrayValue)
        let apiID = try #require(listed.compactMap(\.objectValue).first { $0.string("monitor") == "api" }?.int("id"))
        let piped = try shell(
            "probe-http \"$TARGETS\" | notify --state \"$STATE\" --to \"$CHANNEL\" --db \"$DB\"",
            environment: ["TARGETS": targets, "DB": db, "STATE": fake.state, "CHANNEL": fake.channel])
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!piped.stderr.contains("carries no monitor_id"), "\(piped.stderr)")
        let pushed = try #require(try fake.server.log().first?.string("body"))
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(pushed.utf8)) as? [AnyHashable: Any])
        #expect(userInfo["monitor_name"] as? String == "Payments API")
        #expect(userInfo["monitor_id"] as? Int == apiID, "\(pushed)")

        // Without --db: the push goes, with no id, and notify says why.
        let other = try fakeAPNs(devices: [NotifyPushTests.deviceA])
        let blind = try shell(
            "probe-http \"$TARGETS\" | notify --state \"$STATE\" --to \"$CHANNEL\"",
            environment: ["TARGETS": targets, "STATE": other.state, "CHANNEL": other.channel])
        #expect(blind.status == 0, "\(blind.stderr)")
        let bare = try #require(try other.server.log().first?.string("body"))
        let bareInfo = try #require(try JSONSerialization.jsonObject(with: Data(bare.utf8)) as? [AnyHashable: Any])
        #expect(bareInfo["monitor_id"] as? Int == nil && bareInfo["monitor_name"] as? String == "Payments API")
        #expect(
            blind.stderr.contains("the Apple push for monitor 'api' carries no monitor_id")
                && blind.stderr.contains("did not pass through store-samples"), "\(blind.stderr)")
    }
}

extension NotifyDesktopTests {
    /// Whether the installed notify-send offers actions (libnotify 0.7.10 and later).
    func notifySendOffersActions() throws -> Bool {
        let help = try shell("notify-send --help")
        return try requireGate(
            help.stdout.contains("--action") && help.stdout.contains("--print-id"), "the installed notify-send has no --action")
    }

    /// Runs `script` (sh, with the channel as $1 and `input` as $2) in a desktop session whose
    /// dunst menu is answered by a script that keeps the menu's lines in `menu` and chooses the
    /// first line holding `choice`; executables are made in `scratch` from `scripts` (name, text).
    func inDesktop(
        _ scratch: ScratchDirectory, _ script: String, channel: String, input: String, choice: String, scripts: [(String, String)]
    ) throws -> RunResult {
        let menu = "#!/bin/sh\ncat >> \"$(dirname \"$0\")/menu\"\ngrep -m 1 -F '\(choice)' \"$(dirname \"$0\")/menu\"\n"
        for (name, text) in scripts + [("menu.sh", menu)] {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: try scratch.write(name, text))
        }
        let session = Binaries.fixtures.appendingPathComponent("notify/desktop_session.sh").path
        return try runProcess(
            session, [scratch.url.path, "/bin/sh", "-c", script, "sh", channel, input], stdin: "",
            environment: toolEnvironment(["DESKTOP_DMENU": scratch.path("menu.sh")]), directory: scratch.url)
    }

    // Seed 000, 8.1: categories SERVICE_DOWN and GROUP_OUTAGE; actions OPEN_APP and CHECK_NOW
    // ("foreground, grouped category"); 8.4: CHECK_NOW triggers `vm.checkAll()`; 4: a service's
    // id is a UUID string. The action's command here is a real re-check: probe-http with the
    // grouped notification's monitor ids, one --only={monitor} each.
    @Test(
        "Check now: a grouped outage (GROUP_OUTAGE) carries it, chosen in dunst's menu; its command re-checks those monitors by their UUIDs"
    )
    func checkNowOnAGroupedOutage() throws {
        guard try notifySendOffersActions() else { return }
        let scratch = try ScratchDirectory()
        let server = try FixtureServer()
        let payments = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
        let search = "9c8b7a65-4d3e-4f21-8a0b-1c2d3e4f5a6b"
        let targets = try scratch.write(
            "targets.ndjson",
            """
            {"id":"5B0C2D1A-7E8F-4A3B-9C6D-0E1F2A3B4C5D","name":"Portfolio","url":"\(server.baseURL)/ok"}
            {"id":"\(payments)","name":"Payments","url":"\(server.baseURL)/status/500"}
            {"id":"\(search)","name":"Search","url":"\(server.baseURL)/status/503"}
            """)
        // The re-check: probe-http with the words the action gives, its samples kept for the test.
        let recheck =
            "#!/bin/sh\nprobe-http \"$@\" > \"$(dirname \"$0\")/rechecked.tmp\" && mv \"$(dirname \"$0\")/rechecked.tmp\" \"$(dirname \"$0\")/rechecked.ndjson\"\n"
        let channel =
            "desktop://?check=\(scratch.path("recheck.sh"))&check_arg=\(targets)&check_arg=--only={monitor}&open=xdg-open&open_arg={target}"
        let script = """
            probe-http "$2" | notify --to "$1" > notified.ndjson || exit 1
            dunstctl context
            tries=0
            until [ -s rechecked.ndjson ] || [ $tries -gt 1200 ]; do tries=$((tries + 1)); sleep 0.05; done
            """
        let result = try inDesktop(
            scratch, script, channel: channel, input: targets, choice: "Check now", scripts: [("recheck.sh", recheck)])
        #expect(result.status == 0, "\(result.stderr)")
        let shown = try String(contentsOfFile: scratch.path("shown"), encoding: .utf8)
        // The body names the monitors in the order their samples came, and probe-http writes them
        // as its probes finish: Payments (500) or Search (503) first, whichever answered first.
        let fields = shown.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        #expect(fields.count == 4 && fields[0] == "vitals" && fields[1] == "2 services down" && fields[3] == "CRITICAL\n", "\(shown)")
        #expect(fields.count == 4 && fields[2].components(separatedBy: ", ").sorted() == ["Payments", "Search"], "\(shown)")
        #expect(try String(contentsOfFile: scratch.path("categories"), encoding: .utf8) == "GROUP_OUTAGE\n")
        let offered = try String(contentsOfFile: scratch.path("menu"), encoding: .utf8)
        #expect(offered.contains("#Check now (2 services down)") && offered.contains("#Open (2 services down)"), "\(offered)")
        // The command ran: the two monitors of the notification, probed again, and no other.
        let rechecked = try String(contentsOfFile: scratch.path("rechecked.ndjson"), encoding: .utf8).split(separator: "\n")
            .compactMap { try JSONParser.parse(String($0)).objectValue }.filter { $0.string("type") == "sample" }
        #expect(rechecked.map { $0.string("monitor") ?? "" }.sorted() == [payments, search].sorted(), "\(rechecked)")
        #expect(rechecked.allSatisfy { $0.string("status") == "down" })
    }

    @Test("one monitor's notification is SERVICE_DOWN and carries Open alone, as in isitup; a recovery is SERVICE_RECOVERED")
    func serviceDownCarriesOpenAlone() throws {
        guard try notifySendOffersActions() else { return }
        let scratch = try ScratchDirectory()
        let trace = try scratch.write(
            "trace.ndjson",
            [
                sampleLine("shop", 0, "up", name: "Shop"),
                sampleLine("shop", 10, "down", name: "Shop"),
                sampleLine("shop", 20, "up", name: "Shop"),
            ].joined(separator: "\n") + "\n")
        // Open records its arguments; the menu keeps the lines dunst offers and chooses Open.
        let open =
            "#!/bin/sh\nprintf '%s\\n' \"$*\" > \"$(dirname \"$0\")/opened.tmp\"\nmv \"$(dirname \"$0\")/opened.tmp\" \"$(dirname \"$0\")/opened\"\n"
        let channel = "desktop://?check=/bin/false&open=\(scratch.path("open.sh"))&open_arg={monitor}"
        let script = """
            notify --to "$1" "$2" > notified.ndjson || exit 1
            tries=0
            until [ "$(wc -l < categories 2>/dev/null || echo 0)" -ge 2 ] || [ $tries -gt 1200 ]; do tries=$((tries + 1)); sleep 0.05; done
            dunstctl context
            tries=0
            until [ -s opened ] || [ $tries -gt 1200 ]; do tries=$((tries + 1)); sleep 0.05; done
            """
        let result = try inDesktop(
            scratch, script, channel: channel, input: trace, choice: "#Open (Monitor DOWN)", scripts: [("open.sh", open)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: scratch.path("categories"), encoding: .utf8) == "SERVICE_DOWN\nSERVICE_RECOVERED\n")
        let offered = try String(contentsOfFile: scratch.path("menu"), encoding: .utf8)
        #expect(offered.contains("#Open (Monitor DOWN)") && !offered.contains("Check now"), "\(offered)")
        #expect(try String(contentsOfFile: scratch.path("opened"), encoding: .utf8) == "shop\n")
    }
}

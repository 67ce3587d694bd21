import Foundation
import Testing
import VitalsKit

/// The issue's trace: six rounds, a minute apart, in which agent tokyo sees `web` down and agent
/// paris sees it up, tokyo reporting first in each round (at :00) and paris last (at :20).
enum TwoPlaceTrace {
    static let now = "2026-01-27T10:10:00Z"

    /// One round's two samples, tokyo's then paris's.
    static func round(_ minute: Int) -> [String] {
        [
            #"{"type":"sample","monitor":"web","name":"Web","kind":"https","target":"https://web.example/","at":"2026-01-27T10:0\#(minute):00.000Z","status":"down","reason":"connect","message":"connection refused","latency_ms":null,"agent":"tokyo"}"#,
            #"{"type":"sample","monitor":"web","name":"Web","kind":"https","target":"https://web.example/","at":"2026-01-27T10:0\#(minute):20.000Z","status":"up","message":"HTTP 200 in 40ms","latency_ms":40.0,"agent":"paris"}"#,
        ]
    }

    /// The twelve samples, in the order they arrive.
    static var lines: [String] { (0..<6).flatMap(round) }
}

@Suite("places: a monitor seen from several places, one rule in every view", .hangGuard(minutes: 4))
struct PlacesStoreTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory() }

    /// Every view the trace is held to, on the store `db`, as the command line prints them.
    func views(_ db: String) throws -> [String: String] {
        var out: [String: String] = [:]
        for (name, arguments) in [
            ("overview", ["overview"]), ("monitors", ["monitors"]), ("monitor", ["monitor", "web"]), ("history", ["history", "web"]),
            ("results", ["results", "web", "--per-page", "3"]), ("agents", ["agents"]), ("metrics", ["metrics"]),
            ("any", ["overview", "--quorum", "any"]), ("tokyo", ["overview", "--agent", "tokyo"]),
            ("paris", ["overview", "--agent", "paris"]), ("tokyo-history", ["history", "web", "--agent", "tokyo"]),
        ] {
            let result = try run("store-samples", ["--db", db, "--now", TwoPlaceTrace.now] + arguments)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            out[name] = result.stdout
        }
        return out
    }

    /// The figures worked out by hand from the rule (vitals(7), PLACES; store-samples(1), PLACES).
    func check(_ views: [String: String]) throws {
        // Now: tokyo's newest (10:05:00) is down, paris's (10:05:20) up, 20 s apart, both fresh
        // (60 s interval, 120 s window). A majority of two is two; the worst both report is up,
        // and tokyo fails: degraded, partial, the places named.
        let overview = try decode(OTStatusOverview.self, views["overview"]!)
        #expect(overview.totalMonitors == 1 && overview.monitorsDegraded == 1 && overview.monitorsUp == 0 && overview.monitorsDown == 0)
        #expect(overview.agentsTotal == 2)
        // Stored consensus: tokyo's first sample (10:00:00) had no other place: down. Each of the
        // eleven after had the other place 20 or 40 s before: degraded. None up: 0.0, not the
        // 50.0 of the two places blended.
        #expect(overview.monitors.first?.uptime24h == 0.0 && overview.monitors.first?.status == .degraded)
        #expect(overview.monitors.first?.lastCheck == "2026-01-27T10:05:20Z")
        let monitors = try decode([OTMonitor].self, views["monitors"]!)
        #expect(monitors.first?.agentId == nil, "seen from two places, it belongs to neither")
        #expect(monitors.first?.latestStatus?.status == .degraded)
        #expect(monitors.first?.latestStatus?.details == "down from tokyo; up from paris")
        #expect(views["monitors"]!.contains(#""reason":"partial""#))
        // The newest check is paris's: 40 ms at 10:05:20.
        #expect(monitors.first?.latestStatus?.responseTimeMs == 40 && monitors.first?.latestStatus?.checkedAt == "2026-01-27T10:05:20Z")
        let monitor = views["monitor"]!
        #expect(
            monitor.contains(
                #""places":[{"agent":"paris","status":"up","checked_at":"2026-01-27T10:05:20Z","response_time_ms":40,"details":"HTTP 200 in 40ms","reason":null,"fresh":true},{"agent":"tokyo","status":"down","checked_at":"2026-01-27T10:05:00Z","response_time_ms":null,"details":"connection refused","reason":"connect","fresh":true}]"#
            ), "\(monitor)")
        // One 15-minute bucket, 10:00: twelve checks; the first's consensus down makes it down; none up.
        let history = try decode([OTStatusHistoryPoint].self, views["history"]!)
        #expect(history.count == 1 && history.first?.status == .down && history.first?.uptimePercent == 0.0)
        #expect(views["history"]!.contains(#""checks":12"#))
        // Results are checks: each its own status and place, newest first.
        let results = try decode(OTResultsPage.self, views["results"]!)
        #expect(results.total == 12 && results.items.map(\.status) == [.up, .down, .up])
        #expect(views["results"]!.contains(#""agent":"paris"}"#) && views["results"]!.contains(#""agent":"tokyo"}"#))
        // Each agent is a place of one monitor.
        let agents = try decode([OTAgent].self, views["agents"]!)
        #expect(agents.map(\.id).sorted() == ["paris", "tokyo"] && agents.allSatisfy { $0.monitorCount == 1 })
        // Metrics: the consensus (degraded: up 1, status degraded) and one series a place.
        let metrics = views["metrics"]!
        #expect(metrics.contains(#"vitals_monitor_up{monitor="web",name="Web",kind="https"} 1"#))
        #expect(metrics.contains(#"vitals_monitor_status{monitor="web",name="Web",kind="https",status="degraded"} 1"#))
        #expect(metrics.contains(#"vitals_place_up{monitor="web",name="Web",kind="https",agent="paris"} 1"#))
        #expect(metrics.contains(#"vitals_place_up{monitor="web",name="Web",kind="https",agent="tokyo"} 0"#))
        #expect(
            metrics.contains(#"vitals_place_last_check_timestamp_seconds{monitor="web",name="Web",kind="https",agent="tokyo"} 1769508300"#))
        // --quorum any: the worst any place sees, in tokyo's words (uptime is the consensus stored, still 0.0).
        let any = try decode(OTStatusOverview.self, views["any"]!)
        #expect(any.monitorsDown == 1)
        // One place at a time: its own statuses.
        let tokyo = try decode(OTStatusOverview.self, views["tokyo"]!)
        #expect(
            tokyo.monitorsDown == 1 && tokyo.monitors.first?.uptime24h == 0.0 && tokyo.monitors.first?.lastCheck == "2026-01-27T10:05:00Z")
        let paris = try decode(OTStatusOverview.self, views["paris"]!)
        #expect(paris.monitorsUp == 1 && paris.monitors.first?.uptime24h == 100.0)
        let tokyoHistory = try decode([OTStatusHistoryPoint].self, views["tokyo-history"]!)
        #expect(tokyoHistory.first?.status == .down && views["tokyo-history"]!.contains(#""checks":6"#))
    }

    @Test("the two-place trace on SQLite: degraded (partial: down from tokyo), never flipping, in every view and in metrics")
    func onSQLite() throws {
        let db = scratch.path("vitals.db")
        let stored = try run("store-samples", ["--db", db, "--quiet"], stdin: TwoPlaceTrace.lines.joined(separator: "\n") + "\n")
        #expect(stored.status == 0, "\(stored.stderr)")
        // The consensus stored with each sample, as sqlite3 reads it: NULL is the sample's own status.
        #expect(
            try sqlite(db, "SELECT group_concat(coalesce(consensus, status), '') FROM (SELECT * FROM samples ORDER BY at)")
                == "211111111111",
            "down, then eleven degraded")
        try check(try views(db))
        // After each round the views agree with the rule at that moment: after round 0's tokyo
        // sample alone, down; once paris has spoken, degraded; never up, never flipping.
        let step = scratch.path("step.db")
        var seen: [String] = []
        for line in TwoPlaceTrace.lines {
            _ = try run("store-samples", ["--db", step, "--quiet"], stdin: line + "\n")
            seen.append(
                try decode(OTStatusOverview.self, try run("store-samples", ["--db", step, "--now", TwoPlaceTrace.now, "overview"]).stdout)
                    .monitors[0].status.rawValue)
        }
        #expect(seen == ["down"] + Array(repeating: "degraded", count: 11))
    }

    @Test("a heartbeat monitor that stopped is down, reason silent, once three of its intervals passed with no sample")
    func heartbeat() throws {
        let db = scratch.path("beat.db")
        let beat = { (minute: Int) in
            #"{"type":"sample","monitor":"backup","kind":"heartbeat","check_interval":60,"at":"2026-01-27T10:0\#(minute):00.000Z","status":"up","message":"backup done"}"#
        }
        #expect(try run("store-samples", ["--db", db, "--quiet"], stdin: beat(0) + "\n" + beat(1) + "\n").status == 0)
        func overview(_ now: String) throws -> OTStatusOverview {
            try decode(OTStatusOverview.self, try run("store-samples", ["--db", db, "--now", now, "overview"]).stdout)
        }
        // 10:04:00 is 3 min after the last sample: not more than three intervals: still up.
        #expect(try overview("2026-01-27T10:04:00Z").monitorsUp == 1)
        // 10:04:01: silent. Down, with notify's words for it.
        #expect(try overview("2026-01-27T10:04:01Z").monitorsDown == 1)
        let monitor = try run("store-samples", ["--db", db, "--now", "2026-01-27T10:04:01Z", "monitor", "backup"]).stdout
        #expect(
            monitor.contains(
                #""status":"down","response_time_ms":null,"checked_at":"2026-01-27T10:01:00Z","details":"no sample since 2026-01-27T10:01:00Z (one is expected every 1m)","ssl_expiry_days":null,"reason":"silent"}"#
            ),
            "\(monitor)")
        let metrics = try run("store-samples", ["--db", db, "--now", "2026-01-27T10:04:01Z", "metrics"]).stdout
        #expect(metrics.contains(#"vitals_monitor_up{monitor="backup",name="backup",kind="heartbeat"} 0"#), "\(metrics)")
    }

    @Test("the two-place trace on ClickHouse: the same bytes in every view")
    func onClickHouse() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        let db = scratch.path("vitals.db")
        // Two ingests, so the second batch is judged from what the first stored.
        let lines = TwoPlaceTrace.lines
        try ingest([Array(lines.prefix(5)), Array(lines.dropFirst(5))], into: [db, url])
        #expect(try consensus(server) == "211111111111")
        let house = try views(url)
        try check(house)
        #expect(house == (try views(db)))
    }

    @Test("on ClickHouse, a batch from one place is judged by another place's stored samples, as SQLite judges it")
    func oneplaceBatchMeetsStoredPlace() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        let db = scratch.path("vitals.db")
        // All of tokyo's samples first, then all of paris's: each batch comes from one place, so
        // only the store says the monitor has another.
        let lines = TwoPlaceTrace.lines
        let tokyo = lines.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let paris = lines.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        try ingest([tokyo, paris], into: [db, url])
        // Worked by hand: tokyo's samples met no other place when stored, so each keeps its own
        // down (2); each of paris's up samples meets tokyo's down of 20 s before: degraded (1).
        // Judged by its own status alone, paris's would be up (0).
        #expect(try consensus(server) == "212121212121")
        #expect(try views(url) == (try views(db)))
    }

    /// Ingests each of `parts` in turn (one run each, so one batch each) into every store of `targets`.
    func ingest(_ parts: [[String]], into targets: [String]) throws {
        for target in targets {
            for part in parts {
                let stored = try run("store-samples", ["--db", target, "--quiet"], stdin: part.joined(separator: "\n") + "\n")
                #expect(stored.status == 0, "\(stored.stderr)")
            }
        }
    }

    /// The consensus codes of the ClickHouse store's samples in time order, as one string.
    func consensus(_ server: ClickHouseServer) throws -> String {
        try server.query(
            "SELECT arrayStringConcat(groupArray(toString(consensus)), '') FROM (SELECT consensus FROM vitals.samples ORDER BY at)")
    }

    @Test("the API through nginx: ?agent= narrows each view as --agent does, places decode in the app's models, a bad agent is a 400")
    func api() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let db = scratch.path("api.db")
        // The trace, ending a few minutes ago (whole minutes: the views hold still while the test runs).
        let end = Int(Date().timeIntervalSince1970) / 60 * 60 - 300
        let lines = (0..<6).flatMap { round -> [String] in
            let base = end - (5 - round) * 60
            return [("tokyo", "down", 0), ("paris", "up", 20)].map { agent, status, offset in
                let at = Timestamp.format(milliseconds: Int64(base + offset) * 1000)
                return
                    #"{"type":"sample","monitor":"web","name":"Web","kind":"https","at":"\#(at)","status":"\#(status)","latency_ms":40,"agent":"\#(agent)"}"#
            }
        }
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: lines.joined(separator: "\n") + "\n").status == 0)
        let certificates = try TestCertificates()
        let server = try certificates.server(named: "api", daysLeft: 30)
        let handle = try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db], scratch: scratch)
        func get(_ path: String) throws -> HTTPAnswer {
            try fetch("https://127.0.0.1:\(handle.port)\(path)", caFile: certificates.path("ca.pem"))
        }
        for (path, command) in [
            ("/api/status/overview", ["overview"]), ("/api/status/overview?agent=tokyo", ["overview", "--agent", "tokyo"]),
            ("/api/monitors?agent=paris", ["monitors", "--agent", "paris"]), ("/api/monitors/web", ["monitor", "web"]),
            ("/api/monitors/web?agent=tokyo", ["monitor", "web", "--agent", "tokyo"]),
            ("/api/monitors/web/history?hours=2&agent=paris", ["history", "web", "--since", "2h", "--agent", "paris"]),
            ("/api/monitors/web/results?agent=tokyo", ["results", "web", "--agent", "tokyo"]),
        ] {
            let answer = try get(path)
            #expect(answer.status == 200, "\(path): \(answer.body)")
            #expect(answer.body == (try run("store-samples", ["--db", db] + command)).stdout, "\(path)")
        }
        let monitor = try decode(OTMonitor.self, try get("/api/monitors/web").body)
        #expect(monitor.latestStatus?.status == .degraded && monitor.agentId == nil)
        #expect(try decode(OTStatusOverview.self, try get("/api/status/overview?agent=tokyo").body).monitorsDown == 1)
        #expect(try decode(OTStatusOverview.self, try get("/api/status/overview?agent=paris").body).monitorsUp == 1)
        let bad = try get("/api/status/overview?agent=")
        #expect(bad.status == 400 && bad.body.contains(#""reason":"bad_parameter""#), "\(bad.body)")
        #expect(handle.stop() == 143 << 8)
    }
}

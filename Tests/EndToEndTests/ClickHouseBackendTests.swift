import FixtureServer
import Foundation
import Testing
import VitalsKit

/// The samples both backends are given: six monitors checked every five minutes for four days
/// (2026-01-29T00:00Z to 2026-02-02T00:00Z, past the `--now` of 2026-02-01T12:00Z and across a
/// month, so two partitions), statuses and latencies of three decimals from fixed formulas, text
/// with escapes and non-ASCII, two agents; then a monitor record of a switched-off target and two
/// bad lines.
enum BackendCorpus {
    static let monitors = ["api", "web", "db", "dns", "cdn", "mail"]
    static let now = "2026-02-01T12:00:00Z"
    /// Checks per monitor: 4 days × 288.
    static let perMonitor = 4 * 288

    static func lines() -> [String] {
        let start = 1_769_644_800_000  // 2026-01-29T00:00:00Z
        var lines: [String] = []
        for step in 0..<perMonitor {
            for (m, monitor) in monitors.enumerated() {
                let at = start + step * 300_000 + m * 1_000
                let roll = (step * (m + 3) + m) % 23
                let status = roll < 17 ? "up" : roll < 20 ? "degraded" : roll < 22 ? "down" : "error"
                let latency = status == "error" ? "null" : String(format: "%.3f", Double((step * 7_919 + m * 104_729) % 400_000) / 1000)
                var extra = ""
                if m == 2 || m == 3 { extra += #","agent":"paris","agent_name":"Paris probe""# }
                if m == 4 { extra += #","agent":"tokyo","speed_mbps":\#(Double(step % 97) + 0.25)"# }
                if m == 1 { extra += #","tls_expiry_days":\#(90 - step / 288),"code":\#(status == "up" ? 200 : 503)"# }
                if m == 5 && step % 50 == 0 { extra += #","check_interval":300,"description":"mail \"relay\" — Zürich""# }
                let message = status == "up" ? "ok" : "slow \\\"\(step)\\\" é"
                let time = ISO8601Milliseconds.format(at)
                lines.append(
                    #"{"type":"sample","monitor":"\#(monitor)","name":"\#(monitor.uppercased())","kind":"\#(m == 3 ? "tcp" : "https")","target":"https://\#(monitor).example/","at":"\#(time)","status":"\#(status)","message":"\#(message)","latency_ms":\#(latency)\#(extra)}"#
                )
            }
            if step == 100 {
                lines.append(
                    #"{"type":"monitor","monitor":"old","name":"Old","kind":"http","target":"http://old.example/","at":"2026-01-29T08:20:00.000Z","enabled":false,"check_interval":600,"config":{"method":"GET","expect":[200]}}"#
                )
                lines.append("not json")
                lines.append(#"{"type":"sample","monitor":"api","status":"up"}"#)
            }
        }
        return lines
    }
}

/// RFC 3339 with milliseconds, UTC (the tests' own formatter, apart from the tools').
enum ISO8601Milliseconds {
    static func format(_ milliseconds: Int) -> String {
        let seconds = milliseconds / 1000
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds % 1000)
    }
}

@Suite("store-samples on ClickHouse", .serialized, .hangGuard(minutes: 10))
struct ClickHouseBackendTests {
    let scratch: ScratchDirectory
    var sqliteDB: String { scratch.path("vitals.db") }

    init() throws {
        scratch = try ScratchDirectory()
        // A tool that stops before reading all its input must fail the test, not kill the runner.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Every view the command line has, over the monitors given (by monitor id and integer id).
    static func views(monitors: [String]) -> [[String]] {
        var views: [[String]] = [
            ["overview"], ["overview", "--sort", "id"], ["monitors"], ["monitors", "--ndjson", "--sort", "id"],
            ["agents"], ["agents", "--ndjson"], ["stats"], ["stats", "--since", "24h"], ["stats", "--since", "2026-01-30T06:00:00Z"],
            ["export"], ["export", "--format", "csv"], ["export", "--since", "2026-01-30T00:00:00Z", "--until", "2026-01-31T00:00:00Z"],
            ["monitor", "2"], ["history", "3", "--since", "24h"], ["metrics"],
        ]
        for monitor in monitors {
            views += [
                ["monitor", monitor], ["history", monitor], ["history", monitor, "--since", "8760h", "--ndjson"],
                ["results", monitor], ["results", monitor, "--since", "100h", "--page", "3", "--per-page", "7"],
                ["results", monitor, "--page", "999"], ["export", "--monitor", monitor],
            ]
        }
        return views
    }

    /// Runs each view on both stores and expects the same bytes and status; returns how many matched.
    @discardableResult
    func expectSameViews(_ url: String, monitors: [String], _ comment: String) throws -> Int {
        var same = 0
        for view in ClickHouseBackendTests.views(monitors: monitors) {
            let lite = try run("store-samples", ["--db", sqliteDB, "--now", BackendCorpus.now] + view)
            let house = try run("store-samples", ["--db", url, "--now", BackendCorpus.now] + view)
            #expect(lite.status == 0, "\(view) on SQLite: \(lite.stderr)")
            #expect(house.status == lite.status && house.stderr == lite.stderr, "\(comment): \(view): \(house.stderr)")
            #expect(house.stdout == lite.stdout, "\(comment): \(view) differs")
            if house.stdout == lite.stdout && house.status == lite.status { same += 1 }
        }
        return same
    }

    /// Ingests the same input into both and expects the same records passed on and the same diagnostics.
    func ingestBoth(_ url: String, _ input: String, _ arguments: [String] = []) throws {
        let lite = try run("store-samples", ["--db", sqliteDB, "--now", BackendCorpus.now] + arguments, stdin: input)
        let house = try run("store-samples", ["--db", url, "--now", BackendCorpus.now] + arguments, stdin: input)
        #expect(house.status == lite.status)
        #expect(house.stderr == lite.stderr)
        #expect(house.stdout == lite.stdout, "the same records passed on, with the same monitor_id")
    }

    /// Ingests the corpus into SQLite and the ClickHouse store at `url` (in two runs), then runs
    /// every view on both; then remote samples of a pending agent, its approval, two clears, and
    /// every view again. `server` answers SQL on the store's tables (as one server or through the
    /// Distributed tables).
    func compareEverything(_ url: String, _ server: ClickHouseServer) throws {
        let lines = BackendCorpus.lines()
        // Two runs, so two writers: the second continues the sample ids of the first.
        try ingestBoth(url, lines.prefix(3_000).joined(separator: "\n") + "\n")
        try ingestBoth(url, lines.dropFirst(3_000).joined(separator: "\n") + "\n")
        let samples = BackendCorpus.monitors.count * BackendCorpus.perMonitor
        #expect(try server.query("SELECT count() FROM vitals.samples FINAL") == "\(samples)", "6 × 1,152 samples, the bad lines not")
        #expect(
            try server.query("SELECT count() FROM (SELECT monitor, version FROM vitals.monitors FINAL)") == "7",
            "six monitors and the switched-off one")
        #expect(try server.query("SELECT max(version) FROM vitals.store_samples_schema") == "5")
        let monitors = BackendCorpus.monitors + ["old"]
        #expect(try expectSameViews(url, monitors: monitors, "after ingest") == ClickHouseBackendTests.views(monitors: monitors).count)

        // Samples from elsewhere: a new agent's are held until it is approved.
        let remote = (0..<5).map { step in
            #"{"type":"sample","monitor":"edge","at":"2026-02-01T11:\#(10 + step):00.000Z","status":"up","latency_ms":\#(step).5,"agent":"berlin","agent_name":"Berlin"}"#
        }
        try ingestBoth(url, remote.joined(separator: "\n") + "\n", ["--remote"])
        #expect(try expectSameViews(url, monitors: ["edge"], "berlin pending") > 0)
        for store in [sqliteDB, url] {
            let approved = try run("store-samples", ["--db", store, "--now", BackendCorpus.now, "agents", "approve", "berlin"])
            #expect(approved.status == 0, "\(approved.stderr)")
        }
        #expect(try expectSameViews(url, monitors: ["edge", "api"], "berlin approved") > 0)

        // Clearing: the same count deleted, the same views after.
        for arguments in [
            ["clear", "--monitor", "mail", "--until", "2026-01-30T00:00:00Z"], ["clear", "--until", "2026-01-29T12:00:00Z"],
        ] {
            let lite = try run("store-samples", ["--db", sqliteDB, "--now", BackendCorpus.now] + arguments)
            let house = try run("store-samples", ["--db", url, "--now", BackendCorpus.now] + arguments)
            #expect(house.status == 0 && house.stdout == lite.stdout, "\(arguments): \(house.stderr)")
        }
        // mail's first day: 288 checks; then everyone's first 12 hours: 144 each of the other five.
        #expect(try server.query("SELECT count() FROM vitals.samples FINAL WHERE monitor != 'edge'") == "\(samples - 288 - 5 * 144)")
        try ingestBoth(url, lines.suffix(12).joined(separator: "\n") + "\n")
        #expect(try expectSameViews(url, monitors: monitors, "after clear") == ClickHouseBackendTests.views(monitors: monitors).count)
    }

    @Test("the same samples give byte-identical output on SQLite and ClickHouse in every view, through remote agents, approval and clear")
    func everyViewMatchesSQLite() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        try compareEverything("clickhouse://127.0.0.1:\(server.httpPort)/vitals", server)
        #expect(
            try server.query(
                "SELECT groupArray(partition) FROM (SELECT DISTINCT partition FROM system.parts WHERE database = 'vitals' AND table = 'samples' AND active ORDER BY partition)"
            )
                == "['202601','202602']", "partitioned by month")
    }

    @Test(
        "more than 1,000 monitors quiet for a day: their latest samples found over all time, as SQLite finds them, ties to the newest stored"
    )
    func manyQuietMonitors() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        defer { withExtendedLifetime(server) {} }  // it runs until the test ends (deinit stops it)
        // 1,200 monitors last checked two or three days before --now (2026-02-01T12:00Z), each
        // twice; "busy" checked within the hour, twice at one time by two agents (the second
        // stored is the latest); "mixed" within the hour and days before.
        var lines: [String] = []
        for day in [29, 30] {
            for index in 0..<1_200 {
                let status = (index + day) % 7 == 0 ? "down" : "up"
                lines.append(
                    #"{"type":"sample","monitor":"q\#(index)","at":"2026-01-\#(day)T10:\#(String(format: "%02d", index % 60)):00.000Z","status":"\#(status)","latency_ms":\#(index % 97).25,"message":"day \#(day)"}"#
                )
            }
        }
        lines += [
            #"{"type":"sample","monitor":"mixed","at":"2026-01-29T08:00:00.000Z","status":"down","latency_ms":9.5}"#,
            #"{"type":"sample","monitor":"mixed","at":"2026-02-01T11:30:00.000Z","status":"up","latency_ms":3.5}"#,
            #"{"type":"sample","monitor":"busy","at":"2026-02-01T11:45:00.000Z","status":"up","latency_ms":1.5,"agent":"a"}"#,
            #"{"type":"sample","monitor":"busy","at":"2026-02-01T11:45:00.000Z","status":"degraded","latency_ms":2.5,"agent":"b","message":"second"}"#,
        ]
        try ingestBoth(url, lines.joined(separator: "\n") + "\n")
        for view in [["overview"], ["monitors", "--ndjson"], ["metrics"], ["monitor", "q1199"], ["monitor", "busy"]] {
            let lite = try run("store-samples", ["--db", sqliteDB, "--now", BackendCorpus.now] + view)
            let house = try run("store-samples", ["--db", url, "--now", BackendCorpus.now] + view)
            #expect(lite.status == 0 && house.status == 0, "\(view): \(lite.stderr) \(house.stderr)")
            #expect(house.stdout == lite.stdout, "\(view) differs")
        }
        // Worked by hand: q1199 was last checked on the 30th at 10:59 (1199 % 60 = 59), up
        // ((1199 + 30) % 7 = 4), in 35.25 ms (1199 % 97 = 35). busy is seen from two places at 11:45,
        // a up in 1.5 ms and b degraded: a majority of two is both, and the worst both report is up,
        // with no place failing, so up; the newest check, on a tie the first place by name (a), gives
        // its 1.5 ms (2 rounded) and a's words (none).
        let q = try run("store-samples", ["--db", url, "--now", BackendCorpus.now, "monitor", "q1199"])
        #expect(
            q.stdout.contains(
                #""latest_status":{"status":"up","response_time_ms":35,"checked_at":"2026-01-30T10:59:00Z","details":"day 30""#),
            "\(q.stdout)")
        let busy = try run("store-samples", ["--db", url, "--now", BackendCorpus.now, "monitor", "busy"])
        #expect(
            busy.stdout.contains(
                #""latest_status":{"status":"up","response_time_ms":2,"checked_at":"2026-02-01T11:45:00Z","details":null"#),
            "\(busy.stdout)")
    }

    @Test("two shards on loopback: Distributed tables over local ones, sharded by cityHash64(monitor), answer every view as SQLite does")
    func twoShards() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let ports = try (0..<4).map { _ in try unusedPort() }
        let cluster = """
            <remote_servers><vitals_pair>
              <shard><replica><host>127.0.0.1</host><port>\(ports[1])</port></replica></shard>
              <shard><replica><host>127.0.0.1</host><port>\(ports[3])</port></replica></shard>
            </vitals_pair></remote_servers>
            """
        let first = try ClickHouseServer(httpPort: ports[0], tcpPort: ports[1], clusterXML: cluster)
        let second = try ClickHouseServer(httpPort: ports[2], tcpPort: ports[3], clusterXML: cluster)
        try first.start()
        try second.start()
        let url = "clickhouse://127.0.0.1:\(ports[0])/vitals?cluster=vitals_pair&shards=127.0.0.1:\(ports[0]),127.0.0.1:\(ports[2])"
        try compareEverything(url, first)
        // Each shard holds whole monitors: cityHash64 puts some on each, none on both.
        let onFirst = try first.query("SELECT arrayStringConcat(groupUniqArray(monitor), ',') FROM vitals.samples_local")
        let onSecond = try second.query("SELECT arrayStringConcat(groupUniqArray(monitor), ',') FROM vitals.samples_local")
        let (a, b) = (Set(onFirst.split(separator: ",")), Set(onSecond.split(separator: ",")))
        #expect(!a.isEmpty && !b.isEmpty && a.isDisjoint(with: b) && a.union(b).count == 7, "\(a) / \(b)")
        #expect(try second.query("SELECT max(version) FROM vitals.store_samples_schema") == "5", "the schema on every shard")
    }

    /// Starts the cutting proxy of Fixtures/clickhouse/cut_proxy.py in front of `port` (detached:
    /// the shell that starts it exits at once); returns its port and pid.
    func startProxy(upstream port: Int, mark: String) throws -> (port: Int, pid: pid_t) {
        let script = Binaries.fixtures.appendingPathComponent("clickhouse/cut_proxy.py").path
        let started = try shell(
            "python3 '\(script)' \(port) '\(scratch.path("proxy.port"))' '\(scratch.path("proxy.log"))' '\(mark)' "
                + "</dev/null >/dev/null 2>'\(scratch.path("proxy.err"))' & echo $!")
        let pid = pid_t(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        var proxyPort = 0
        try waitFor("the proxy's port") {
            proxyPort = Int((try? String(contentsOfFile: scratch.path("proxy.port"), encoding: .utf8)) ?? "") ?? 0
            return proxyPort > 0
        }
        return (proxyPort, pid)
    }

    @Test("a batch sent again after the server stored it but its answer was lost is stored once")
    func resentBatchIsStoredOnce() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        // The first INSERT into the samples table is forwarded, answered by the server, and the answer dropped.
        let proxy = try startProxy(upstream: server.httpPort, mark: "INSERT%20INTO%20vitals.samples%20")
        defer { kill(proxy.pid, SIGKILL) }
        let lines = (0..<2_500).map { sample(["api", "web"][$0 % 2], minute: $0 / 40, second: $0 % 40, latency: Double($0 % 97) + 0.125) }
        let result = try run(
            "store-samples", ["--db", "clickhouse://127.0.0.1:\(proxy.port)/vitals", "--now", testNow],
            stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.count == 2_500, "every record passed on once stored")
        let log = try String(contentsOfFile: scratch.path("proxy.log"), encoding: .utf8).split(separator: "\n")
        let inserts = log.filter { $0.contains("INSERT%20INTO%20vitals.samples%20") }
        // 2,500 samples in batches of up to 20,000 (one, unless the input paused), the first sent twice.
        #expect(
            inserts.count >= 2 && inserts.first?.hasSuffix(" CUT") == true && inserts.dropFirst().allSatisfy { !$0.hasSuffix(" CUT") },
            "\(inserts)")
        #expect(try server.query("SELECT count() FROM vitals.samples FINAL") == "2500")
        #expect(
            try server.query("SELECT count(), min(first_id) FROM vitals.resends") == "1\t1",
            "the resend was marked before it was sent, from the batch's first sample id")
        #expect(try server.query("SELECT count(), uniqExact(id) FROM vitals.samples FINAL WHERE monitor = 'web'") == "1250\t1250")
        // The views dedup (FINAL, since a resend is marked), whether or not the copy was merged yet.
        let exported = try run("store-samples", ["--db", "clickhouse://127.0.0.1:\(server.httpPort)/vitals", "--now", testNow, "export"])
        #expect(exported.lines.count == 2_500)
        #expect(Set(exported.lines).count == 2_500)
        try server.query("OPTIMIZE TABLE vitals.samples FINAL")
        #expect(try server.query("SELECT count() FROM vitals.samples") == "2500", "the resent copy merged away")
        let results = try run(
            "store-samples",
            [
                "--db", "clickhouse://127.0.0.1:\(server.httpPort)/vitals", "--now", testNow,
                "results", "api", "--since", "3h",
            ])
        #expect(try results.records().first?.int("total") == 1_250)
    }

    @Test("a version-2 store (samples keyed by writer and number) is copied by identity: the first stored of each kept, numbering goes on")
    func upgradeFromVersionTwo() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        // Version 2's tables, as store-samples made them, and what a version-2 writer left in them:
        // a batch resent after a lost answer (the same rows twice), the file ingested again (the same
        // samples under new numbers), and a sample of one identity with other content.
        let line = { (minute: Int, latency: String) in
            #"{"type":"sample","monitor":"api","at":"2026-01-29T00:0\#(minute):00.000Z","status":"up","latency_ms":\#(latency),"agent":"paris"}"#
        }
        var rows: [String] = []
        for (id, writer, minute, latency) in [
            (1, 7, 1, "1.5"), (2, 7, 2, "2.5"), (1, 7, 1, "1.5"), (2, 7, 2, "2.5"),
            (3, 8, 1, "1.5"), (4, 8, 2, "2.5"), (5, 8, 3, "9.5"), (6, 9, 3, "3.5"),
        ] {
            let at = HistoryIdentityTests.start + minute * 60_000
            let record = line(minute, latency).replacingOccurrences(of: "'", with: "\\'")
            rows.append("('api', \(at), \(id), \(writer), 0, \(latency), NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, '\(record)')")
        }
        try server.query("CREATE DATABASE old")
        for statement in [
            "CREATE TABLE old.store_samples_schema (version UInt32, applied_at Int64) ENGINE = MergeTree() ORDER BY version",
            "INSERT INTO old.store_samples_schema VALUES (1, 0), (2, 0)",
            "CREATE TABLE old.samples (monitor String, at Int64, id UInt64, writer UInt64, status UInt8, latency_ms Nullable(Float64), "
                + "reason Nullable(String), code Nullable(Int64), message Nullable(String), tls_expiry_days Nullable(Int64), "
                + "speed_mbps Nullable(Float64), origin UInt8, agent Nullable(String), held UInt8, record String) "
                + "ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(at, 1000))) ORDER BY (monitor, at, id, writer)",
            "CREATE TABLE old.monitors (monitor String, id UInt64, name Nullable(String), kind Nullable(String), target Nullable(String), "
                + "agent Nullable(String), description Nullable(String), check_interval Nullable(Int64), first_seen Int64, "
                + "config Nullable(String), enabled Nullable(UInt8), version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY monitor",
            "CREATE TABLE old.agents (id String, status String, created_at Int64, last_seen Int64, name Nullable(String), version UInt64) "
                + "ENGINE = ReplacingMergeTree(version) ORDER BY id",
            "CREATE TABLE old.writers (writer UInt64, last_id UInt64, updated_at Int64) ENGINE = ReplacingMergeTree(last_id) ORDER BY writer",
            "CREATE TABLE old.resends (writer UInt64, first_id UInt64, at Int64) ENGINE = MergeTree() ORDER BY writer",
            "INSERT INTO old.resends VALUES (7, 1, 0)",
            "INSERT INTO old.writers VALUES (7, 2, 0), (8, 5, 0), (9, 6, 0)",
            "INSERT INTO old.monitors VALUES ('api', 1, NULL, NULL, NULL, 'paris', NULL, NULL, \(HistoryIdentityTests.start + 60_000), NULL, NULL, 1)",
            "INSERT INTO old.samples VALUES " + rows.joined(separator: ", "),
        ] { try server.query(statement) }
        let url = "clickhouse://127.0.0.1:\(server.httpPort)/old"
        let read = try run("store-samples", ["--db", url, "export"])
        #expect(
            read.status == 2
                && read.stderr.contains(
                    "holds store-samples schema version 2, older than this build's 5: storing samples in it upgrades it"),
            "a query does not upgrade: \(read.stderr)")
        let next = try run("store-samples", ["--db", url, "--keep", "0"], stdin: line(4, "4.5") + "\n" + line(2, "2.5") + "\n")
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try server.query("SELECT max(version) FROM old.store_samples_schema") == "5")
        #expect(
            try server.query("SELECT groupArray((id, latency_ms)) FROM (SELECT id, latency_ms FROM old.samples ORDER BY at)")
                == "[(1,1.5),(2,2.5),(5,9.5),(6,4.5)]",
            "each identity once, the first stored (lowest number) kept; the new sample numbered one past the largest left, as SQLite does")
        #expect(
            try server.query(
                "SELECT count() FROM system.tables WHERE database = 'old' AND name IN ('writers', 'samples_v2', 'samples_next')") == "0")
        #expect(try server.query("SELECT count() FROM old.resends") == "0", "no read needs FINAL for the old resend")
        let exported = try run("store-samples", ["--db", url, "export"])
        #expect(exported.stdout == [line(1, "1.5"), line(2, "2.5"), line(3, "9.5"), line(4, "4.5")].joined(separator: "\n") + "\n")
    }

    @Test(
        "a server that is down: a clear error, the password masked, exit 2, nothing passed on; --wait retries until it is up; the password from the environment or a file"
    )
    func serverDownAndPasswords() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        let password = ClickHouseServer.password
        let line = sample("api", minute: 1)
        let down = try run(
            "store-samples", ["--db", "clickhouse://vitals:\(password)@127.0.0.1:\(server.httpPort)/vitals"], stdin: line + "\n")
        #expect(down.status == 2)
        #expect(down.stdout.isEmpty, "nothing passed on that was not stored")
        #expect(
            down.stderr.hasPrefix(
                "store-samples: cannot reach ClickHouse at clickhouse://vitals:***@127.0.0.1:\(server.httpPort)/vitals: "), "\(down.stderr)"
        )
        #expect(down.stderr.hasSuffix("(--wait DURATION keeps retrying)\n"))
        #expect(!down.stderr.contains(password))

        // --wait: the tool starts first and keeps retrying; the server comes up; the sample is stored.
        let waiting = try RunningTool(
            "store-samples", ["--db", "clickhouse://vitals@127.0.0.1:\(server.httpPort)/vitals", "--wait", "60s"],
            environment: ["VITALS_CLICKHOUSE_PASSWORD": password])
        try waiting.input.write(contentsOf: Data((line + "\n").utf8))
        try waiting.input.close()
        try server.start()
        #expect(waiting.readLine() == String(line.dropLast()) + #","monitor_id":1}"#)
        #expect(waiting.readLine() == nil, "then the end: the input was all stored")
        let (status, _, stderr) = waiting.stop(SIGTERM)
        #expect(status == 0, "\(stderr)")

        // The password from a file; a wrong one is refused by the server, and not printed either.
        let file = try scratch.write("password", password + "\n")
        let fromFile = try run(
            "store-samples", ["--db", "clickhouse://vitals@127.0.0.1:\(server.httpPort)/vitals?password_file=\(file)", "export"])
        #expect(fromFile.status == 0 && fromFile.lines == [line], "\(fromFile.stderr)")
        let wrong = try run(
            "store-samples", ["--db", "clickhouse://vitals:not-\(password)@127.0.0.1:\(server.httpPort)/vitals", "overview"])
        #expect(wrong.status == 2)
        #expect(
            wrong.stderr.hasPrefix("store-samples: ClickHouse at clickhouse://vitals:***@127.0.0.1:\(server.httpPort)/vitals refused: "),
            "\(wrong.stderr)")
        #expect(!wrong.stderr.contains(password))
    }

    @Test("--agent: two machines probing into one ClickHouse give one overview with both agents; without it, no agent, one monitor per id")
    func twoAgentsOneOverview() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        let target = try FixtureServer()
        let url = "clickhouse://127.0.0.1:\(server.httpPort)/vitals"
        let targets = try scratch.write(
            "targets.ndjson",
            #"{"name":"api","url":"\#(target.baseURL)/ok"}"# + "\n"
                + #"{"name":"shop","url":"\#(target.baseURL)/status/500"}"# + "\n")
        for agent in ["paris", "tokyo"] {
            let piped = try shell("probe-http --agent \(agent) '\(targets)' | store-samples --db '\(url)' --quiet")
            #expect(piped.status == 0, "\(agent): \(piped.stderr)")
        }
        // The two machines' samples: one monitor each per run, every sample naming its agent.
        #expect(
            try server.query("SELECT agent, count() FROM vitals.samples FINAL GROUP BY agent ORDER BY agent") == "\\N\t4",
            "samples piped in on the command line are the user's own: no remote agent column")
        let exported = try run("store-samples", ["--db", url, "export"]).records()
        #expect(exported.count == 4)
        #expect(exported.compactMap { $0.string("agent") }.sorted() == ["paris", "paris", "tokyo", "tokyo"])
        let agents = try run("store-samples", ["--db", url, "agents", "--ndjson"]).records()
        #expect(agents.compactMap { $0.string("id") } == ["paris", "tokyo"], "both agents, in the order they were first seen")
        #expect(agents.allSatisfy { $0.string("status") == "approved" }, "a user's own pipe counts at once")
        let overview = try run("store-samples", ["--db", url, "overview"]).records().first
        #expect(overview?.int("agents_total") == 2)
        #expect(overview?.int("agents_pending") == 0)
        #expect(overview?.int("total_monitors") == 2)

        // Seed 001: the server's own monitors have "agent_id": null; agents_total counts the
        // monitoring agents. Without --agent a sample names no agent (the probing machine is no
        // agent), and --agent '' is the same.
        let local = try run("probe-http", [targets])
        #expect(local.status == 0)
        #expect(try local.records().allSatisfy { $0["agent"] == nil }, "\(local.stdout)")
        let none = try run("probe-http", ["--agent", "", targets])
        #expect(try none.records().allSatisfy { $0["agent"] == nil }, "--agent '' writes none")
        // Two machines writing one store without --agent (store-samples(1), AGENTS): no agent to
        // tell them apart; a monitor id both probe is one monitor, holding both machines' samples.
        let shared = "clickhouse://127.0.0.1:\(server.httpPort)/shared"
        let machineA = try scratch.write("a.ndjson", #"{"id":"shop","name":"Shop","url":"\#(target.baseURL)/ok"}"# + "\n")
        let machineB = try scratch.write("b.ndjson", #"{"id":"shop","name":"Shop","url":"\#(target.baseURL)/status/503"}"# + "\n")
        for machine in [machineA, machineB] {
            let piped = try shell("probe-http '\(machine)' | store-samples --db '\(shared)' --quiet")
            #expect(piped.status == 0, "\(piped.stderr)")
        }
        let sharedOverview = try #require(try run("store-samples", ["--db", shared, "overview"]).records().first)
        #expect(sharedOverview.int("agents_total") == 0)
        #expect(sharedOverview.int("total_monitors") == 1)
        #expect(try run("store-samples", ["--db", shared, "agents"]).stdout == "[]\n")
        let shop = try #require(try JSONParser.parse(run("store-samples", ["--db", shared, "monitor", "shop"]).stdout).objectValue)
        #expect(shop["agent_id"] == .null)
        #expect(shop["latest_status"]?.objectValue?.string("status") == "down", "the machine that wrote last")
        let checks = try #require(try run("store-samples", ["--db", shared, "results", "shop"]).records().first)
        #expect(checks.int("total") == 2, "both machines' samples, under one monitor")
    }

    @Test("eight writers at once, each with a monitor new to the store: eight monitors, eight ids, each for good")
    func concurrentNewMonitors() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        _ = server
        func sample(_ monitor: String, _ minute: Int) -> String {
            #"{"type":"sample","monitor":"\#(monitor)","at":"2026-02-01T11:\#(String(format: "%02d", minute)):00Z","status":"up"}"#
        }
        #expect(try run("store-samples", ["--db", url, "-q"], stdin: sample("first", 0) + "\n").status == 0)
        // Eight processes started together (a shell's background jobs), each storing its own new
        // monitor: each read the monitors before any other wrote its own.
        let names = (1...8).map { "m\($0)" }
        let script =
            names.enumerated().map { index, name in
                "printf '%s\\n' '\(sample(name, index + 1))' | \"$1\" --db \"$2\" -q & "
            }.joined() + "wait"
        let together = try runProcess(
            "/bin/sh", ["-c", script, "sh", Binaries.path("store-samples"), url], stdin: "", environment: toolEnvironment())
        #expect(together.status == 0, "\(together.stderr)")
        func ids() throws -> [String: Int] {
            let listed = try JSONParser.parse(try run("store-samples", ["--db", url, "monitors"]).stdout).arrayValue ?? []
            return Dictionary(
                uniqueKeysWithValues: listed.compactMap { $0.objectValue }.map { ($0.string("name") ?? "?", $0.int("id") ?? -1) })
        }
        let first = try ids()
        #expect(first.count == 9 && Set(first.values).count == 9, "one id each: \(first.sorted { $0.key < $1.key })")
        #expect(first["first"] == 1)
        // Each writes again (a field changed, so its row is written again): the ids stay.
        let again =
            names.enumerated().map { index, name in
                "printf '%s\\n' '\(sample(name, index + 20).dropLast() + #","check_interval":30}"#)' | \"$1\" --db \"$2\" -q & "
            }.joined() + "wait"
        #expect(
            try runProcess("/bin/sh", ["-c", again, "sh", Binaries.path("store-samples"), url], stdin: "", environment: toolEnvironment())
                .status == 0)
        #expect(try ids() == first)
    }

    @Test("store-samples(1)'s replicated DDL is the schema store-samples makes: its tables, made by hand, are kept and written to")
    func manualDDL() throws {
        guard let (server, _) = try startedClickHouse() else { return }
        // The page's statements, as troff shows them, for one server: no ON CLUSTER (that needs
        // ZooKeeper), the local tables under their own names, each Replicated engine the plain
        // one with the same arguments after the path and replica.
        let page = try readPage("man/man1/store-samples.1")
        let start = try #require(page.range(of: "CREATE DATABASE IF NOT EXISTS vitals ON CLUSTER vitals;"))
        let end = try #require(page.range(of: ".EE", range: start.upperBound..<page.endIndex))
        var ddl = String(page[start.lowerBound..<end.lowerBound]).replacingOccurrences(of: "\\(aq", with: "'")
        ddl = ddl.replacingOccurrences(of: " ON CLUSTER vitals", with: "").replacingOccurrences(of: "_local", with: "")
        ddl = ddl.replacingOccurrences(
            of: #"Replicated(\w+)\(\s*'/clickhouse/tables/\{shard\}/vitals/\w+', '\{replica\}'(, )?"#, with: "$1(",
            options: .regularExpression)
        #expect(!ddl.contains("Replicated") && !ddl.contains("\\"), "\(ddl)")
        for statement in ddl.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }) where !statement.isEmpty {
            try server.query(statement)
        }
        // store-samples keeps them, and writes to them.
        let sample = #"{"type":"sample","monitor":"web","at":"2026-02-01T11:00:00Z","status":"up","latency_ms":12,"agent":"paris"}"#
        let url = "clickhouse://127.0.0.1:\(server.httpPort)/vitals"
        let stored = try run("store-samples", ["--db", url, "-q"], stdin: sample + "\n")
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try run("store-samples", ["--db", url, "export"]).stdout.contains(#""monitor":"web""#))
        // The same tables as store-samples makes itself, column for column, engine for engine.
        #expect(
            try run("store-samples", ["--db", "clickhouse://127.0.0.1:\(server.httpPort)/made", "-q"], stdin: sample + "\n").status == 0)
        // Every table and view, as ClickHouse shows its statement (columns in order, defaults, engine).
        let tables = try server.query("SELECT name FROM system.tables WHERE database = 'made' ORDER BY name").split(separator: "\n")
        #expect(tables.contains("samples") && tables.contains("places") && tables.contains("resends"), "\(tables)")
        #expect(try server.query("SELECT name FROM system.tables WHERE database = 'vitals' ORDER BY name").split(separator: "\n") == tables)
        for table in tables {
            let made = try server.query("SHOW CREATE TABLE made.\(table)").replacingOccurrences(of: "made.", with: "vitals.")
            #expect(try server.query("SHOW CREATE TABLE vitals.\(table)") == made, "\(table)")
        }
    }
}

/// The history's figures computed by ClickHouse are the ones Swift computes from the same samples:
/// buckets of every size from 1 to 120 checks (so ceil(q × n) lands on and between whole ranks for
/// 0.5, 0.95 and 0.99), latencies whose sums depend on the order they are added in, some checks
/// without a latency, every status.
@Suite("history figures: ClickHouse's aggregation is SQLite's, to the byte", .serialized, .timeLimit(.minutes(5)))
struct HistoryIdentityTests {
    static let start = 1_769_644_800_000  // 2026-01-29T00:00:00Z

    static func lines() -> [String] {
        var lines: [String] = []
        let statuses = ["up", "up", "up", "degraded", "down", "error", "unknown"]
        for bucket in 0..<120 {
            let checks = bucket + 1
            for check in 0..<checks {
                let at = start + bucket * 900_000 + check * 7_000
                let seed = (bucket * 7_919 + check * 104_729) % 1_000_003
                // A third of a tenth and tenths that do not add up exactly (0.1 + 0.2 != 0.3).
                let latency =
                    check % 11 == 5 ? "null" : String(format: "%.3f", Double(seed % 400_000) / 1000 + (check % 3 == 0 ? 0.1 : 0.2))
                let status = statuses[(bucket + check) % statuses.count]
                lines.append(
                    #"{"type":"sample","monitor":"h","at":"\#(ISO8601Milliseconds.format(at))","status":"\#(status)","latency_ms":\#(latency)}"#
                )
            }
        }
        return lines
    }

    @Test("buckets of 1 to 120 checks: the same bytes from both backends, and hand-checked ranks")
    func sameFigures() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let scratch = try ScratchDirectory()
        let server = try ClickHouseServer()
        try server.start()
        let input = HistoryIdentityTests.lines().joined(separator: "\n") + "\n"
        let stores = [scratch.path("h.db"), "clickhouse://127.0.0.1:\(server.httpPort)/history"]
        var outputs: [String] = []
        for store in stores {
            #expect(try run("store-samples", ["--db", store, "--quiet"], stdin: input).status == 0)
            let history = try run(
                "store-samples", ["--db", store, "--now", "2026-01-31T00:00:00Z", "history", "h", "--since", "48h", "--ndjson"])
            #expect(history.status == 0, "\(history.stderr)")
            outputs.append(history.stdout)
        }
        #expect(outputs[0] == outputs[1], "ClickHouse's figures are SQLite's")
        let buckets = outputs[1].split(separator: "\n")
        #expect(buckets.count == 120)
        // Bucket 21 (22 checks at 2026-01-29T05:15:00Z, 20 with a latency), worked by hand from the same
        // formula: the latencies sorted; p50 the 10th (ceil(0.5 × 20)), p95 the 19th, p99 the 20th.
        let checks = 22
        var latencies: [Double] = []
        for check in 0..<checks where check % 11 != 5 {
            let seed = (21 * 7_919 + check * 104_729) % 1_000_003
            latencies.append(Double(String(format: "%.3f", Double(seed % 400_000) / 1000 + (check % 3 == 0 ? 0.1 : 0.2)))!)
        }
        latencies.sort()
        #expect(latencies.count == 20)
        let bucket = try #require(try JSONParser.parse(Array(buckets[21].utf8)).objectValue)
        #expect(bucket["timestamp"]?.stringValue == "2026-01-29T05:15:00Z")
        #expect(bucket["checks"]?.intValue == 22)
        // Each figure is its rank's latency to two decimals, and nearer to it than to any other.
        for (key, rank) in [("p50_ms", 10), ("p95_ms", 19), ("p99_ms", 20)] {
            let figure = try #require(bucket[key]?.doubleValue)
            let nearest = latencies.indices.min { abs(latencies[$0] - figure) < abs(latencies[$1] - figure) }!
            #expect(
                abs(latencies[rank - 1] - figure) < 0.0051 && nearest == rank - 1,
                "\(key) \(figure): rank \(rank) is \(latencies[rank - 1])")
        }
    }
}

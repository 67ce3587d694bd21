import Foundation
import Testing
import VitalsKit

/// One sample line; times are minutes after 2026-01-27T10:00:00Z unless `at` is given.
func sample(
    _ monitor: String, minute: Int = 0, second: Int = 0, status: String = "up", latency: Double? = 10,
    extra: String = ""
) -> String {
    let at = String(format: "2026-01-27T%02d:%02d:%02d.000Z", 10 + minute / 60, minute % 60, second)
    let latencyText = latency.map { "\($0)" } ?? "null"
    return
        #"{"type":"sample","monitor":"\#(monitor)","name":"\#(monitor.uppercased())","kind":"https","target":"https://\#(monitor).example/","at":"\#(at)","status":"\#(status)","message":"\#(status) at \#(minute)","latency_ms":\#(latencyText)\#(extra)}"#
}

/// Runs `sqlite3` on a database: the independent reader of what store-samples wrote.
func sqlite(_ db: String, _ sql: String) throws -> String {
    let result = try runProcess("/usr/bin/env", ["sqlite3", db, sql], stdin: "", environment: toolEnvironment())
    guard result.status == 0 else { throw TestFailure("sqlite3: \(result.stderr)") }
    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

let testNow = "2026-01-27T12:00:00Z"

@Suite("store-samples end to end", .hangGuard(minutes: 3))
struct StoreSamplesTests {
    let scratch: ScratchDirectory
    var db: String { scratch.path("vitals.db") }

    init() throws {
        scratch = try ScratchDirectory()
    }

    func store(_ input: String, _ arguments: [String] = []) throws -> RunResult {
        try run("store-samples", ["--db", db, "--now", testNow] + arguments, stdin: input)
    }

    func query(_ arguments: [String]) throws -> RunResult {
        try run("store-samples", ["--db", db, "--now", testNow] + arguments)
    }

    /// A sample line as store-samples passes it on: with the monitor's id in its views added last.
    func passedOn(_ line: String, id: Int) -> String { String(line.dropLast()) + #","monitor_id":\#(id)}"# }

    @Test("ingest stores samples and passes every record on, samples with their monitor_id added; bad lines are reported and not stored")
    func ingest() throws {
        let lines = [
            sample("api", minute: 1),
            "not json",
            #"{"type":"target","url":"https://x/"}"#,
            sample("web", minute: 2, status: "down", extra: #","team":"ops""#),
            #"{"type":"sample","monitor":"api","status":"up"}"#,
            sample("api", minute: 3, status: "error", latency: nil),
        ]
        let result = try store(lines.joined(separator: "\n") + "\n")
        #expect(result.status == 2)
        #expect(
            result.lines == [passedOn(lines[0], id: 1), lines[2], passedOn(lines[3], id: 2), lines[4], passedOn(lines[5], id: 1)],
            "every JSON object passes through byte for byte, in order: other records and bad samples too; stored samples with monitor_id")
        let errors = result.stderr.split(separator: "\n").map(String.init)
        try #require(errors.count == 2, "a record of another type is no error")
        #expect(errors[0] == "store-samples: <stdin>:2: not valid JSON: expected a JSON object at column 1")
        #expect(errors[1] == "store-samples: <stdin>:5: sample has no 'at'")
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "3")
        #expect(try sqlite(db, "SELECT monitor FROM monitors ORDER BY id") == "api\nweb")
        #expect(try sqlite(db, "PRAGMA journal_mode") == "wal")
        let quiet = try store(sample("api", minute: 4) + "\n", ["-q"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "4")
    }

    @Test("a streaming pipeline gets each record within the commit window, without closing the input")
    func streaming() throws {
        let tool = try RunningTool("store-samples", ["--db", db])
        let line = sample("api", minute: 1)
        try tool.input.write(contentsOf: Data((line + "\n").utf8))
        // Reading the record back while stdin stays open is the proof: it was committed on idle.
        #expect(tool.readLine() == passedOn(line, id: 1))
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "1")
        let second = sample("api", minute: 2)
        try tool.input.write(contentsOf: Data((second + "\n").utf8))
        #expect(tool.readLine() == passedOn(second, id: 1))
        let (status, rest, stderr) = tool.stop(SIGINT)
        #expect(status == 130)
        #expect(rest.isEmpty && stderr.isEmpty)
    }

    @Test("kill -9 mid-ingest: every record passed on is stored, and the database is intact and reopens")
    func crash() throws {
        signal(SIGPIPE, SIG_IGN)
        let tool = try RunningTool("store-samples", ["--db", db])
        var passed: [String] = []
        let writer = tool.input
        // A writer thread keeps input flowing while this thread reads what is passed on;
        // the kill lands while both are still moving.
        let feeding = Thread {
            for round in 0..<200 {
                let chunk = (0..<200).map {
                    sample("m\($0 % 7)", minute: round % 120, second: $0 % 60, extra: #","seq":\#(round * 200 + $0)"#)
                }
                guard (try? writer.write(contentsOf: Data((chunk.joined(separator: "\n") + "\n").utf8))) != nil else { return }
            }
            try? writer.close()
        }
        feeding.start()
        while passed.count < 3000, let line = tool.readLine() { passed.append(line) }
        kill(tool.process.pid, SIGKILL)
        tool.process.wait()
        #expect(!tool.process.exited)
        #expect(passed.count == 3000)
        #expect(try sqlite(db, "PRAGMA integrity_check") == "ok")
        let stored = Set(try sqlite(db, "SELECT json_extract(record, '$.seq') FROM samples").split(separator: "\n").map(String.init))
        for line in passed {
            guard case .object(let record) = try JSONParser.parse(line), let seq = record["seq"]?.intValue else {
                throw TestFailure("bad pass-through line: \(line)")
            }
            #expect(stored.contains(String(seq)), "sample \(seq) was passed on but not stored")
        }
        let again = try store(sample("after", minute: 59) + "\n")
        #expect(again.status == 0)
    }

    @Test("two writers and a reader at once: nothing fails, nothing is lost")
    func concurrentWriters() throws {
        let count = 6000
        let inputs = try (0..<2).map { writer -> String in
            // Each line a sample of its own (monitor and time), as the two writers are told apart by their monitors.
            let lines = (0..<count).map { sample("w\(writer)-\($0 % 50)", minute: $0 / 50, second: 0) }
            return try scratch.write("in\(writer).ndjson", lines.joined(separator: "\n") + "\n")
        }
        // The database exists before the race starts (a reader of a missing database is an error by design).
        #expect(try store(sample("seed") + "\n", ["-q"]).status == 0)
        let result = try shell(
            """
            store-samples --db "$DB" -q "$A" & a=$!
            store-samples --db "$DB" -q "$B" & b=$!
            while kill -0 $a 2>/dev/null; do store-samples --db "$DB" overview >/dev/null 2>>reader.err || echo reader-failed; done
            wait $a; sa=$?; wait $b; sb=$?; echo "$sa $sb"
            """, environment: ["DB": db, "A": inputs[0], "B": inputs[1]], directory: scratch.url)
        #expect(result.stdout.split(separator: "\n").last == "0 0", "\(result.stdout) \(result.stderr)")
        #expect(
            !result.stdout.contains("reader-failed"), "\((try? String(contentsOfFile: scratch.path("reader.err"), encoding: .utf8)) ?? "")")
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == String(2 * count + 1))
        #expect(try sqlite(db, "SELECT count(*) FROM monitors") == "101")
    }

    @Test("overview, monitors, monitor, history, results and agents decode as the OnlineTracker client's models")
    func onlineTrackerShapes() throws {
        let input = [
            sample("api", minute: 0, extra: #","agent":"office","check_interval":30,"tls_expiry_days":41"#),
            sample("api", minute: 1, status: "degraded", latency: 250, extra: #","agent":"office""#),
            sample("web", minute: 2, status: "error", latency: nil),
            sample("ping1", minute: 3, extra: #","kind":"tcp""#),
        ].joined(separator: "\n")
        #expect(try store(input).status == 0)
        let overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.totalMonitors == 3)
        #expect(overview.monitorsDegraded == 1 && overview.monitorsDown == 1 && overview.monitorsUp == 1)
        #expect(overview.agentsTotal == 1 && overview.agentsPending == 0)
        // The mean of the monitors' 24-hour uptimes, counting only up checks: api 1 of 2 (50.0),
        // web 0 of 1 (0.0), ping1 1 of 1 (100.0): 50.0.
        #expect(overview.overallUptime24h == 50.0)
        #expect(overview.monitors.first { $0.name == "WEB" }?.status == .down, "error is down to the client")
        let monitors = try decode([OTMonitor].self, try query(["monitors", "--sort", "id"]).stdout)
        #expect(monitors.map(\.name) == ["API", "WEB", "PING1"])
        try #require(monitors.count == 3)
        let api = monitors[0]
        #expect(api.id == 1 && api.agentId == "office" && api.type == .https && api.checkInterval == 30)
        #expect(api.latestStatus?.status == .degraded && api.latestStatus?.responseTimeMs == 250)
        #expect(api.createdAt == "2026-01-27T10:00:00Z")
        #expect(monitors[2].type == .ping, "tcp is shown as ping")
        let byInteger = try decode(OTMonitor.self, try query(["monitor", "2"]).stdout)
        let byName = try decode(OTMonitor.self, try query(["monitor", "web"]).stdout)
        #expect(byInteger.id == 2 && byName.id == 2)
        // api: up in 10 ms at 10:00 and degraded in 250 ms at 10:01: one 15-minute bucket, worst-of status
        // degraded, only the up check is uptime (1 of 2: 50.0), average (10 + 250) / 2 = 130 ms.
        let history = try decode([OTStatusHistoryPoint].self, try query(["history", "api"]).stdout)
        let bucket = try #require(history.first)
        #expect(history.count == 1)
        #expect(bucket.timestamp == "2026-01-27T10:00:00Z" && bucket.status == .degraded)
        #expect(bucket.uptimePercent == 50.0 && bucket.responseTimeAvgMs == 130)
        // Its two checks, newest first; the first one carried the certificate's 41 days.
        let results = try decode(OTResultsPage.self, try query(["results", "api"]).stdout)
        #expect(results.total == 2 && results.page == 1 && results.totalPages == 1)
        try #require(results.items.count == 2)
        #expect(results.items[0].checkedAt == "2026-01-27T10:01:00Z" && results.items[0].status == .degraded)
        #expect(results.items[0].responseTimeMs == 250 && results.items[0].details == "degraded at 1")
        #expect(results.items[1].checkedAt == "2026-01-27T10:00:00Z" && results.items[1].status == .up)
        #expect(results.items[1].responseTimeMs == 10 && results.items[1].sslExpiryDays == 41)
        let agents = try decode([OTAgent].self, try query(["agents"]).stdout)
        try #require(agents.count == 1)
        #expect(agents.map(\.id) == ["office"] && agents[0].status == .approved && agents[0].monitorCount == 1)
        let rejected = try query(["agents", "reject", "office"])
        #expect(rejected.status == 0)
        #expect(try decode([OTAgent].self, rejected.stdout).first?.status == .rejected)
        #expect(try query(["agents", "approve", "nobody"]).status == 2)
    }

    @Test("history: 15-minute buckets, worst-of status, uptime, average and nearest-rank percentiles")
    func history() throws {
        // Bucket 10:00: latencies 10, 20, 30, 40 with up, up, degraded, down.
        //   status down (worst), uptime 2 up of 4 = 50.0, average 25, p50 = 2nd of 4 = 20, p95 = p99 = 4th = 40.
        // Bucket 10:15: one up check of 100 ms. Bucket 10:30: none (absent).
        // Bucket 11:00: one error check without latency: down, uptime 0, no latency figures.
        let input = [
            sample("api", minute: 1, latency: 40 - 30),
            sample("api", minute: 5, latency: 20),
            sample("api", minute: 9, status: "degraded", latency: 30),
            sample("api", minute: 14, status: "down", latency: 40),
            sample("api", minute: 16, latency: 100),
            sample("api", minute: 60, status: "error", latency: nil),
        ].joined(separator: "\n")
        #expect(try store(input).status == 0)
        let result = try query(["history", "api", "--since", "3h", "--ndjson"])
        let buckets = try result.records()
        try #require(buckets.count == 3)
        #expect(buckets[0].string("timestamp") == "2026-01-27T10:00:00Z")
        #expect(buckets[0].string("status") == "down")
        #expect(buckets[0].double("uptime_percent") == 50)
        #expect(buckets[0].int("response_time_avg_ms") == 25)
        #expect(buckets[0].double("p50_ms") == 20 && buckets[0].double("p95_ms") == 40 && buckets[0].double("p99_ms") == 40)
        #expect(buckets[0].int("checks") == 4)
        #expect(buckets[1].string("timestamp") == "2026-01-27T10:15:00Z" && buckets[1].string("status") == "up")
        #expect(buckets[2].string("timestamp") == "2026-01-27T11:00:00Z" && buckets[2].string("status") == "down")
        #expect(buckets[2].double("uptime_percent") == 0 && buckets[2]["response_time_avg_ms"] == .null)
        // The window is [since, now]: from 12:00 one hour back starts at 11:00 exactly,
        // so it holds the 11:00 bucket only; a day later it holds nothing.
        #expect(try query(["history", "api", "--since", "1h", "--ndjson"]).lines.count == 1)
        #expect(
            try run("store-samples", ["--db", db, "--now", "2026-01-28T12:00:00Z", "history", "api", "--since", "1h"]).stdout == "[]\n")
        // A span, not whole hours: 90 minutes back from 12:00 is 10:30, after the 10:16 check.
        #expect(
            try query(["history", "api", "--since", "90m", "--ndjson"]).records().map { $0.string("timestamp") } == ["2026-01-27T11:00:00Z"]
        )
        // A time: from 10:15 the 10:16 check's bucket and the 11:00 one.
        #expect(
            try query(["history", "api", "--since", "2026-01-27T10:15:00Z", "--ndjson"]).records().map { $0.string("timestamp") }
                == ["2026-01-27T10:15:00Z", "2026-01-27T11:00:00Z"])
        let tooFar = try query(["history", "api", "--since", "8761h"])
        #expect(tooFar.status == 64 && tooFar.stderr.contains("--since looks back at most 365d here, not '8761h'"), "\(tooFar.stderr)")
        #expect(try query(["history", "api", "--since", "8760h"]).status == 0, "a year is the most, as the API's hours=8760")
        let future = try query(["history", "api", "--since", "2026-01-27T13:00:00Z"])
        #expect(future.status == 64 && future.stderr.contains("--since wants a time before now"), "\(future.stderr)")
    }

    @Test("results: newest first, paginated, per_page at most 100")
    func results() throws {
        let input = (0..<60).map { sample("api", minute: $0, latency: Double($0)) }.joined(separator: "\n")
        #expect(try store(input).status == 0)
        let first = try decode(OTResultsPage.self, try query(["results", "api", "--since", "3h"]).stdout)
        #expect(first.total == 60 && first.totalPages == 3 && first.perPage == 25 && first.page == 1)
        #expect(first.items.count == 25)
        #expect(first.items.first?.checkedAt == "2026-01-27T10:59:00Z" && first.items.first?.responseTimeMs == 59)
        let last = try decode(OTResultsPage.self, try query(["results", "api", "--since", "3h", "--page", "3"]).stdout)
        #expect(last.items.count == 10 && last.items.last?.checkedAt == "2026-01-27T10:00:00Z")
        let beyond = try decode(OTResultsPage.self, try query(["results", "api", "--since", "3h", "--page", "9"]).stdout)
        #expect(beyond.items.isEmpty && beyond.total == 60)
        #expect(try query(["results", "api", "--per-page", "101"]).status == 64)
        #expect(try decode(OTResultsPage.self, try query(["results", "api", "--per-page", "100"]).stdout).perPage == 100)
        // Checks since 10:30: minutes 30 to 59.
        #expect(try decode(OTResultsPage.self, try query(["results", "api", "--since", "2026-01-27T10:30:00Z"]).stdout).total == 30)
        // The default window is 24 hours back from --now: all 60 are inside it.
        #expect(try decode(OTResultsPage.self, try query(["results", "api"]).stdout).total == 60)
    }

    @Test("queries that match nothing print empty lists and exit 0; an unknown monitor is exit 2")
    func empty() throws {
        #expect(try store("").status == 0)
        #expect(try query(["monitors"]).stdout == "[]\n")
        #expect(try query(["agents"]).stdout == "[]\n")
        #expect(try query(["export"]).stdout.isEmpty)
        let overview = try decode(OTStatusOverview.self, try query(["overview"]).stdout)
        #expect(overview.totalMonitors == 0 && overview.overallUptime24h == 0)
        let unknown = try query(["history", "nope"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "store-samples: no monitor 'nope' in \(db)\n")
    }

    @Test("retention: --keep-per-monitor keeps the newest N; --keep drops what is older")
    func retention() throws {
        let input = (0..<500).map { sample("api", minute: $0 / 60, second: $0 % 60) }.joined(separator: "\n")
        #expect(try store(input, ["-q", "--keep-per-monitor", "200"]).status == 0)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "200")
        // The 200 newest are samples 300..499: the oldest is minute 5, second 0.
        #expect(try sqlite(db, "SELECT strftime('%H:%M:%S', min(at)/1000, 'unixepoch') FROM samples") == "10:05:00")
        // Ten days later, with a limit of 7 days, a new sample pushes the old ones out.
        let later = #"{"type":"sample","monitor":"api","at":"2026-02-06T10:00:00Z","status":"up"}"#
        #expect(
            try run("store-samples", ["--db", db, "-q", "--now", "2026-02-06T10:00:00Z", "--keep", "7d"], stdin: later + "\n").status == 0)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "1")
        let partDay = try run("store-samples", ["--db", db, "-q", "--keep", "36h"], stdin: later + "\n")
        #expect(partDay.status == 64 && partDay.stderr.contains("--keep wants whole days"), "\(partDay.stderr)")
    }

    @Test("retention counts a pending agent's held samples too: --keep drops them when old, --keep-per-monitor counts them")
    func retentionOfHeldSamples() throws {
        // tokyo is not approved: its samples are held. Three held and two counted samples of api.
        func line(_ agent: String?, _ at: String) -> String {
            let place = agent.map { #","agent":"\#($0)""# } ?? ""
            return #"{"type":"sample","monitor":"api","at":"\#(at)","status":"up"\#(place)}"#
        }
        let held = ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-20T10:00:00Z"].map { line("tokyo", $0) }
        #expect(try run("store-samples", ["--db", db, "-q", "--remote"], stdin: held.joined(separator: "\n") + "\n").status == 0)
        let local = ["2026-01-19T10:00:00Z", "2026-01-20T11:00:00Z"].map { line(nil, $0) }
        #expect(try store(local.joined(separator: "\n") + "\n", ["-q"]).status == 0)
        #expect(try sqlite(db, "SELECT count(*), sum(held) FROM samples") == "5|3")
        // On 2026-01-21 with 7 days kept, the two held samples of 1 January go; the one of 20 January stays.
        let now = line(nil, "2026-01-21T10:00:00Z")
        #expect(
            try run("store-samples", ["--db", db, "-q", "--now", "2026-01-21T10:00:00Z", "--keep", "7d"], stdin: now + "\n").status == 0)
        #expect(try sqlite(db, "SELECT count(*), sum(held) FROM samples") == "4|1")
        // Keeping 2 a monitor counts the held one: the two newest stay (20 January 11:00 and 21 January).
        let next = line(nil, "2026-01-21T11:00:00Z")
        #expect(
            try run("store-samples", ["--db", db, "-q", "--now", "2026-01-21T11:00:00Z", "--keep-per-monitor", "2"], stdin: next + "\n")
                .status == 0)
        #expect(
            try sqlite(
                db,
                "SELECT group_concat(strftime('%d %H', at/1000, 'unixepoch') || ':' || held, ', ') FROM (SELECT * FROM samples ORDER BY at)"
            )
                == "21 10:0, 21 11:0")
    }

    @Test("export: the stored lines in time order, filtered by time and monitor, or as CSV")
    func export() throws {
        let lines = [sample("b", minute: 2), sample("a", minute: 1, extra: #","message":"x, \"y\"""#), sample("a", minute: 30)]
        #expect(try store(lines.joined(separator: "\n") + "\n", ["-q"]).status == 0)
        #expect(try query(["export"]).lines == [lines[1], lines[0], lines[2]])
        #expect(try query(["export", "--since", "2026-01-27T10:02:00Z", "--until", "2026-01-27T10:20:00Z"]).lines == [lines[0]])
        #expect(try query(["export", "--monitor", "a"]).lines == [lines[1], lines[2]])
        // --since 100m from 12:00 is 10:20.
        #expect(try query(["export", "--since", "100m"]).lines == [lines[2]])
        let csv = try query(["export", "--format", "csv", "--monitor", "a"]).lines
        try #require(csv.count >= 2)
        #expect(csv[0] == "monitor,name,at,status,reason,code,latency_ms,message,tls_expiry_days,speed_mbps")
        #expect(csv[1] == #"a,A,2026-01-27T10:01:00.000Z,up,,,10.0,"x, ""y""",,"#)
        #expect(try query(["export", "--page", "2"]).status == 64, "options of other subcommands are refused")
    }

    @Test("stats: Online Now's totals and average speed")
    func stats() throws {
        let input = [
            sample("net", minute: 1, extra: #","speed_mbps":80"#),
            sample("net", minute: 2, extra: #","speed_mbps":100"#),
            sample("net", minute: 3, status: "down", latency: nil),
        ].joined(separator: "\n")
        #expect(try store(input).status == 0)
        guard case .object(let stats) = try JSONParser.parse(try query(["stats"]).stdout) else { throw TestFailure("not an object") }
        #expect(stats["total_checks"]?.intValue == 3)
        #expect(stats["average_speed_mbps"]?.doubleValue == 90)
        #expect(stats["uptime_percent"]?.doubleValue == 66.67)
    }

    @Test("databases that cannot be used are clear errors, exit 2, and nothing is half-written")
    func badDatabases() throws {
        let missingDirectory = try run("store-samples", ["--db", scratch.path("no/such/dir/x.db")], stdin: sample("a") + "\n")
        #expect(missingDirectory.status == 2)
        #expect(missingDirectory.stderr.contains("the directory does not exist or is not writable"))
        let text = try scratch.write("notes.db", String(repeating: "this is not a database\n", count: 200))
        let notSQLite = try run("store-samples", ["--db", text], stdin: sample("a") + "\n")
        #expect(notSQLite.status == 2)
        #expect(notSQLite.stderr.contains("is not a SQLite database"))
        #expect(try String(contentsOfFile: text, encoding: .utf8).hasPrefix("this is not"), "left as it was")
        #expect(try store(sample("a") + "\n").status == 0)
        _ = try sqlite(db, "PRAGMA user_version = 99")
        let newer = try store(sample("a", minute: 1) + "\n")
        #expect(newer.status == 2)
        #expect(newer.stderr.contains("has schema version 99; this store-samples knows versions up to 8"))
        let missing = try run("store-samples", ["--db", scratch.path("absent.db"), "overview"])
        #expect(missing.status == 2 && missing.stderr.contains("no database at"))
        #expect(!FileManager.default.fileExists(atPath: scratch.path("absent.db")), "a query never creates a database")
    }

    @Test("a read-only directory is a clear error")
    func readOnlyDirectory() throws {
        let directory = scratch.path("locked")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o555)
        defer { chmod(directory, 0o755) }
        // Root ignores directory permissions, so run as nobody then.
        let prefix = getuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : ""
        let result = try runProcess(
            "/bin/sh", ["-c", prefix + "store-samples --db \"$DIR/x.db\""], stdin: sample("a") + "\n",
            environment: toolEnvironment(["DIR": directory], shared: true))
        #expect(result.status == 2)
        #expect(result.stderr.contains("cannot open"), "\(result.stderr)")
    }

    @Test("a full disk (a file size limit) stops with a clear error; what was passed on is stored, the file is intact")
    func fullDisk() throws {
        // About 420 bytes a stored sample: 40 MB hold some 20,000-sample transactions, not all 150,000 samples.
        let lines = (0..<150_000).map {
            sample(
                "m\($0 % 100)", minute: $0 / 6000 % 120, second: $0 / 100 % 60, extra: #","pad":"\#(String(repeating: "p", count: 200))""#)
        }
        let input = try scratch.write("big.ndjson", lines.joined(separator: "\n") + "\n")
        let result = try shell(
            "ulimit -f 40000; store-samples --db \"$DB\" \"$IN\" > passed.ndjson", environment: ["DB": db, "IN": input],
            directory: scratch.url)
        #expect(result.status == 2)
        #expect(result.stderr.contains("the disk or file size limit is full"), "\(result.stderr)")
        #expect(try sqlite(db, "PRAGMA integrity_check") == "ok")
        let passed = try String(contentsOfFile: scratch.path("passed.ndjson"), encoding: .utf8).split(separator: "\n").count
        #expect(passed > 0 && passed < lines.count)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == String(passed))
    }

    @Test("VITALS_DB names the database; --db wins over it")
    func environment() throws {
        #expect(try run("store-samples", [], stdin: sample("a") + "\n", environment: ["VITALS_DB": db]).status == 0)
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "1")
        let other = scratch.path("other.db")
        #expect(try run("store-samples", ["--db", other], stdin: sample("a") + "\n", environment: ["VITALS_DB": db]).status == 0)
        #expect(try sqlite(other, "SELECT count(*) FROM samples") == "1")
    }

    @Test("probe-http | store-samples | store-samples overview: the pipeline")
    func pipeline() throws {
        let server = try FixtureServerHandle()
        let result = try shell(
            """
            printf '%s\\n' "$BASE/ok" "$BASE/status/503" | probe-http | store-samples --db "$DB" | grep -c '"type":"sample"'
            store-samples --db "$DB" overview
            """, environment: ["BASE": server.url, "DB": db])
        let lines = result.lines
        #expect(lines.first?.trimmingCharacters(in: .whitespaces) == "2")
        try #require(lines.count >= 2, "\(result.stderr)")
        let overview = try decode(OTStatusOverview.self, lines[1])
        #expect(overview.monitorsUp == 1 && overview.monitorsDown == 1)
    }
}

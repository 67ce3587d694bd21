import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether Prometheus' tools are installed (Debian package `prometheus`: promtool and the server).
let promtoolPath = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
let prometheusPath = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Issue 27: `store-samples metrics` and `GET /metrics`, judged by Prometheus' own tools:
/// promtool's parser and linter, and a Prometheus server that scrapes the API through nginx over
/// TLS and answers queries; the values and the escaping worked out by hand; the counters held to
/// the sqlite3 shell's own count of the table.
@Suite("store-samples metrics: Prometheus' text format", .serialized, .hangGuard(minutes: 10))
struct MetricsTests {
    let scratch: ScratchDirectory
    var db: String { scratch.path("vitals.db") }

    init() throws {
        scratch = try ScratchDirectory()
        signal(SIGPIPE, SIG_IGN)
    }

    /// Three monitors: api (a name with a quote, a backslash and a line feed; up, then degraded),
    /// db (no name, kind tcp; down without a latency, then error) and old (a monitor record, no sample).
    static let corpus =
        [
            #"{"type":"sample","monitor":"api","name":"A \"q\" \\ b\nc","kind":"https","at":"2026-01-27T10:00:00.000Z","status":"up","latency_ms":48.2,"tls_expiry_days":61}"#,
            #"{"type":"sample","monitor":"db","kind":"tcp","at":"2026-01-27T10:01:00.000Z","status":"down","latency_ms":null}"#,
            #"{"type":"sample","monitor":"db","kind":"tcp","at":"2026-01-27T10:02:00.000Z","status":"error","message":"timeout"}"#,
            #"{"type":"monitor","monitor":"old","name":"Old","kind":"http","at":"2026-01-27T10:03:00.000Z","enabled":false}"#,
            #"{"type":"sample","monitor":"api","name":"A \"q\" \\ b\nc","kind":"https","at":"2026-01-27T10:05:00.250Z","status":"degraded","latency_ms":1234.5,"tls_expiry_days":60}"#,
        ].joined(separator: "\n") + "\n"

    /// The series lines, worked out by hand from the corpus. The name `A "q" \ b<LF>c` is written
    /// `A \"q\" \\ b\nc`. api's latest is the degraded check of 10:05:00.250 (2026-01-27T00:00Z is
    /// 1,769,472,000 s; plus 36,300.25 s), 1,234.5 ms is 1.2345 s, 60 days 5,184,000 s; db's latest
    /// is the error of 10:02 (1,769,508,120 s), without a latency; old has no check: unknown.
    static let expectedSeries = #"""
        vitals_monitor_up{monitor="api",name="A \"q\" \\ b\nc",kind="https"} 1
        vitals_monitor_up{monitor="db",name="db",kind="tcp"} 0
        vitals_monitor_status{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="up"} 0
        vitals_monitor_status{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="degraded"} 1
        vitals_monitor_status{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="down"} 0
        vitals_monitor_status{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="error"} 0
        vitals_monitor_status{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="unknown"} 0
        vitals_monitor_status{monitor="db",name="db",kind="tcp",status="up"} 0
        vitals_monitor_status{monitor="db",name="db",kind="tcp",status="degraded"} 0
        vitals_monitor_status{monitor="db",name="db",kind="tcp",status="down"} 0
        vitals_monitor_status{monitor="db",name="db",kind="tcp",status="error"} 1
        vitals_monitor_status{monitor="db",name="db",kind="tcp",status="unknown"} 0
        vitals_monitor_status{monitor="old",name="Old",kind="http",status="up"} 0
        vitals_monitor_status{monitor="old",name="Old",kind="http",status="degraded"} 0
        vitals_monitor_status{monitor="old",name="Old",kind="http",status="down"} 0
        vitals_monitor_status{monitor="old",name="Old",kind="http",status="error"} 0
        vitals_monitor_status{monitor="old",name="Old",kind="http",status="unknown"} 1
        vitals_monitor_latency_seconds{monitor="api",name="A \"q\" \\ b\nc",kind="https"} 1.2345
        vitals_monitor_last_check_timestamp_seconds{monitor="api",name="A \"q\" \\ b\nc",kind="https"} 1769508300.25
        vitals_monitor_last_check_timestamp_seconds{monitor="db",name="db",kind="tcp"} 1769508120
        vitals_monitor_tls_expiry_seconds{monitor="api",name="A \"q\" \\ b\nc",kind="https"} 5184000
        vitals_checks_total{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="up"} 1
        vitals_checks_total{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="degraded"} 1
        vitals_checks_total{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="down"} 0
        vitals_checks_total{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="error"} 0
        vitals_checks_total{monitor="api",name="A \"q\" \\ b\nc",kind="https",status="unknown"} 0
        vitals_checks_total{monitor="db",name="db",kind="tcp",status="up"} 0
        vitals_checks_total{monitor="db",name="db",kind="tcp",status="degraded"} 0
        vitals_checks_total{monitor="db",name="db",kind="tcp",status="down"} 1
        vitals_checks_total{monitor="db",name="db",kind="tcp",status="error"} 1
        vitals_checks_total{monitor="db",name="db",kind="tcp",status="unknown"} 0
        vitals_checks_total{monitor="old",name="Old",kind="http",status="up"} 0
        vitals_checks_total{monitor="old",name="Old",kind="http",status="degraded"} 0
        vitals_checks_total{monitor="old",name="Old",kind="http",status="down"} 0
        vitals_checks_total{monitor="old",name="Old",kind="http",status="error"} 0
        vitals_checks_total{monitor="old",name="Old",kind="http",status="unknown"} 0
        """#

    /// promtool's verdict on an exposition: its exit status and what it printed.
    static func promtool(_ exposition: String) throws -> RunResult {
        try runProcess(promtoolPath ?? "/usr/bin/promtool", ["check", "metrics"], stdin: exposition, environment: toolEnvironment())
    }

    @Test("the exposition of a hand-worked store: every series and value, label values escaped; promtool accepts it without a lint")
    func handWorked() throws {
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: MetricsTests.corpus).status == 0)
        let metrics = try run("store-samples", ["--db", db, "metrics"])
        #expect(metrics.status == 0 && metrics.stderr.isEmpty, "\(metrics.stderr)")
        let series = metrics.lines.filter { !$0.hasPrefix("#") }
        #expect(series.joined(separator: "\n") == MetricsTests.expectedSeries)
        let types = metrics.lines.filter { $0.hasPrefix("# TYPE ") }
        #expect(
            types == [
                "# TYPE vitals_monitor_up gauge", "# TYPE vitals_monitor_status gauge", "# TYPE vitals_monitor_latency_seconds gauge",
                "# TYPE vitals_monitor_last_check_timestamp_seconds gauge", "# TYPE vitals_monitor_tls_expiry_seconds gauge",
                "# TYPE vitals_checks_total counter",
            ])
        #expect(metrics.lines.filter { $0.hasPrefix("# HELP ") }.count == 6, "each family has its help line")
        guard try requireGate(promtoolPath != nil, "promtool is needed (apt-get install prometheus)") else { return }
        let verdict = try MetricsTests.promtool(metrics.stdout)
        #expect(verdict.status == 0 && verdict.stdout.isEmpty && verdict.stderr.isEmpty, "promtool: \(verdict.stdout)\(verdict.stderr)")
        // And promtool can fail: the same text with a label value's quote left unescaped is refused.
        let broken = metrics.stdout.replacingOccurrences(of: #"A \"q\""#, with: #"A "q""#)
        #expect(try MetricsTests.promtool(broken).status != 0, "an unescaped quote is refused")
    }

    @Test("--output replaces the file whole with what standard output shows, readable by node_exporter; a file it cannot write is exit 2")
    func outputFile() throws {
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: MetricsTests.corpus).status == 0)
        let folder = scratch.path("textfile")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let file = folder + "/vitals.prom"
        try "old contents\n".write(toFile: file, atomically: false, encoding: .utf8)
        let written = try shell("umask 022; store-samples --db \"$DB\" metrics --output \"$OUT\"", environment: ["DB": db, "OUT": file])
        #expect(written.status == 0 && written.stdout.isEmpty && written.stderr.isEmpty, "\(written.stderr)")
        let printed = try run("store-samples", ["--db", db, "metrics"])
        #expect(try String(contentsOfFile: file, encoding: .utf8) == printed.stdout)
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o644, "0644 less the umask")
        // Under umask 000 others still cannot write it (they could fill it with metrics of their own).
        let open = try shell("umask 000; store-samples --db \"$DB\" metrics --output \"$OUT\"", environment: ["DB": db, "OUT": file])
        #expect(open.status == 0, "\(open.stderr)")
        let openMode = (try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)?.intValue
        #expect(openMode == 0o644, "mode \(String(openMode ?? 0, radix: 8)) under umask 000")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["vitals.prom"], "no temporary file left beside it")
        let missing = try run("store-samples", ["--db", db, "metrics", "--output", scratch.path("no/such/folder/vitals.prom")])
        #expect(missing.status == 2 && missing.stderr.contains("cannot write") && missing.stdout.isEmpty, "\(missing.stderr)")
    }

    /// The counters of `metrics` on `db`: (monitor, status) to value.
    func counters(_ db: String) throws -> [String: Int] {
        let metrics = try run("store-samples", ["--db", db, "metrics"])
        #expect(metrics.status == 0, "\(metrics.stderr)")
        var result: [String: Int] = [:]
        for line in metrics.lines where line.hasPrefix("vitals_checks_total{") {
            let monitor = line.components(separatedBy: "monitor=\"")[1].components(separatedBy: "\"")[0]
            let status = line.components(separatedBy: "status=\"")[1].components(separatedBy: "\"")[0]
            let value = Int(line.split(separator: " ").last!)!
            if value > 0 { result["\(monitor) \(status)"] = value }
        }
        return result
    }

    /// The sqlite3 shell's count of the samples that count (not held), by monitor and status.
    func shellCounts(_ db: String) throws -> [String: Int] {
        let result = try runProcess(
            "/usr/bin/env",
            [
                "sqlite3", db,
                """
                SELECT m.monitor || ' ' || CASE s.status WHEN 0 THEN 'up' WHEN 1 THEN 'degraded' WHEN 2 THEN 'down' WHEN 3 THEN 'error' ELSE 'unknown' END,
                       count(*) FROM samples s JOIN monitors m ON m.id = s.monitor_id WHERE s.held = 0 GROUP BY 1
                """,
            ], stdin: "", environment: toolEnvironment())
        #expect(result.status == 0, "\(result.stderr)")
        var counts: [String: Int] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: "|")
            counts[String(parts[0])] = Int(parts[1])!
        }
        return counts
    }

    @Test("the counters are the sqlite3 shell's count of the table after each ingest, a replay, a pending agent, its approval and clears")
    func countersFollowTheStore() throws {
        let lines = BackendCorpus.lines()
        let corpus = try scratch.write("corpus.ndjson", lines.joined(separator: "\n") + "\n")
        func ingest(_ input: String, _ extra: [String] = []) throws {
            let result = try shell(
                "store-samples --db \"$DB\" --now \(BackendCorpus.now) -q \(extra.joined(separator: " ")) < \"$IN\"",
                environment: ["DB": db, "IN": input])
            #expect(result.status == 0 || result.status == 2, "\(result.stderr)")
        }
        func same(_ step: String) throws {
            let ours = try counters(db)
            #expect(!ours.isEmpty, "\(step)")
            #expect(ours == (try shellCounts(db)), "\(step): the counters are the table's count")
        }
        let half = try scratch.write("half.ndjson", lines.prefix(3_000).joined(separator: "\n") + "\n")
        try ingest(half)
        try same("after half the corpus")
        try ingest(corpus)
        try same("after the whole corpus (its first half again)")
        try ingest(corpus)
        try same("after a replay")
        let remote = try scratch.write(
            "remote.ndjson",
            (0..<5).map { step in
                #"{"type":"sample","monitor":"edge","at":"2026-02-01T11:\#(10 + step):00.000Z","status":"up","latency_ms":\#(step).5,"agent":"berlin"}"#
            }.joined(separator: "\n") + "\n")
        try ingest(remote, ["--remote"])
        try same("with berlin pending (its samples held)")
        #expect(try counters(db)["edge up"] == nil, "held samples are not counted")
        #expect(try run("store-samples", ["--db", db, "agents", "approve", "berlin"]).status == 0)
        try same("berlin approved")
        #expect(try counters(db)["edge up"] == 5)
        #expect(try run("store-samples", ["--db", db, "clear", "--monitor", "mail", "--until", "2026-01-30T00:00:00Z"]).status == 0)
        try same("after a clear of one monitor")
        #expect(try run("store-samples", ["--db", db, "clear", "--all"]).status == 0)
        #expect(try counters(db).isEmpty, "after clear --all every counter is 0")
    }

    @Test("Prometheus scrapes GET /metrics through nginx over TLS and answers a query with every monitor, the escaped name read back whole")
    func prometheusScrapes() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        guard try requireGate(prometheusPath != nil, "prometheus is needed (apt-get install prometheus)") else { return }
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: MetricsTests.corpus).status == 0)
        let certificates = try TestCertificates()
        let server = try certificates.server(named: "api", daysLeft: 30)
        let handle = try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db], scratch: scratch)
        defer { handle.stop() }
        // The API answers what the command line prints, as Prometheus' text format.
        let answer = try fetch("https://127.0.0.1:\(handle.port)/metrics", caFile: certificates.path("ca.pem"))
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        #expect(answer.body == (try run("store-samples", ["--db", db, "metrics"])).stdout)

        let port = try unusedPort()
        let config = try scratch.write(
            "prometheus.yml",
            """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: vitals
                scheme: https
                tls_config:
                  ca_file: \(certificates.path("ca.pem"))
                static_configs:
                  - targets: ['127.0.0.1:\(handle.port)']
            """)
        let pid = try spawnClean(
            [
                prometheusPath!, "--config.file=\(config)", "--storage.tsdb.path=\(scratch.path("tsdb"))",
                "--web.listen-address=127.0.0.1:\(port)",
            ],
            environment: toolEnvironment(), output: scratch.path("prometheus.log"))
        defer {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        /// The result vector of an instant query, each series' labels and value.
        func query(_ promql: String) throws -> [(labels: [String: String], value: String)] {
            let result = try runProcess(
                "/usr/bin/env",
                [
                    "curl", "-sS", "--max-time", "10", "--data-urlencode", "query=\(promql)",
                    "http://127.0.0.1:\(port)/api/v1/query",
                ], stdin: "", environment: toolEnvironment())
            guard result.status == 0,
                let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                let data = object["data"] as? [String: Any], let vector = data["result"] as? [[String: Any]]
            else { return [] }
            return vector.map { (($0["metric"] as? [String: String]) ?? [:], (($0["value"] as? [Any])?.last as? String) ?? "") }
        }
        // Prometheus scrapes once a second: wait (a minute at most) until it has every monitor.
        var states: [(labels: [String: String], value: String)] = []
        let deadline = Date().addingTimeInterval(60)
        while states.count < 15 {
            guard Date() < deadline else {
                let log = (try? String(contentsOfFile: scratch.path("prometheus.log"), encoding: .utf8)) ?? ""
                throw TestFailure("Prometheus has \(states.count) of 15 status series after a minute: \(log.suffix(3000))")
            }
            usleep(200_000)
            states = (try? query("vitals_monitor_status")) ?? []
        }
        #expect(try query(#"up{job="vitals"}"#).map(\.value) == ["1"], "the scrape succeeded")
        let current = states.filter { $0.value == "1" }.map { "\($0.labels["monitor"]!) \($0.labels["status"]!)" }.sorted()
        #expect(current == ["api degraded", "db error", "old unknown"], "every monitor, with its latest status")
        let names = Set(states.map { $0.labels["name"] ?? "" })
        #expect(names == ["A \"q\" \\ b\nc", "db", "Old"], "the name with a quote, a backslash and a line feed read back whole")
        let checks = try query("sum by (monitor) (vitals_checks_total)").map { "\($0.labels["monitor"]!) \($0.value)" }.sorted()
        #expect(checks == ["api 2", "db 2", "old 0"])
        #expect(try query("vitals_monitor_latency_seconds").map(\.value) == ["1.2345"])
    }
}

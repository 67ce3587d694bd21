import Foundation
import Testing
import VitalsKit

/// Issue 36, item 1: an agent's remote store (`store-samples --db https://...`) against the real
/// served stack (scripts/serve: nginx in front of `store-samples serve`, TLS with a certificate made
/// at test time), and against scripted servers for the answers nginx does not give on demand. What
/// is held: every sample an agent passed on reaches the server exactly once (counted per agent),
/// whatever happens between (the server down, an answer lost, the agent killed with -9), and the
/// exit status says delivered (0), spooled (75) or lost or refused (2).
@Suite("an agent's remote store: spooled, retried, stored once", .serialized, .hangGuard(minutes: 8))
final class RemoteStoreTests {
    /// The server's: its store and token file (given to the serving user when the tests run as root).
    let scratch: ScratchDirectory
    /// The agent's: token files and spools, the test user's alone (a spool must be the user's own).
    let agentScratch: ScratchDirectory
    let db: String
    let certificates: TestCertificates
    let server: (cert: String, key: String)
    var ca: String { certificates.path("ca.pem") }
    var spool: String { agentScratch.path("spool") }

    init() throws {
        scratch = try ScratchDirectory()
        agentScratch = try ScratchDirectory()
        db = scratch.path("vitals.db")
        certificates = try TestCertificates()
        server = try certificates.server(named: "api", daysLeft: 30)
        // The store exists before the server starts, so its folder is given to the serving user with it.
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: "").status == 0)
    }

    /// scripts/serve on `port` (a free one when nil).
    func serve(port: Int? = nil) throws -> ServeHandle {
        try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db], scratch: scratch, port: port)
    }

    /// Makes agent `name`'s token on the server and writes it into the agent's token file (mode
    /// 0600, replaced when there is one); returns the file.
    @discardableResult
    func tokenFile(_ name: String) throws -> String {
        let made = try run("store-samples", ["--db", db, "agents", "token", name])
        try #require(made.status == 0, "\(made.stderr)")
        let file = agentScratch.path("\(name).token")
        try made.stdout.write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return file
    }

    /// The token a token file holds.
    func token(_ file: String) throws -> String {
        try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The remote store at 127.0.0.1:`port` for a token file, trusting the test CA.
    func url(_ port: Int, _ tokenFile: String) -> String { "https://127.0.0.1:\(port)/?token_file=\(tokenFile)&cacert=\(ca)" }

    /// Runs an agent: `store-samples --db URL --spool SPOOL EXTRA...` with `lines` on its input.
    func agent(_ lines: [String], port: Int, token: String, spool: String? = nil, _ extra: [String] = []) throws -> RunResult {
        try run(
            "store-samples", ["--db", url(port, token), "--spool", spool ?? self.spool] + extra,
            stdin: lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n")
    }

    /// The first time of the samples: three hours before the current hour (well inside the server's retention).
    static let base = (Int64(Date().timeIntervalSince1970) / 3600 - 3) * 3_600_000

    /// Sample lines `range` of ten monitors, each at a time of its own (100 ms apart); `pad` adds a
    /// field of that many bytes.
    static func samples(_ range: Range<Int>, pad: Int = 0) -> [String] {
        let padding = pad > 0 ? #","pad":""# + String(repeating: "p", count: pad) + "\"" : ""
        return range.map { index in
            let at = Timestamp.format(milliseconds: base + Int64(index) * 100)
            return #"{"type":"sample","monitor":"m\#(index % 10)","at":"\#(at)","status":"up","latency_ms":\#(index % 90 + 10)\#(padding)}"#
        }
    }

    /// The samples the server stores from `agent`, counted.
    func stored(_ agent: String) throws -> Int {
        Int(try sqlite(db, "SELECT count(*) FROM samples WHERE agent = '\(agent)'")) ?? -1
    }

    /// The identities (monitor and time in ms) the server stores from `agent`, in the order stored.
    func identities(_ agent: String) throws -> [String] {
        try sqlite(
            db,
            "SELECT m.monitor || ' ' || s.at FROM samples s JOIN monitors m ON m.id = s.monitor_id WHERE s.agent = '\(agent)' ORDER BY s.rowid"
        )
        .split(separator: "\n").map(String.init)
    }

    /// The identity (`monitor ms`) of a sample line.
    static func identity(_ line: Substring) -> String? {
        guard let object = (try? JSONParser.parse(String(line)))?.objectValue, let monitor = object["monitor"]?.stringValue,
            let at = object["at"]?.stringValue.flatMap(Timestamp.parse)
        else { return nil }
        return "\(monitor) \(at)"
    }

    /// The batches waiting in a spool (under every server's folder), oldest first, as paths.
    func waiting(_ spool: String) -> [String] {
        let servers = (try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []
        return servers.flatMap { folder in
            ((try? FileManager.default.contentsOfDirectory(atPath: spool + "/" + folder)) ?? []).filter { $0.hasSuffix(".ndjson") }.map {
                spool + "/" + folder + "/" + $0
            }
        }.sorted()
    }

    /// The lines of the batches waiting in a spool.
    func waitingLines(_ spool: String) throws -> [Substring] {
        try waiting(spool).flatMap { try String(contentsOfFile: $0, encoding: .utf8).split(separator: "\n") }
    }

    /// The requests nginx logged for POST /api/samples, each as its status.
    func posts(_ handle: ServeHandle) -> [String] {
        handle.accessLog.split(separator: "\n").filter { $0.contains("\"POST /api/samples\"") }.map { line in
            String(line.split(separator: "\"").last?.split(separator: " ").first ?? "")
        }
    }

    @Test("an agent's samples and monitor records reach the server once each, in requests under 1 MiB, and go on downstream as they came")
    func delivery() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("tokyo")
        let handle = try serve()
        let input =
            RemoteStoreTests.samples(0..<6_000, pad: 100)
            + [
                #"{"type":"round_end","round":"r1"}"#,
                #"{"type":"monitor","monitor":"paused","at":"2026-11-01T00:00:00.000Z","enabled":false}"#,
            ]
        let result = try agent(input, port: handle.port, token: token)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == input.joined(separator: "\n") + "\n", "every record passed on as it came, nothing added")
        #expect(try stored("tokyo") == 6_000)
        #expect(
            try sqlite(db, "SELECT count(*) FROM monitors WHERE monitor = 'paused' AND agent = 'tokyo'") == "1", "the monitor record too")
        // About 1.3 MB of samples: several requests, each taken whole.
        let statuses = posts(handle)
        #expect(statuses.count >= 3 && statuses.allSatisfy { $0 == "200" }, "\(statuses)")
        #expect(waiting(spool).isEmpty, "delivered batches are removed")
        let folder = try FileManager.default.attributesOfItem(atPath: spool + "/127.0.0.1_\(handle.port)")
        #expect(folder[.posixPermissions] as? Int == 0o700)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
    }

    @Test(
        "the server down: exit 75, every sample spooled and passed on; the next run delivers the batches in order, each sample stored once")
    func serverDown() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("paris")
        let port = try unusedPort()  // nothing listens there yet
        let first = RemoteStoreTests.samples(0..<3_000, pad: 100)
        let down = try agent(first, port: port, token: token, ["--wait", "1s"])
        #expect(down.status == 75, "\(down.stderr)")
        #expect(down.stdout == first.joined(separator: "\n") + "\n", "passed on once spooled")
        #expect(down.stderr.contains("3,000 samples in") && down.stderr.contains("the next run sends them first"), "\(down.stderr)")
        let second = RemoteStoreTests.samples(3_000..<4_000)
        #expect(try agent(second, port: port, token: token, ["--wait", "1s"]).status == 75)
        let batches = waiting(spool)
        #expect(batches.count >= 2, "\(batches)")
        #expect(try waitingLines(spool).count == 4_000)
        for batch in batches {
            #expect(try FileManager.default.attributesOfItem(atPath: batch)[.posixPermissions] as? Int == 0o600)
        }
        let handle = try serve(port: port)
        let later = try agent([], port: port, token: token)
        #expect(later.status == 0, "\(later.stderr)")
        #expect(waiting(spool).isEmpty)
        let stored = try identities("paris")
        #expect(stored.count == 4_000 && Set(stored).count == 4_000)
        // In order: the first run's batches were stored before the second's.
        let expected = (first + second).compactMap { RemoteStoreTests.identity($0[...]) }
        #expect(stored == expected, "stored in the order spooled")
        #expect(posts(handle).allSatisfy { $0 == "200" })
    }

    /// Starts Fixtures/clickhouse/cut_proxy.py in front of nginx (TLS on both sides), cutting the
    /// first POST /api/samples as `environment` says (detached: the shell that starts it exits at
    /// once); returns its port, its log and its pid.
    func startProxy(upstream port: Int, environment: String = "") throws -> (port: Int, log: String, pid: pid_t) {
        let script = Binaries.fixtures.appendingPathComponent("clickhouse/cut_proxy.py").path
        let (portFile, log) = (agentScratch.path("proxy.port"), agentScratch.path("proxy.log"))
        let started = try shell(
            "\(environment) python3 '\(script)' \(port) '\(portFile)' '\(log)' 'POST /api/samples' '\(server.cert)' '\(server.key)' '\(ca)' "
                + "</dev/null >/dev/null 2>'\(agentScratch.path("proxy.err"))' & echo $!")
        let pid = pid_t(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        var proxyPort = 0
        try waitFor("the proxy's port") {
            proxyPort = Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "") ?? 0
            return proxyPort > 0
        }
        return (proxyPort, log, pid)
    }

    /// The request lines a proxy logged.
    func proxyLog(_ log: String) -> [Substring] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
    }

    @Test("an answer lost after the server stored the batch: the batch is sent again and changes nothing")
    func lostAnswer() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("lisbon")
        let handle = try serve()
        // The first POST is forwarded whole, nginx's answer awaited, and dropped.
        let proxy = try startProxy(upstream: handle.port)
        defer { kill(proxy.pid, SIGKILL) }
        let input = RemoteStoreTests.samples(0..<2_500)
        let result = try agent(input, port: proxy.port, token: token)
        #expect(result.status == 0, "\(result.stderr)")
        let log = proxyLog(proxy.log)
        #expect(log.count >= 2 && log.first?.hasSuffix(" CUT") == true, "\(log)")
        #expect(posts(handle).count == log.count, "nginx stored the batch whose answer was lost: \(posts(handle))")
        #expect(try stored("lisbon") == 2_500, "the batch sent twice is stored once")
        // The same input again (a job run twice): still each sample once.
        #expect(try agent(input, port: handle.port, token: token).status == 0)
        #expect(try stored("lisbon") == 2_500)
    }

    @Test("kill -9 while the agent waits for the server's answer, then a rerun: every sample it spooled is stored, each once")
    func killedWhileSending() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("oslo")
        let handle = try serve()
        // The first POST goes through; the second is held on the wire, never forwarded nor answered.
        let proxy = try startProxy(upstream: handle.port, environment: "CUT_PROXY_SKIP=1 CUT_PROXY_HOLD=1")
        defer { kill(proxy.pid, SIGKILL) }
        let outFile = agentScratch.path("oslo.out")
        var input: [Int32] = [-1, -1]
        guard let pipe2 = GlibcExtras.pipe2, pipe2(&input, O_CLOEXEC) == 0 else { throw TestFailure("pipe2: \(errno)") }
        let out = open(outFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let err = open(agentScratch.path("oslo.err"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let pid = try spawnClean(
            [Binaries.path("store-samples"), "--db", url(proxy.port, token), "--spool", spool],
            environment: toolEnvironment(), descriptors: (input[0], out, err))
        for fd in [input[0], out, err] { close(fd) }
        defer { close(input[1]) }
        /// Writes a round of samples (its end commits it) into the agent's input.
        func feed(_ round: [String], _ name: String) {
            let text = (round + [#"{"type":"round_end","round":"\#(name)"}"#]).joined(separator: "\n") + "\n"
            _ = text.utf8CString.withUnsafeBytes { Streams.writeAll(input[1], UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
        }
        let first = RemoteStoreTests.samples(0..<1_000, pad: 100)
        let second = RemoteStoreTests.samples(1_000..<5_000, pad: 100)
        feed(first, "r1")
        try waitFor("the first round delivered and passed on") {
            ((try? String(contentsOfFile: outFile, encoding: .utf8)) ?? "").split(separator: "\n").count == 1_001
        }
        #expect(try stored("oslo") == 1_000)
        feed(second, "r2")
        try waitFor("the second round spooled, its first request held on the wire") {
            let spooled = try waitingLines(spool).count
            return proxyLog(proxy.log).contains { $0.hasSuffix(" HELD") } && spooled == second.count
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect(try stored("oslo") == 1_000, "the held request reached nothing")
        let passedOn = try String(contentsOfFile: outFile, encoding: .utf8).split(separator: "\n")
        let rerun = try agent([], port: proxy.port, token: token)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        let after = try identities("oslo")
        #expect(after == (first + second).compactMap { RemoteStoreTests.identity($0[...]) }, "every sample spooled, once, in order")
        #expect(Set(passedOn.compactMap { RemoteStoreTests.identity($0) }).isSubset(of: Set(after)), "what went downstream is stored")
        #expect(waiting(spool).isEmpty)
        // Both rounds again (cron running the job once more): each sample still once.
        #expect(try agent(first + second, port: handle.port, token: token, ["-q"]).status == 0)
        #expect(try stored("oslo") == 5_000)
    }

    @Test("a revoked token: the agent stops sending, says why (no token shown), keeps its spool and exits 2; a new token delivers it")
    func revokedToken() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("rome")
        let handle = try serve()
        #expect(try agent(RemoteStoreTests.samples(0..<100), port: handle.port, token: token).status == 0)
        #expect(try stored("rome") == 100)
        // The server's owner revokes it: its line leaves the token file (rewritten in place, the server's own).
        let tokens = try String(contentsOfFile: db + ".tokens", encoding: .utf8)
        try tokens.split(separator: "\n").filter { !$0.hasPrefix("rome ") }.map { $0 + "\n" }.joined()
            .write(toFile: db + ".tokens", atomically: false, encoding: .utf8)
        let input = RemoteStoreTests.samples(100..<3_000, pad: 100)
        let revoked = try agent(input, port: handle.port, token: token)
        #expect(revoked.status == 2, "\(revoked.stderr)")
        #expect(revoked.stderr.contains("refused this agent's token (HTTP 401"), "\(revoked.stderr)")
        #expect(revoked.stderr.contains("2,900 samples in"), "says what waits: \(revoked.stderr)")
        let secret = try self.token(token)
        #expect(!revoked.stderr.contains(secret))
        #expect(revoked.stdout == input.joined(separator: "\n") + "\n", "spooled, so passed on")
        #expect(try waitingLines(spool).count == 2_900, "the spool is kept")
        #expect(posts(handle).filter { $0 == "401" }.count == 1, "one refusal stops sending: \(posts(handle))")
        #expect(try stored("rome") == 100)
        try tokenFile("rome")  // a new token, written into the agent's token file
        let later = try agent([], port: handle.port, token: token)
        #expect(later.status == 0, "\(later.stderr)")
        #expect(try stored("rome") == 3_000 && waiting(spool).isEmpty)
    }

    @Test("a line the server refuses is kept apart with its reason, the rest stored; it is never sent again")
    func refusedLine() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("madrid")
        let handle = try serve()
        let foreign = RemoteStoreTests.samples(10..<11)[0].replacingOccurrences(of: #""status""#, with: #""agent":"paris","status""#)
        let input = RemoteStoreTests.samples(0..<10) + [foreign] + RemoteStoreTests.samples(11..<20)
        let result = try agent(input, port: handle.port, token: token)
        #expect(result.status == 2, "\(result.stderr)")
        let folder = spool + "/127.0.0.1_\(handle.port)/refused"
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(files == ["0000000000000001-1.ndjson", "0000000000000001-1.why"], "\(files)")
        #expect(try String(contentsOfFile: folder + "/" + files[0], encoding: .utf8) == foreign + "\n")
        let why = try String(contentsOfFile: folder + "/" + files[1], encoding: .utf8)
        #expect(why.hasPrefix("1: line 11 of batch 1: ") && why.contains(#"names agent "paris""#), "\(why)")
        #expect(result.stderr.contains(folder + "/" + files[0] + ":1: refused by"), "\(result.stderr)")
        #expect(try stored("madrid") == 19 && waiting(spool).isEmpty)
        let requests = posts(handle).count
        #expect(try agent([], port: handle.port, token: token).status == 0)
        #expect(posts(handle).count == requests, "nothing sent again")
        // Many refused: the first ten named, then how many in all.
        let many = RemoteStoreTests.samples(100..<112).map { $0.replacingOccurrences(of: #""status""#, with: #""agent":"paris","status""#) }
        let refusedMany = try agent(many, port: handle.port, token: token)
        #expect(refusedMany.status == 2)
        #expect(refusedMany.stderr.contains("-1.ndjson:10: refused by"))
        #expect(!refusedMany.stderr.contains("-1.ndjson:11: refused by"), "\(refusedMany.stderr)")
        #expect(refusedMany.stderr.contains("12 lines refused in all, each kept in \(folder)"), "\(refusedMany.stderr)")
        #expect(try String(contentsOfFile: folder + "/0000000000000002-1.ndjson", encoding: .utf8) == many.joined(separator: "\n") + "\n")
    }

    /// A scripted stand-in for the API (tls_server.py --post-answers) with `answers`, and its log.
    func scripted(_ name: String, _ answers: String) throws -> (server: TLSServer, log: String) {
        let file = try agentScratch.write("\(name).answers", answers)
        let log = agentScratch.path("\(name).log")
        return (try TLSServer(cert: server.cert, key: server.key, postAnswers: file, postLog: log), log)
    }

    /// The POSTs a scripted server logged: time, lines, and whether an Authorization header came.
    func logged(_ log: String) throws -> [(t: Double, lines: Int, authorization: Bool)] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
            guard let object = (try? JSONParser.parse(String(line)))?.objectValue else { return nil }
            return (object["t"]?.doubleValue ?? 0, object["lines"]?.intValue ?? 0, object["authorization"] == .bool(true))
        }
    }

    @Test("503 and 429 wait for Retry-After (seconds, an HTTP date), 413 splits the batch; a Retry-After past --wait ends the run at once")
    func retries() throws {
        let port = { (server: TLSServer) in Int(server.url.split(separator: ":").last!)! }
        let token = try tokenFile("rio")
        let date = DateFormatter()
        date.locale = Locale(identifier: "en_US_POSIX")
        date.timeZone = TimeZone(identifier: "GMT")
        date.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let (patient, log) = try scripted(
            "patient",
            """
            [{"status": 503, "headers": {"Retry-After": "1"}, "body": "{\\"error\\":\\"busy\\"}"},
             {"status": 429, "headers": {"Retry-After": "\(date.string(from: Date().addingTimeInterval(8)))"}},
             {"status": 413},
             {"status": 200, "body": "@api"}]
            """)
        let input = RemoteStoreTests.samples(0..<300)
        let result = try agent(input, port: port(patient), token: token, ["--wait", "30s"])
        #expect(result.status == 0, "\(result.stderr)")
        let requests = try logged(log)
        try #require(requests.count == 5, "503, 429, 413, then the two halves: \(requests)")
        #expect(requests[1].t - requests[0].t >= 1, "Retry-After: 1 waited out")
        #expect(requests[2].t - requests[1].t >= 2, "the HTTP date waited out (to its second)")
        #expect(requests[2].lines == 300 && requests[3].lines + requests[4].lines == 300 && requests[3].lines < 300, "\(requests)")
        #expect(requests.allSatisfy { $0.authorization })
        #expect(waiting(spool).isEmpty)
        // A server that asks for a minute, with --wait 2s: the run ends at once, the batch kept.
        let (busy, busyLog) = try scripted("busy", #"[{"status": 429, "headers": {"Retry-After": "60"}}]"#)
        let started = Date()
        let deferred = try agent(input, port: port(busy), token: token, ["--wait", "2s"])
        #expect(deferred.status == 75, "\(deferred.stderr)")
        #expect(Date().timeIntervalSince(started) < 20, "no waiting past --wait")
        #expect(deferred.stderr.contains("asked to wait 1m"), "\(deferred.stderr)")
        #expect(try logged(busyLog).count == 1, "no spinning")
        #expect(try waitingLines(spool).count == 300)
    }

    @Test("an answer that is not the API's, a huge one, a redirect: sending stops, nothing is lost, the token goes nowhere else")
    func strangeServers() throws {
        let port = { (server: TLSServer) in Int(server.url.split(separator: ":").last!)! }
        let token = try tokenFile("lima")
        let secret = try self.token(token)
        let input = RemoteStoreTests.samples(0..<200)
        // A captive portal's 200, and 8 MiB of it.
        for (name, body) in [("portal", "<html>Welcome to the hotel network</html>"), ("huge", "@huge")] {
            let (strange, _) = try scripted(name, #"[{"status": 200, "body": "\#(body)"}]"#)
            let result = try agent(input, port: port(strange), token: token, spool: agentScratch.path(name))
            #expect(result.status == 2, "\(name): \(result.stderr)")
            #expect(result.stderr.contains("not as vitals' POST /api/samples does"), "\(name): \(result.stderr)")
            #expect(try waitingLines(agentScratch.path(name)).count == 200, "\(name): the batch stays")
            #expect(!result.stderr.contains(secret))
        }
        // A redirect to another server: not followed.
        let (elsewhere, elsewhereLog) = try scripted("elsewhere", #"[{"status": 200, "body": "@api"}]"#)
        let (redirecting, _) = try scripted(
            "redirecting", #"[{"status": 307, "headers": {"Location": "\#(elsewhere.url)/api/samples?token=leaked"}}]"#)
        let result = try agent(input, port: port(redirecting), token: token, spool: agentScratch.path("redirect"))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("redirects (HTTP 307 to \(elsewhere.url)/api/samples?token=***)"), "\(result.stderr)")
        #expect(try logged(elsewhereLog).isEmpty, "nothing reached the other server")
        #expect(try waitingLines(agentScratch.path("redirect")).count == 200)
        #expect(!result.stderr.contains(secret))
    }

    @Test(
        "the spool's limits: past --spool-size the oldest batches are dropped, past --spool-age the old ones, each said with a count (exit 2)"
    )
    func limits() throws {
        let token = try tokenFile("quito")
        let port = try unusedPort()
        let input = RemoteStoreTests.samples(0..<12_000, pad: 150)  // about 3 MB
        let full = try agent(input, port: port, token: token, ["--wait", "1ms", "--spool-size", "1M"])
        #expect(full.status == 2, "\(full.stderr)")
        #expect(full.stderr.contains("is full (--spool-size 1M): dropped its oldest batch") || full.stderr.contains("oldest batches"))
        #expect(full.stderr.contains("samples), never sent"), "\(full.stderr)")
        let sizes = try waiting(spool).map { try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int ?? 0 }
        #expect(sizes.reduce(0, +) <= 1 << 20, "\(sizes)")
        let kept = try waitingLines(spool)
        #expect(kept.last.map(String.init) == input.last, "the newest kept")
        #expect(full.stdout == input.joined(separator: "\n") + "\n", "every record was spooled before it went on")
        // A batch older than --spool-age.
        let oldest = try #require(waiting(spool).first)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7_200)], ofItemAtPath: oldest)
        let aged = try agent([], port: port, token: token, ["--wait", "1ms", "--spool-age", "1h"])
        #expect(aged.status == 2, "\(aged.stderr)")
        #expect(aged.stderr.contains("older than --spool-age 1h"), "\(aged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: oldest))
    }

    @Test("a full disk under the spool: a clear error, every batch left whole, and what was spooled delivered later")
    func fullDisk() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        guard try requireGate(runningAsRoot, "a small tmpfs under the spool is mounted only as root") else { return }
        let mountPoint = agentScratch.path("small")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mounted = try runProcess(
            "/bin/mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mountPoint], stdin: "", environment: toolEnvironment())
        guard try requireGate(mounted.status == 0, "mount -t tmpfs failed: \(mounted.stderr)") else { return }
        defer { _ = try? runProcess("/bin/umount", [mountPoint], stdin: "", environment: toolEnvironment()) }
        let token = try tokenFile("bern")
        let port = try unusedPort()
        // About 3 MB for 1 MB, in rounds of 1,000 samples (each round's end commits: what is spooled goes on).
        let input = stride(from: 0, to: 12_000, by: 1_000).flatMap {
            RemoteStoreTests.samples($0..<($0 + 1_000), pad: 150) + [#"{"type":"round_end","round":"r\#($0)"}"#]
        }
        let result = try agent(input, port: port, token: token, spool: mountPoint, ["--wait", "1ms"])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("cannot write a batch into the spool") && result.stderr.contains("No space left on device"),
            "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: mountPoint + "/127.0.0.1_\(port)")
        #expect(!names.contains { $0.hasPrefix(".tmp-") }, "no half-written batch: \(names)")
        let spooled = try waitingLines(mountPoint)
        #expect(!spooled.isEmpty && spooled.allSatisfy { RemoteStoreTests.identity($0) != nil }, "every line of every batch whole")
        let passedOn = result.lines.compactMap { RemoteStoreTests.identity($0[...]) }
        #expect(
            !passedOn.isEmpty && Set(passedOn).isSubset(of: Set(spooled.compactMap { RemoteStoreTests.identity($0) })), "passed on: spooled"
        )
        let handle = try serve(port: port)
        let later = try agent([], port: handle.port, token: token, spool: mountPoint)
        #expect(later.status == 0, "\(later.stderr)")
        #expect(try stored("bern") == spooled.count)
    }

    @Test(
        "a spool others can write, or a link in its place, is refused; a link inside it is left alone; a token file others can read is refused"
    )
    func localAttacks() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let token = try tokenFile("kyiv")
        let handle = try serve()
        let input = RemoteStoreTests.samples(0..<10)
        // A spool folder others can write.
        let open = agentScratch.path("open")
        try FileManager.default.createDirectory(atPath: open + "/127.0.0.1_\(handle.port)", withIntermediateDirectories: true)
        chmod(open + "/127.0.0.1_\(handle.port)", 0o777)
        let refused = try agent(input, port: handle.port, token: token, spool: open)
        #expect(refused.status == 2 && refused.stderr.contains("can be written by other users (mode 0777)"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty, "nothing read, nothing passed on")
        // A spool folder of another user's, closed to others (only root can stage it: chown): its
        // owner could still put batches in it, so even root's own spool must be root's.
        if geteuid() == 0 {
            chmod(open + "/127.0.0.1_\(handle.port)", 0o700)
            #expect(chown(open + "/127.0.0.1_\(handle.port)", 65534, 65534) == 0)
            let foreign = try agent(input, port: handle.port, token: token, spool: open)
            #expect(foreign.status == 2 && foreign.stderr.contains("belongs to user 65534, not to you: refused"), "\(foreign.stderr)")
            #expect(foreign.stdout.isEmpty)
            #expect(chown(open + "/127.0.0.1_\(handle.port)", 0, 0) == 0)
            chmod(open + "/127.0.0.1_\(handle.port)", 0o777)
        }
        // The server's folder a symbolic link (to a folder of someone else's choosing).
        let linked = agentScratch.path("linked")
        try FileManager.default.createDirectory(atPath: linked, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: linked + "/127.0.0.1_\(handle.port)", withDestinationPath: open)
        let link = try agent(input, port: handle.port, token: token, spool: linked)
        #expect(link.status == 2 && link.stderr.contains("is not a folder (a symbolic link?): refused"), "\(link.stderr)")
        // A link among the batches: never followed, never sent.
        let own = try agent([], port: handle.port, token: token)
        #expect(own.status == 0)
        let elsewhere = try agentScratch.write("elsewhere.ndjson", RemoteStoreTests.samples(100..<101)[0] + "\n")
        let trap = spool + "/127.0.0.1_\(handle.port)/0000000000000001.ndjson"
        try FileManager.default.createSymbolicLink(atPath: trap, withDestinationPath: elsewhere)
        let past = try agent(input, port: handle.port, token: token)
        #expect(past.status == 0, "\(past.stderr)")
        #expect(past.stderr.contains("left alone: \(trap) is not a regular file of yours"), "\(past.stderr)")
        #expect(try stored("kyiv") == 10, "the link's sample was not sent")
        #expect(FileManager.default.fileExists(atPath: trap))
        // A token file others can read.
        chmod(token, 0o644)
        let readable = try agent(input, port: handle.port, token: token)
        #expect(readable.status == 2 && readable.stderr.contains("is open to other users (mode 0644)"), "\(readable.stderr)")
        let secret = try self.token(token)
        #expect(!readable.stderr.contains(secret))
        // A token file of another user's (only root can stage it: chown).
        if geteuid() == 0 {
            chmod(token, 0o600)
            #expect(chown(token, 65534, 65534) == 0)
            let foreign = try agent(input, port: handle.port, token: token)
            #expect(foreign.status == 2 && foreign.stderr.contains("belongs to user 65534, not to this user: refused"), "\(foreign.stderr)")
            #expect(!foreign.stderr.contains(secret))
            #expect(chown(token, geteuid(), getegid()) == 0)
            #expect(try agent(input, port: handle.port, token: token).status == 0)
        }
    }

    @Test("usage: a remote store only takes samples, over HTTPS, with a token; the server's options are refused")
    func usage() throws {
        let token = try tokenFile("bonn")
        let url = url(8443, token)
        let cases: [(arguments: [String], words: String)] = [
            (["--db", url, "overview"], "a remote store only takes samples (ingest); overview asks the server's own store"),
            (["--db", url, "export"], "a remote store only takes samples"),
            (["--db", "http://127.0.0.1:8443/?token_file=\(token)"], "reached over HTTPS only"),
            (["--db", "https://agent:hunter2@127.0.0.1:8443/"], "no user or password in a remote store's URL"),
            (["--db", "https://127.0.0.1:8443/"], "a remote store wants the agent's token"),
            (["--db", url + "&compress=1"], "'compress' is not an option of a remote store"),
            (["--db", url, "--keep", "30d"], "--keep is the server's to apply"),
            (["--db", url, "--remote"], "--remote is the server's to apply"),
            (["--db", url, "--quorum", "all"], "--quorum is the server's to apply"),
            (["--db", url, "--spool-size", "64K"], "--spool-size wants 1M or more"),
            (["--db", scratch.path("local.db"), "--spool", "x"], "--spool applies to a remote store"),
        ]
        for (arguments, words) in cases {
            let result = try run("store-samples", arguments, stdin: "")
            #expect(result.status == 64 && result.stderr.contains(words), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("hunter2"))
        }
        let noCA = try run("store-samples", ["--db", url + "-missing", "--spool", spool], stdin: "")
        #expect(noCA.status == 2 && noCA.stderr.contains("cannot read the CA file \(ca)-missing"), "\(noCA.stderr)")
        // The token from the environment, when the URL names no file.
        let fromEnvironment = try run(
            "store-samples", ["--db", "https://127.0.0.1:\(try unusedPort())/", "--spool", spool, "--wait", "1ms"],
            stdin: RemoteStoreTests.samples(0..<1)[0] + "\n", environment: ["VITALS_AGENT_TOKEN": try self.token(token)])
        #expect(fromEnvironment.status == 75, "\(fromEnvironment.stderr)")
    }
}

import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// python3 holding many connections to a responder's socket, each with part of a request or
/// never reading its answers, while it times whole requests on fresh connections (FastCGI from
/// the specification, as `fastCGIClient`; the peers a stuck web server or a local user could be).
///
/// `python3 -c slowPeersClient CONFIG`, CONFIG a JSON object: `socket`, `params` (a request's
/// parameters), `worker` (the responder's worker process), `stalled`, `noread`, `tries`, `big`,
/// `wait`, and `url` (optional). It opens `stalled` connections; with `big` 0, connection i sends,
/// by i % 3: 12 bytes (BEGIN_REQUEST cut in its content); the head and half of PARAMS; or the
/// head declaring a body of 1,000 bytes and 9 of them (a record cut short: it trickles, below).
/// With `big` > 0, each sends the head declaring `big` + 1,000 bytes and `big` of them. Then
/// `noread` connections each send up to 3,000 requests back to back, kept open, and never read.
/// It waits (10 s at most) until the worker has every one of them open (`server_sockets`, counted
/// in /proc), and (5 s at most) until what each silent one has unread is more than nothing and
/// stays put (`silent_unread`). Then it times `tries` requests with `params`, one after another
/// on fresh connections, from connect to END_REQUEST (`fastcgi_ms`), and as many HTTPS GETs of
/// `url` through nginx (`https_ms`); with their statuses and medians. Of the stalled connections:
/// how many are still open with nothing answered, and the statuses of those answered. With
/// `wait`, 9 s after the first byte it sends one more byte on each trickling one, then waits (25 s
/// at most) for every stalled connection to end and reports how each ended (`ends`: an answer's
/// status, or 0 for a close without one) and the least and most time from its first byte to that
/// end; 13 s after the silent peers began, how many the responder had closed. Prints one JSON
/// object.
let slowPeersClient =
    fastCGIPythonCodec + #"""
        import fcntl, select, ssl, termios
        config = json.loads(sys.argv[1])
        path, params = config["socket"], config["params"]
        def connect():
            # A Unix socket whose listen backlog is full refuses at once (EAGAIN) rather than waiting:
            # try again until the responder has accepted some (10 s at most).
            until = time.monotonic() + 10
            while True:
                connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                connection.settimeout(30)
                try:
                    connection.connect(path)
                    return connection
                except BlockingIOError:
                    connection.close()
                    if time.monotonic() > until:
                        raise
                    time.sleep(0.001)
        def status(answer):
            return int(answer[8:11]) if answer.startswith(b"Status: ") else 200
        def server_sockets():
            count = 0
            for name in os.listdir("/proc/%d/fd" % config["worker"]):
                try:
                    count += os.readlink("/proc/%d/fd/%s" % (config["worker"], name)).startswith("socket:")
                except OSError:
                    pass
            return count
        def unread(connection):
            return struct.unpack("i", fcntl.ioctl(connection.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
        def ready(connection, events, seconds):
            """Whether the connection is ready for `events` within `seconds` (poll: select stops at 1,024)."""
            poller = select.poll()
            poller.register(connection, events)
            return bool(poller.poll(seconds * 1000))
        def median(values):
            return sorted(values)[len(values) // 2] if values else None
        begin = record(1, 1, struct.pack(">HB5x", 1, 1))
        baseline = server_sockets()
        stalled, trickling, first_sent = [], [], time.monotonic()
        for index in range(config["stalled"]):
            connection = connect()
            big = config["big"]
            if big:
                head = dict(params, REQUEST_METHOD="POST", CONTENT_LENGTH=str(big + 1000))
                part = begin + stream(4, pairs(head)) + stream(5, b"x" * big)[:-8]
            elif index % 3 == 0:
                part = begin[:12]
            elif index % 3 == 1:
                half = stream(4, pairs(params))
                part = begin + half[:len(half) // 2]
            else:
                head = dict(params, REQUEST_METHOD="POST", CONTENT_LENGTH="1000")
                part = begin + stream(4, pairs(head)) + record(5, 1, b"x" * 10)[:-7]
                trickling.append(connection)
            try:
                connection.sendall(part)
            except OSError:
                pass  # refused before it was all taken (a 503 past the bound): read below
            stalled.append((connection, time.monotonic()))
        # Peers that never read: each sends requests back to back (the connection kept) until the
        # responder stops taking them, because the answers it owes fill the socket.
        keep_begin = record(1, 1, struct.pack(">HB5x", 1, 1))
        pipelined = (keep_begin + stream(4, pairs(params)) + stream(5, b"")) * 3000
        silent, silent_since = [], time.monotonic()
        for _ in range(config["noread"]):
            connection = connect()
            connection.setblocking(False)
            offset = 0
            while offset < len(pipelined):
                try:
                    offset += connection.send(pipelined[offset:offset + 65536])
                except BlockingIOError:
                    if not ready(connection, select.POLLOUT, 0.3):
                        break
            silent.append(connection)
        # The responder has accepted every connection held: its worker has them open.
        expected = baseline + config.get("expect_sockets", config["stalled"] + config["noread"])
        seen, until = 0, time.monotonic() + 10
        while time.monotonic() < until:
            seen = server_sockets()
            if seen >= expected:
                break
            time.sleep(0.02)
        # The responder stops sending to a silent peer once the answers it owes fill the socket:
        # wait (5 s at most: a responder whose workers wait on them leaves some with nothing) until
        # what each has unread is more than nothing and stays the same for 200 ms.
        last, until = None, time.monotonic() + 5
        while time.monotonic() < until:
            now = [unread(c) for c in silent]
            if now == last and all(now):
                break
            last = now
            time.sleep(0.2)
        report = {"server_sockets": seen - baseline, "silent_unread": [unread(c) for c in silent]}
        latencies, statuses = [], []
        for _ in range(config["tries"]):
            started = time.monotonic()
            connection = connect()
            connection.sendall(record(1, 1, struct.pack(">HB5x", 1, 0)) + stream(4, pairs(params)) + stream(5, b""))
            try:
                answer, ended = read_answer(connection)
            except OSError:
                answer, ended = b"", False
            latencies.append((time.monotonic() - started) * 1000)
            statuses.append(status(answer) if ended else 0)
            connection.close()
        report["fastcgi_ms"], report["fastcgi_statuses"], report["fastcgi_median_ms"] = latencies, statuses, median(latencies)
        if config.get("url"):
            import http.client, urllib.parse
            url = urllib.parse.urlsplit(config["url"])
            context = ssl._create_unverified_context()
            latencies, statuses = [], []
            for _ in range(config["tries"]):
                started = time.monotonic()
                connection = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=30)
                try:
                    connection.request("GET", url.path)
                    response = connection.getresponse()
                    response.read()
                    statuses.append(response.status)
                except OSError:
                    statuses.append(0)
                latencies.append((time.monotonic() - started) * 1000)
                connection.close()
            report["https_ms"], report["https_statuses"], report["https_median_ms"] = latencies, statuses, median(latencies)
        still_open, answered = 0, []
        for connection, _ in stalled:
            if ready(connection, select.POLLIN, 0):
                try:
                    answer, ended = read_answer(connection)
                except OSError:
                    answer, ended = b"", False  # reset: closed with part of its request unread
                answered.append(status(answer) if ended else 0)
            else:
                still_open += 1
        report["still_open"], report["answered"] = still_open, answered
        if config["wait"]:
            # One byte every 9 s: the next one of each trickling request comes 9 s after its first.
            time.sleep(max(0, first_sent + 9 - time.monotonic()))
            for connection in trickling:
                try:
                    connection.sendall(b"x")
                except OSError:
                    pass
            ends, took = [], []
            for connection, sent in stalled:
                if connection.fileno() < 0:
                    continue
                connection.settimeout(max(0.1, sent + 25 - time.monotonic()))
                try:
                    answer, ended = read_answer(connection)
                except OSError:
                    answer, ended = b"", False
                took.append(time.monotonic() - sent)
                ends.append(status(answer) if ended else 0)
            report["ends"], report["least_s"], report["most_s"] = ends, min(took, default=None), max(took, default=None)
            # The silent peers' answers were not taken by their deadline: the responder closed them.
            time.sleep(max(0, silent_since + 13 - time.monotonic()))
            closed = 0
            for connection in silent:
                try:
                    while connection.recv(65536):
                        pass
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                closed += 1
            report["silent_closed"] = closed
        print(json.dumps(report))
        """#

/// Issue 39, item 1: reading a request, and writing its answer, hold no worker. With 300
/// connections each holding part of a request (a slow-loris on the socket, or a web server stuck
/// mid-request) and 8 that never read their answers, a whole request is still answered at once by
/// each of the three responders, on their socket and through nginx; the stalled ones are held to
/// their 10 s deadline (408, or closed when no request had begun), one trickling a byte every 9 s
/// as well; the silent ones are closed when their answers are not taken by the deadline; and the
/// bytes held for requests in progress stay under their bound (503 past it), so memory does too.
@Suite("a responder no slow peer can stall", .hangGuard(minutes: 5))
final class SlowPeerTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory()
    }

    /// The responder's worker process (the supervisor's child) among scripts/serve's processes.
    func worker(of handle: ServeHandle, _ tool: String) throws -> pid_t {
        let listed = handle.processes()
        let responders = listed.filter { $0.command.contains("/\(tool) ") && $0.command.contains(" serve") }
        let parents = Set(responders.map(\.pid))
        return try #require(responders.first { parents.contains($0.parent) }?.pid, "\(listed.map(\.command))")
    }

    /// Runs `slowPeersClient` with `config`; its report.
    func slowPeers(_ config: [String: Any]) throws -> JSONObject {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: config), as: UTF8.self)
        let result = try runProcess("/usr/bin/python3", ["-c", slowPeersClient, json], stdin: "", environment: toolEnvironment())
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(
            try JSONParser.parse(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).objectValue, "\(result.stdout)")
    }

    /// The numbers of a report's array `name`.
    func numbers(_ report: JSONObject, _ name: String) -> [Double] {
        (report[name]?.arrayValue ?? []).compactMap { $0.doubleValue }
    }

    /// How many of a report's array `name` are each value (an answer's status; 0 for none).
    func tally(_ report: JSONObject, _ name: String) -> [Int: Int] {
        numbers(report, name).reduce(into: [:]) { $0[Int($1), default: 0] += 1 }
    }

    /// 300 stalled connections and 8 silent ones on the responder's socket, then seven whole
    /// requests on the socket and seven through nginx: each answered with `expected`, the median
    /// of each seven in under 100 ms. Timing in a test is otherwise not done here; the issue asks
    /// for it, so it is made robust: the held connections are open in the responder's worker
    /// before the timing starts (its descriptors counted) and the stalled ones still open,
    /// unanswered, after it; the median of seven is held to 100 ms, where one request on a loaded
    /// 2-core machine can wait for the scheduler, while a responder whose workers are held
    /// answers none before the stalled requests' 10 s deadline, two orders of magnitude above.
    /// Then the stalled ones end at their deadline, not before and not 10 s after the trickled
    /// byte: those that had begun a request (BEGIN_REQUEST whole) get 408, the 100 that sent 12
    /// bytes are closed without an answer; and the silent ones are closed.
    func answersPastStalledPeers(_ handle: ServeHandle, socket: String, tool: String, path: String, expected: Int) throws {
        let report = try slowPeers([
            "socket": handle.runDirectory + "/" + socket, "params": ["REQUEST_METHOD": "GET", "REQUEST_URI": path],
            "worker": try worker(of: handle, tool), "stalled": 300, "noread": 8, "tries": 7, "big": 0, "wait": true,
            "url": "https://127.0.0.1:\(handle.port)\(path)",
        ])
        #expect(report["server_sockets"]?.intValue ?? 0 >= 308, "the worker had every held connection open: \(report)")
        // Each silent peer sent 3,000 requests; the answers to a few hundred fill its socket (in
        // the kernel's small buffers), and the responder owes it the rest.
        let unread = numbers(report, "silent_unread")
        #expect(unread.count == 8 && unread.allSatisfy { $0 >= 8_192 && $0 < 3_000 * 100 }, "the silent peers' sockets are full: \(unread)")
        for route in ["fastcgi", "https"] {
            let expectation = Array(repeating: Double(expected), count: 7)
            #expect(numbers(report, route + "_statuses") == expectation, "\(route): \(numbers(report, route + "_statuses"))")
            let median = report[route + "_median_ms"]?.doubleValue ?? 1e9
            #expect(median < 100, "\(route): the median of seven in under 100 ms: \(numbers(report, route + "_ms"))")
        }
        #expect(
            report["still_open"]?.intValue == 300, "every stalled connection was held, unanswered, meanwhile: \(tally(report, "answered"))")
        #expect(tally(report, "ends") == [0: 100, 408: 200], "how the stalled connections ended")
        let least = report["least_s"]?.doubleValue ?? 0
        let most = report["most_s"]?.doubleValue ?? 1e9
        #expect(least >= 9.95 && most < 15, "each stalled request ended at its 10 s deadline, trickling or not: \(least)–\(most) s")
        #expect(report["silent_closed"]?.intValue == 8, "the silent peers were closed at their deadline: \(report)")
    }

    /// scripts/serve's OnlineTracker site (store-samples serve and notify serve behind nginx).
    func onlineTracker() throws -> ServeHandle {
        let certificates = try TestCertificates()
        let server = try certificates.server(named: "api", daysLeft: 30)
        return try ServeHandle(
            site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", scratch.path("vitals.db")], scratch: scratch)
    }

    @Test("store-samples serve answers /health in under 100 ms past 300 stalled and 8 silent connections, which end at their deadline")
    func storeSamples() throws {
        try answersPastStalledPeers(try onlineTracker(), socket: "api.sock", tool: "store-samples", path: "/health", expected: 200)
    }

    @Test("notify serve answers /api/devices/count in under 100 ms past 300 stalled and 8 silent connections, which end at their deadline")
    func notify() throws {
        try answersPastStalledPeers(try onlineTracker(), socket: "devices.sock", tool: "notify", path: "/api/devices/count", expected: 200)
    }

    @Test("snapshot-delta serve answers (401 without a certificate) in under 100 ms past 300 stalled and 8 silent connections")
    func snapshotDelta() throws {
        let archive = try HealthSyncServeTests.makeArchive()
        let made = try run("snapshot-delta", ["cert", "server", "--out", scratch.path("tls"), "--format", "ndjson"])
        #expect(made.status == 0, "\(made.stderr)")
        let handle = try ServeHandle(
            site: "health-sync",
            ["--cert", scratch.path("tls/server.crt"), "--key", scratch.path("tls/server.key"), "--archive", archive.db], scratch: scratch)
        try answersPastStalledPeers(handle, socket: "healthsync.sock", tool: "snapshot-delta", path: "/api/v1/health/types", expected: 401)
    }

    /// 300 connections each send 1,047,000 bytes of a body (of 1,048,000 declared, just under
    /// 1 MiB) they never finish: 314 MB, where the bound on bytes held for connections is 64 MiB
    /// (67,108,864 bytes). So at most 64 of them are held, and the others are answered 503 busy;
    /// a whole request is still answered at once, and the worker's resident memory grows by no
    /// more than the bound and 32 MiB (the poller's buffers, allocator slack).
    @Test("300 peers sending 1 MiB bodies they never finish: 64 MiB are held at most, the rest are answered 503, /health still at once")
    func memoryBound() throws {
        try withResponder { socket, worker in
            var config: [String: Any] = [
                "socket": socket, "params": ["REQUEST_METHOD": "GET", "REQUEST_URI": "/health"], "worker": worker, "stalled": 0,
                "noread": 0, "tries": 3, "big": 0, "wait": false,
            ]
            let warm = try slowPeers(config)
            #expect(numbers(warm, "fastcgi_statuses") == [200, 200, 200])
            let before = residentBytes(worker)
            config["stalled"] = 300
            config["big"] = 1_047_000
            config["tries"] = 7
            let report = try slowPeers(config)
            let after = residentBytes(worker)
            let answered = numbers(report, "answered")
            // Sending 314 MB takes a few seconds: the first held ones may reach their deadline (408).
            let busy = answered.filter { $0 == 503 }.count
            #expect(busy >= 300 - 64 && answered.allSatisfy { $0 == 503 || $0 == 408 }, "\(tally(report, "answered"))")
            #expect(report["still_open"]?.intValue.map { $0 + answered.count } == 300, "\(answered.count) answered")
            #expect(numbers(report, "fastcgi_statuses") == Array(repeating: 200, count: 7), "\(numbers(report, "fastcgi_statuses"))")
            #expect((report["fastcgi_median_ms"]?.doubleValue ?? 1e9) < 100, "\(numbers(report, "fastcgi_ms"))")
            #expect(after - before <= (64 + 32) << 20, "resident memory grew by \((after - before) >> 20) MiB")
        }
    }

    /// 1,100 connections each holding part of a request, past the 1,024 a responder keeps
    /// open: each new one takes the place of the staller that began longest ago, so a whole
    /// request still gets in and is answered at once, where closing the newcomer would refuse
    /// every request until the stallers' deadline.
    @Test("1,100 stalled connections, past the 1,024 kept open: the oldest stallers make room, /health is still answered at once")
    func connectionCap() throws {
        try withResponder { socket, worker in
            let report = try slowPeers([
                "socket": socket, "params": ["REQUEST_METHOD": "GET", "REQUEST_URI": "/health"], "worker": worker, "stalled": 1_100,
                "noread": 0, "tries": 7, "big": 0, "wait": false, "expect_sockets": 1_024,
            ])
            #expect(report["server_sockets"]?.intValue ?? 0 >= 1_000, "the worker held about 1,024: \(report["server_sockets"] ?? .null)")
            #expect(numbers(report, "fastcgi_statuses") == Array(repeating: 200, count: 7), "\(numbers(report, "fastcgi_statuses"))")
            #expect((report["fastcgi_median_ms"]?.doubleValue ?? 1e9) < 100, "\(numbers(report, "fastcgi_ms"))")
            let closed = numbers(report, "answered")
            #expect(
                closed.count >= 1_100 - 1_024 && closed.allSatisfy { $0 == 0 }, "the oldest closed unanswered: \(tally(report, "answered"))"
            )
        }
    }

    /// A store-samples responder on a socket of its own (4 workers) with an empty store; `body`
    /// gets the socket and the worker process.
    func withResponder(_ body: (String, pid_t) throws -> Void) throws {
        let db = scratch.path("bound.db")
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: "").status == 0)
        let folder = scratch.path("sock")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/bound.sock"
        let log = scratch.path("bound.log")
        let pid = try spawnClean(
            [Binaries.path("store-samples"), "--db", db, "serve", "--socket", socket, "--workers", "4"], environment: toolEnvironment(),
            output: log)
        defer {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        // The worker is the supervisor's child; it serves once the socket exists.
        var worker: pid_t = 0
        let deadline = Date().addingTimeInterval(20)
        while worker == 0 || !FileManager.default.fileExists(atPath: socket), Date() < deadline {
            let children = try runProcess("/usr/bin/pgrep", ["-P", String(pid)], stdin: "", environment: toolEnvironment())
            worker = pid_t(children.stdout.split(separator: "\n").first.flatMap { Int32($0) } ?? 0)
            usleep(20_000)
        }
        try #require(
            worker > 0 && FileManager.default.fileExists(atPath: socket), "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        try body(socket, worker)
    }

    /// A process's resident memory (VmRSS) in bytes.
    func residentBytes(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}

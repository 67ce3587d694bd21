import Foundation
import Testing
import VitalsKit

/// Issue 25: the responders behind nginx, attacked as a local user with an account and as an
/// agent with a token would: who can reach the sockets, what a FastCGI request can make them
/// do, who runs as what, whose samples an agent can store, and what a killed responder loses.
@Suite("the responders: sockets, users, agents, a killed worker", .serialized, .hangGuard(minutes: 5))
final class ServeSecurityTests {
    let scratch: ScratchDirectory
    let db: String
    let certificates: TestCertificates
    let server: (cert: String, key: String)

    init() throws {
        scratch = try ScratchDirectory()
        db = scratch.path("vitals.db")
        certificates = try TestCertificates()
        server = try certificates.server(named: "api", daysLeft: 30)
    }

    func serve(_ extra: [String] = []) throws -> ServeHandle {
        try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db] + extra, scratch: scratch)
    }

    func post(_ handle: ServeHandle, _ body: String, token: String) throws -> HTTPAnswer {
        try fetch(
            "https://127.0.0.1:\(handle.port)/api/samples", method: "POST", body: body, headers: ["Authorization: Bearer \(token)"],
            caFile: certificates.path("ca.pem"))
    }

    /// A sample line of `monitor` at a whole minute `minutesAgo` before now.
    func sample(_ monitor: String, minutesAgo: Int, extra: String = "") -> String {
        let seconds = (Int(Date().timeIntervalSince1970) / 60 - minutesAgo) * 60
        let at = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        return #"{"type":"sample","monitor":"\#(monitor)","at":"\#(at)","status":"up","latency_ms":5\#(extra)}"#
    }

    /// The user the served stack runs as: `servingUser` when the tests run as root, else this one.
    var servedAs: String? { runningAsRoot ? servingUser : nil }

    @Test("another local user cannot reach any socket or the refusal FIFO of a running server; they are 0600 in a 0700 folder")
    func otherUsersCannotConnect() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        guard try requireGate(runningAsRoot, "a second local user is tried only when the tests run as root (as CI does)") else { return }
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 5) + "\n").status == 0)
        let onlineTracker = try serve()
        let archive = try HealthSyncServeTests.makeArchive()
        let tls = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "server", "--out", tls.url.path]).status == 0)
        let healthSync = try ServeHandle(
            site: "health-sync",
            [
                "--cert", tls.path("server.crt"), "--key", tls.path("server.key"),
                "--archive", archive.db,
            ], scratch: tls)
        // Connects to a socket, or opens the refusal FIFO to write a forged line: PermissionError
        // for another user, "connected" for the serving user.
        let probe = #"""
            import os, socket, sys
            try:
                if sys.argv[2] == "fifo":
                    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
                    os.write(fd, b'vitals-refusal 429 1.2.3.4 "POST /x HTTP/1.1" client_sha1=-\n')
                else:
                    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect(sys.argv[1])
                print("connected")
            except OSError as error:
                print(type(error).__name__)
            """#
        var sockets: [(path: String, kind: String)] = []
        for handle in [onlineTracker, healthSync] {
            let folder = try FileManager.default.attributesOfItem(atPath: handle.runDirectory)
            #expect(folder[.posixPermissions] as? Int == 0o700, "the run folder is 0700")
            #expect(folder[.ownerAccountName] as? String == servingUser)
            for name in try FileManager.default.contentsOfDirectory(atPath: handle.runDirectory)
            where name.hasSuffix(".sock") || name.hasSuffix(".fifo") {
                let path = handle.runDirectory + "/" + name
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                #expect(attributes[.posixPermissions] as? Int == 0o600, "\(name) is 0600")
                #expect(attributes[.ownerAccountName] as? String == servingUser, "\(name) is the serving user's")
                sockets.append((path, name.hasSuffix(".fifo") ? "fifo" : "stream"))
            }
        }
        #expect(sockets.count == 4, "api, devices, healthsync and the refusal FIFO: \(sockets)")
        for (path, kind) in sockets {
            let attempt = try runProcess(
                "/usr/sbin/runuser", ["-u", "daemon", "--", "/usr/bin/python3", "-c", probe, path, kind],
                stdin: "", environment: toolEnvironment())
            #expect(
                attempt.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "PermissionError",
                "daemon reaching \(path): \(attempt.stdout) \(attempt.stderr)")
            // The serving user itself can (so the refusal is the permissions', not a dead socket).
            let own = try runProcess(
                "/usr/sbin/runuser", ["-u", servingUser, "--", "/usr/bin/python3", "-c", probe, path, kind],
                stdin: "", environment: toolEnvironment())
            #expect(
                own.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "connected", "\(servingUser) reaching \(path): \(own.stdout)")
        }
        // The forged refusal from the serving user went to the archive's log (the FIFO is its to
        // write), so the path the probe found closed to daemon is a working one.
        healthSync.stop()
        let log = try archive.run(["log"]).records().filter { $0.string("operation") == "network_refusal" }
        #expect(log.count == 1 && log.first?["detail"]?.objectValue?.string("remote_addr") == "1.2.3.4", "\(log) \(healthSync.errorLog)")
    }

    @Test("no process of the served stack runs as root but nginx's master; started as root without --user it refuses")
    func nothingRunsAsRoot() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let handle = try serve()
        // nginx's master listens before it has started its workers, and each supervisor before
        // its worker: look until all are there (or a bound that only tells a hang).
        var processes = handle.processes()
        let deadline = Date().addingTimeInterval(20)
        typealias Listed = [(pid: pid_t, parent: pid_t, uid: uid_t, command: String)]
        func workersOf(_ list: Listed) -> Listed { list.filter { $0.command.hasPrefix("nginx: worker") } }
        func respondersOf(_ list: Listed) -> Listed {
            list.filter { ($0.command.contains("store-samples") || $0.command.contains("notify")) && $0.command.contains(" serve ") }
        }
        /// The follower's stages: store-samples follow, detect-anomaly, notify.
        func followerOf(_ list: Listed) -> Listed {
            list.filter {
                $0.command.contains("store-samples follow") || $0.command.contains("detect-anomaly")
                    || ($0.command.contains("notify") && !$0.command.contains(" serve "))
            }
        }
        while workersOf(processes).isEmpty || respondersOf(processes).count < 4 || followerOf(processes).count < 3, Date() < deadline {
            usleep(50_000)
            processes = handle.processes()
        }
        let workers = workersOf(processes)
        let responders = respondersOf(processes)
        let follower = followerOf(processes)
        #expect(workers.count >= 1, "\(processes)")
        #expect(responders.count == 4, "two responders, each a supervisor and its worker: \(processes)")
        #expect(follower.count == 3, "the follower's three stages: \(processes)")
        let expected = runningAsRoot ? try #require(uidOf(servingUser)) : geteuid()
        for process in workers + responders + follower {
            #expect(process.uid == expected && process.uid != 0, "\(process.command) runs as uid \(process.uid)")
        }
        if runningAsRoot {
            let master = processes.filter { $0.command.hasPrefix("nginx: master") }
            #expect(master.count == 1 && master.first?.uid == 0, "nginx's master alone keeps root: \(master)")
            let refused = try runProcess(
                Binaries.repositoryRoot.appendingPathComponent("scripts/serve").path,
                ["--cert", server.cert, "--key", server.key, "--db", db, "--bin", Binaries.directory],
                stdin: "", environment: toolEnvironment())
            #expect(refused.status == 64 && refused.stderr.contains("--user"), "\(refused.stderr)")
            let asRoot = try runProcess(
                Binaries.repositoryRoot.appendingPathComponent("scripts/serve").path,
                ["--cert", server.cert, "--key", server.key, "--db", db, "--bin", Binaries.directory, "--user", "root"],
                stdin: "", environment: toolEnvironment())
            #expect(asRoot.status == 64 && asRoot.stderr.contains("must not be root"), "\(asRoot.stderr)")
        }
    }

    @Test("a FastCGI request naming /bin/sh runs nothing, even from the socket's own user; SCRIPT_FILENAME and VITALS_DB are ignored")
    func noProgramOnARequestsSay() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 5) + "\n").status == 0)
        let other = scratch.path("other.db")
        try #require(try run("store-samples", ["--db", other, "-q"], stdin: sample("secret", minutesAgo: 5) + "\n").status == 0)
        let handle = try serve()
        let marker = scratch.path("ran")
        let socket = handle.runDirectory + "/api.sock"
        let cases: [(uri: String, method: String, body: String)] = [
            ("/cgi-bin/sh", "POST", "touch \(marker)"),
            ("/api/samples", "POST", "id > \(marker)"),
            ("/api/status/overview", "GET", ""),
        ]
        for (uri, method, body) in cases {
            let answer = try fastCGIRequest(
                socket: socket,
                parameters: [
                    "SCRIPT_FILENAME": "/bin/sh", "SCRIPT_NAME": "/bin/sh", "PATH_INFO": "/bin/sh", "GATEWAY_INTERFACE": "CGI/1.1",
                    "REQUEST_METHOD": method, "REQUEST_URI": uri, "VITALS_DB": other, "VITALS_AGENT_TOKENS": "/etc/passwd",
                ], body: body, as: servedAs, scratch: scratch)
            #expect(!answer.hasPrefix("ERROR"), "\(answer)")
            switch uri {
            case "/cgi-bin/sh": #expect(cgiStatus(answer) == 404 && answer.contains(#""reason":"not_found""#), "\(answer)")
            case "/api/samples": #expect(cgiStatus(answer) == 401, "\(answer)")
            default:
                #expect(
                    cgiStatus(answer) == 200 && answer.contains(#""name":"api""#) && !answer.contains("secret"),
                    "the store is the responder's --db, not the request's VITALS_DB: \(answer)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "nothing ran")
        // Another role, a second request on the connection, a protocol error: answered or closed, the responder stays up.
        let health = try fetch("https://127.0.0.1:\(handle.port)/health", caFile: certificates.path("ca.pem"))
        #expect(health.status == 200)
    }

    @Test("an agent writes as itself only: the \\xff line, a BOM, an overlong encoding, \\u0000, the key twice, a 16 MiB line")
    func agentsCannotSpoof() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("seed", minutesAgo: 60) + "\n").status == 0)
        var tokens: [String: String] = [:]
        for agent in ["tokyo", "paris"] {
            tokens[agent] = try run("store-samples", ["--db", db, "agents", "token", agent]).stdout.trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        #expect(try run("store-samples", ["--db", db, "agents", "approve", "paris"]).status == 2, "paris never sent anything yet")
        let handle = try serve(["--auto-approve"])
        let token = try #require(tokens["tokyo"])
        // Each body is sent with tokyo's token; none may store anything as paris.
        let lines: [(name: String, bytes: [UInt8])] = [
            (
                "the reported line: paris, with one \\xff byte in message",
                Array(sample("m1", minutesAgo: 10, extra: #","agent":"paris","message":"a"#).utf8) + [0xFF] + Array(#""}"#.utf8)
            ),
            ("a byte order mark, then paris", [0xEF, 0xBB, 0xBF] + Array(sample("m2", minutesAgo: 10, extra: #","agent":"paris""#).utf8)),
            (
                "an overlong encoding of 'p' in the agent",
                Array(sample("m3", minutesAgo: 10, extra: #","agent":""#).utf8) + [0xC1, 0xB0]
                    + Array("aris\"}".utf8)
            ),
            ("tokyo with \\u0000 after it", Array(sample("m4", minutesAgo: 10, extra: #","agent":"tokyo\u0000""#).utf8)),
            (
                "agent twice, tokyo first",
                Array(#"{"type":"sample","agent":"tokyo","monitor":"m5","at":"2026-01-01T00:00:00Z","status":"up","agent":"paris"}"#.utf8)
            ),
            (
                "agent twice, paris first",
                Array(#"{"type":"sample","agent":"paris","monitor":"m6","at":"2026-01-01T00:00:00Z","status":"up","agent":"tokyo"}"#.utf8)
            ),
            (
                "the key with an escape",
                Array(#"{"type":"sample","\u0061gent":"paris","monitor":"m7","at":"2026-01-01T00:00:00Z","status":"up"}"#.utf8)
            ),
        ]
        for (name, bytes) in lines {
            let file = scratch.path("body-\(lines.firstIndex { $0.name == name }!)")
            try Data(bytes + [0x0A]).write(to: URL(fileURLWithPath: file))
            let curl = try runProcess(
                "/usr/bin/env",
                [
                    "curl", "-sS", "--cacert", certificates.path("ca.pem"), "-H", "Authorization: Bearer \(token)",
                    "--data-binary", "@" + file, "-w", "\n%{http_code}", "https://127.0.0.1:\(handle.port)/api/samples",
                ],
                stdin: "", environment: toolEnvironment())
            let status = curl.stdout.split(separator: "\n").last.map(String.init)
            #expect(status == "400", "\(name): refused (\(curl.stdout))")
            #expect(curl.stdout.contains(#""stored":0"#) && curl.stdout.contains(#""line":1"#), "\(name): \(curl.stdout)")
        }
        // A 16 MiB line: nginx refuses the body (over 1 MB) before the responder is asked, and the
        // responder refuses it by itself too (its own 1 MiB limit, straight on its socket).
        let huge = String(repeating: "x", count: 16 << 20)
        let hugeBody = sample("m8", minutesAgo: 10, extra: #","agent":"paris","message":"\#(huge)""#) + "\n"
        let throughNginx = try post(handle, hugeBody, token: token)
        #expect(throughNginx.status == 413, "\(throughNginx.body.prefix(200))")
        let direct = try fastCGIRequest(
            socket: handle.runDirectory + "/api.sock",
            parameters: ["REQUEST_METHOD": "POST", "REQUEST_URI": "/api/samples", "HTTP_AUTHORIZATION": "Bearer \(token)"],
            body: hugeBody, as: servedAs, scratch: scratch)
        #expect(cgiStatus(direct) == 413 && direct.contains(#""reason":"too_large""#), "\(direct.prefix(300))")
        // The same lines without their tricks: a line naming no agent is stamped tokyo; one naming paris is refused.
        let plain = try post(
            handle,
            sample("m9", minutesAgo: 10) + "\n" + sample("m10", minutesAgo: 10, extra: #","agent":null"#) + "\n"
                + sample("m11", minutesAgo: 10, extra: #","agent":"paris""#) + "\n", token: token)
        #expect(plain.status == 207 && plain.body.contains(#""stored":2"#), "\(plain.body)")
        #expect(try sqlite(db, "SELECT count(*) FROM samples WHERE agent = 'paris'") == "0", "nothing was stored as paris")
        #expect(try sqlite(db, "SELECT group_concat(agent) FROM samples WHERE agent IS NOT NULL") == "tokyo,tokyo")
        // What was stamped is in the stored line itself, and every stored sample exports as a CSV row.
        let exported = try run("store-samples", ["--db", db, "export"]).stdout
        #expect(
            exported.split(separator: "\n").filter { $0.contains(#""monitor":"m9""#) || $0.contains(#""monitor":"m10""#) }
                .allSatisfy { $0.contains(#""agent":"tokyo""#) }, "\(exported)")
        let csv = try run("store-samples", ["--db", db, "export", "--format", "csv"]).stdout.split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(csv.count == 5 && csv.last == "" && csv.dropLast().allSatisfy { !$0.isEmpty }, "\(csv)")
    }

    @Test("kill -9 of a responder under load: answered again at once, every POST that got a 2xx is stored")
    func killedUnderLoad() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        guard try requireGate(FileManager.default.isExecutableFile(atPath: "/usr/bin/wrk"), "wrk is needed (apt-get install wrk)") else {
            return
        }
        try #require(
            try run(
                "store-samples", ["--db", db, "-q"],
                stdin: (0..<200).map { sample("m\($0 % 20)", minutesAgo: $0) }.joined(separator: "\n") + "\n"
            ).status == 0)
        let token = try run("store-samples", ["--db", db, "agents", "token", "loader"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let handle = try serve(["--auto-approve", "--rate", "1000000"])
        let url = "https://127.0.0.1:\(handle.port)"
        // wrk loads the overview for 4 s; meanwhile POSTs go one after another, each of 5 new samples.
        let wrk = try Spawned(["/usr/bin/wrk", "-t", "2", "-c", "8", "-d", "4s", url + "/api/status/overview"], error: .asOutput)
        // Two POSTs answered, then the kill; then POSTs until wrk is done and three more were answered.
        let started = Date()
        var posted = 0
        var postedAfterKill = 0
        var storedByAnswers = 0
        var failed = 0
        var killed = false
        var index = 0
        while (wrk.isRunning || postedAfterKill < 3) && Date().timeIntervalSince(started) < 60 {
            if !killed, posted >= 2 {
                let responders = handle.processes().filter { $0.command.contains("store-samples") }
                let worker = responders.first { process in responders.contains { $0.pid == process.parent } }?.pid
                try #require(worker != nil)
                kill(worker!, SIGKILL)
                killed = true
            }
            let body = (0..<5).map { sample("posted\(index)-\($0)", minutesAgo: 1) }.joined(separator: "\n") + "\n"
            index += 1
            guard let answer = try? post(handle, body, token: token) else {
                failed += 1
                continue
            }
            if (200..<300).contains(answer.status) {
                posted += 1
                if killed { postedAfterKill += 1 }
                storedByAnswers +=
                    (try? JSONParser.parse(answer.body.trimmingCharacters(in: .newlines)).objectValue?["stored"]?.intValue).flatMap { $0 }
                    ?? 0
            } else {
                failed += 1
            }
        }
        let report = String(decoding: wrk.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        wrk.wait()
        #expect(killed && postedAfterKill >= 3, "posted \(posted), \(postedAfterKill) after the kill, failed \(failed)")
        #expect(storedByAnswers == posted * 5)
        // Every POST that got a 2xx is stored. One cut by the kill got no 2xx; it may have been
        // stored all the same (committed before the kill), never in part (a transaction).
        let stored = Int(try sqlite(db, "SELECT count(*) FROM samples WHERE agent = 'loader'")) ?? -1
        #expect(
            stored >= storedByAnswers && stored <= storedByAnswers + 5 * failed && stored % 5 == 0,
            "stored \(stored); posted \(posted) (\(storedByAnswers) samples), failed \(failed)")
        #expect(report.contains("Requests/sec"), "\(report)")
        // Afterwards every request gets an answer.
        for _ in 0..<20 {
            #expect(try fetch(url + "/api/status/overview", caFile: certificates.path("ca.pem")).status == 200)
        }
        #expect(handle.errorLog.contains("the worker was killed by signal 9; starting another"), "\(handle.errorLog.suffix(500))")
    }

    @Test("SIGTERM: a request being read when the stop comes is answered, then the responder ends with 143")
    func stopFinishesInFlight() throws {
        guard try requireGate(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the FastCGI client is python3") else {
            return
        }
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 5) + "\n").status == 0)
        let folder = scratch.path("sock")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/api.sock"
        let responder = try RunningTool("store-samples", ["--db", db, "serve", "--socket", socket, "--workers", "2"])
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
        // The client sends the head and part of the body, then waits for the pause file to go.
        let pause = scratch.path("pause")
        let bodyFile = try scratch.write("body", sample("late", minutesAgo: 1) + "\n")
        let json =
            #"{"REQUEST_METHOD":"POST","REQUEST_URI":"/api/samples","HTTP_AUTHORIZATION":"Bearer nothing","CONTENT_LENGTH":"\#(try String(contentsOfFile: bodyFile, encoding: .utf8).utf8.count)"}"#
        let client = try startPausingFastCGIClient(socket: socket, json: json, bodyFile: bodyFile, cut: 10, pause: pause)
        while !FileManager.default.fileExists(atPath: pause), Date() < deadline { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: pause), "the client sent its first bytes")
        responder.process.terminate()  // SIGTERM, with the request half read
        usleep(200_000)
        try FileManager.default.removeItem(atPath: pause)
        let answer = String(decoding: client.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        client.wait()
        #expect(cgiStatus(answer) == 401, "the request in flight was answered: \(answer)")
        responder.process.wait()
        #expect(responder.process.terminationStatus == 143)
        #expect(!FileManager.default.fileExists(atPath: socket), "the socket is removed at the end")
    }

    @Test("SIGTERM: a request still in the listen backlog when the stop comes is answered too")
    func stopAnswersTheBacklog() throws {
        guard try requireGate(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the FastCGI client is python3") else {
            return
        }
        let folder = scratch.path("sock-backlog")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/api.sock"
        let responder = try RunningTool("store-samples", ["--db", db, "serve", "--socket", socket, "--workers", "2"])
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
        // The worker is stopped, so nothing accepts: the client's connection and its whole request
        // wait in the listen backlog when SIGTERM comes (to the supervisor, which passes it on).
        var worker: pid_t = 0
        while worker == 0, Date() < deadline {
            let children = try runProcess(
                "/usr/bin/pgrep", ["-P", String(responder.process.pid)], stdin: "", environment: toolEnvironment())
            worker = pid_t(children.stdout.split(separator: "\n").first.flatMap { Int32($0) } ?? 0)
            if worker == 0 { usleep(10_000) }
        }
        try #require(worker > 0, "the supervisor started its worker")
        // One request answered first, so the worker is serving (a worker stopped while it starts
        // would meet the stop before it listens; that is another case).
        let readyAnswer = try fastCGIRequest(
            socket: socket, parameters: ["REQUEST_METHOD": "GET", "REQUEST_URI": "/health"], scratch: scratch)
        try #require(cgiStatus(readyAnswer) == 200, "the worker answers: \(readyAnswer)")
        kill(worker, SIGSTOP)
        let pause = scratch.path("pause-backlog")
        let body = sample("late", minutesAgo: 1) + "\n"
        let bodyFile = try scratch.write("body-backlog", body)
        let json =
            #"{"REQUEST_METHOD":"POST","REQUEST_URI":"/api/samples","HTTP_AUTHORIZATION":"Bearer nothing","CONTENT_LENGTH":"\#(body.utf8.count)"}"#
        // A cut past the end: the whole request is sent, then the client waits for the pause file to go.
        let client = try startPausingFastCGIClient(
            socket: socket, json: json, bodyFile: bodyFile, cut: 1_000_000, pause: pause)
        while !FileManager.default.fileExists(atPath: pause), Date() < deadline { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: pause), "the client sent its request")
        responder.process.terminate()
        usleep(200_000)
        kill(worker, SIGCONT)
        try FileManager.default.removeItem(atPath: pause)
        let answer = String(decoding: client.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        client.wait()
        #expect(cgiStatus(answer) == 401, "the request in the backlog was answered: \(answer)")
        responder.process.wait()
        #expect(responder.process.terminationStatus == 143)
    }

    @Test("serve refuses a socket others could reach or replace, and a live one; a stale one is replaced")
    func socketRules() throws {
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 5) + "\n").status == 0)
        let open = scratch.path("open")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        let refused = try run("store-samples", ["--db", db, "serve", "--socket", open + "/api.sock"])
        #expect(
            refused.status == 2 && refused.stderr.contains("has mode 0755") && refused.stderr.contains("chmod 700"), "\(refused.stderr)")
        let tooLong = try run("store-samples", ["--db", db, "serve", "--socket", scratch.path(String(repeating: "s", count: 120))])
        #expect(tooLong.status == 64, "\(tooLong.stderr)")
        #expect(try run("store-samples", ["--db", db, "serve"]).status == 64, "--socket is needed")
        let folder = scratch.path("private")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/api.sock"
        // A stale socket (a file nobody listens on) is replaced.
        let stale = try runProcess(
            "/usr/bin/python3", ["-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])", socket],
            stdin: "", environment: toolEnvironment())
        #expect(stale.status == 0 && FileManager.default.fileExists(atPath: socket))
        let first = try RunningTool("store-samples", ["--db", db, "serve", "--socket", socket])
        defer {
            first.process.terminate()
            first.process.wait()
        }
        let deadline = Date().addingTimeInterval(10)
        var answered = ""
        while !answered.hasPrefix("Status: 200"), Date() < deadline {
            answered = try fastCGIRequest(
                socket: socket, parameters: ["REQUEST_METHOD": "GET", "REQUEST_URI": "/health"], scratch: scratch)
            if !answered.hasPrefix("Status: 200") { usleep(20_000) }
        }
        #expect(answered.hasPrefix("Status: 200"), "\(answered)")
        let second = try run("store-samples", ["--db", db, "serve", "--socket", socket])
        #expect(second.status == 2 && second.stderr.contains("another program is listening on"), "\(second.stderr)")
    }

    @Test("socket activation: a responder started by systemd-socket-activate answers on the socket it was given")
    func socketActivation() throws {
        let activate = "/usr/bin/systemd-socket-activate"
        guard
            try requireGate(
                FileManager.default.isExecutableFile(atPath: activate), "systemd-socket-activate is needed (apt-get install systemd)")
        else { return }
        try #require(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 5) + "\n").status == 0)
        let folder = scratch.path("activated")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let socket = folder + "/api.sock"
        let log = scratch.path("activate.log")
        let pid = try spawnClean(
            [activate, "-l", socket, Binaries.path("store-samples"), "--db", db, "serve"],
            environment: toolEnvironment(), output: log)
        defer {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket), Date() < deadline { usleep(10_000) }
        let answer = try fastCGIRequest(
            socket: socket, parameters: ["REQUEST_METHOD": "GET", "REQUEST_URI": "/api/monitors"], scratch: scratch)
        #expect(cgiStatus(answer) == 200 && answer.contains(#""name":"api""#), "\(answer)")
        #expect((try String(contentsOfFile: log, encoding: .utf8)).contains("on a socket from systemd"))
    }

    @Test("the systemd units verify, and name each responder's sockets as vitals-serve(7) says")
    func systemdUnits() throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard try requireGate(FileManager.default.isExecutableFile(atPath: analyze), "systemd-analyze is needed (apt-get install systemd)")
        else { return }
        let folder = Binaries.repositoryRoot.appendingPathComponent("scripts/systemd").path
        let units = try FileManager.default.contentsOfDirectory(atPath: folder).filter {
            $0.hasSuffix(".socket") || $0.hasSuffix(".service")
        }.sorted()
        #expect(
            units == [
                "vitals-devices.service", "vitals-devices.socket", "vitals-follow.service", "vitals-healthsync.service",
                "vitals-healthsync.socket", "vitals-onlinetracker.service", "vitals-onlinetracker.socket",
            ])
        let verified = try runProcess(
            analyze, ["verify", "--man=no"] + units.map { folder + "/" + $0 }, stdin: "", environment: toolEnvironment())
        #expect(verified.status == 0 && verified.stderr.isEmpty, "\(verified.stderr)")
        let page = try readPage("man/man7/vitals-serve.7")
        for unit in units {
            let name = unit.split(separator: ".").first.map(String.init) ?? unit
            #expect(page.contains(name.replacingOccurrences(of: "-", with: "\\-")), "\(unit) is in vitals-serve(7)")
        }
        for unit in units where unit.hasSuffix(".socket") {
            let text = try String(contentsOfFile: folder + "/" + unit, encoding: .utf8)
            #expect(text.contains("SocketMode=0660") && text.contains("SocketUser=vitals"), "\(unit)")
        }
    }
}

/// The user id of `name`, from the user database.
func uidOf(_ name: String) -> uid_t? {
    getpwnam(name).map { $0.pointee.pw_uid }
}

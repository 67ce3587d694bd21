import FixtureServer
import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36's fault test: three agents (separate processes, their own tokens and spools) probe the
/// same fixture targets and send what they find through scripts/serve (nginx, store-samples serve,
/// and the follower: store-samples follow | detect-anomaly | notify into a real webhook receiver),
/// while the server goes away for 30 s, an agent is killed with -9 while it sends (its batch stored,
/// the answer lost), the responder is killed with -9 while it answers, and the follower is killed
/// with -9. Afterwards every sample each agent produced is stored exactly once, and the webhook
/// received exactly the notifications the place rule gives, worked out by hand below.
///
/// The targets, each with a check_interval of 60 s (so nobody goes silent during the outage, and
/// each place stays fresh for two minutes):
/// - web: up from every agent: never told.
/// - api: HTTP 503 from every agent. Its first sample (a1's, round 1) is the monitor's first from an
///   agent, so it waits for its places; a2's arrives: two places, both down, down: one "down".
/// - partial: HTTP 503 from a1, 200 from a2 and a3. a1's waits; a2's: a1 down, a2 up, a majority of
///   two is both, fewer fail: degraded, partial, "down from a1; up from a2": one "degraded". a3's
///   makes it "down from a1; up from a2, a3", still degraded: nothing new. a1 is never cut off (one
///   monitor fails only from it, fewer than two).
/// So the webhook gets two notifications and no third, whatever the faults did.
@Suite("agents: three places, faults, every sample once, the notifications the rule gives", .serialized, .hangGuard(minutes: 4))
final class AgentsFaultTests {
    let scratch: ScratchDirectory
    let agentScratch: ScratchDirectory
    let db: String
    let certificates: TestCertificates
    let server: (cert: String, key: String)
    let agents = ["a1", "a2", "a3"]

    init() throws {
        scratch = try ScratchDirectory()
        agentScratch = try ScratchDirectory()
        db = scratch.path("vitals.db")
        certificates = try TestCertificates()
        server = try certificates.server(named: "api", daysLeft: 30)
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: "").status == 0)
    }

    /// Each agent's token file (mode 0600, the agent's own).
    func tokenFiles() throws -> [String: String] {
        var files: [String: String] = [:]
        for agent in agents {
            let made = try run("store-samples", ["--db", db, "agents", "token", agent])
            try #require(made.status == 0, "\(made.stderr)")
            let file = agentScratch.path("\(agent).token")
            try made.stdout.write(toFile: file, atomically: true, encoding: .utf8)
            chmod(file, 0o600)
            files[agent] = file
        }
        return files
    }

    /// The pid of the served store-samples process whose command line contains `fragment`, if one
    /// runs: for a responder, its worker (the process a supervisor started, which answers requests).
    func servedProcess(_ handle: ServeHandle, _ fragment: String) -> pid_t? {
        let matching = handle.processes().filter {
            $0.command.hasPrefix(Binaries.directory + "/store-samples ") && $0.command.contains(fragment)
        }
        let parents = Set(matching.map(\.pid))
        return (matching.first { parents.contains($0.parent) } ?? matching.first)?.pid
    }

    /// Waits (at most `seconds`) until `condition` holds.
    func waitUntil(_ seconds: Double, _ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            guard Date() < deadline else { throw TestFailure("waited \(seconds) s for \(what)") }
            usleep(20_000)
        }
    }

    /// The connections waiting in the accept queue of a listening Unix socket (ss's Recv-Q).
    func acceptQueue(_ socket: String) throws -> Int {
        let listed = try runProcess("/usr/bin/env", ["ss", "-xlnH"], stdin: "", environment: toolEnvironment())
        for line in listed.stdout.split(separator: "\n") where line.contains(socket) {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if words.count > 2, let queue = Int(words[2]) { return queue }
        }
        return 0
    }

    @Test("the server away 30 s, an agent, the responder and the follower killed with -9: each sample stored once, two notifications")
    func faults() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let fixture = try FixtureServer()
        let hooks = try ScratchDirectory()
        let receiver = try webhookServer(hooks)
        /// The notifications the webhook received, in order.
        func told() throws -> [JSONObject] {
            try receiver.log().compactMap { try JSONParser.parse($0.string("body") ?? "").objectValue }
        }
        let tokens = try tokenFiles()
        // Each agent's targets: the same three monitors; partial fails from a1 alone.
        var targets: [String: String] = [:]
        for agent in agents {
            let partial = agent == "a1" ? "/status/503" : "/ok"
            targets[agent] = try agentScratch.write(
                "\(agent).targets",
                [
                    #"{"id":"web","url":"\#(fixture.baseURL)/ok","check_interval":60}"#,
                    #"{"id":"api","url":"\#(fixture.baseURL)/status/503","check_interval":60}"#,
                    #"{"id":"partial","url":"\#(fixture.baseURL)\#(partial)","check_interval":60}"#,
                ].joined(separator: "\n") + "\n")
        }
        let serveArguments = [
            "--cert", server.cert, "--key", server.key, "--db", db, "--auto-approve", "--notify-to", "json://\(receiver.hostPort)/hook",
        ]
        var handle = try ServeHandle(site: "onlinetracker", serveArguments, scratch: scratch)
        let port = handle.port
        let ca = certificates.path("ca.pem")
        var produced: [String: Int] = [:]
        var round = 0
        let progress = agentScratch.path("progress.log")
        /// Notes a step of the test, for whoever reads why it stopped where it did.
        func step(_ text: String) {
            let line = "\(Date()) \(text)\n"
            if let handle = FileHandle(forWritingAtPath: progress) {
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try? handle.close()
            } else {
                try? line.write(toFile: progress, atomically: false, encoding: .utf8)
            }
        }
        FileHandle.standardError.write(Data("fault test progress: \(progress)\n".utf8))

        /// One round: each agent probes its targets (probe-http --agent) and its remote store sends
        /// what it found; returns each agent's exit status.
        func probe(_ agent: String) throws -> String {
            let result = try run("probe-http", ["--agent", agent, targets[agent]!])
            let samples = result.stdout.split(separator: "\n").filter { $0.contains(#""type":"sample""#) }
            produced[agent, default: 0] += samples.count
            return result.stdout
        }
        func send(_ agent: String, _ lines: String, wait: String = "10s") throws -> RunResult {
            try run(
                "store-samples",
                [
                    "--db", "https://127.0.0.1:\(port)/?token_file=\(tokens[agent]!)&cacert=\(ca)", "--spool",
                    agentScratch.path("spool-\(agent)"), "--wait", wait, "-q",
                ],
                stdin: lines)
        }
        func everyAgent(wait: String = "10s") throws -> [Int32] {
            round += 1
            return try agents.map { agent in try send(agent, try probe(agent), wait: wait).status }
        }

        step("round 1")
        // Round 1: all delivered; the follower tells api down and partial degraded.
        #expect(try everyAgent() == [0, 0, 0])
        try waitUntil(30, "the two first notifications") { try told().count >= 2 }

        // Round 2, with the follower killed with -9 first (scripts/serve starts another; its cursor
        // repeats what it had not saved, which notify's state skips).
        step("round 2")
        let follower = try #require(servedProcess(handle, "follow --cursor"))
        kill(follower, SIGKILL)
        #expect(try everyAgent() == [0, 0, 0])
        try waitUntil(20, "a new follower") { self.servedProcess(handle, "follow --cursor").map { $0 != follower } ?? false }

        // Round 3: a2 killed with -9 while it sends. The responder is stopped (SIGSTOP) first, so the
        // request waits in its socket's queue, where nginx has put it whole; a2 dies; the responder
        // goes on and stores the batch, its answer lost. a2's spool keeps the batch.
        step("round 3")
        round += 1
        let responder = try #require(servedProcess(handle, "api.sock"))
        #expect(try send("a1", try probe("a1")).status == 0)
        kill(responder, SIGSTOP)
        let a2Lines = try probe("a2")
        let a2Input = agentScratch.path("a2-round3.ndjson")
        try a2Lines.write(toFile: a2Input, atomically: true, encoding: .utf8)
        let a2 = try spawnClean(
            [
                "/bin/sh", "-c",
                "exec \"$0\" --db \"$1\" --spool \"$2\" --wait 60s -q < \"$3\"",
                Binaries.directory + "/store-samples", "https://127.0.0.1:\(port)/?token_file=\(tokens["a2"]!)&cacert=\(ca)",
                agentScratch.path("spool-a2"), a2Input,
            ], environment: toolEnvironment(), output: agentScratch.path("a2-killed.log"))
        let socket = handle.runDirectory + "/api.sock"
        try waitUntil(20, "nginx to hand a2's request to the stopped responder") { try self.acceptQueue(socket) >= 1 }
        step("a2 waits in the queue; killing it")
        kill(a2, SIGKILL)
        var status: Int32 = 0
        waitpid(a2, &status, 0)
        kill(responder, SIGCONT)
        // The worker goes on and stores a2's third round; a2's spool still holds it.
        try waitUntil(20, "a2's third round stored") {
            try sqlite(self.db, "SELECT count(*) FROM samples WHERE identity_agent = 'a2'") == "9"
        }
        let spooled = try FileManager.default.subpathsOfDirectory(atPath: agentScratch.path("spool-a2")).filter {
            $0.hasSuffix(".ndjson") && !$0.contains("refused")
        }
        #expect(spooled.count == 1, "a2 died with its batch spooled: \(spooled)")
        #expect(try send("a3", try probe("a3")).status == 0)
        // a2 again: it sends the batch the server has; nothing is stored twice.
        #expect(try send("a2", "").status == 0)
        #expect(try sqlite(db, "SELECT count(*) FROM samples WHERE identity_agent = 'a2'") == "9")

        // Round 4: the responder killed with -9 while it holds a request: nginx answers 502, the
        // agent tries again, scripts/serve starts another responder, which stores it.
        step("round 4")
        round += 1
        let next = try #require(servedProcess(handle, "api.sock"))
        kill(next, SIGSTOP)
        let a1Input = agentScratch.path("a1-round4.ndjson")
        try (try probe("a1")).write(toFile: a1Input, atomically: true, encoding: .utf8)
        let a1 = try spawnClean(
            [
                "/bin/sh", "-c", "exec \"$0\" --db \"$1\" --spool \"$2\" --wait 60s -q < \"$3\"",
                Binaries.directory + "/store-samples", "https://127.0.0.1:\(port)/?token_file=\(tokens["a1"]!)&cacert=\(ca)",
                agentScratch.path("spool-a1"), a1Input,
            ], environment: toolEnvironment(), output: agentScratch.path("a1-retried.log"))
        try waitUntil(20, "nginx to hand a1's request to the stopped responder") { try self.acceptQueue(socket) >= 1 }
        step("a1 waits in the queue; killing the responder")
        kill(next, SIGKILL)
        waitpid(a1, &status, 0)
        step("a1 ended: \(status)")
        #expect(
            status == 0,
            "a1 delivered after the responder was killed: \((try? String(contentsOfFile: self.agentScratch.path("a1-retried.log"), encoding: .utf8)) ?? "")"
        )
        #expect(try send("a2", try probe("a2")).status == 0)
        #expect(try send("a3", try probe("a3")).status == 0)

        // The server away: scripts/serve stopped (nginx, the responders, the follower) for 30 s.
        // Two rounds are spooled (exit 75), then it comes back on its port, and round 7 delivers
        // every agent's spool, oldest first.
        step("the outage")
        let stoppedAt = Date()
        #expect(handle.stop() == 143 << 8)
        #expect(try everyAgent(wait: "1s") == [75, 75, 75])
        #expect(try everyAgent(wait: "1s") == [75, 75, 75])
        let away = 30 - Date().timeIntervalSince(stoppedAt)
        if away > 0 { usleep(UInt32(away * 1_000_000)) }  // the fault's length, not a wait for luck
        handle = try ServeHandle(site: "onlinetracker", serveArguments, scratch: scratch, port: port)
        step("back; round 7")
        #expect(try everyAgent() == [0, 0, 0])
        step("counting")

        // Every sample each agent produced, stored once.
        for agent in agents {
            let stored = try sqlite(db, "SELECT count(*) FROM samples WHERE identity_agent = '\(agent)'")
            #expect(stored == String(produced[agent] ?? -1), "\(agent): \(stored) stored, \(produced[agent] ?? 0) produced")
        }
        #expect(produced.values.allSatisfy { $0 == round * 3 }, "\(produced) after \(round) rounds")

        // The follower has read it all: its notify has passed on the round_end of the last batch.
        let last = try sqlite(db, "SELECT printf('%016x', max(batch)) FROM samples")
        try waitUntil(30, "the follower to reach the last batch (\(last))") {
            let log = (try? String(contentsOfFile: handle.runDirectory + "/logs/notifications.ndjson", encoding: .utf8)) ?? ""
            return log.contains(#""type":"round_end","round":"\#(last)""#)
        }
        let notified = try told().map { "\($0.string("event") ?? "?") \($0.string("monitor") ?? "?") \($0.string("reason") ?? "-")" }
        #expect(notified == ["down api http_status", "degraded partial partial"], "\(notified)")
        let degraded = try told().last
        #expect(degraded?.string("message") == "down from a1; up from a2")
        #expect(handle.stop() == 143 << 8)
    }
}

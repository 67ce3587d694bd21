import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36, item 2, where it is deployed: an agent's samples posted through nginx to the served
/// stack reach `store-samples follow`, and through scripts/serve's follower (detect-anomaly |
/// notify) a webhook; the systemd unit's pipe stops without losing what was in it, and fails when
/// a stage fails.
@Suite("store-samples follow in the served stack and its systemd unit", .serialized, .hangGuard(minutes: 5))
final class FollowServeTests {
    let scratch: ScratchDirectory
    let certificates: TestCertificates
    let server: (cert: String, key: String)

    init() throws {
        scratch = try ScratchDirectory()
        certificates = try TestCertificates()
        server = try certificates.server(named: "api", daysLeft: 30)
        signal(SIGPIPE, SIG_IGN)
    }

    /// A sample line of `monitor` `secondsAgo` before now, in whole seconds.
    func recent(_ monitor: String, secondsAgo: Int, status: String) -> String {
        let at = Timestamp.format(milliseconds: (Int64(Date().timeIntervalSince1970) - Int64(secondsAgo)) * 1000)
        return
            #"{"type":"sample","monitor":"\#(monitor)","name":"Edge","at":"\#(at)","status":"\#(status)","latency_ms":12,"check_interval":5}"#
    }

    /// Waits (30 s at most) until `ready` holds; whether it did.
    func eventually(_ ready: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if try ready() { return true }
            usleep(50_000)
        }
        return try ready()
    }

    @Test(
        "an agent's POST through nginx reaches follow's output as one round, and scripts/serve's follower (detect-anomaly | notify --to json://) tells a webhook"
    )
    func postReachesNotify() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let db = scratch.path("vitals.db")
        let issued = try run("store-samples", ["--db", db, "agents", "token", "tokyo"])
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(issued.status == 0 && !FileManager.default.fileExists(atPath: db), "no store yet: \(issued.stderr)")
        let hooks = try ScratchDirectory()
        let receiver = try webhookServer(hooks)
        // A follower of our own, started before there is a store: it waits for one.
        let ours = try StreamingTool("store-samples", ["--db", db, "follow", "--tick", "0"], errorFile: scratch.path("ours.err"))
        let handle = try ServeHandle(
            site: "onlinetracker",
            ["--cert", server.cert, "--key", server.key, "--db", db, "--auto-approve", "--notify-to", "json://\(receiver.hostPort)/hook"],
            scratch: scratch)
        // Down for longer than a check interval: notify tells an agent's monitor once it was seen for an interval.
        let body = [40, 30, 20, 10].map { recent("edge", secondsAgo: $0, status: "down") }
        let answer = try fetch(
            "https://127.0.0.1:\(handle.port)/api/samples", method: "POST", body: body.joined(separator: "\n") + "\n",
            headers: ["Authorization: Bearer \(token)"], caFile: certificates.path("ca.pem"))
        #expect(answer.status == 200 && answer.body.contains(#""stored":4"#), "\(answer.status) \(answer.body)")
        let lines = ours.lines(within: 30) { $0.last?.hasPrefix(#"{"type":"round_end""#) == true }
        let batches = try followedBatches(lines)
        #expect(batches.map(\.samples.count) == [4] && batches.first?.ended == true, "the POST is one round: \(lines)")
        let samples = lines.filter { $0.contains(#""type":"sample""#) }
        #expect(
            samples.count == 4 && samples.allSatisfy { $0.hasSuffix(#","agent":"tokyo","monitor_id":1}"#) },
            "stamped with the token's agent, numbered as the views number it: \(samples)")
        #expect(ours.stop(SIGTERM) == 143)
        // scripts/serve's follower: the agent's monitor went down, the webhook is told.
        func told() throws -> [JSONObject] {
            try receiver.log().compactMap { try JSONParser.parse($0.string("body") ?? "").objectValue }
        }
        let down = try eventually { try told().contains { $0.string("event") == "down" && $0.string("monitor") == "edge" } }
        let all = try told().map { "\($0.string("event") ?? "?") \($0.string("monitor") ?? $0.string("place") ?? "?")" }
        #expect(down, "no down for edge within 30 s: \(all) \(handle.errorLog)")
        #expect(handle.stop() == 143 << 8)
        let logged = try String(contentsOfFile: handle.runDirectory + "/logs/notifications.ndjson", encoding: .utf8)
        #expect(logged.contains(#""type":"notification""#) && logged.contains(#""result":"delivered""#), "\(logged)")
        #expect(FileManager.default.fileExists(atPath: scratch.path("follow.cursor")), "the follower's cursor, beside notify.json")
    }

    /// The unit's ExecStart as /bin/sh runs it: the `/bin/sh -c` argument with systemd's `$$`
    /// read as `$`, and its paths moved into `root`.
    func unitScript(root: String) throws -> String {
        let unit = try String(
            contentsOf: Binaries.repositoryRoot.appendingPathComponent("scripts/systemd/vitals-follow.service"), encoding: .utf8)
        let joined = unit.replacingOccurrences(of: "\\\n", with: " ")
        guard let line = joined.split(separator: "\n").first(where: { $0.hasPrefix("ExecStart=/bin/sh -c '") }) else {
            throw TestFailure("no ExecStart=/bin/sh -c '...' in vitals-follow.service")
        }
        let script = line.dropFirst("ExecStart=/bin/sh -c '".count).dropLast()
        return script.replacingOccurrences(of: "$$", with: "$").replacingOccurrences(of: "/var/lib/vitals", with: root + "/lib")
            .replacingOccurrences(of: "/etc/vitals", with: root + "/etc")
    }

    /// Starts the unit's pipe in `root` (its runtime folder, state folder and configuration there).
    func startUnit(root: String) throws -> pid_t {
        for folder in ["run", "lib", "etc"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            chmod(root + "/" + folder, 0o700)
        }
        return try spawnClean(
            ["/bin/sh", "-c", try unitScript(root: root)],
            environment: toolEnvironment(["RUNTIME_DIRECTORY": root + "/run", "VITALS_DB": root + "/lib/vitals.db"]),
            output: root + "/journal")
    }

    /// Waits for `pid`; its exit status.
    func exitStatus(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    @Test(
        "vitals-follow.service's pipe: a stop ends follow, and notify still tells what it read (exit 0); a stage that fails fails the unit, as pipefail would"
    )
    func unitPipe() throws {
        let root = scratch.path("unit")
        try FileManager.default.createDirectory(atPath: root + "/lib", withIntermediateDirectories: true)
        #expect(
            try run("store-samples", ["--db", root + "/lib/vitals.db", "-q"], stdin: recent("api", secondsAgo: 60, status: "up") + "\n")
                .status == 0)
        let shell = try startUnit(root: root)
        let journal = root + "/journal"
        #expect(
            try eventually { FileManager.default.fileExists(atPath: root + "/lib/follow.cursor") }, "follow started and saved its cursor")
        let input = [recent("api", secondsAgo: 30, status: "down"), recent("api", secondsAgo: 20, status: "down")]
        #expect(try run("store-samples", ["--db", root + "/lib/vitals.db", "-q"], stdin: input.joined(separator: "\n") + "\n").status == 0)
        // The stop comes at once; what follow wrote is read and told by notify before it ends.
        #expect(try eventually { (try? String(contentsOfFile: journal, encoding: .utf8))?.contains(#""type":"round_start""#) == true })
        kill(shell, SIGTERM)
        #expect(exitStatus(shell) == 0, "a stop is no failure: \((try? String(contentsOfFile: journal, encoding: .utf8)) ?? "")")
        let told = try String(contentsOfFile: journal, encoding: .utf8)
        #expect(told.contains(#""type":"notification""#) && told.contains(#""event":"down""#), "\(told)")
        // A stage that fails (notify refusing its channels file) fails the whole pipe, whatever the others say.
        try "not a channel\n".write(toFile: root + "/etc/notify.conf", atomically: true, encoding: .utf8)
        let failing = try startUnit(root: root)
        #expect(
            try run("store-samples", ["--db", root + "/lib/vitals.db", "-q"], stdin: recent("api", secondsAgo: 5, status: "up") + "\n")
                .status == 0)
        let status = exitStatus(failing)
        #expect(status != 0 && status != 143, "the unit fails with notify's status: \(status)")
    }
}

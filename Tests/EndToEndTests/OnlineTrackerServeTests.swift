import Foundation
import Testing
import VitalsKit

/// Issue 13, OnlineTracker's API (seed 001) through real nginx and the tools' responders on loopback, over HTTPS
/// with a certificate made at test time, fetched with curl: every endpoint answers the bytes the
/// matching subcommand prints and decodes into the app's own models; errors are JSON with the
/// right status; agents post samples with a bearer token; nothing secret reaches a log.
@Suite("OnlineTracker API over HTTPS", .serialized)
final class OnlineTrackerServeTests {
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

    /// A sample line `minutesAgo` minutes before now (whole minutes, so the views are stable
    /// for the few seconds a test takes: no sample sits near a window's edge).
    func sample(_ monitor: String, minutesAgo: Int, status: String = "up", latency: Int = 100, extra: String = "") -> String {
        let at = Date().addingTimeInterval(-Double(minutesAgo * 60))
        let seconds = Int(at.timeIntervalSince1970) / 60 * 60
        let text = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
        return
            #"{"type":"sample","monitor":"\#(monitor)","name":"\#(monitor.uppercased())","kind":"https","at":"\#(text)","status":"\#(status)","latency_ms":\#(latency)\#(extra)}"#
    }

    func serve(_ extra: [String] = []) throws -> ServeHandle {
        try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db] + extra, scratch: scratch)
    }

    func get(_ handle: ServeHandle, _ path: String, method: String = "GET", body: String? = nil, headers: [String] = []) throws
        -> HTTPAnswer
    {
        try fetch(
            "https://127.0.0.1:\(handle.port)\(path)", method: method, body: body, headers: headers, caFile: certificates.path("ca.pem"))
    }

    func seed() throws {
        var lines: [String] = []
        for minute in stride(from: 30, through: 600, by: 15) {
            lines.append(sample("api", minutesAgo: minute, status: minute % 150 == 0 ? "down" : "up", latency: 80 + minute % 70))
            lines.append(sample("web", minutesAgo: minute + 5, status: minute % 90 == 0 ? "degraded" : "up", latency: 300 + minute % 40))
        }
        lines.append(sample("db", minutesAgo: 45, status: "down", latency: 0))
        let stored = try run("store-samples", ["--db", db, "-q"], stdin: lines.joined(separator: "\n") + "\n")
        #expect(stored.status == 0, "\(stored.stderr)")
    }

    // Seed 001, Error Handling: "Empty states: Friendly messages when no monitors exist"; the
    // APIClient throws "Server error occurred" for any status outside 200..<300.
    @Test("a new server that has stored nothing answers empty views the app decodes, not 503; /health passes")
    func newServerHasEmptyViews() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        #expect(!FileManager.default.fileExists(atPath: db))
        let handle = try serve()
        #expect(try get(handle, "/health").status == 200)
        let overviewAnswer = try get(handle, "/api/status/overview")
        #expect(overviewAnswer.status == 200, "\(overviewAnswer.body)")
        let overview = try decode(OTStatusOverview.self, overviewAnswer.body)
        #expect(overview.totalMonitors == 0 && overview.monitors.isEmpty && overview.agentsTotal == 0)
        let monitors = try get(handle, "/api/monitors")
        #expect(monitors.status == 200, "\(monitors.body)")
        #expect(try decode([OTMonitor].self, monitors.body).isEmpty)
        let agents = try get(handle, "/api/agents")
        #expect(agents.status == 200, "\(agents.body)")
        #expect(try decode([OTAgent].self, agents.body).isEmpty)
        // A monitor that does not exist is still a 404, and the command line now reads the same empty store.
        #expect(try get(handle, "/api/monitors/1").status == 404)
        #expect(try get(handle, "/api/monitors").body == (try run("store-samples", ["--db", db, "monitors"])).stdout)
    }

    @Test("every GET endpoint answers over HTTPS through nginx what the subcommand prints, in the app's models")
    func everyEndpointAsTheCommandLine() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try seed()
        let handle = try serve()
        let cases: [(path: String, command: [String])] = [
            ("/api/status/overview", ["overview"]),
            ("/api/monitors", ["monitors"]),
            ("/api/monitors/1", ["monitor", "1"]),
            ("/api/monitors/web", ["monitor", "web"]),
            ("/api/monitors/2/history?hours=24", ["history", "2", "--since", "24h"]),
            ("/api/monitors/1/history", ["history", "1"]),
            ("/api/monitors/1/results?hours=12&page=2&per_page=10", ["results", "1", "--since", "12h", "--page", "2", "--per-page", "10"]),
            ("/api/monitors/3/results", ["results", "3"]),
            ("/api/agents", ["agents"]),
        ]
        for (path, command) in cases {
            let answer = try get(handle, path)
            let expected = try run("store-samples", ["--db", db] + command)
            #expect(answer.status == 200, "\(path): \(answer.body)")
            #expect(answer.headers["content-type"] == "application/json", "\(path)")
            #expect(answer.body == expected.stdout, "\(path) answers what store-samples \(command.joined(separator: " ")) prints")
        }
        // The app's own models read every answer (its date strategy included).
        let overview = try decode(OTStatusOverview.self, try get(handle, "/api/status/overview").body)
        #expect(overview.totalMonitors == 3 && overview.monitorsDown == 1 && overview.monitors.count == 3)
        #expect(overview.monitors.first?.name == "DB", "down first, the app's grouping")
        let monitors = try decode([OTMonitor].self, try get(handle, "/api/monitors").body)
        #expect(monitors.map(\.name).sorted() == ["API", "DB", "WEB"])
        let api = try decode(OTMonitor.self, try get(handle, "/api/monitors/1").body)
        #expect(api.name == "API")
        let history = try decode([OTStatusHistoryPoint].self, try get(handle, "/api/monitors/1/history?hours=24").body)
        #expect(!history.isEmpty)
        // api: samples every 15 minutes from 30 to 600 minutes ago: 39 checks in the last 12 hours.
        let page = try decode(OTResultsPage.self, try get(handle, "/api/monitors/1/results?hours=12&per_page=10").body)
        #expect(page.total == 39 && page.items.count == 10)
        _ = try decode([OTAgent].self, try get(handle, "/api/agents").body)
        let health = try get(handle, "/health")
        #expect(health.status == 200 && health.body == #"{"status":"healthy","mode":"server"}"# + "\n")
        #expect(handle.stop() == 143 << 8, "scripts/serve ends with 143 on SIGTERM, as documented")
    }

    @Test("a kept overview is the one a fresh run gives: after a write, and once a sample leaves the 24-hour window")
    func keptAnswersStayExact() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try seed()
        // A sample that leaves the 24-hour window four seconds from now (its time is whole seconds,
        // so it leaves within the second before `leaves`).
        let leaves = Date().addingTimeInterval(4)
        let leaving = ISO8601DateFormatter().string(from: leaves.addingTimeInterval(-86_400))
        let edge = #"{"type":"sample","monitor":"edge","at":"\#(leaving)","status":"down"}"#
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: edge + "\n").status == 0)
        let handle = try serve()
        // The edge sample may leave while a request is answered (on a slow machine, before the first):
        // so an answer is held to fresh runs of the command line just before and just after it.
        func keptAnswer(_ path: String, _ command: [String]) throws -> String {
            let before = try run("store-samples", ["--db", db] + command).stdout
            let answer = try get(handle, path).body
            let after = try run("store-samples", ["--db", db] + command).stdout
            #expect(answer == before || answer == after, "\(path): \(answer)\nis neither\n\(before)\nnor\n\(after)")
            return answer
        }
        let first = try keptAnswer("/api/status/overview", ["overview"])
        _ = try keptAnswer("/api/status/overview", ["overview"])
        _ = try keptAnswer("/api/monitors", ["monitors"])
        // A write: the kept answers no longer hold.
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: sample("api", minutesAgo: 1, status: "down") + "\n").status == 0)
        let afterWrite = try keptAnswer("/api/status/overview", ["overview"])
        #expect(afterWrite != first)
        _ = try keptAnswer("/api/monitors", ["monitors"])
        // The clock: once the edge sample has left the window (the command line says so), the API says so too.
        // (This waits for the clock to pass a known time, not for luck.)
        let withEdge = try run(
            "store-samples", ["--db", db, "overview", "--now", ISO8601DateFormatter().string(from: leaves.addingTimeInterval(-2))]
        ).stdout
        while Date() < leaves.addingTimeInterval(1) { usleep(100_000) }
        let withoutEdge = try run("store-samples", ["--db", db, "overview"]).stdout
        #expect(withEdge != withoutEdge, "the edge sample counts in the overview while it is in the window")
        #expect(try get(handle, "/api/status/overview").body == withoutEdge, "the kept answer is gone with the edge sample")
    }

    @Test("bad parameters, unknown monitors and paths, odd ids and wrong methods: the status and a JSON error, no internals")
    func errorsAreJSON() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try seed()
        let handle = try serve()
        let longID = String(repeating: "7", count: 10_000)
        let cases: [(path: String, method: String, status: Int, reason: String)] = [
            ("/api/monitors/1/history?hours=0", "GET", 400, "bad_parameter"),
            ("/api/monitors/1/history?hours=abc", "GET", 400, "bad_parameter"),
            ("/api/monitors/1/history?hours=8761", "GET", 400, "bad_parameter"),
            ("/api/monitors/1/results?page=0", "GET", 400, "bad_parameter"),
            ("/api/monitors/1/results?per_page=101", "GET", 400, "bad_parameter"),
            ("/api/monitors/999", "GET", 404, "unknown_monitor"),
            // nginx decodes and resolves dot segments before routing: this is /etc/passwd, no route.
            ("/api/monitors/..%2F..%2Fetc%2Fpasswd", "GET", 404, "not_found"),
            // nginx refuses a NUL in a path before routing.
            ("/api/monitors/1%00", "GET", 400, "bad_request"),
            ("/api/monitors/1%27%20OR%20%271%27%3D%271", "GET", 404, "unknown_monitor"),
            ("/api/monitors/\(longID)", "GET", 414, "uri_too_long"),  // over nginx's 8 KB request line
            ("/api/monitors/\(longID.prefix(4000))", "GET", 404, "unknown_monitor"),
            ("/api/monitors/1/nothing", "GET", 404, "not_found"),
            ("/api/nothing", "GET", 404, "not_found"),
            ("/../../etc/passwd", "GET", 404, "not_found"),
            ("/index.html", "GET", 404, "not_found"),
            ("/api/status/overview", "POST", 405, "method_not_allowed"),
            ("/api/monitors/1", "DELETE", 405, "method_not_allowed"),
            ("/api/samples", "GET", 405, "method_not_allowed"),
        ]
        for (path, method, status, reason) in cases {
            let answer = try get(handle, path, method: method, body: method == "POST" ? "{}" : nil)
            #expect(answer.status == status, "\(method) \(path.prefix(80)): \(answer.body.prefix(200))")
            #expect(answer.headers["content-type"] == "application/json", "\(method) \(path.prefix(80))")
            let object = try JSONParser.parse(answer.body.trimmingCharacters(in: .newlines)).objectValue
            #expect(object?["reason"]?.stringValue == reason, "\(method) \(path.prefix(80)): \(answer.body.prefix(200))")
            #expect(object?["error"]?.stringValue?.isEmpty == false)
            #expect(
                !answer.body.contains(scratch.url.path) && !answer.body.contains("SQLite") && !answer.body.contains("sqlite"),
                "no internals in \(answer.body.prefix(200))")
            if status == 405 { #expect(answer.headers["allow"] != nil, "405 says what is allowed") }
        }
        // A body over 1 MB is refused by nginx before any program runs.
        let big = String(repeating: "x", count: 1_048_577)
        let tooBig = try get(handle, "/api/samples", method: "POST", body: big, headers: ["Authorization: Bearer nothing"])
        #expect(tooBig.status == 413 && tooBig.body.contains(#""reason":"too_large""#), "\(tooBig.body)")
        // Nothing was stored by any of it.
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == "79", "the seed: 39 api + 39 web + 1 db")
    }

    @Test("POST /api/samples: a bearer token names the agent; bad lines and other agents' samples refused by line; counted once approved")
    func agentsPostSamples() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try seed()
        let issued = try run("store-samples", ["--db", db, "agents", "token", "tokyo"])
        #expect(issued.status == 0, "\(issued.stderr)")
        let token = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("vt_") && token.count == 51)
        let file = try String(contentsOfFile: db + ".tokens", encoding: .utf8)
        #expect(!file.contains(token) && file.contains("tokyo "), "only the token's hash is kept")
        let handle = try serve()
        let body =
            [
                sample("edge", minutesAgo: 20),
                #"{"type":"sample","monitor":"edge","at":"yesterday","status":"up"}"#,
                sample("edge", minutesAgo: 19, extra: #","agent":"paris""#),
                sample("edge", minutesAgo: 18, extra: #","agent":"tokyo""#),
            ].joined(separator: "\n") + "\n"
        // No token, a wrong one: 401, nothing stored.
        for headers in [[], ["Authorization: Bearer vt_wrong"], ["Authorization: Basic dG9reW86eA=="]] {
            let refused = try get(handle, "/api/samples", method: "POST", body: body, headers: headers)
            #expect(refused.status == 401 && refused.body.contains(#""reason":"unauthorized""#), "\(refused.body)")
        }
        #expect(try sqlite(db, "SELECT count(*) FROM samples WHERE monitor_id IN (SELECT id FROM monitors WHERE monitor = 'edge')") == "0")
        let answer = try get(handle, "/api/samples", method: "POST", body: body, headers: ["Authorization: Bearer \(token)"])
        #expect(answer.status == 207, "\(answer.body)")
        let object = try JSONParser.parse(answer.body.trimmingCharacters(in: .newlines)).objectValue
        #expect(object?["agent"]?.stringValue == "tokyo" && object?["agent_status"]?.stringValue == "pending")
        #expect(object?["stored"]?.intValue == 2)
        let refusedLines = object?["refused"]?.arrayValue?.compactMap { $0.objectValue?["line"]?.intValue }
        #expect(refusedLines == [2, 3], "\(answer.body)")
        // Stored, held: the pending agent's samples do not count until it is approved.
        #expect(try sqlite(db, "SELECT count(*) || ' ' || sum(held) FROM samples WHERE agent = 'tokyo'") == "2 2")
        var overview = try decode(OTStatusOverview.self, try get(handle, "/api/status/overview").body)
        #expect(overview.agentsPending == 1 && overview.monitors.first { $0.name == "EDGE" }?.status == .unknown)
        #expect(try run("store-samples", ["--db", db, "agents", "approve", "tokyo"]).status == 0)
        overview = try decode(OTStatusOverview.self, try get(handle, "/api/status/overview").body)
        #expect(overview.agentsPending == 0 && overview.monitors.first { $0.name == "EDGE" }?.status == .up)
        // All good lines: 200.
        let more = try get(
            handle, "/api/samples", method: "POST", body: sample("edge", minutesAgo: 10) + "\n", headers: ["Authorization: Bearer \(token)"]
        )
        #expect(
            more.status == 200 && more.body.contains(#""stored":1"#) && more.body.contains(#""agent_status":"approved""#), "\(more.body)")
        handle.stop()
        // The token is in no log.
        #expect(!handle.accessLog.isEmpty && !handle.accessLog.contains(token) && !handle.errorLog.contains(token))
    }

    @Test("devices: register, count and unregister through the API while a notify run holds its state; the token never logged")
    func devicesWhileNotifyRuns() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let state = scratch.path("notify.json")
        let handle = try serve(["--notify-state", state])
        let token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
        // A long-running notify holds the state file's lock for its whole run.
        let notify = try RunningTool("notify", ["--state", state])
        let first = try get(
            handle, "/api/devices/register", method: "POST",
            body: #"{"device_token":"\#(token.uppercased())","platform":"ios","app_version":"1.0.0"}"#)
        #expect(
            first.status == 200 && first.body == #"{"success":true,"device_id":1,"message":"Device registered successfully"}"# + "\n",
            "\(first.body)")
        let second = try get(
            handle, "/api/devices/register", method: "POST", body: #"{"device_token":"\#(String(repeating: "ab", count: 32))"}"#)
        #expect(second.body.contains(#""device_id":2"#), "\(second.body)")
        #expect(try get(handle, "/api/devices/count").body == #"{"count":2}"# + "\n")
        // notify ends and saves its state: the devices registered meanwhile are still there.
        let ended = notify.stop(SIGTERM)
        #expect(ended.status == 143, "\(ended.stderr)")
        let listed = try run("notify", ["--state", state, "devices", "list"]).records()
        #expect(listed.map { $0.string("device_token") } == [token, String(repeating: "ab", count: 32)])
        #expect(listed.first?.string("app_version") == "1.0.0")
        // Errors.
        let cases: [(method: String, path: String, body: String?, status: Int, reason: String)] = [
            ("POST", "/api/devices/register", "not json", 400, "bad_body"),
            ("POST", "/api/devices/register", #"{"device_token":"xyz"}"#, 400, "bad_body"),
            ("GET", "/api/devices/register", nil, 405, "method_not_allowed"),
            ("POST", "/api/devices/count", "{}", 405, "method_not_allowed"),
            ("DELETE", "/api/devices/\(String(repeating: "cd", count: 32))", nil, 404, "unknown_device"),
            ("DELETE", "/api/devices/nothex", nil, 404, "unknown_device"),
            ("GET", "/api/devices/\(token)", nil, 405, "method_not_allowed"),
        ]
        for (method, path, body, status, reason) in cases {
            let answer = try get(handle, path, method: method, body: body)
            #expect(
                answer.status == status && answer.body.contains(#""reason":"\#(reason)""#),
                "\(method) \(path): \(answer.status) \(answer.body)")
        }
        let removed = try get(handle, "/api/devices/\(token)", method: "DELETE")
        #expect(removed.status == 200 && removed.body == #"{"success":true,"message":"Device unregistered successfully"}"# + "\n")
        #expect(try get(handle, "/api/devices/count").body == #"{"count":1}"# + "\n")
        handle.stop()
        #expect(handle.accessLog.contains("DELETE /api/devices/***"))
        #expect(!handle.accessLog.contains(token) && !handle.errorLog.contains(token), "device tokens are not logged")
    }

    @Test("past 600 requests a minute (bursts of 100) a client gets 429 with a JSON error")
    func rateLimited() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let handle = try serve()
        let url = "https://127.0.0.1:\(handle.port)/health"
        // Bursts of 200 requests at once (32 connections in flight), each answer with its headers
        // (-i), until one is refused. The bucket holds the first request and a burst of 100 and
        // refills 10 a second: at least 101 pass, and at most 10 more for each second the bursts
        // took, however slow the machine; the rest are refused before any program runs.
        let started = Date()
        var codes: [Substring] = []
        var answers = ""
        repeat {
            let result = try runProcess(
                "/usr/bin/env",
                ["curl", "-sS", "-i", "--http1.1", "--parallel", "--parallel-max", "32", "--cacert", certificates.path("ca.pem")]
                    + Array(repeating: url, count: 200), stdin: "", environment: toolEnvironment())
            let burst = result.stdout.split(separator: "\n").filter { $0.hasPrefix("HTTP/") }.map { $0.split(separator: " ")[1] }
            #expect(burst.count == 200, "\(result.stderr)")
            codes += burst
            answers += result.stdout
        } while !codes.contains("429") && codes.count < 2000
        let elapsed = Date().timeIntervalSince(started)
        let accepted = codes.filter { $0 == "200" }.count
        #expect(accepted >= 101, "the burst passes")
        #expect(Double(accepted) <= 101 + 10 * elapsed.rounded(.up), "\(accepted) accepted in \(elapsed) s")
        #expect(codes.contains("429"))
        #expect(codes.allSatisfy { $0 == "200" || $0 == "429" })
        #expect(answers.contains(#"{"error":"too many requests from this address; try again in a few seconds","reason":"rate_limited"}"#))
        #expect(answers.lowercased().contains("retry-after: 10"))
    }

    @Test("concurrency: agents posting, a local ingest and readers at once: no client sees a locked database, nothing is lost")
    func concurrentPosts() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        try seed()
        var tokens: [String] = []
        for index in 0..<6 {
            tokens.append(
                try run("store-samples", ["--db", db, "agents", "token", "agent\(index)"]).stdout.trimmingCharacters(
                    in: .whitespacesAndNewlines))
        }
        let handle = try serve(["--workers", "8"])
        let ca = certificates.path("ca.pem")
        var bodies: [String] = []
        for index in 0..<6 {
            bodies.append((0..<100).map { sample("remote\(index)", minutesAgo: 200 - $0) }.joined(separator: "\n") + "\n")
        }
        let local = (0..<2000).map { sample("local\($0 % 4)", minutesAgo: 3000 - $0) }.joined(separator: "\n") + "\n"
        let answers = Answers()
        let tasks: [@Sendable () -> Void] =
            (0..<6).map { index in
                let body = bodies[index]
                let token = tokens[index]
                let port = handle.port
                return {
                    answers.add(
                        (try? fetch(
                            "https://127.0.0.1:\(port)/api/samples", method: "POST", body: body,
                            headers: ["Authorization: Bearer \(token)"], caFile: ca)).map { "\($0.status) \($0.body)" } ?? "curl failed")
                }
            }
            + (0..<6).map { index in
                let port = handle.port
                return {
                    answers.add(
                        (try? fetch("https://127.0.0.1:\(port)/api/\(index % 2 == 0 ? "status/overview" : "monitors")", caFile: ca))
                            .map { "\($0.status) \($0.body.prefix(60))" } ?? "curl failed")
                }
            } + [
                { [db] in
                    let ingest = try? run("store-samples", ["--db", db, "-q"], stdin: local)
                    answers.add("local \(ingest?.status ?? -1) \(ingest?.stderr ?? "")")
                }
            ]
        DispatchQueue.concurrentPerform(iterations: tasks.count) { tasks[$0]() }
        let all = answers.all
        #expect(all.count == 13)
        for answer in all {
            #expect(answer.hasPrefix("200 ") || answer == "local 0 ", "\(answer.prefix(300))")
            #expect(!answer.contains("locked"))
        }
        let byAgent = try sqlite(db, "SELECT agent, count(*) FROM samples GROUP BY agent") + "\n" + all.joined(separator: "\n")
        #expect(try sqlite(db, "SELECT count(*) FROM samples") == String(79 + 600 + 2000), "\(byAgent)")
        #expect(handle.errorLog.contains("locked") == false)
    }
}

/// Answers collected from concurrent requests.
final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ item: String) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}

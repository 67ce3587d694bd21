import FixtureServer
import Foundation
import Testing
import VitalsKit

/// The command-line conventions of vitals(7), held for every tool: a reader that goes away,
/// SIGTERM, a second SIGINT, TZ, proxies. Each test waits on a condition (a line, a request
/// the server saw, the tool blocked reading its input), never on a sleep.
@Suite("conventions, for every tool", .serialized, .hangGuard(minutes: 3))
struct ConventionTests {
    static let tools = ["probe-http", "probe-ping", "detect-anomaly", "store-samples", "notify", "digest", "snapshot-delta"]

    /// A shell command whose tool writes far more than a pipe holds (so it is still writing when
    /// `head` goes away), with the files it reads written into `scratch`.
    static func bigOutput(_ tool: String, scratch: ScratchDirectory, server: FixtureServer) throws -> String {
        switch tool {
        case "probe-http":
            try scratch.write(
                "targets.ndjson", (0..<800).map { #"{"id":"t\#($0)","url":"\#(server.baseURL)/ok"}"# }.joined(separator: "\n") + "\n")
            return "probe-http targets.ndjson"
        case "probe-ping":
            try scratch.write(
                "hosts.ndjson",
                (0..<800).map { #"{"id":"t\#($0)","target":"tcp://127.0.0.1:\#(server.port)"}"# }.joined(separator: "\n") + "\n")
            return "probe-ping hosts.ndjson"
        case "detect-anomaly", "store-samples":
            try scratch.write(
                "samples.ndjson", (0..<5000).map { sampleLine("api", minute: $0, latency: 50) }.joined(separator: "\n") + "\n")
            return tool == "detect-anomaly" ? "detect-anomaly samples.ndjson" : "store-samples --db vitals.db samples.ndjson"
        case "notify":
            // 2,000 monitors, each down once, a minute apart: one notification each.
            try scratch.write(
                "samples.ndjson", (0..<2000).map { sampleLine("m\($0)", Double($0 * 60), "down") }.joined(separator: "\n") + "\n")
            return "notify --dry-run --state /dev/null --to json://127.0.0.1:9/x samples.ndjson"
        case "digest":
            // 2,000 services: an HTML page of 2,000 rows and charts.
            try scratch.write(
                "samples.ndjson", (0..<2000).map { sampleLine("s\($0)", minute: $0 % 50, latency: 50) }.joined(separator: "\n") + "\n")
            return "digest --format html --max-services 0 samples.ndjson"
        case "snapshot-delta":
            let heart = "HKQuantityTypeIdentifierHeartRate"
            let records = (0..<3000).map { index in
                HealthLines.record(heart, Timestamp.format(milliseconds: 1_767_571_200_000 + Int64(index) * 60_000))
            }
            try scratch.write("records.ndjson", records.joined(separator: "\n") + "\n")
            return
                "snapshot-delta --db health.db take records.ndjson >/dev/null && snapshot-delta --db health.db samples --type \(heart) --per-page 3000"
        default:
            throw TestFailure("no invocation for \(tool)")
        }
    }

    /// Arguments that make the tool read records from standard input (kept open) and wait there.
    static func readingStdin(_ tool: String, scratch: ScratchDirectory) -> [String] {
        switch tool {
        case "store-samples": return ["--db", scratch.path("vitals.db")]
        case "notify": return ["--dry-run", "--state", scratch.path("notify.json")]
        case "snapshot-delta": return ["--db", scratch.path("health.db"), "take", "-"]
        default: return []
        }
    }

    @Test("a reader that goes away (| head -n 1) is success: the tool itself exits 0", arguments: tools)
    func readerGoesAway(tool: String) throws {
        let server = try FixtureServer()
        let scratch = try ScratchDirectory()
        let command = try ConventionTests.bigOutput(tool, scratch: scratch, server: server)
        // The whole output, to be sure there is more than a pipe holds.
        let whole = try runProcess(
            "/bin/bash", ["-c", "set -o pipefail; { \(command); } | wc -c"], stdin: "",
            environment: toolEnvironment(HealthExport.exampleEnvironment(scratch)), directory: scratch.url)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(
            (Int(whole.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 100_000,
            "\(tool) writes more than a pipe holds (64 KiB)")
        try? FileManager.default.removeItem(atPath: scratch.path("vitals.db"))
        try? FileManager.default.removeItem(atPath: scratch.path("health.db"))
        let result = try runProcess(
            "/bin/bash", ["-c", "{ \(command); } | head -n 1 >/dev/null; echo \"${PIPESTATUS[0]}\""], stdin: "",
            environment: toolEnvironment(HealthExport.exampleEnvironment(scratch)), directory: scratch.url)
        #expect(result.stdout == "0\n", "\(tool) | head -n 1: the tool exited \(result.stdout): \(result.stderr)")
        #expect(!result.stderr.contains("Broken pipe") && !result.stderr.contains("EPIPE"), "\(result.stderr)")
    }

    @Test("SIGTERM while reading input: exit status 143", arguments: tools)
    func sigterm(tool: String) throws {
        let scratch = try ScratchDirectory()
        let running = try RunningTool(
            tool, ConventionTests.readingStdin(tool, scratch: scratch),
            environment: HealthExport.exampleEnvironment(scratch))
        try waitUntilReadingStdin(running.process.pid)
        let stopped = running.stop(SIGTERM)
        #expect(running.process.exited, "\(tool) handles SIGTERM and exits (not killed by it)")
        #expect(stopped.status == 143, "\(tool): \(stopped.stderr)")
    }

    @Test(
        "a second SIGINT ends at once, while the first waits on a probe or a delivery that hangs",
        arguments: ["probe-http", "notify"])
    func secondInterrupt(tool: String) throws {
        let server = try FixtureServer()
        let scratch = try ScratchDirectory()
        let hang = "/delay/120000"
        let running: RunningTool
        if tool == "probe-http" {
            let targets = try scratch.write("targets.ndjson", "\(server.baseURL)\(hang)\n")
            running = try RunningTool("probe-http", ["--watch", "--timeout", "300s", targets])
        } else {
            let hook = "json://127.0.0.1:\(server.port)\(hang)"
            let samples = try scratch.write("samples.ndjson", sampleLine("api", 0, "down") + "\n")
            running = try RunningTool("notify", ["--state", scratch.path("n.json"), "--to", hook, samples])
        }
        // The request that hangs has reached the server: the tool is waiting on it.
        try waitFor("the server to see \(hang)") { !server.requests(for: hang).isEmpty }
        kill(running.process.pid, SIGINT)
        // The second SIGINT must end the run now, not after the two minutes the server holds the request.
        let started = Date()
        let stopped = running.stop(SIGINT)
        #expect(stopped.status == 130, "\(tool): \(stopped.stderr)")
        #expect(Date().timeIntervalSince(started) < 60, "\(tool) ended before the hanging request would have")
    }

    @Test("TZ sets the local times digest's text writes and snapshot-delta's time zone, and leaves NDJSON times in UTC")
    func timeZone() throws {
        let trace = DigestFixtures.trace("basic")
        // Europe/Paris in January is UTC+1: the window ending 10:25 UTC ends 11:25 there.
        let paris = try run("digest", [trace], environment: ["TZ": "Europe/Paris"])
        #expect(paris.lines.first == "Digest of the 24 hours to 2026-01-27 11:25 +01:00: 3 services, 18 checks, 72.2% up.")
        let utc = try run("digest", [trace], environment: ["TZ": "UTC"])
        #expect(utc.lines.first == "Digest of the 24 hours to 2026-01-27 10:25 UTC: 3 services, 18 checks, 72.2% up.")
        let json = try #require(try run("digest", ["-f", "json", trace], environment: ["TZ": "Europe/Paris"]).records().first)
        #expect(json.string("window_end") == "2026-01-27T10:25:00.000Z")
        // snapshot-delta(1): TZ is the zone of a snapshot's yearly counts, recorded with it and shown in
        // its text; its times stay RFC 3339 UTC.
        let scratch = try ScratchDirectory()
        let records = try scratch.write(
            "records.ndjson", HealthLines.records("HKQuantityTypeIdentifierHeartRate", 2).joined(separator: "\n") + "\n")
        var environment = HealthExport.exampleEnvironment(scratch)
        environment["TZ"] = "Europe/Paris"
        let db = scratch.path("health.db")
        let taken = try #require(
            try run(
                "snapshot-delta", ["--db", db, "--now", "2026-01-27T10:25:00Z", "take", records],
                environment: environment
            ).records().first { $0.string("type") == "snapshot" })
        #expect(taken.string("timezone") == "Europe/Paris")
        #expect(taken.string("created_at") == "2026-01-27T10:25:00.000Z")
        let shown = try run("snapshot-delta", ["--db", db, "show", "latest", "--format", "text"], environment: environment).lines
        #expect(shown.contains { $0.hasPrefix("quality") && $0.hasSuffix("time zone Europe/Paris") }, "\(shown)")
        // Filters pass the times they read untouched, whatever TZ says.
        let line = sampleLine("api", minute: 0, latency: 50)
        for tool in ["detect-anomaly", "notify"] {
            let out = try run(
                tool, tool == "notify" ? ["--dry-run", "--state", "/dev/null"] : [],
                stdin: line + "\n", environment: ["TZ": "Asia/Tokyo"])
            #expect(!out.stdout.contains("+09:00"), "\(tool) writes RFC 3339 UTC: \(out.stdout)")
        }
    }

    @Test(
        "http_proxy sends probe-http's and notify's requests through the proxy; no_proxy bypasses it",
        arguments: ["probe-http", "notify"])
    func proxies(tool: String) throws {
        // A second fixture server stands in for the proxy: it records the request line it is sent
        // (a proxied request names the whole URL); the target server records direct requests.
        let target = try FixtureServer()
        let proxy = try FixtureServer()
        func send(_ environment: [String: String]) throws -> RunResult {
            if tool == "probe-http" {
                return try run("probe-http", [], stdin: "\(target.baseURL)/ok\n", environment: environment)
            }
            return try run(
                "notify", ["--state", "/dev/null", "--to", "json://127.0.0.1:\(target.port)/echo"],
                stdin: sampleLine("api", 0, "down") + "\n", environment: environment)
        }
        _ = try send(["http_proxy": proxy.baseURL])
        #expect(proxy.requests.contains { $0.path.contains("127.0.0.1:\(target.port)") }, "\(tool) went through http_proxy")
        let direct = target.requests.count
        #expect(direct == 0, "nothing reached the target directly")
        _ = try send(["http_proxy": proxy.baseURL, "no_proxy": "127.0.0.1"])
        #expect(target.requests.count == 1, "no_proxy=127.0.0.1 bypasses the proxy")
        #expect(proxy.requests.count == 1, "the proxy saw only the first run")
    }
}

/// Polls a condition (what is awaited is named), failing after a minute.
func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(60)
    while try !condition() {
        guard Date() < deadline else { throw TestFailure("gave up waiting for \(what)") }
        usleep(2000)
    }
}

/// Waits until a thread of the process is blocked reading its standard input (read(2) on fd 0):
/// by then the tool has started, set its signal handlers, and waits for records.
func waitUntilReadingStdin(_ pid: Int32) throws {
    #if arch(x86_64)
        let read = "0"
    #else
        let read = "63"
    #endif
    try waitFor("process \(pid) to read its standard input") {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let fields = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)) ?? "").split(separator: " ")
            return fields.count > 1 && fields[0] == read && fields[1] == "0x0"
        }
    }
}

/// Bounded memory, measured: the peak resident set of the tool as a child of python3
/// (getrusage(RUSAGE_CHILDREN) there sees that one child only), on one input and on ten times it.
@Suite("bounded memory", .serialized, .hangGuard(minutes: 3))
struct BoundedMemoryTests {
    /// Peak RSS in KiB of `tool arguments` reading `file`.
    static func peakKiB(_ tool: String, _ arguments: [String], file: String) throws -> Int {
        let script = """
            import resource, subprocess, sys
            with open(sys.argv[1], "rb") as source:
                done = subprocess.run(sys.argv[2:], stdin=source, stdout=subprocess.DEVNULL)
            if done.returncode != 0: sys.exit("exit %d" % done.returncode)
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            """
        let result = try runProcess(
            "/usr/bin/python3", ["-c", script, file, Binaries.path(tool)] + arguments, stdin: "",
            environment: toolEnvironment())
        guard result.status == 0, let kib = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("\(tool): \(result.stderr)")
        }
        return kib
    }

    @Test(
        "the line reader and a filter hold a window, not the input: 10× the lines, about the same peak RSS",
        arguments: ["detect-anomaly", "digest"])
    func linesInBoundedMemory(tool: String) throws {
        let scratch = try ScratchDirectory()
        // One monitor: detect-anomaly's window and digest's per-service figures stay the same size.
        // Each line carries 1 KB of a field the tools pass through or skip.
        let padding = #","note":""# + String(repeating: "x", count: 1000) + "\""
        func write(_ name: String, _ count: Int) throws -> String {
            try scratch.write(
                name,
                (0..<count).map { sampleLine("api", minute: $0, latency: Double(40 + $0 % 20), extra: padding) }
                    .joined(separator: "\n") + "\n")
        }
        let small = try write("small.ndjson", 10_000)  // about 11 MB
        let large = try write("large.ndjson", 100_000)  // about 110 MB
        // 100,000 minutes are 69.4 days: a 100-day window holds every sample.
        let arguments = tool == "digest" ? ["--format", "json", "--window", "100d"] : []
        let smallPeak = try BoundedMemoryTests.peakKiB(tool, arguments, file: small)
        let largePeak = try BoundedMemoryTests.peakKiB(tool, arguments, file: large)
        // 99 MB more input: a reader that kept it would grow by about that; allow 8 MB of noise.
        #expect(largePeak - smallPeak < 8 * 1024, "\(tool): \(smallPeak) KiB on 10,000 lines, \(largePeak) KiB on 100,000")
    }
}

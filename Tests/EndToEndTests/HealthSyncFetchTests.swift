import Foundation
import Testing
import VitalsKit

private let heart = "HKQuantityTypeIdentifierHeartRate"
private let steps = "HKQuantityTypeIdentifierStepCount"

/// `count` records of `type`, one a minute from 2025-01-01T00:00Z on (spanning as many days as
/// they need), for archives larger than a day of HealthLines.
private func recordsAcrossDays(_ type: String, _ count: Int, startMinute: Int = 0) -> [String] {
    let base = Timestamp.parse("2025-01-01T00:00:00Z")!
    return (0..<count).map { HealthLines.record(type, Timestamp.format(milliseconds: base + Int64(startMinute + $0) * 60_000)) }
}

/// The health_data requests the server answered, as the archive's operation log has them: the
/// offset each asked from and how many samples it returned.
private func answeredPages(_ archive: HealthArchive) throws -> [(offset: Int, returned: Int)] {
    try archive.sql(
        """
        SELECT json_extract(detail, '$.offset') || ' ' || json_extract(detail, '$.returned') FROM operations
        WHERE operation = 'health_data' AND json_extract(detail, '$.status') = 200 ORDER BY id
        """
    ).split(separator: "\n").compactMap { line in
        let parts = line.split(separator: " ").compactMap { Int($0) }
        return parts.count == 2 ? (parts[0], parts[1]) : nil
    }
}

/// Each health_record's start and uuid, and each type_status line, of a fetch's NDJSON.
private func fetchedLines(_ text: String) throws -> (records: [JSONObject], statuses: [String: String]) {
    var records: [JSONObject] = []
    var statuses: [String: String] = [:]
    for line in text.split(separator: "\n") {
        let object = try #require(try JSONParser.parse(String(line)).objectValue)
        if object.string("type") == "type_status" {
            #expect(statuses[object.string("type_identifier") ?? ""] == nil, "one type_status a type: \(line)")
            statuses[object.string("type_identifier") ?? ""] = object.string("quality")
        } else {
            records.append(object)
        }
    }
    return (records, statuses)
}

/// The processes of `snapshot-delta serve` behind one site: those whose command line names its
/// socket (a path in the site's own run folder, so no other process matches).
private func responderProcesses(_ site: HealthSyncSite) throws -> [pid_t] {
    let socket = site.server.runDirectory + "/healthsync.sock"
    return try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap { entry in
        guard let pid = pid_t(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
        let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return words.contains(socket) && words.first?.hasSuffix("snapshot-delta") == true ? pid : nil
    }
}

/// The seed (002, Error Handling Strategy): "Network Errors → Log to AuditService → Retry with
/// Backoff → Error Message in UI"; Security Architecture: "Rate Limiting: 60 req/min". Every
/// test runs healthsync against the real server: nginx and snapshot-delta serve (scripts/serve).
@Suite("healthsync fetch: retries with backoff, resuming, the whole of a large archive", .serialized, .hangGuard(minutes: 6))
struct HealthSyncFetchTests {
    @Test("a fetch cut short by the rate limit (--retries 0) is continued by --resume: every sample once, none asked for twice")
    func resumeAfterTheRateLimit() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        // 90 heart rates, one a page: more requests than the server's 60 a minute.
        let archive = try HealthArchive()
        try archive.take(recordsAcrossDays(heart, 90))
        let site = try HealthSyncSite(archive: archive)
        try site.pair("carol")
        let out = site.tls.path("carol.ndjson")
        var cut = try site.client("carol", ["fetch", "--types", heart, "--per-page", "1", "--retries", "0", "--output", out])
        // On a machine slow enough to refill the bucket as fast as the fetch drains it, again.
        for _ in 0..<10 where cut.status == 0 {
            cut = try site.client("carol", ["fetch", "--types", heart, "--per-page", "1", "--retries", "0", "--output", out])
        }
        #expect(cut.status == 2, "\(cut.stderr)")
        #expect(
            cut.stderr.contains("HTTP 429 (rate_limited)") && cut.stderr.contains("--output \(out) --resume continues it"), "\(cut.stderr)")
        let before = try fetchedLines(try String(contentsOfFile: out, encoding: .utf8))
        #expect(before.statuses == [heart: "partial"] && before.records.count < 90)
        #expect(FileManager.default.fileExists(atPath: out + ".resume"))
        for file in [out, out + ".resume"] {
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600, "\(file)")
        }
        let askedBefore = try answeredPages(archive)
        // The refusal says when to ask again: the bucket refills at one a second.
        var headers = ""
        for _ in 0..<10 where !headers.contains(" 429") {
            headers = try runProcess(
                "/usr/bin/env",
                [
                    "curl", "-s", "-o", "/dev/null", "-D", "-", "--cacert", site.serverCert, "--cert",
                    site.tls.path("clients/carol.crt"), "--key", site.tls.path("clients/carol.key"), "-H", "Content-Type: application/json",
                    "--data", #"{"types":["\#(heart)"],"limit":1}"#, site.url + "/api/v1/health/data",
                ], stdin: "", environment: toolEnvironment()
            ).stdout.lowercased()
        }
        #expect(headers.contains(" 429") && headers.contains("retry-after: 1\r\n"), "\(headers)")

        // Resumed, with the default retries: the rest, through the rate limit, into the same file.
        let resumed = try site.client("carol", ["fetch", "--output", out, "--resume", "--per-page", "1"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("resuming \(out) after \(before.records.count) samples"), "\(resumed.stderr)")
        #expect(resumed.stderr.contains("at its rate limit (429)"), "\(resumed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out + ".resume"), "a finished fetch keeps no progress")
        let after = try fetchedLines(try String(contentsOfFile: out, encoding: .utf8))
        #expect(after.statuses == [heart: "complete"])
        // The newest first, each once, as the archive lists them.
        let newest = try archive.run(["samples", "--type", heart, "--per-page", "90"]).records().map { $0.string("start") }
        #expect(after.records.map { $0.string("start") } == newest)
        #expect(Set(after.records.compactMap { $0.string("uuid") }).count == 90)
        // No page was asked for twice: since the last fetch began (at offset 0), the server
        // answered each offset once, in order, the cut fetch's and then the resumption's.
        let pages = try answeredPages(archive)
        let began = try #require(pages.lastIndex { $0.offset == 0 })
        #expect(pages[began...].map(\.offset) == Array(0..<90), "\(pages.map(\.offset))")
        #expect(pages.count > askedBefore.count)
        // Nothing left to resume now; the query's options go with the first fetch, not the resumption.
        let again = try site.client("carol", ["fetch", "--output", out, "--resume"])
        #expect(again.status == 2 && again.stderr.contains("nothing to resume"), "\(again.stderr)")
        #expect(try site.client("carol", ["fetch", "--output", out, "--resume", "--types", heart]).status == 64)
        #expect(try site.client("carol", ["fetch", "--resume"]).status == 64)
    }

    @Test("a 150,000-sample archive is fetched whole by one command at the default page size, through the rate limit")
    func largeArchiveInOneCommand() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        // 100,000 heart rates and 50,000 step counts: 150 pages of 1,000, past the 60 requests
        // the server allows in a minute.
        let archive = try HealthArchive()
        try archive.take(recordsAcrossDays(heart, 100_000) + recordsAcrossDays(steps, 50_000, startMinute: 30))
        #expect(try archive.sql("SELECT count(*) FROM samples") == "150000")
        let site = try HealthSyncSite(archive: archive)
        try site.pair("dave")
        let out = site.tls.path("dave.ndjson")
        // Dave has just used his minute's allowance (70 requests on one connection), so the fetch
        // meets the limit however fast the server answers pages of 1,000 on this machine.
        let drained = try runProcess(
            "/usr/bin/env",
            [
                "curl", "-s", "-w", "\n%{http_code}\n", "--cacert", site.serverCert, "--cert", site.tls.path("clients/dave.crt"),
                "--key", site.tls.path("clients/dave.key"),
            ] + Array(repeating: site.url + "/api/v1/health/types", count: 70), stdin: "", environment: toolEnvironment())
        #expect(drained.stdout.split(separator: "\n").contains("429"), "\(drained.stdout.suffix(300))")
        let fetched = try site.client("dave", ["fetch", "--output", out])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stderr.contains("at its rate limit (429)"), "the test must go through the limit: \(fetched.stderr)")
        let lines = try fetchedLines(try String(contentsOfFile: out, encoding: .utf8))
        #expect(lines.records.count == 150_000)
        #expect(lines.statuses == [heart: "complete", steps: "complete"])
        #expect(Set(lines.records.compactMap { $0.string("uuid") }).count == 150_000)
        // Newest first: the last heart rate (minute 99,999: 2025-03-11T10:39Z) leads, the first ends.
        #expect(lines.records.first?.string("start") == "2025-03-11T10:39:00.000Z")
        #expect(lines.records.first?.string("type_identifier") == heart)
        #expect(lines.records.last?.string("start") == "2025-01-01T00:00:00.000Z")
        let pages = try answeredPages(archive)
        #expect(pages.count == 150 && pages.map(\.offset) == Array(stride(from: 0, to: 150_000, by: 1000)))
    }

    @Test("a 504 (the responder stopped) is asked again after 1 s and the fetch completes once it answers")
    func gatewayTimeoutRetried() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        try site.pair("erin")
        // The responder stopped (SIGSTOP): nginx waits its 10 s for the answer, then says 504.
        let responders = try responderProcesses(site)
        #expect(!responders.isEmpty)
        for pid in responders { kill(pid, SIGSTOP) }
        let log = site.tls.path("erin.log")
        let out = site.tls.path("erin.ndjson")
        let fetch = try spawnClean(
            [Binaries.path("healthsync"), "--state", site.statePath("erin"), "fetch", "--types", heart, "--output", out],
            environment: toolEnvironment(), output: log)
        let deadline = Date().addingTimeInterval(60)
        while !site.server.accessLog.contains("\" 504 "), Date() < deadline { usleep(50_000) }
        for pid in responders { kill(pid, SIGCONT) }
        var status: Int32 = 0
        waitpid(fetch, &status, 0)
        let said = try String(contentsOfFile: log, encoding: .utf8)
        #expect(site.server.accessLog.contains("\" 504 "), "\(site.server.accessLog)")
        #expect(status == 0, "\(said)")
        #expect(said.contains("answered HTTP 504 at page 1; trying again in 1s (1 of 6)"), "\(said)")
        let lines = try fetchedLines(try String(contentsOfFile: out, encoding: .utf8))
        #expect(lines.records.count == 3 && lines.statuses == [heart: "complete"])
    }

    @Test("a refused connection (the server restarting) is asked again with backoff until it is back on its address")
    func connectionRetried() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let archive = try HealthSyncServeTests.makeArchive()
        let first = try HealthSyncSite(archive: archive)
        try first.pair("frank")
        first.server.stop()
        let log = first.tls.path("frank.log")
        let fetch = try spawnClean(
            [Binaries.path("healthsync"), "--state", first.statePath("frank"), "fetch", "--types", heart],
            environment: toolEnvironment(), output: log)
        // Once the fetch has been refused and waits, the same server starts again on its port.
        let deadline = Date().addingTimeInterval(30)
        while !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("trying again"), Date() < deadline { usleep(20_000) }
        let again = try HealthSyncSite(archive: archive, sameAs: first)
        var status: Int32 = 0
        waitpid(fetch, &status, 0)
        let said = try String(contentsOfFile: log, encoding: .utf8)
        #expect(status == 0, "\(said)")
        #expect(
            said.contains("cannot reach the Health Sync server at \(first.url)") && said.contains("trying again in 1s (1 of 6)"), "\(said)")
        #expect(said.components(separatedBy: "\n").filter { $0.hasPrefix("{\"type\":\"health_record\"") }.count == 3, "\(said)")
        withExtendedLifetime(again) {}
    }
}

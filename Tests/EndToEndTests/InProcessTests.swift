import DetectAnomalyCore
import DigestCore
import FixtureServer
import Foundation
import HealthSyncCore
import NotifyCore
import ProbeHTTPCore
import ProbePingCore
import SnapshotDeltaCore
import StoreSamplesCore
import Testing
import VitalsKit

/// Each tool run in this process through `execute` (`InProcess.run`): what its executable does,
/// without a process start.
@Suite("tools run in-process", .hangGuard(minutes: 2))
struct InProcessTests {
    /// An hour of one-minute samples of api (up, 50 ms, a 900-ms spike at minute 20) and broken (down).
    static let samples: String =
        ((0..<60).map { sampleLine("api", minute: $0, latency: $0 == 20 ? 900 : 50) }
        + (0..<60).map { sampleLine("broken", minute: $0, latency: nil, status: "down") }).joined(separator: "\n") + "\n"

    @Test("probe-http probes the fixture server")
    func probeHTTP() throws {
        let server = try FixtureServer()
        let result = try InProcess.run(ProbeHTTPCommand.self, [], stdin: #"{"id":"api","url":"\#(server.baseURL)/ok"}"# + "\n")
        #expect(result.status == .success, "\(result.stderr)")
        let sample = try #require(result.lines.first { $0.contains(#""type":"sample""#) })
        #expect(sample.contains(#""monitor":"api""#) && sample.contains(#""status":"up""#))
    }

    @Test("probe-ping times a TCP connection to the fixture server")
    func probePing() throws {
        let server = try FixtureServer()
        let result = try InProcess.run(ProbePingCommand.self, [], stdin: #"{"id":"web","target":"tcp://127.0.0.1:\#(server.port)"}"# + "\n")
        #expect(result.status == .success, "\(result.stderr)")
        let sample = try #require(result.lines.first { $0.contains(#""type":"sample""#) })
        #expect(sample.contains(#""monitor":"web""#) && sample.contains(#""status":"up""#))
    }

    @Test("detect-anomaly marks every sample")
    func detectAnomaly() throws {
        let result = try InProcess.run(DetectAnomalyCommand.self, [], stdin: Self.samples)
        #expect(result.status == .success, "\(result.stderr)")
        #expect(result.lines.count == 120)
        #expect(result.lines.allSatisfy { $0.contains(#""anomaly":{"verdict":"#) })
    }

    @Test("store-samples stores, answers the overview, and refuses a remote store's query as a usage error")
    func storeSamples() throws {
        let scratch = try ScratchDirectory()
        let database = scratch.path("vitals.db")
        let ingest = try InProcess.run(StoreSamplesCommand.self, ["--db", database, "--quiet"], stdin: Self.samples)
        #expect(ingest.status == .success && ingest.stdout.isEmpty, "\(ingest.stderr)")
        let overview = try InProcess.run(StoreSamplesCommand.self, ["--db", database, "--now", "2026-01-05T01:00:00Z", "overview"])
        #expect(overview.status == .success, "\(overview.stderr)")
        let object = try #require(try JSONParser.parse(Array(overview.stdout.utf8)).objectValue)
        #expect(object.int("total_monitors") == 2 && object.int("monitors_down") == 1, "\(overview.stdout)")
        let remote = try InProcess.run(StoreSamplesCommand.self, ["--db", "https://server.example/?token_file=t", "overview"])
        #expect(remote.status == .usage && remote.stderr.contains("a remote store only takes samples"))
    }

    @Test("digest sums the hour up per service")
    func digest() throws {
        let result = try InProcess.run(DigestCommand.self, ["--now", "2026-01-05T01:00:00Z", "--format", "json"], stdin: Self.samples)
        #expect(result.status == .success, "\(result.stderr)")
        #expect(result.stdout.contains(#""monitor":"api""#) && result.stdout.contains(#""monitor":"broken""#))
    }

    @Test("notify tells the failing monitor, dry-run")
    func notify() throws {
        let scratch = try ScratchDirectory()
        let result = try InProcess.run(NotifyCommand.self, ["--dry-run", "--state", scratch.path("notify.json")], stdin: Self.samples)
        #expect(result.status == .success, "\(result.stderr)")
        #expect(result.lines.contains { $0.contains(#""type":"notification""#) && $0.contains("broken") }, "\(result.stdout)")
    }

    @Test("snapshot-delta takes NDJSON records and verifies its chain")
    func snapshotDelta() throws {
        let scratch = try ScratchDirectory()
        let database = scratch.path("health.db")
        let home = ["HOME": scratch.path("home"), "XDG_CONFIG_HOME": scratch.path("home/.config")]
        let records = HealthLines.records("HKQuantityTypeIdentifierHeartRate", 5).joined(separator: "\n") + "\n"
        let take = try InProcess.run(SnapshotDeltaCommand.self, ["--db", database, "take", "-"], stdin: records, environment: home)
        #expect(take.status == .success, "\(take.stderr)")
        #expect(take.stdout.contains(#""type":"snapshot""#))
        let verify = try InProcess.run(SnapshotDeltaCommand.self, ["--db", database, "verify"], environment: home)
        #expect(verify.status == .success, "\(verify.stderr)")
    }

    @Test("healthsync says how to pair when it has not")
    func healthSync() throws {
        let scratch = try ScratchDirectory()
        let result = try InProcess.run(HealthSyncCommand.self, ["--state", scratch.path("healthsync.json"), "types"])
        #expect(result.status == .failure)
        #expect(result.stderr.contains("not paired yet"), "\(result.stderr)")
    }
}

/// One quoting rule (`SampleProblem.quoted`): every reader's diagnostic quotes a bad value's first
/// 40 characters as written, then `...`; characters, not bytes (é is two).
@Suite("one quoting rule for a bad value", .hangGuard(minutes: 2))
struct QuotingRuleTests {
    static let long = "\"" + String(repeating: "é", count: 60) + "\""
    static let quoted = "\"" + String(repeating: "é", count: 39) + "..."

    static func sample(_ field: String, _ value: String) -> String {
        #"{"type":"sample","monitor":"api","at":"2026-01-05T00:00:00.000Z","status":"up","latency_ms":12,"\#(field)":\#(value)}"# + "\n"
    }

    @Test("the shared reader's field, in store-samples, digest, notify and detect-anomaly alike")
    func sharedField() throws {
        let scratch = try ScratchDirectory()
        let line = #"{"type":"sample","monitor":"api","at":"2026-01-05T00:00:00.000Z","status":"up","latency_ms":\#(Self.long)}"# + "\n"
        let want = "sample 'latency_ms' is \(Self.quoted); expected a number, 0 or more, or null"
        let runs = [
            try InProcess.run(StoreSamplesCommand.self, ["--db", scratch.path("v.db"), "--quiet"], stdin: line),
            try InProcess.run(DigestCommand.self, ["--now", "2026-01-05T01:00:00Z"], stdin: line),
            try InProcess.run(NotifyCommand.self, ["--dry-run", "--state", scratch.path("n.json")], stdin: line),
            try InProcess.run(DetectAnomalyCommand.self, [], stdin: line),
        ]
        for result in runs { #expect(result.stderr.contains("<stdin>:1: " + want), "\(result.stderr)") }
    }

    @Test("a field only the store reads, and one only digest reads, by the same rule")
    func ownFields() throws {
        let scratch = try ScratchDirectory()
        let store = try InProcess.run(
            StoreSamplesCommand.self, ["--db", scratch.path("v.db"), "--quiet"], stdin: Self.sample("code", Self.long))
        #expect(store.stderr.contains("sample 'code' is \(Self.quoted); expected a whole number or null"), "\(store.stderr)")
        let digest = try InProcess.run(DigestCommand.self, ["--now", "2026-01-05T01:00:00Z"], stdin: Self.sample("speed_mbps", Self.long))
        #expect(digest.stderr.contains("sample 'speed_mbps' is \(Self.quoted); expected a number, 0 or more, or null"), "\(digest.stderr)")
        let short = try InProcess.run(
            StoreSamplesCommand.self, ["--db", scratch.path("v.db"), "--quiet"], stdin: Self.sample("code", "\"a\""))
        #expect(short.stderr.contains(#"sample 'code' is "a"; expected a whole number or null"#), "\(short.stderr)")
    }
}

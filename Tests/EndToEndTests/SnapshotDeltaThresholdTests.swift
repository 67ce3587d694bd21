import Foundation
import Testing
import VitalsKit

/// Each anomaly threshold of snapshot-delta(1), at the threshold and just past it. The counts
/// are chosen so every percentage is worked out by hand below; `diff` applies the rules to a
/// stored pair again with other options and stores nothing.
@Suite("snapshot-delta: anomaly thresholds at and just past each option's value", .hangGuard(minutes: 3))
struct SnapshotDeltaThresholdTests {
    let archive: HealthArchive
    init() throws { archive = try HealthArchive() }

    func type(_ name: String) -> String { "HKQuantityTypeIdentifier" + name }

    /// Takes two snapshots with these counts per type (records one a minute from 08:00).
    func pair(_ before: [String: Int], _ after: [String: Int]) throws -> (String, String) {
        func lines(_ counts: [String: Int]) -> [String] {
            counts.sorted { $0.key < $1.key }.flatMap { HealthLines.records(type($0.key), $0.value) }
        }
        let a = try archive.take(lines(before))
        let b = try archive.take(lines(after))
        return (a.id, b.id)
    }

    /// The anomalies `diff A B` finds with `options`.
    func anomalies(_ pair: (String, String), _ options: [String]) throws -> [JSONObject] {
        let result = try archive.run(["diff", pair.0, pair.1] + options)
        try #require(result.status == 0, "\(result.stderr)")
        return try result.records().filter { $0.string("type") == "anomaly" }
    }

    func kinds(_ anomalies: [JSONObject], _ kind: String) -> [JSONObject] {
        anomalies.filter { $0.string("kind") == kind }
    }

    @Test("--sync-change and --sync-types: a type changing by exactly PCT does not count; N types at once do")
    func sync() throws {
        // S1-S3: 100 → 108, +8%; S4: 100 → 107, +7% exactly (7 × 100 / 100); S5 unchanged.
        let pair = try pair(
            ["S1": 100, "S2": 100, "S3": 100, "S4": 100, "S5": 100],
            ["S1": 108, "S2": 108, "S3": 108, "S4": 107, "S5": 100])
        // --sync-change 7: S4's 7% is not more than 7, so 3 types count; 3 < 4: no sync anomaly.
        #expect(kinds(try anomalies(pair, ["--sync-change", "7", "--sync-types", "4"]), "sync_anomaly").isEmpty)
        // --sync-change 6.9: S4 counts too; 4 types reach --sync-types 4.
        let past = kinds(try anomalies(pair, ["--sync-change", "6.9", "--sync-types", "4"]), "sync_anomaly")
        try #require(past.count == 1)
        #expect(past[0]["types"] == .array(["S1", "S2", "S3", "S4"].map { .string(type($0)) }))
        // --sync-types 3 with --sync-change 7: the 3 counting types are exactly enough.
        let atTypes = kinds(try anomalies(pair, ["--sync-change", "7", "--sync-types", "3"]), "sync_anomaly")
        try #require(atTypes.count == 1)
        #expect(atTypes[0]["types"] == .array(["S1", "S2", "S3"].map { .string(type($0)) }))
    }

    @Test("--duplication-change: growth of exactly PCT is not a duplication; just more is")
    func duplicationChange() throws {
        // D1: 10 → 15, +50% exactly; D2: 100 → 151, +51%. Both end within minutes of where they did.
        let pair = try pair(["D1": 10, "D2": 100], ["D1": 15, "D2": 151])
        let quiet = ["--sync-types", "100"]
        let at50 = kinds(try anomalies(pair, ["--duplication-change", "50"] + quiet), "duplication")
        #expect(at50.map { $0.string("type_identifier") } == [type("D2")])
        #expect(kinds(try anomalies(pair, ["--duplication-change", "51"] + quiet), "duplication").isEmpty)
        let below = kinds(try anomalies(pair, ["--duplication-change", "49.9"] + quiet), "duplication")
        #expect(Set(below.compactMap { $0.string("type_identifier") }) == [type("D1"), type("D2")])
    }

    @Test("--duplication-window: an end that moved by exactly the window is within it; by more is not")
    func duplicationWindow() throws {
        // W: 10 samples 08:00-08:09 become 20 samples 08:00-08:19: +100%, the latest end moved 10 minutes.
        let pair = try pair(["W": 10], ["W": 20])
        #expect(kinds(try anomalies(pair, ["--duplication-window", "10m"]), "duplication").count == 1)
        #expect(kinds(try anomalies(pair, ["--duplication-window", "9m"]), "duplication").isEmpty)
    }

    @Test("--deletion-warning and --deletion-critical: a share lost of exactly PCT has that severity")
    func deletion() throws {
        // Lost shares by hand: L1 1 of 8 = 12.5%; L2 1 of 4 = 25%; L3 26 of 100 = 26%;
        // L4 2 of 4 = 50%; L5 49 of 100 = 49%; L6 51 of 100 = 51%.
        let pair = try pair(
            ["L1": 8, "L2": 4, "L3": 100, "L4": 4, "L5": 100, "L6": 100],
            ["L1": 7, "L2": 3, "L3": 74, "L4": 2, "L5": 51, "L6": 49])
        let found = kinds(try anomalies(pair, ["--deletion-warning", "25", "--deletion-critical", "50"]), "deletion")
        var severity: [String: String] = [:]
        for anomaly in found { severity[anomaly.string("type_identifier") ?? ""] = anomaly.string("severity") }
        #expect(
            severity == [
                type("L1"): "info", type("L2"): "warning", type("L3"): "warning",
                type("L4"): "critical", type("L5"): "warning", type("L6"): "critical",
            ])
    }

    @Test("--restore-records: a chain start of exactly N records is not a post-restore baseline; N + 1 is")
    func restoreRecords() throws {
        let five = HealthLines.records(type("R"), 5)
        let atThreshold = try archive.take(five, ["--restore-records", "5"])
        #expect(atThreshold.snapshot.int("record_count") == 5)
        #expect(atThreshold.snapshot["is_post_restore_inferred"] == .bool(false))
        let past = try HealthArchive().take(five, ["--restore-records", "4"])
        #expect(past.snapshot["is_post_restore_inferred"] == .bool(true))
    }
}

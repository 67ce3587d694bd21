import Foundation
import Testing
import VitalsKit

/// The one versioned open both SQLite tools share (SQLiteStore's openVersioned).
@Suite("SQLite files: one versioned open for store-samples and snapshot-delta", .hangGuard(minutes: 2))
struct SQLiteVersionTests {
    let scratch: ScratchDirectory
    init() throws { scratch = try ScratchDirectory() }

    let heart = "HKQuantityTypeIdentifierHeartRate"
    /// The schema version each tool writes today.
    let versions = ["store-samples": 8, "snapshot-delta": 5]

    func storeSamples(_ db: String) throws -> RunResult {
        try run("store-samples", ["--db", db], stdin: sample("a") + "\n")
    }

    func snapshotDelta(_ db: String) throws -> RunResult {
        try run(
            "snapshot-delta", ["--db", db, "take", "--device-id-file", scratch.path("device-id")],
            stdin: HealthLines.records(heart, 2).joined(separator: "\n") + "\n")
    }

    @Test("a file newer than the code is refused by both tools in the same words, and left as it was")
    func newer() throws {
        var messages: [String] = []
        for (tool, open) in [("store-samples", storeSamples), ("snapshot-delta", snapshotDelta)] {
            let db = scratch.path("\(tool)-newer.db")
            _ = try sqlite(db, "PRAGMA user_version = 99")
            let result = try open(db)
            #expect(result.status == 2, "\(tool)")
            #expect(
                result.stderr.contains(
                    "\(db) has schema version 99; this \(tool) knows versions up to \(versions[tool]!) (use a newer vitals)"),
                "\(result.stderr)")
            messages.append(
                result.stderr.replacingOccurrences(of: db, with: "FILE").replacingOccurrences(of: tool, with: "TOOL")
                    .replacingOccurrences(of: "up to \(versions[tool]!)", with: "up to N"))
            #expect(try sqlite(db, "PRAGMA user_version; SELECT count(*) FROM sqlite_master") == "99\n0", "nothing was created")
        }
        try #require(messages.count == 2)
        #expect(messages[0] == messages[1])
    }

    @Test("a version-0 file (SQLite, no tables yet) is migrated to the current version, with mode 0600 when created")
    func versionZero() throws {
        for (tool, open) in [("store-samples", storeSamples), ("snapshot-delta", snapshotDelta)] {
            let db = scratch.path("\(tool)-zero.db")
            _ = try sqlite(db, "PRAGMA user_version = 0; VACUUM")
            #expect(FileManager.default.fileExists(atPath: db))
            let result = try open(db)
            #expect(result.status == 0, "\(tool): \(result.stderr)")
            #expect(try sqlite(db, "PRAGMA user_version") == "\(versions[tool]!)", "\(tool)")
            let fresh = scratch.path("\(tool)-fresh.db")
            #expect(try open(fresh).status == 0)
            let mode = try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(tool)")
        }
        #expect(try sqlite(scratch.path("store-samples-zero.db"), "SELECT count(*) FROM samples") == "1")
        #expect(try sqlite(scratch.path("snapshot-delta-zero.db"), "SELECT count(*) FROM snapshots") == "1")
    }

    @Test(
        "a version-1 store-samples file gains the monitors' config and enabled, the agent model, the generation, the identity key, places and the storage order, keeping its samples"
    )
    func storeSamplesVersionOne() throws {
        let db = scratch.path("v1.db")
        #expect(try storeSamples(db).status == 0)
        // Back to version 1's tables: what versions 2 to 7 added, taken away again.
        _ = try sqlite(
            db,
            """
            ALTER TABLE samples DROP COLUMN batch;
            DROP TABLE places; DROP INDEX samples_by_monitor_time; ALTER TABLE samples DROP COLUMN consensus;
            CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms);
            DROP TABLE check_counts; DROP TABLE check_counts_state; DROP INDEX samples_identity; ALTER TABLE samples DROP COLUMN identity_agent;
            CREATE INDEX samples_by_time ON samples(at);
            DROP TABLE store_state; DROP INDEX samples_held_by_agent; DROP INDEX samples_by_monitor_time;
            ALTER TABLE samples DROP COLUMN held; ALTER TABLE samples DROP COLUMN agent; ALTER TABLE samples DROP COLUMN origin;
            ALTER TABLE agents DROP COLUMN name; ALTER TABLE monitors DROP COLUMN config; ALTER TABLE monitors DROP COLUMN enabled;
            CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms); PRAGMA user_version = 1;
            """)
        let later = try run(
            "store-samples", ["--db", db], stdin: sample("a", minute: 1, extra: #","enabled":false,"config":{"ping_count":5}"#) + "\n")
        #expect(later.status == 0, "\(later.stderr)")
        #expect(
            try sqlite(db, "PRAGMA user_version; SELECT count(*) FROM samples; SELECT config, enabled FROM monitors")
                == "8\n2\n{\"ping_count\":5}|0")
        #expect(try sqlite(db, "SELECT generation FROM store_state") == "3", "version 5's and 6's migrations and one write since version 4")
        #expect(
            try sqlite(db, "SELECT group_concat(id || ':' || batch, ' ') FROM samples; SELECT last_sample_id FROM store_state")
                == "1:0 2:3\n2",
            "the sample stored before version 7 is never followed; the new one numbered on, in the batch of its commit")
        #expect(try sqlite(db, "SELECT sum(held), sum(origin) FROM samples") == "0|0", "what was stored is the user's own and counts")
    }

    @Test("a version-0 file that holds someone else's tables is refused by both")
    func foreign() throws {
        for (tool, open) in [("store-samples", storeSamples), ("snapshot-delta", snapshotDelta)] {
            let db = scratch.path("\(tool)-foreign.db")
            _ = try sqlite(db, "CREATE TABLE notes (x)")
            let result = try open(db)
            #expect(result.status == 2 && result.stderr.contains("\(db) is a SQLite database but not a \(tool) "), "\(result.stderr)")
        }
    }
}

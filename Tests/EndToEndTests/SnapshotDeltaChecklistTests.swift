import FixtureServer
import Foundation
import Testing
import VitalsKit

/// HealthProbe's 32-item verification checklist, one test per item that is not about
/// HealthKit's own APIs, named after the item. The items that do not apply (13, 22, 23, 27)
/// are listed with the reason in snapshot-delta(1), NOTES.
@Suite("snapshot-delta: HealthProbe's verification checklist", .hangGuard(minutes: 3))
struct SnapshotDeltaChecklistTests {
    let archive: HealthArchive
    init() throws { archive = try HealthArchive() }

    let heart = "HKQuantityTypeIdentifierHeartRate"
    let steps = "HKQuantityTypeIdentifierStepCount"
    /// Five types with ten samples each, on 2026-01-10.
    var five: [String] { ["A", "B", "C", "D", "E"].map { "HKQuantityTypeIdentifier\($0)" } }
    func baseline(_ count: Int = 10, day: String = "2026-01-10") -> [String] {
        five.flatMap { HealthLines.records($0, count, day: day) }
    }

    @Test("01 build succeeds with no errors: the binary is built from these sources, links its C libraries, and runs")
    func item01() throws {
        let binary = Binaries.path("snapshot-delta")
        let built = try #require(try FileManager.default.attributesOfItem(atPath: binary)[.modificationDate] as? Date)
        if ProcessInfo.processInfo.environment["VITALS_BIN_DIR"] == nil {
            // A failed build leaves the previous binary behind: it would be older than a source it lacks.
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            var sources: [String] = []
            for target in ["Sources/snapshot-delta", "Sources/SnapshotDeltaCore"] {
                let folder = root.appendingPathComponent(target).path
                for name in try FileManager.default.contentsOfDirectory(atPath: folder) where name.hasSuffix(".swift") {
                    sources.append(folder + "/" + name)
                }
            }
            try #require(sources.count > 10)
            for source in sources {
                let changed = try #require(try FileManager.default.attributesOfItem(atPath: source)[.modificationDate] as? Date)
                #expect(changed <= built, "\(source) changed after the binary was built: the build did not succeed")
            }
        }
        #if os(Linux)
            // Every library it needs resolves, and the C libraries it reaches are linked.
            let libraries = try runProcess("/usr/bin/env", ["ldd", binary], stdin: "", environment: toolEnvironment())
            #expect(libraries.status == 0 && !libraries.stdout.contains("not found"), "\(libraries.stdout)")
            for library in ["libxml2", "libsqlite3", "libcrypto"] { #expect(libraries.stdout.contains(library), "\(library)") }
        #endif
        let result = try run("snapshot-delta", ["--version"])
        #expect(result.status == 0 && result.stdout.hasPrefix("snapshot-delta (vitals) ") && result.stderr.isEmpty)
    }

    @Test("02 first snapshot: is_chain_start, no previous_snapshot_id, no delta")
    func item02() throws {
        let first = try archive.take(HealthLines.records(heart, 3))
        #expect(first.snapshot["is_chain_start"] == .bool(true))
        #expect(first.snapshot["previous_snapshot_id"] == .null)
        #expect(first.delta == nil && first.anomalies.isEmpty)
        #expect(try archive.sql("SELECT count(*) FROM deltas") == "0")
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "1")
    }

    @Test("03 second snapshot: a delta with the right checksum_before and checksum_after")
    func item03() throws {
        let first = try archive.take(HealthLines.records(heart, 2, day: "2019-05-10"))
        let second = try archive.take(HealthLines.records(heart, 3, day: "2019-05-10"))
        // By hand: two samples at 08:00 and 08:01 UTC, then three up to 08:02.
        let before = try sha256sum(try sha256sum("\(heart)|2|2019-05-10T08:00:00.000Z|2019-05-10T08:01:00.000Z"))
        let after = try sha256sum(try sha256sum("\(heart)|3|2019-05-10T08:00:00.000Z|2019-05-10T08:02:00.000Z"))
        #expect(first.snapshot.string("checksum") == before)
        #expect(second.snapshot.string("checksum") == after)
        let delta = try #require(second.delta)
        #expect(delta.string("checksum_before") == before && delta.string("checksum_after") == after)
        #expect(delta.string("from_snapshot_id") == first.id && delta.string("to_snapshot_id") == second.id)
        #expect(second.snapshot.string("previous_snapshot_id") == first.id && second.snapshot["is_chain_start"] == .bool(false))
        #expect(second.change(heart)?.int("count_delta") == 1 && second.change(heart)?.string("transition") == "increased")
    }

    @Test("04 revoke permission: the type is unauthorized, the snapshot partial, no anomalies")
    func item04() throws {
        try archive.take(baseline())
        // One type revoked; another loses half its samples, which a complete pair would flag.
        let lines =
            HealthLines.records(five[0], 5) + five[2...].flatMap { HealthLines.records($0, 10) } + [
                HealthLines.status(five[1], "unauthorized")
            ]
        let revoked = try archive.take(lines)
        #expect(revoked.type(five[1])?.string("quality") == "unauthorized" && revoked.type(five[1])?.int("count") == -1)
        #expect(revoked.snapshot.string("quality") == "partial")
        #expect(revoked.anomalies.isEmpty)
        #expect(revoked.delta?.string("detection") == "quality_gate")
        #expect(revoked.change(five[1])?.string("reason") == "authorization_changed")
        #expect(revoked.change(five[1])?.int("count_delta") == 0)
        #expect(try archive.sql("SELECT count(*) FROM anomalies") == "0")
    }

    @Test("05 all permissions revoked: the snapshot is unauthorized, no anomalies")
    func item05() throws {
        try archive.take(baseline())
        let denied = try archive.take(five.map { HealthLines.status($0, "unauthorized") })
        #expect(denied.snapshot.string("quality") == "unauthorized")
        #expect(denied.anomalies.isEmpty && denied.delta?.string("detection") == "quality_gate")
        #expect(five.allSatisfy { denied.type($0)?.int("count") == -1 })
    }

    @Test("06 timeout: count -1, quality failed, 'unavailable' for a person")
    func item06() throws {
        let taken = try archive.take(HealthLines.records(heart, 3) + [HealthLines.status(steps, "failed")])
        #expect(taken.type(steps)?.int("count") == -1 && taken.type(steps)?.string("quality") == "failed")
        #expect(taken.type(steps)?["is_unsupported"] == .bool(false))
        let text = try archive.run(["show", "latest", "--format", "text"])
        let line = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix(steps) })
        #expect(line.contains("unavailable") && line.contains("failed"))
    }

    @Test("07 post-authorize after full deny: the first delta is suppressed, the snapshot marked post-restore")
    func item07() throws {
        try archive.take(baseline())
        try archive.take(five.map { HealthLines.status($0, "unauthorized") })
        // Authorized again, with counts far from the first snapshot's.
        let restored = try archive.take(baseline(30))
        #expect(restored.snapshot["is_post_restore"] == .bool(true) && restored.snapshot["is_post_restore_inferred"] == .bool(true))
        #expect(restored.anomalies.isEmpty && restored.delta?.string("detection") == "quality_gate")
        // The next delta would be a sync anomaly (5 types up by 20% with later dates): suppressed once.
        let next = try archive.take(baseline(36))
        #expect(next.delta?["post_restore_suppressed"] == .bool(true))
        #expect(!next.anomalies.contains { $0.string("kind") == "sync_anomaly" })
        #expect(
            try archive.sql("SELECT post_restore_suppressed_delta_id FROM snapshots WHERE id = '\(restored.id)'")
                == next.delta?.string("id"))
        // The token is used: the same change again is reported.
        let after = try archive.take(baseline(44))
        #expect(after.anomalies.filter { $0.string("kind") == "sync_anomaly" }.count == 1)
    }

    @Test("08 A→B→C, delete B: one merged delta A→C, and C follows A")
    func item08() throws {
        let a = try archive.take(HealthLines.records(heart, 10))
        let b = try archive.take(HealthLines.records(heart, 12))
        let c = try archive.take(HealthLines.records(heart, 9))
        let deleted = try archive.run(["delete", b.id])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let records = try deleted.records()
        let deletion = try #require(records.first)
        #expect(deletion.string("position") == "intermediate" && deletion["preview"] == .bool(false))
        #expect(try archive.sql("SELECT count(*) FROM deltas") == "1")
        #expect(try archive.sql("SELECT from_snapshot_id || ' ' || to_snapshot_id FROM deltas") == "\(a.id) \(c.id)")
        #expect(try archive.sql("SELECT previous_snapshot_id FROM snapshots WHERE id = '\(c.id)'") == a.id)
        let merged = try #require(records.first { $0.string("type") == "delta" })
        #expect(merged["merged_from"] == .array([.string(b.delta!.string("id")!), .string(c.delta!.string("id")!)]))
        #expect(
            merged.string("checksum_before") == a.snapshot.string("checksum")
                && merged.string("checksum_after") == c.snapshot.string("checksum"))
        let type = try #require(merged["types"]?.arrayValue?.first?.objectValue)
        #expect(type.int("count_before") == 10 && type.int("count_after") == 9 && type.int("count_delta") == -1)
        #expect(try archive.run(["verify"]).status == 0)
    }

    @Test("09 hash stability: no changes between snapshots, identical hashes and checksums")
    func item09() throws {
        // The same export twice, except for the memory addresses HealthKit writes into device.
        let one = HealthExport.document(
            (0..<4).map { HealthExport.record(heart, "2019-05-10 08:3\($0):00 -0700", value: "7\($0)", address: "0x30127\($0)2a0") })
        let two = HealthExport.document(
            (0..<4).map { HealthExport.record(heart, "2019-05-10 08:3\($0):00 -0700", value: "7\($0)", address: "0x4aa9\($0)13f0") })
        let first = try archive.takeXML(one)
        let second = try archive.takeXML(two)
        #expect(first.snapshot.string("checksum") == second.snapshot.string("checksum"))
        #expect(first.type(heart)?.string("type_hash") == second.type(heart)?.string("type_hash"))
        #expect(second.change(heart)?.string("transition") == "unchanged" && second.change(heart)?.int("count_delta") == 0)
        #expect(second.anomalies.isEmpty)
        #expect(try archive.sql("SELECT count(*) FROM samples") == "4", "the same samples, not four new ones")
    }

    @Test("10 integrity strict mode: a corrupted checksum stops validation, nothing is repaired")
    func item10() throws {
        try archive.take(HealthLines.records(heart, 3))
        let b = try archive.take(HealthLines.records(heart, 4))
        try archive.take(HealthLines.records(heart, 5))
        _ = try archive.sql("UPDATE type_counts SET count = count + 1 WHERE snapshot_seq = 2")
        let dump = try archive.sql("SELECT * FROM type_counts ORDER BY snapshot_seq; SELECT id, checksum FROM snapshots ORDER BY seq")
        let result = try archive.run(["verify"])
        #expect(result.status == 1)
        let record = try #require(try result.records().first)
        #expect(record.string("status") == "checksum_mismatch" && record.string("snapshot_id") == b.id)
        #expect(record.int("checked") == 1, "the latest was checked, then the walk stopped at its predecessor")
        #expect(result.stderr.contains("verify: "))
        #expect(try archive.sql("SELECT * FROM type_counts ORDER BY snapshot_seq; SELECT id, checksum FROM snapshots ORDER BY seq") == dump)
        #expect(try archive.run(["verify"]).status == 1, "still broken: verify repairs nothing")
    }

    @Test("11 archive reset, device id kept outside: same device id, chain start, recovered_device_id")
    func item11() throws {
        let first = try archive.take(HealthLines.records(heart, 3))
        #expect(first.snapshot["recovered_device_id"] == .bool(false))
        let device = try String(contentsOfFile: archive.deviceFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(first.snapshot.string("device_id") == device)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: archive.db + suffix) }
        let again = try archive.take(HealthLines.records(heart, 3))
        #expect(again.snapshot.string("device_id") == device)
        #expect(again.snapshot["is_chain_start"] == .bool(true) && again.snapshot["recovered_device_id"] == .bool(true))
        let mode = try FileManager.default.attributesOfItem(atPath: archive.deviceFile)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("12 local-only: works with no network at all, and never fetches the DTD an export names")
    func item12() throws {
        let server = try FixtureServer()
        let dtd = "<?xml version=\"1.0\"?>\n<!DOCTYPE HealthData SYSTEM \"\(server.baseURL)/HealthData.dtd\">\n"
        let file = try archive.scratch.write(
            "remote-dtd.xml", HealthExport.document([HealthExport.record(heart, "2019-05-10 08:30:00 -0700")], dtd: dtd))
        let result = try archive.run(["take", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests.isEmpty, "nothing was fetched")
        // In a network namespace with no interface at all (unshare -n).
        if try requireGate(runningAsRoot, "unshare -n makes a network namespace, which needs root") {
            let isolated = try shell(
                "unshare -n snapshot-delta --db '\(archive.db)' take --device-id-file '\(archive.deviceFile)' '\(file)'")
            #expect(isolated.status == 0, "\(isolated.stderr)")
        }
    }

    @Test("14 unsupported type: count -1, quality failed, is_unsupported, 'unsupported' for a person")
    func item14() throws {
        let taken = try archive.take(
            HealthLines.records(heart, 2) + [HealthLines.status("HKQuantityTypeIdentifierAppleSleepingWristTemperature", "unsupported")])
        let type = try #require(taken.type("HKQuantityTypeIdentifierAppleSleepingWristTemperature"))
        #expect(type.int("count") == -1 && type.string("quality") == "failed" && type["is_unsupported"] == .bool(true))
        let text = try archive.run(["show", taken.id, "--format", "text"])
        #expect(
            text.stdout.split(separator: "\n").contains {
                $0.hasPrefix("HKQuantityTypeIdentifierAppleSleepingWristTemperature") && $0.contains("unsupported")
            })
    }

    @Test("15 yearly counts: the snapshot's time zone decides the year; a sample over a day is approximate")
    func item15() throws {
        // 2019-12-31 23:30 in Los Angeles is 2020-01-01 07:30 UTC.
        let body = [
            HealthExport.record(heart, "2019-12-31 23:30:00 -0800"),
            HealthExport.record(heart, "2019-06-01 10:00:00 -0700"),
            HealthExport.record(
                "HKCategoryTypeIdentifierSleepAnalysis", "2020-03-01 22:00:00 -0800", "2020-03-03 07:00:00 -0800",
                value: "HKCategoryValueSleepAnalysisInBed", unit: nil),
        ]
        let losAngeles = try archive.takeXML(HealthExport.document(body), ["--timezone", "America/Los_Angeles"])
        let years = losAngeles.type(heart)?["yearly"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(years.map { $0.int("year") } == [2019] && years.map { $0.int("count") } == [2])
        #expect(years.allSatisfy { $0["is_approximate"] == .bool(false) })
        let sleep = losAngeles.type("HKCategoryTypeIdentifierSleepAnalysis")?["yearly"]?.arrayValue?.first?.objectValue
        #expect(sleep?.int("year") == 2020 && sleep?["is_approximate"] == .bool(true))
        let utc = try HealthArchive().takeXML(HealthExport.document(body), ["--timezone", "UTC"])
        let utcYears = utc.type(heart)?["yearly"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(utcYears.map { $0.int("year") } == [2019, 2020] && utcYears.map { $0.int("count") } == [1, 1])
    }

    @Test("16 delta merge with unavailable counts: merged count_delta 0, the impaired reason kept")
    func item16() throws {
        try archive.take(HealthLines.records(heart, 10))
        let b = try archive.take([HealthLines.status(heart, "failed")])
        try archive.take(HealthLines.records(heart, 5))
        let deleted = try archive.run(["delete", b.id])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        let merged = try #require(try deleted.records().first { $0.string("type") == "delta" })
        let type = try #require(merged["types"]?.arrayValue?.first?.objectValue)
        #expect(type.int("count_before") == 10 && type.int("count_after") == 5)
        #expect(type.int("count_delta") == 0 && type.string("reason") == "unknown")
    }

    @Test("17 missing type deltas: validation reports the fault, not sync latency")
    func item17() throws {
        try archive.take(HealthLines.records(heart, 3))
        let b = try archive.take(HealthLines.records(heart, 4))
        _ = try archive.sql("DELETE FROM type_deltas WHERE delta_id = '\(b.delta!.string("id")!)'")
        let result = try archive.run(["verify"])
        #expect(result.status == 1)
        let record = try #require(try result.records().first)
        #expect(record.string("status") == "missing_delta" && record.string("snapshot_id") == b.id)
        #expect(record.string("message")?.contains("0 of its 1 type deltas") == true)
    }

    @Test("18 first authorization after a full deny: the quality gate silences it, the snapshot is inferred post-restore")
    func item18() throws {
        try archive.take(five.map { HealthLines.status($0, "unauthorized") })
        let granted = try archive.take(baseline(50))
        #expect(granted.anomalies.isEmpty)
        #expect(granted.snapshot["is_post_restore"] == .bool(true) && granted.snapshot["is_post_restore_inferred"] == .bool(true))
        #expect(five.allSatisfy { granted.change($0)?.string("reason") == "authorization_changed" })
    }

    @Test("19 chain fork: verify says 'chain fork detected' and stops")
    func item19() throws {
        try archive.take(HealthLines.records(heart, 3))
        try archive.take(HealthLines.records(heart, 4))
        // A second snapshot claiming the same predecessor as snapshot 2.
        _ = try archive.sql(
            """
            INSERT INTO snapshots (id, created_at, trigger, quality, checksum, type_set_hash, registry, timezone, export_version,
                export_date, source, previous_snapshot_id, is_chain_start, is_post_restore, is_post_restore_inferred,
                is_post_restore_forwarded, post_restore_suppressed_delta_id, device_id, recovered_device_id, samples_archived, record_count)
            SELECT 'forked-0000', created_at, trigger, quality, checksum, type_set_hash, registry, timezone, export_version,
                export_date, source, previous_snapshot_id, is_chain_start, is_post_restore, is_post_restore_inferred,
                is_post_restore_forwarded, post_restore_suppressed_delta_id, device_id, recovered_device_id, samples_archived, record_count
            FROM snapshots WHERE seq = 2
            """)
        let result = try archive.run(["verify"])
        #expect(result.status == 1)
        let record = try #require(try result.records().first)
        #expect(record.string("status") == "corrupted" && record.string("message")?.hasPrefix("chain fork detected") == true)
        #expect(record.int("checked") == 0)
    }

    @Test("20 disappeared→appeared merge with a -1 side: count_delta 0, reason not normal")
    func item20() throws {
        try archive.take(HealthLines.records(heart, 10) + HealthLines.records(steps, 2))
        let b = try archive.take(HealthLines.records(steps, 2))  // heart disappeared
        try archive.take(HealthLines.records(steps, 2) + [HealthLines.status(heart, "failed")])  // and is back, at -1
        let deleted = try archive.run(["delete", b.id])
        let merged = try #require(try deleted.records().first { $0.string("type") == "delta" })
        let type = try #require(merged["types"]?.arrayValue?.compactMap(\.objectValue).first { $0.string("type_identifier") == heart })
        #expect(type.int("count_delta") == 0 && type.string("reason") != "normal")
        #expect(type.int("count_before") == 10 && type.int("count_after") == -1)
    }

    @Test("21 reason priority: authorization_changed wins over registry_changed")
    func item21() throws {
        let first = try archive.scratch.write("first.registry", "\(heart)\n")
        let second = try archive.scratch.write("second.registry", "\(heart)\n\(steps)\nHKQuantityTypeIdentifierBodyMass\n")
        try archive.take(HealthLines.records(heart, 3), ["--registry", first])
        let taken = try archive.take(
            HealthLines.records(heart, 3) + HealthLines.records("HKQuantityTypeIdentifierBodyMass", 1)
                + [HealthLines.status(steps, "unauthorized")], ["--registry", second])
        #expect(taken.change(steps)?.string("reason") == "authorization_changed", "joined the registry and unauthorized at once")
        #expect(taken.change("HKQuantityTypeIdentifierBodyMass")?.string("reason") == "registry_changed")
        #expect(taken.change(heart)?.string("reason") == "normal")
    }

    @Test("24 post-restore forwarding: carried past low-quality snapshots, used by the next complete pair")
    func item24() throws {
        try archive.take(baseline())
        let restored = try archive.take(baseline(), ["--post-restore"])
        #expect(restored.snapshot["is_post_restore"] == .bool(true) && restored.snapshot["is_post_restore_inferred"] == .bool(false))
        let partial = try archive.take(baseline() + [HealthLines.status("HKQuantityTypeIdentifierX", "failed")])
        #expect(partial.snapshot.string("quality") == "partial" && partial.snapshot["is_post_restore_forwarded"] == .bool(true))
        let complete = try archive.take(baseline())
        #expect(complete.snapshot["is_post_restore_forwarded"] == .bool(true), "the pair (partial, complete) runs no rule either")
        let big = try archive.take(baseline(13, day: "2026-01-11"))
        #expect(big.delta?["post_restore_suppressed"] == .bool(true) && !big.anomalies.contains { $0.string("kind") == "sync_anomaly" })
        #expect(
            try archive.sql("SELECT post_restore_suppressed_delta_id FROM snapshots WHERE id = '\(complete.id)'") == big.delta?.string("id")
        )
        #expect(try archive.sql("SELECT post_restore_suppressed_delta_id IS NULL FROM snapshots WHERE id = '\(restored.id)'") == "1")
        let again = try archive.take(baseline(17, day: "2026-01-12"))
        #expect(again.anomalies.contains { $0.string("kind") == "sync_anomaly" })
    }

    @Test("25 missing delta: validation returns missing_delta and stops")
    func item25() throws {
        try archive.take(HealthLines.records(heart, 3))
        let b = try archive.take(HealthLines.records(heart, 4))
        let c = try archive.take(HealthLines.records(heart, 5))
        _ = try archive.sql(
            "DELETE FROM type_deltas WHERE delta_id IN (SELECT id FROM deltas WHERE to_snapshot_id = '\(b.id)'); DELETE FROM deltas WHERE to_snapshot_id = '\(b.id)'"
        )
        let result = try archive.run(["verify"])
        #expect(result.status == 1)
        let record = try #require(try result.records().first)
        #expect(record.string("status") == "missing_delta" && record.string("snapshot_id") == b.id && record.int("checked") == 1)
        #expect(c.delta != nil)
    }

    @Test("26 operation log verification: an entry missing after the save is written again, as a critical error")
    func item26() throws {
        try archive.take(HealthLines.records(heart, 3))
        // Sabotage: the first take entry written from now on vanishes once after its insert.
        _ = try archive.sql(
            """
            DROP TRIGGER operations_append_only_delete;
            CREATE TABLE lost (n INTEGER);
            CREATE TRIGGER lose_once AFTER INSERT ON operations WHEN NEW.operation = 'take' AND (SELECT count(*) FROM lost) = 0
            BEGIN INSERT INTO lost VALUES (NEW.id); DELETE FROM operations WHERE id = NEW.id; END;
            """)
        let result = try archive.run(["take"], stdin: HealthLines.records(heart, 4).joined(separator: "\n") + "\n")
        #expect(result.status == 2)
        let lostID = try archive.sql("SELECT n FROM lost")
        #expect(
            result.stderr.contains("critical: operation log entry \(lostID) (take) was missing after it was saved; written again as entry"))
        let log = try archive.run(["log"]).records()
        let recovered = try #require(log.last)
        #expect(recovered.string("operation") == "take" && recovered["critical"] == .bool(true))
        #expect(recovered["detail"]?.objectValue?["recovered_entry"]?.intValue == Int(lostID))
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "2", "the snapshot itself was committed")
    }

    @Test("28 time-zone drift: yearly deltas 0 with a note, count_delta 0, no anomalies")
    func item28() throws {
        let body = [HealthExport.record(heart, "2019-12-31 23:30:00 -0800"), HealthExport.record(heart, "2019-06-01 10:00:00 -0700")]
        try archive.takeXML(HealthExport.document(body), ["--timezone", "America/Los_Angeles"])
        let moved = try archive.takeXML(HealthExport.document(body), ["--timezone", "Europe/Paris"])
        let change = try #require(moved.change(heart))
        let yearly = change["yearly"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(yearly.map { $0.int("year") } == [2019, 2020])
        #expect(yearly.map { $0.int("before") } == [2, 0] && yearly.map { $0.int("after") } == [1, 1])
        #expect(yearly.allSatisfy { $0.int("delta") == 0 })
        #expect(change.string("yearly_count_note")?.contains("America/Los_Angeles to Europe/Paris") == true)
        #expect(change.int("count_delta") == 0 && moved.anomalies.isEmpty)
    }

    @Test("29 is_unsupported: shown as 'unsupported' without any delta")
    func item29() throws {
        let taken = try archive.take([HealthLines.status(steps, "unsupported")])
        #expect(taken.delta == nil && taken.snapshot["is_chain_start"] == .bool(true))
        let text = try archive.run(["show", "1", "--format", "text"])
        let row = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix(steps) })
        #expect(row.contains("unsupported") && !text.stdout.contains("DELTA"))
    }

    @Test("30 count/quality coherence: an unauthorized type with records is corrected to -1, with a warning")
    func item30() throws {
        let result = try archive.run(
            ["take"], stdin: (HealthLines.records(heart, 4) + [HealthLines.status(heart, "unauthorized")]).joined(separator: "\n") + "\n")
        #expect(result.status == 0)
        #expect(result.stderr.contains("warning: \(heart) is unauthorized but 4 records were read: its count is -1"))
        let taken = try TakeOutput(result)
        #expect(taken.type(heart)?.int("count") == -1 && taken.type(heart)?["earliest"] == .null)
    }

    @Test("31 checksum filter: quality == complete, not a non-empty hash")
    func item31() throws {
        let taken = try archive.take(
            HealthLines.records(heart, 2, day: "2019-05-10") + HealthLines.records(steps, 3) + [HealthLines.status(steps, "partial")])
        let partial = try #require(taken.type(steps))
        #expect(partial.string("quality") == "partial" && partial.int("count") == 3 && (partial.string("type_hash")?.count ?? 0) == 64)
        let onlyHeart = try sha256sum(try sha256sum("\(heart)|2|2019-05-10T08:00:00.000Z|2019-05-10T08:01:00.000Z"))
        #expect(taken.snapshot.string("checksum") == onlyHeart)
    }

    @Test("32 every anomaly carries its delta's id")
    func item32() throws {
        try archive.take(baseline())
        let dropped = try archive.take(five.flatMap { HealthLines.records($0, 4) })
        #expect(dropped.anomalies.count == 6, "five deletions and one sync anomaly")
        #expect(
            dropped.anomalies.allSatisfy { $0.string("delta_id") == dropped.delta?.string("id") && $0.string("snapshot_id") == dropped.id })
        #expect(try archive.sql("SELECT count(*) FROM anomalies a LEFT JOIN deltas d ON d.id = a.delta_id WHERE d.id IS NULL") == "0")
        let third = try archive.take(five.flatMap { HealthLines.records($0, 4) })
        let deleted = try archive.run(["delete", dropped.id]).records()
        let merged = try #require(deleted.first { $0.string("type") == "delta" })
        let again = deleted.filter { $0.string("type") == "anomaly" }
        #expect(!again.isEmpty && again.allSatisfy { $0.string("delta_id") == merged.string("id") && $0.string("snapshot_id") == third.id })
        #expect(try archive.sql("SELECT count(*) FROM anomalies a LEFT JOIN deltas d ON d.id = a.delta_id WHERE d.id IS NULL") == "0")
    }
}

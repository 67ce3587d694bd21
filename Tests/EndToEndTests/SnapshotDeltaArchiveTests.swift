import Foundation
import Testing
import VitalsKit

@testable import SnapshotDeltaCore

@Suite("snapshot-delta: the archive and its commands", .hangGuard(minutes: 3))
struct SnapshotDeltaArchiveTests {
    let archive: HealthArchive
    init() throws { archive = try HealthArchive() }

    let heart = "HKQuantityTypeIdentifierHeartRate"
    let steps = "HKQuantityTypeIdentifierStepCount"

    @Test("samples: Health Sync's fetch, newest first, paginated, by time, as CSV; every access is logged")
    func samples() throws {
        try archive.take(HealthLines.records(heart, 10) + HealthLines.records(steps, 3))
        let page = try archive.run(["samples", "--type", heart, "--page", "2", "--per-page", "3"]).records()
        // Ten samples one a minute from 08:00: newest first, three a page; the second → 08:06, 08:05, 08:04.
        #expect(page.map { $0.string("start") } == ["2026-01-10T08:06:00.000Z", "2026-01-10T08:05:00.000Z", "2026-01-10T08:04:00.000Z"])
        #expect(page.allSatisfy { $0.string("type") == "health_record" && $0["value"] == .number("1") && $0.string("unit") == "count" })
        let window = try archive.run(["samples", "--type", heart, "--from", "2026-01-10T08:03:00Z", "--to", "2026-01-10T08:05:00Z"])
            .records()
        #expect(
            window.map { $0.string("start") } == ["2026-01-10T08:04:00.000Z", "2026-01-10T08:03:00.000Z"], "from inclusive, to exclusive")
        let csv = try archive.run(["samples", "--type", steps, "--format", "csv"])
        try #require(csv.lines.count == 4)
        #expect(
            csv.lines[0]
                == "type_identifier,start,end,value,unit,source,source_version,device,uuid,created,first_seen_snapshot_id,verified_at")
        #expect(csv.lines[1].hasPrefix("\(steps),2026-01-10T08:02:00.000Z,2026-01-10T08:02:00.000Z,1,count,Collector,,,,,"))
        let log = try archive.run(["log"]).records().filter { $0.string("operation") == "samples" }
        try #require(log.count == 3)
        #expect(log[0]["detail"]?.objectValue?["returned"] == .number("3") && log[0]["detail"]?.objectValue?["offset"] == .number("3"))
        let missing = try archive.run(["samples"])
        #expect(missing.status == 64 && missing.stderr.contains("samples wants --type TYPE"))
    }

    @Test("disappeared A B: exactly the samples gone between two exports; marked, never deleted; back again when they return")
    func disappeared() throws {
        let all = HealthLines.records(heart, 6)
        let first = try archive.take(all)
        // The samples at 08:02 and 08:04 are gone from the second export.
        let second = try archive.take(all.enumerated().filter { $0.offset != 2 && $0.offset != 4 }.map(\.element))
        let gone = try archive.run(["disappeared", first.id, second.id]).records()
        #expect(gone.map { $0.string("start") } == ["2026-01-10T08:02:00.000Z", "2026-01-10T08:04:00.000Z"])
        #expect(gone.allSatisfy { $0.string("disappeared_snapshot_id") == second.id && $0.string("first_seen_snapshot_id") == first.id })
        #expect(try archive.sql("SELECT count(*) || ' ' || sum(present) FROM samples") == "6 4")
        let fetched = try archive.run(["samples", "--type", heart]).records()
        #expect(fetched.count == 4, "the fetch shows what is present")
        // One comes back.
        let third = try archive.take(all.enumerated().filter { $0.offset != 4 }.map(\.element))
        #expect(try archive.run(["disappeared", second.id, third.id]).records().isEmpty)
        #expect(try archive.run(["disappeared", first.id, third.id]).records().map { $0.string("start") } == ["2026-01-10T08:04:00.000Z"])
        #expect(try archive.run(["disappeared", "1", "2"]).records().count == 2, "the history of snapshot 2 is kept")
        #expect(
            try archive.sql("SELECT kind FROM sample_events ORDER BY snapshot_seq, sample_id") == "disappeared\ndisappeared\nreappeared")
        let csv = try archive.run(["disappeared", "1", "3", "--format", "csv"])
        #expect(csv.lines.count == 2)
        let backwards = try archive.run(["disappeared", "3", "1"])
        #expect(backwards.status == 2 && backwards.stderr.contains("older snapshot first"))
        #expect(try archive.run(["log"]).records().filter { $0.string("operation") == "disappeared" }.count == 5)
    }

    @Test("identical samples in one export are told apart; one fewer is one disappeared")
    func duplicates() throws {
        let one = HealthLines.record(heart, "2026-01-10T08:00:00Z")
        try archive.take([one, one, one])
        #expect(try archive.sql("SELECT group_concat(occurrence) FROM samples") == "0,1,2")
        try archive.take([one, one])
        #expect(try archive.sql("SELECT count(*) || ' ' || sum(present) FROM samples") == "3 2")
        #expect(try archive.run(["disappeared", "1", "2"]).records().count == 1)
    }

    @Test("a type whose count is unavailable does not mark its samples disappeared")
    func unavailableKeepsSamples() throws {
        try archive.take(HealthLines.records(heart, 4) + HealthLines.records(steps, 2))
        try archive.take(HealthLines.records(steps, 2) + [HealthLines.status(heart, "unauthorized")])
        #expect(try archive.sql("SELECT sum(present) FROM samples") == "6")
        try archive.take(HealthLines.records(steps, 2))
        #expect(try archive.sql("SELECT sum(present) FROM samples") == "2", "a type simply absent from a complete input is gone")
    }

    @Test("--no-samples: counts and chain only; disappeared refuses what was not archived")
    func noSamples() throws {
        let taken = try archive.take(HealthLines.records(heart, 3), ["--no-samples"])
        #expect(taken.snapshot["samples_archived"] == .bool(false))
        #expect(try archive.sql("SELECT count(*) FROM samples") == "0")
        try archive.take(HealthLines.records(heart, 3))
        let refused = try archive.run(["disappeared", "1", "2"])
        #expect(refused.status == 2 && refused.stderr.contains("was taken with --no-samples"))
    }

    @Test("delete the oldest: the next becomes the chain start; the latest: its predecessor's token is re-armed; preview changes nothing")
    func deletePositions() throws {
        let a = try archive.take(HealthLines.records(heart, 3))
        let b = try archive.take(HealthLines.records(heart, 4))
        let c = try archive.take(HealthLines.records(heart, 5))
        let dump = "SELECT * FROM snapshots; SELECT * FROM deltas; SELECT * FROM samples; SELECT count(*) FROM operations"
        let before = try archive.sql(dump)
        let preview = try archive.run(["delete", b.id, "--preview"])
        #expect(preview.status == 0)
        let plan = try #require(try preview.records().first)
        #expect(plan.string("type") == "deletion" && plan["preview"] == .bool(true) && plan.string("position") == "intermediate")
        #expect(plan["samples_removed"] == .null && plan["will_break_chain"] == .bool(false))
        #expect(try archive.sql(dump) == before, "a preview writes nothing, not even the log")

        let oldest = try #require(try archive.run(["delete", a.id]).records().first)
        let removedDelta = try #require(b.delta?.string("id"))
        #expect(oldest.string("position") == "oldest" && oldest["removed_delta_ids"] == .array([.string(removedDelta)]))
        #expect(
            try archive.sql("SELECT is_chain_start || ' ' || coalesce(previous_snapshot_id, 'none') FROM snapshots WHERE id = '\(b.id)'")
                == "1 none")
        #expect(try archive.sql("SELECT count(*) FROM samples WHERE first_seen = 1") == "0")
        #expect(try archive.run(["verify"]).status == 0)

        let latest = try #require(try archive.run(["delete", "latest"]).records().first)
        #expect(latest.string("position") == "latest" && latest.string("snapshot_id") == c.id)
        // The sample first seen by the deleted latest snapshot (08:04) goes with it.
        #expect(latest["samples_removed"] == .number("1"))
        #expect(try archive.sql("SELECT count(*) || ' ' || sum(present) FROM samples") == "4 4")
        #expect(try archive.run(["verify"]).status == 0)
        let only = try #require(try archive.run(["delete", b.id]).records().first)
        #expect(only.string("position") == "only")
        #expect(try archive.sql("SELECT count(*) FROM snapshots; SELECT count(*) FROM samples") == "0\n0")
        let log = try archive.run(["log"]).records().filter { $0.string("operation") == "delete" }
        #expect(log.map { $0["detail"]?.objectValue?["position"]?.stringValue } == ["oldest", "latest", "only"])
        #expect(log.first?["snapshot_ids"] == .array([.string(a.id), .string(b.id)]))
    }

    @Test("deleting from a broken chain is refused unless forced, and the operation log cannot be rewritten")
    func deleteRefused() throws {
        try archive.take(HealthLines.records(heart, 3))
        let b = try archive.take(HealthLines.records(heart, 4))
        try archive.take(HealthLines.records(heart, 5))
        _ = try archive.sql("DELETE FROM type_deltas; DELETE FROM deltas WHERE to_snapshot_id = '\(b.id)'")
        let refused = try archive.run(["delete", b.id])
        #expect(refused.status == 2 && refused.stderr.contains("would leave a chain that does not verify"))
        let forced = try archive.run(["delete", b.id, "--force"])
        #expect(forced.status == 0)
        #expect(try #require(try forced.records().first)["will_break_chain"] == .bool(true))
        let tamper = try runProcess(
            "/usr/bin/env", ["sqlite3", archive.db, "DELETE FROM operations"], stdin: "", environment: toolEnvironment())
        #expect(tamper.status != 0 && tamper.stderr.contains("the operation log is append-only"))
        let rewrite = try runProcess(
            "/usr/bin/env", ["sqlite3", archive.db, "UPDATE operations SET operation = 'x'"], stdin: "", environment: toolEnvironment())
        #expect(rewrite.status != 0 && rewrite.stderr.contains("append-only"))
    }

    @Test("list, show and diff: the chain for scripts and for people")
    func reading() throws {
        let a = try archive.take(HealthLines.records(heart, 10) + HealthLines.records(steps, 10))
        let b = try archive.take(HealthLines.records(heart, 4) + HealthLines.records(steps, 10), ["--trigger", "cron"])
        let list = try archive.run(["list"]).records()
        try #require(list.map { $0.string("id") } == [a.id, b.id])
        #expect(list.allSatisfy { $0["types"] == nil && $0.int("type_count") == 2 })
        #expect(list[1].string("trigger") == "cron")
        let text = try archive.run(["list", "--format", "text"]).lines
        try #require(text.count == 3)
        #expect(text[0].hasPrefix("#") && text[2].contains("trigger: cron"))
        let show = try archive.run(["show", String(b.id.prefix(8))])
        let shown = try show.records()
        try #require(shown.map { $0.string("type") } == ["snapshot", "delta", "anomaly"], "\(show.stderr)")
        #expect(shown[2].string("kind") == "deletion" && shown[2].string("severity") == "critical")
        let diff = try archive.run(["diff", b.id, a.id, "--exit-status"])
        #expect(diff.status == 1, "backwards, 4 samples become 10 within the same minutes: duplicates")
        let records = try diff.records()
        try #require(records.count >= 2)
        #expect(records[0]["ephemeral"] == .bool(true) && records[1].string("kind") == "duplication")
        #expect(try archive.sql("SELECT count(*) FROM deltas") == "1", "diff stores nothing")
        let unknown = try archive.run(["show", "ffff"])
        #expect(unknown.status == 2 && unknown.stderr.contains("no snapshot 'ffff'"))
    }

    @Test("show: an id prefix of digits only is an id prefix; a number that is also another's prefix is an error naming both")
    func digitReferences() throws {
        let a = try archive.take(HealthLines.records(heart, 10))
        let b = try archive.take(HealthLines.records(heart, 4))
        // Ids are random hexadecimal: give them digit-only beginnings, as about 2% of real ids have.
        let digitID = "12345678" + b.id.dropFirst(8)
        let twoID = "0002" + a.id.dropFirst(4)
        _ = try archive.sql(
            """
            UPDATE snapshots SET id = '\(digitID)' WHERE id = '\(b.id)';
            UPDATE snapshots SET previous_snapshot_id = '\(digitID)' WHERE previous_snapshot_id = '\(b.id)';
            UPDATE deltas SET to_snapshot_id = '\(digitID)' WHERE to_snapshot_id = '\(b.id)';
            UPDATE anomalies SET snapshot_id = '\(digitID)' WHERE snapshot_id = '\(b.id)';
            UPDATE snapshots SET id = '\(twoID)' WHERE id = '\(a.id)';
            UPDATE snapshots SET previous_snapshot_id = '\(twoID)' WHERE previous_snapshot_id = '\(a.id)';
            UPDATE deltas SET from_snapshot_id = '\(twoID)' WHERE from_snapshot_id = '\(a.id)';
            UPDATE anomalies SET previous_snapshot_id = '\(twoID)' WHERE previous_snapshot_id = '\(a.id)';
            """)
        // What `list --format text` prints for b is its first 8 characters: all digits, no snapshot has that number.
        let listed = try archive.run(["list", "--format", "text"]).stdout
        #expect(listed.contains("12345678"))
        let shown = try archive.run(["show", "12345678"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let first = try #require(try shown.records().first)
        #expect(first.string("id") == digitID && first.int("seq") == 2)
        // Short digits are a number only.
        #expect(try #require(try archive.run(["show", "2"]).records().first).string("id") == digitID)
        // "0002" is snapshot number 2 (b) and the start of a's id: neither is picked.
        let ambiguous = try archive.run(["show", "0002"])
        #expect(ambiguous.status == 2)
        #expect(ambiguous.stderr.contains("'0002' is both snapshot number 2 (id \(digitID))"), "\(ambiguous.stderr)")
        #expect(ambiguous.stderr.contains("snapshot 1's id \(twoID)"))
        #expect(try #require(try archive.run(["show", String(twoID.prefix(9))]).records().first).string("id") == twoID)
        let missing = try archive.run(["show", "98765432"])
        #expect(missing.status == 2 && missing.stderr.contains("no snapshot number 98765432"))
    }

    @Test("take --exit-status: 1 when an anomaly is found, 0 otherwise")
    func exitStatus() throws {
        #expect(try archive.run(["take", "--exit-status"], stdin: HealthLines.records(heart, 10).joined(separator: "\n")).status == 0)
        #expect(try archive.run(["take", "--exit-status"], stdin: HealthLines.records(heart, 10).joined(separator: "\n")).status == 0)
        let dropped = try archive.run(["take", "--exit-status"], stdin: HealthLines.records(heart, 2).joined(separator: "\n"))
        #expect(dropped.status == 1)
        #expect(try TakeOutput(dropped).anomalies.count == 1)
    }

    @Test("two takes at once: both land, one after the other, and the chain has no fork")
    func concurrentTakes() throws {
        let files = try (0..<2).map { index in
            try archive.scratch.write("in\(index).ndjson", HealthLines.records(heart, 200 + index).joined(separator: "\n") + "\n")
        }
        _ = try archive.run(["take"], stdin: HealthLines.records(heart, 1).joined(separator: "\n"))
        let tools = try files.map {
            try RunningTool("snapshot-delta", ["--db", archive.db, "take", "--device-id-file", archive.deviceFile, $0])
        }
        for tool in tools {
            try tool.input.close()
            tool.process.wait()
            #expect(tool.process.terminationStatus == 0)
        }
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "3")
        #expect(try archive.run(["verify"]).status == 0)
    }

    @Test("usage and archive errors: words, and the right exit status")
    func errors() throws {
        #expect(try archive.run([]).status == 64)
        let typo = try archive.run(["tkae"])
        #expect(typo.status == 64 && typo.stderr.contains("did you mean 'take'?"))
        #expect(try archive.run(["list", "--preview"]).stderr.contains("--preview does not apply to list"))
        #expect(try archive.run(["take", "--timezone", "Mars/Olympus"], stdin: "").status == 64)
        #expect(try archive.run(["take", "--trigger", "two words"], stdin: "").status == 64)
        let missing = try archive.run(["list"])
        #expect(missing.status == 2 && missing.stderr.contains("no archive at"))
        try archive.take(HealthLines.records(heart, 1))
        _ = try archive.sql("PRAGMA user_version = 9")
        let newer = try archive.run(["list"])
        #expect(newer.status == 2 && newer.stderr.contains("schema version 9"))
        let other = archive.scratch.path("other.db")
        _ = try sqlite(other, "CREATE TABLE t (x)")
        let foreign = try EndToEndTests.run("snapshot-delta", ["--db", other, "list"])
        #expect(foreign.status == 2 && foreign.stderr.contains("not a snapshot-delta archive"))
    }

    @Test("the archive is a WAL SQLite file with mode 0600, and the device id lives outside it")
    func files() throws {
        try archive.take(HealthLines.records(heart, 1))
        #expect(try archive.sql("PRAGMA journal_mode") == "wal")
        #expect(try archive.sql("PRAGMA integrity_check") == "ok")
        let mode = try FileManager.default.attributesOfItem(atPath: archive.db)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(
            try archive.sql("SELECT value FROM meta WHERE key = 'device_id'")
                == (try String(contentsOfFile: archive.deviceFile, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

@Suite("snapshot-delta: records and words documented", .hangGuard(minutes: 2))
struct SnapshotDeltaDocumentationTests {
    /// Every key of `object`, and of the objects in its arrays (not the log's free-form detail).
    func keys(_ object: JSONObject) -> Set<String> {
        var result: Set<String> = []
        for field in object where field.key != "detail" {
            result.insert(field.key)
            for item in field.value.arrayValue ?? [] { if let inner = item.objectValue { result.formUnion(keys(inner)) } }
        }
        return result
    }

    @Test("every field of every record snapshot-delta writes is in vitals-records(7)")
    func fields() throws {
        let archive = try HealthArchive()
        let heart = "HKQuantityTypeIdentifierHeartRate"
        var records: [JSONObject] = []
        records += try archive.take(HealthLines.records(heart, 10)).result.records()
        records += try archive.take(HealthLines.records(heart, 3)).result.records()
        records += try archive.take(HealthLines.records(heart, 3)).result.records()
        records += try archive.run(["diff", "1", "3"]).records()
        records += try archive.run(["verify"]).records()
        records += try archive.run(["samples", "--type", heart]).records()
        records += try archive.run(["disappeared", "1", "3"]).records()
        records += try archive.run(["delete", "2"]).records()
        records += try archive.run(["log"]).records()
        let byType = Dictionary(grouping: records, by: { $0.string("type") ?? "" })
        #expect(Set(byType.keys) == ["snapshot", "delta", "anomaly", "verification", "health_record", "deletion", "operation"])
        let page = try readPage("man/man7/vitals-records.7")
        let documented = boldWords(manSection(page, "SNAPSHOT\\-DELTA"))
        for (type, items) in byType {
            #expect(page.contains("\n.SS \(type)\n"), "no subsection for the \(type) record")
            for key in items.reduce(into: Set<String>(), { $0.formUnion(keys($1)) }).sorted() {
                #expect(documented.contains(key), "\(type).\(key) is not in vitals-records(7)")
            }
        }
    }

    @Test("every quality, transition, reason, anomaly kind, severity, status and position is documented")
    func words() throws {
        let records = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "SNAPSHOT\\-DELTA"))
        let page = try readPage("man/man1/snapshot-delta.1")
        let deltas = boldWords(manSection(page, "DELTAS"))
        let anomalies = boldWords(manSection(page, "ANOMALIES"))
        var words: [String] = Quality.allCases.map(\.rawValue) + Transition.allCases.map(\.rawValue)
        words += DeltaReason.allCases.map(\.rawValue) + AnomalyKind.allCases.map(\.rawValue) + Severity.allCases.map(\.rawValue)
        words += [
            "valid", "checksum_mismatch", "missing_delta", "corrupted", "only", "oldest", "latest", "intermediate",
            "ran", "quality_gate",
        ]
        for word in words { #expect(records.contains(word), "\(word) is not in vitals-records(7)") }
        for reason in DeltaReason.allCases {
            #expect(deltas.contains(reason.rawValue), "\(reason.rawValue) is not in snapshot-delta(1) DELTAS")
        }
        for transition in Transition.allCases { #expect(deltas.contains(transition.rawValue)) }
        for kind in AnomalyKind.allCases {
            #expect(anomalies.contains(kind.rawValue), "\(kind.rawValue) is not in snapshot-delta(1) ANOMALIES")
        }
        let commands = boldWords(manSection(page, "COMMANDS"))
        for command in ["take", "list", "show", "diff", "verify", "delete", "log", "samples", "disappeared"] {
            #expect(commands.contains(command), "\(command) is not in snapshot-delta(1) COMMANDS")
        }
    }
}

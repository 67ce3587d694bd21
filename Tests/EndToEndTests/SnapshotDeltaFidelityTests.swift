import Foundation
import Testing
import VitalsKit

/// Issue 15, HealthProbe (seed 004) items of snapshot-delta: each test is named after the item
/// and uses the seed's own numbers.
@Suite("snapshot-delta seed fidelity", .hangGuard(minutes: 3))
struct SnapshotDeltaFidelityTests {
    let archive: HealthArchive
    init() throws { archive = try HealthArchive() }

    let heart = "HKQuantityTypeIdentifierHeartRate"
    let steps = "HKQuantityTypeIdentifierStepCount"
    /// Five types, enough for the seed's sync anomaly (four or more types changing by over 10%).
    var five: [String] { ["A", "B", "C", "D", "E"].map { "HKQuantityTypeIdentifier\($0)" } }

    @Test("timezone guard, literally: with real count changes, every count change is 0, the note is set, no anomaly")
    func timezoneGuardLiterally() throws {
        // Checklist 28 with real changes: ten samples of each of five types, then five of each
        // (a loss of 50%, critical by the seed's deletion rule, and a sync anomaly over five types),
        // but the time zone moved from America/Los_Angeles to Europe/Paris in between. The seed:
        // "if timezone changes, set countDelta = 0 and yearlyCountNote", and no anomalies.
        try archive.take(five.flatMap { HealthLines.records($0, 10) }, ["--tz", "America/Los_Angeles"])
        let moved = try archive.take(five.flatMap { HealthLines.records($0, 5) }, ["--tz", "Europe/Paris"])
        for type in five {
            let change = try #require(moved.change(type))
            #expect(change.int("count_before") == 10 && change.int("count_after") == 5)
            #expect(change.int("count_delta") == 0)
            #expect(change.string("yearly_count_note")?.contains("America/Los_Angeles to Europe/Paris") == true)
        }
        #expect(moved.anomalies.isEmpty)
        // The same loss without a time-zone change is critical, as the seed's rule says.
        let again = try archive.take(five.flatMap { HealthLines.records($0, 2) }, ["--tz", "Europe/Paris"])
        #expect(again.change(five[0])?.int("count_delta") == -3)
        #expect(!again.anomalies.isEmpty)
    }

    @Test("the archive's log counts new samples right: on a new archive, read 50, new 50, 50 stored")
    func archiveLogCountsNewSamplesRight() throws {
        try archive.take(HealthLines.records(heart, 50))
        #expect(try archive.sql("SELECT count(*) FROM samples") == "50")
        let log = try archive.run(["log"]).records().filter { $0.string("operation") == "take" }
        let samples = log.first?["detail"]?.objectValue?["samples"]?.objectValue
        #expect(samples?["read"] == .number("50"))
        #expect(samples?["new"] == .number("50"))
        // Ten more on the next take: 60 read, 10 new.
        try archive.take(HealthLines.records(heart, 60))
        let second = try archive.run(["log"]).records().filter { $0.string("operation") == "take" }.last
        #expect(second?["detail"]?.objectValue?["samples"]?.objectValue?["new"] == .number("10"))
    }

    @Test("the type-set hash without --registry is the hash of the types actually monitored")
    func typeSetHashWithoutRegistry() throws {
        // The seed: "typeSetHash() — SHA256 of sorted active typeIdentifiers". Without a
        // registry the active types are those in the input: heart rate and step count.
        let taken = try archive.take(HealthLines.records(heart, 3) + HealthLines.records(steps, 2))
        #expect(taken.snapshot.string("type_set_hash") == (try sha256sum("\(heart)\n\(steps)")))
        #expect(taken.snapshot.string("type_set_hash") != (try sha256sum("")))
    }

    @Test("anomalies can be listed by severity and resolved, as the seed's dashboard")
    func anomaliesListedBySeverityAndResolved() throws {
        // Ten samples of each of five types, then A loses 5 (50%: critical by the seed's
        // deletion rule), B loses 2 (20%: warning), C loses 1 (10%: warning); two types over
        // 10% are too few for a sync anomaly (four or more).
        try archive.take(five.flatMap { HealthLines.records($0, 10) })
        let counts = [5, 8, 9, 10, 10]
        let taken = try archive.take(zip(five, counts).flatMap { HealthLines.records($0.0, $0.1) })
        #expect(taken.anomalies.count == 3)
        let listed = try archive.run(["anomalies"]).records()
        #expect(listed.map { $0.string("severity") } == ["critical", "warning", "warning"])
        #expect(listed.map { $0.string("type_identifier") } == [five[0], five[1], five[2]])
        #expect(listed.allSatisfy { $0["resolved_at"] == .null })
        // Resolving the critical one by an id prefix: the dashboard's unresolved counts are then
        // no critical and two warnings.
        let id = try #require(listed[0].string("id"))
        let resolved = try archive.run(["anomalies", "resolve", String(id.prefix(8)), "--now", "2026-02-02T09:00:00Z"])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        #expect(try resolved.records().first?.string("resolved_at") == "2026-02-02T09:00:00.000Z")
        let unresolved = try archive.run(["anomalies", "--unresolved"]).records()
        #expect(unresolved.filter { $0.string("severity") == "critical" }.isEmpty)
        #expect(unresolved.filter { $0.string("severity") == "warning" }.count == 2)
        #expect(try archive.run(["anomalies"]).records().first?.string("resolved_at") == "2026-02-02T09:00:00.000Z")
        let log = try archive.run(["log"]).records().filter { $0.string("operation") == "resolve" }
        #expect(log.count == 1 && log.first?["detail"]?.objectValue?["anomaly_id"] == .string(id))
        #expect(try archive.run(["anomalies", "resolve", "ffffffff"]).status == 2)
        #expect(try archive.run(["anomalies", "forget", id]).status == 64)
    }

    // Seed 004, DashboardView: "Anomaly summary section: Counts unresolved anomalies by severity
    // (critical/warning); Shows only if unresolved anomalies exist".
    @Test("the dashboard's counts: unresolved anomalies by severity, as a record and in text; the list in text")
    func dashboardCountsOfUnresolvedAnomalies() throws {
        try archive.take(five.flatMap { HealthLines.records($0, 10) })
        let none = try archive.run(["anomalies", "--counts"])
        #expect(none.status == 0, "\(none.stderr)")
        #expect(none.stdout == #"{"type":"anomaly_counts","unresolved":0,"critical":0,"warning":0,"info":0}"# + "\n")
        #expect(try archive.run(["anomalies", "--counts", "--format", "text"]).stdout == "no unresolved anomalies\n")
        // As above: A loses 50% (critical), B 20% and C 10% (warnings).
        try archive.take(zip(five, [5, 8, 9, 10, 10]).flatMap { HealthLines.records($0.0, $0.1) })
        let counts = try archive.run(["anomalies", "--counts"])
        try expectDocumented(try counts.records())
        #expect(counts.stdout == #"{"type":"anomaly_counts","unresolved":3,"critical":1,"warning":2,"info":0}"# + "\n")
        let text = try archive.run(["anomalies", "--counts", "--format", "text"])
        #expect(text.stdout == "3 unresolved anomalies: 1 critical, 2 warning, 0 info\n", "\(text.stdout)")
        // The list in text: a header, then critical first, each by the id prefix resolve takes.
        let listed = try archive.run(["anomalies", "--format", "text"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let rows = listed.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.count == 4 && rows[0].prefix(3) == ["ID", "SEVERITY", "KIND"], "\(listed.stdout)")
        #expect(rows.dropFirst().map { String($0[1]) } == ["critical", "warning", "warning"])
        #expect(rows.dropFirst().map { String($0[3]) } == [five[0], five[1], five[2]])
        // Resolved, the critical one leaves the counts (and stays in the list, with its time).
        #expect(try archive.run(["anomalies", "resolve", String(rows[1][0]), "--now", "2026-02-02T09:00:00Z"]).status == 0)
        #expect(
            try archive.run(["anomalies", "--counts", "-f", "text"]).stdout == "2 unresolved anomalies: 0 critical, 2 warning, 0 info\n")
        #expect(try archive.run(["anomalies", "--format", "text"]).stdout.contains("2026-02-02T09:00:00Z"))
        #expect(try archive.run(["anomalies", "--counts", "--unresolved"]).status == 64)
    }

    // Seed 004: "Baseline comparison across multiple devices" and the Delta badge "vs. baseline";
    // the reasons by priority, "authorizationChanged > unsupported > registryChanged > unknown >
    // normal", and the guard "if either quality != .complete, countDelta = 0".
    @Test("compare: the latest snapshot of another device's archive against this one's, type by type, with the deltas' reasons")
    func compareTwoDevices() throws {
        let walking = "HKQuantityTypeIdentifierDistanceWalkingRunning"
        let mass = "HKQuantityTypeIdentifierBodyMass"
        let sleep = "HKCategoryTypeIdentifierSleepAnalysis"
        // This device: an older snapshot, then the latest one (the baseline).
        try archive.take(HealthLines.records(heart, 4))
        try archive.take(
            HealthLines.records(heart, 10) + HealthLines.records(steps, 5) + HealthLines.records(sleep, 3)
                + HealthLines.records(walking, 4))
        // Another device: the same heart rates; more steps; no sleep, which its registry leaves
        // out; body mass it alone has; walking counted only in part.
        let other = try HealthArchive()
        let registry = try other.scratch.write("registry", [heart, steps, mass, walking].joined(separator: "\n") + "\n")
        try other.take(
            HealthLines.records(heart, 10) + HealthLines.records(steps, 8) + HealthLines.records(mass, 2)
                + HealthLines.records(walking, 6) + [HealthLines.status(walking, "partial")], ["--registry", registry])
        let compared = try archive.run(["compare", other.db])
        #expect(compared.status == 0, "\(compared.stderr)")
        let record = try #require(try compared.records().first)
        try expectDocumented([record])
        #expect(record.string("type") == "delta" && record["ephemeral"] == .bool(true))
        let ours = try String(contentsOfFile: archive.deviceFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let theirs = try String(contentsOfFile: other.deviceFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(ours != theirs && record.string("from_device_id") == ours && record.string("to_device_id") == theirs)
        var rows: [String: String] = [:]
        for type in record["types"]?.arrayValue?.compactMap(\.objectValue) ?? [] {
            rows[type.string("type_identifier") ?? "?"] = [
                type.string("transition"), type.string("reason"), type["count_before"]?.jsonText, type["count_after"]?.jsonText,
                type["count_delta"]?.jsonText,
            ].map { $0 ?? "-" }.joined(separator: " ")
        }
        #expect(
            rows == [
                heart: "unchanged normal 10 10 0",
                steps: "increased normal 5 8 3",
                sleep: "disappeared registry_changed 3 null -3",
                mass: "appeared normal null 2 2",
                walking: "increased unknown 4 6 0",
            ], "\(rows)")
        // The same heart rates give the same type hash on both devices.
        let heartRow = try #require(record["types"]?.arrayValue?.compactMap(\.objectValue).first { $0.string("type_identifier") == heart })
        #expect(heartRow.string("hash_before") == heartRow.string("hash_after"))
        // Text names both archives and devices; --exit-status says whether they differ.
        let text = try archive.run(["compare", other.db, "--format", "text"])
        #expect(
            text.stdout.hasPrefix("\(archive.db): device \(ours), snapshot 2 of ") && text.stdout.contains("\(other.db): device \(theirs)"))
        #expect(text.stdout.contains("registry_changed"))
        #expect(try archive.run(["compare", other.db, "--exit-status"]).status == 1)
        #expect(try archive.run(["compare", archive.db, "--exit-status"]).status == 0)
        // Nothing is stored: the chain still has its own two snapshots and one delta.
        #expect(try archive.sql("SELECT count(*) FROM deltas") == "1")
        let missing = try archive.run(["compare", other.scratch.path("nothing.db")])
        #expect(missing.status == 2 && missing.stderr.contains("no archive at"), "\(missing.stderr)")
    }

    @Test("per-sample metadata entries of the export are archived as JSON")
    func metadataEntriesArchivedAsJSON() throws {
        // A heart-rate record with HealthKit's motion context and a user-entered flag, and one
        // without any entry.
        let entries =
            #"<MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="1"/><MetadataEntry key="HKWasUserEntered" value="0"/>"#
        let body = [
            HealthExport.record(heart, "2019-05-10 08:30:00 -0700", value: "72", children: entries),
            HealthExport.record(heart, "2019-05-10 08:31:00 -0700", value: "74"),
        ]
        try archive.takeXML(HealthExport.document(body))
        let samples = try archive.run(["samples", "--type", heart]).records()
        #expect(samples.count == 2)
        // Newest first: 08:31 has none, 08:30 has both, in the export's order.
        #expect(samples[0]["metadata"] == .null)
        #expect(
            samples[1]["metadata"]
                == .object(
                    JSONObject([
                        JSONField("HKMetadataKeyHeartRateMotionContext", .string("1")),
                        JSONField("HKWasUserEntered", .string("0")),
                    ])))
        #expect(
            try archive.sql(
                "SELECT json_extract(metadata, '$.HKMetadataKeyHeartRateMotionContext') FROM samples WHERE metadata IS NOT NULL") == "1")
    }

    @Test("observer debounce: ten quick non-manual takes make one snapshot; a manual take is never skipped")
    func observerDebounce() throws {
        // Checklist 13: ten rapid observer callbacks inside the seed's 10-minute window make
        // exactly one snapshot, its trigger the observer's.
        for minute in 0..<10 {
            let result = try archive.run(
                [
                    "take", "--trigger", "observer", "--debounce", "10m",
                    "--now", String(format: "2026-02-01T09:%02d:00Z", minute),
                ],
                stdin: HealthLines.records(heart, 3).joined(separator: "\n") + "\n")
            #expect(result.status == 0, "a skipped take is not an error: \(result.stderr)")
        }
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "1")
        #expect(try archive.sql("SELECT trigger FROM snapshots") == "observer")
        // Checklist 22: a manual take during the window is made; an observer take right after it is not.
        let manual = try archive.run(
            ["take", "--debounce", "10m", "--now", "2026-02-01T09:10:30Z"],
            stdin: HealthLines.records(heart, 3).joined(separator: "\n") + "\n")
        #expect(manual.status == 0)
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "2")
        _ = try archive.run(
            ["take", "--trigger", "observer", "--debounce", "10m", "--now", "2026-02-01T09:15:00Z"],
            stdin: HealthLines.records(heart, 3).joined(separator: "\n") + "\n")
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "2")
        // Once the window has passed since the latest snapshot, the observer's take is made.
        _ = try archive.run(
            ["take", "--trigger", "observer", "--debounce", "10m", "--now", "2026-02-01T09:20:30Z"],
            stdin: HealthLines.records(heart, 3).joined(separator: "\n") + "\n")
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "3")
    }
}

import Foundation
import Testing
import VitalsKit

/// The real exports in Fixtures/apple-health (see its README for where each comes from).
func healthFixture(_ path: String) -> String {
    Binaries.fixtures.appendingPathComponent("apple-health/" + path).path
}

@Suite("snapshot-delta: reading exports and records", .hangGuard(minutes: 3))
struct SnapshotDeltaReadingTests {
    let archive: HealthArchive
    init() throws { archive = try HealthArchive() }

    let heart = "HKQuantityTypeIdentifierHeartRate"

    func counts(_ taken: TakeOutput) -> [String: Int] {
        var result: [String: Int] = [:]
        for type in taken.snapshot["types"]?.arrayValue?.compactMap(\.objectValue) ?? [] {
            result[type.string("type_identifier") ?? ""] = type.int("count")
        }
        return result
    }

    @Test("a v14 export: records, correlations counted once, workouts and activity summaries as their own types")
    func v14() throws {
        let systolic = HealthExport.record(
            "HKQuantityTypeIdentifierBloodPressureSystolic", "2019-05-10 08:30:00 -0700", value: "120", unit: "mmHg", device: false)
        let diastolic = HealthExport.record(
            "HKQuantityTypeIdentifierBloodPressureDiastolic", "2019-05-10 08:30:00 -0700", value: "80", unit: "mmHg", device: false)
        let body = [
            HealthExport.record(
                heart, "2019-05-10 08:30:00 -0700", value: "72",
                children: "<MetadataEntry key=\"HKMetadataKeyHeartRateMotionContext\" value=\"0\"/>"),
            HealthExport.record(heart, "2019-11-10 08:30:00 -0800", value: "75"),
            systolic, diastolic,
            "<Correlation type=\"HKCorrelationTypeIdentifierBloodPressure\" sourceName=\"Omron\" startDate=\"2019-05-10 08:30:00 -0700\" endDate=\"2019-05-10 08:30:00 -0700\">\(systolic)\(diastolic)</Correlation>",
            "<Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"5.2\" durationUnit=\"min\" sourceName=\"Alex’s Apple Watch\" startDate=\"2019-05-11 07:25:41 -0700\" endDate=\"2019-05-11 07:30:52 -0700\"><WorkoutEvent type=\"HKWorkoutEventTypeSegment\" date=\"2019-05-11 07:25:41 -0700\"/></Workout>",
            "<ActivitySummary dateComponents=\"2019-05-11\" activeEnergyBurned=\"590.252\" activeEnergyBurnedUnit=\"kcal\"/>",
        ]
        let taken = try archive.takeXML(HealthExport.document(body))
        #expect(
            counts(taken) == [
                heart: 2, "HKQuantityTypeIdentifierBloodPressureSystolic": 1, "HKQuantityTypeIdentifierBloodPressureDiastolic": 1,
                "HKCorrelationTypeIdentifierBloodPressure": 1, "HKWorkoutTypeIdentifier": 1, "HKActivitySummaryTypeIdentifier": 1,
            ])
        #expect(taken.snapshot.string("export_version") == "14")
        #expect(taken.snapshot.string("export_date") == "2024-06-01T15:10:05.000Z")
        #expect(taken.snapshot.int("record_count") == 7)
        // Mixed offsets, to UTC by hand: 08:30 -0700 is 15:30Z; 2019-11-10 08:30 -0800 is 16:30Z.
        #expect(taken.type(heart)?.string("earliest") == "2019-05-10T15:30:00.000Z")
        #expect(taken.type(heart)?.string("latest") == "2019-11-10T16:30:00.000Z")
        let summary = try archive.run(["samples", "--type", "HKActivitySummaryTypeIdentifier"]).records()
        let activity = try #require(summary.first)
        #expect(summary.count == 1 && activity["value"] == .number("590.252") && activity.string("start") == "2019-05-11T00:00:00.000Z")
        let workout = try archive.run(["samples", "--type", "HKWorkoutTypeIdentifier"]).records()
        #expect(workout.first?.string("value") == "HKWorkoutActivityTypeRunning")
    }

    @Test("a malformed v12 DTD (iOS 16) is ignored, and the records still count")
    func v12() throws {
        let taken = try archive.takeXML(
            HealthExport.document([HealthExport.record(heart, "2022-10-01 08:30:00 -0700")], dtd: HealthExport.v12MalformedDTD))
        #expect(counts(taken) == [heart: 1] && taken.snapshot.string("export_version") == "12")
        // xmllint, a conforming parser, rejects the same file: the DTD really is malformed.
        let lint = try shell("xmllint --noout '\(archive.scratch.path("export.xml"))'")
        #expect(lint.status != 0)
    }

    @Test("the real fixtures: every top-level sample counted once, children never")
    func fixtures() throws {
        // Expected counts by grep, independently: each fixture's top-level elements.
        let sample = try archive.run(["take", healthFixture("opendroid-hk/sampleexport.xml")])
        #expect(sample.status == 0, "\(sample.stderr)")
        let taken = try TakeOutput(sample)
        #expect(
            counts(taken) == [
                "HKQuantityTypeIdentifierBodyMassIndex": 4, "HKQuantityTypeIdentifierHeartRateVariabilitySDNN": 1,
                "HKWorkoutTypeIdentifier": 1, "HKActivitySummaryTypeIdentifier": 17,
                "ClinicalRecord:Procedure": 3, "ClinicalRecord:Immunization": 1,
                "ClinicalRecord:DiagnosticReport": 1, "ClinicalRecord:Patient": 1,
            ])
        #expect(taken.snapshot.string("export_version") == "11")
        let workout = try archive.run(["samples", "--type", "HKWorkoutTypeIdentifier"]).records()
        #expect(workout.first?.string("source") == "🕛🕐🕑🕒", "the emoji source name survives")
        #expect(workout.first?.string("device")?.hasPrefix("name:Apple Watch") == true)

        let plain = try HealthArchive().run(["take", healthFixture("healthkit-to-sqlite/export.xml")])
        #expect(
            try counts(TakeOutput(plain)) == [
                "HKQuantityTypeIdentifierBodyMassIndex": 1, heart: 1, "HKWorkoutTypeIdentifier": 1,
                "HKActivitySummaryTypeIdentifier": 2,
            ])

        let volume = try HealthArchive().run(["take", healthFixture("opendroid-hk/audio_exposure.xml")])
        let grep = try shell("grep -c '<Record' '\(healthFixture("opendroid-hk/audio_exposure.xml"))'")
        let volumeCounts = try counts(TakeOutput(volume))
        #expect(volumeCounts.values.reduce(0, +) == Int(grep.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try TakeOutput(volume).snapshot["is_post_restore_inferred"] == .bool(true), "a new chain starting with over 1,000 records")

        let broken = try HealthArchive().run(["take", healthFixture("synthetic/broken_v12.xml")])
        #expect(broken.status == 0, "\(broken.stderr)")
        #expect(try TakeOutput(broken).snapshot.int("record_count") == 1000)
    }

    @Test("the zip layout through a pipe: unzip -p … | snapshot-delta take -")
    func zipped() throws {
        let zip = archive.scratch.path("export.zip")
        let make = try shell(
            "cd '\(healthFixture("healthkit-to-sqlite/zip_contents"))' && python3 -m zipfile -c '\(zip)' apple_health_export")
        #expect(make.status == 0, "\(make.stderr)")
        let result = try shell(
            "unzip -p '\(zip)' apple_health_export/export.xml | snapshot-delta --db '\(archive.db)' take --device-id-file '\(archive.deviceFile)' -"
        )
        #expect(result.status == 0, "\(result.stderr)")
        let taken = try TakeOutput(result)
        #expect(taken.snapshot.string("source") == "<stdin>" && counts(taken)["HKWorkoutTypeIdentifier"] == 1)
    }

    @Test("mixed offsets for one instant are one sample, and the device address is not part of its identity")
    func offsets() throws {
        let one = HealthExport.document([HealthExport.record(heart, "2016-11-14 07:33:54 -0700", address: "0x282a45810")])
        let two = HealthExport.document([HealthExport.record(heart, "2016-11-14 06:33:54 -0800", address: "0x2835f0aa0")])
        let first = try archive.takeXML(one)
        let second = try archive.takeXML(two)
        #expect(first.type(heart)?.string("earliest") == "2016-11-14T14:33:54.000Z")
        #expect(first.snapshot.string("checksum") == second.snapshot.string("checksum"))
        #expect(try archive.sql("SELECT count(*) || ' ' || sum(present) FROM samples") == "1 1")
        #expect(
            try archive.sql("SELECT device FROM samples")
                == "name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2")
    }

    @Test(
        "a parse error anywhere means no snapshot: control characters, a cut file, a wrong root",
        arguments: [
            "vtab", "control-reference", "raw-control", "truncated", "wrong-root", "undeclared-entity",
        ])
    func noPartialSnapshot(kind: String) throws {
        try archive.takeXML(HealthExport.document([HealthExport.record(heart, "2019-05-10 08:30:00 -0700")]), name: "good.xml")
        let good = (0..<50).map { HealthExport.record(heart, "2019-05-1\($0 % 10) 08:\(10 + $0):00 -0700") }
        let document: String
        switch kind {
        case "vtab": document = try String(contentsOfFile: healthFixture("synthetic/vtab.xml"), encoding: .utf8)
        case "control-reference":
            document = HealthExport.document(good + [HealthExport.record(heart, "2019-05-20 08:30:00 -0700", source: "Phone&#x1;")])
        case "raw-control":
            document = HealthExport.document(good + [HealthExport.record(heart, "2019-05-20 08:30:00 -0700", source: "Ph\u{1}one")])
        case "truncated":
            let whole = HealthExport.document(good)
            document = String(whole.prefix(whole.count * 3 / 4))
        case "wrong-root": document = "<?xml version=\"1.0\"?>\n<Workouts><Record type=\"x\"/></Workouts>\n"
        default: document = HealthExport.document(good + [HealthExport.record(heart, "2019-05-20 08:30:00 -0700", source: "&lt;&bad;")])
        }
        let before = try archive.sql("SELECT count(*) FROM snapshots; SELECT count(*) FROM samples; SELECT count(*) FROM operations")
        let file = try archive.scratch.write("bad.xml", document)
        let result = try archive.run(["take", file])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("snapshot-delta: \(file):"), "the error names the file and line: \(result.stderr)")
        #expect(result.stderr.contains("no snapshot taken"))
        #expect(try archive.sql("SELECT count(*) FROM snapshots; SELECT count(*) FROM samples; SELECT count(*) FROM operations") == before)
    }

    @Test("a record that cannot be counted (a bad date) means no snapshot, and every such record is reported")
    func badDates() throws {
        let body = [
            HealthExport.record(heart, "2019-05-10 08:30:00 -0700"), HealthExport.record(heart, "yesterday"),
            HealthExport.record(heart, "2019-02-30 08:30:00 -0700"),
            "<Record sourceName=\"x\" startDate=\"2019-05-10 08:30:00 -0700\" endDate=\"2019-05-10 08:30:00 -0700\"/>",
        ]
        let file = try archive.scratch.write("dates.xml", HealthExport.document(body))
        let result = try archive.run(["take", file])
        #expect(result.status == 2)
        let errors = result.stderr.split(separator: "\n").filter { $0.contains("dates.xml:") }
        #expect(errors.count == 3, "\(result.stderr)")
        #expect(result.stderr.contains("a startDate that is not a date: 'yesterday'") && result.stderr.contains("has no type"))
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "0")
    }

    @Test("NDJSON: bad lines are reported with their line numbers and no snapshot is taken")
    func ndjsonErrors() throws {
        let lines =
            HealthLines.records(heart, 2) + [
                "not json", #"{"type":"sample","monitor":"x"}"#,
                #"{"type":"health_record","type_identifier":"X","start":"soon"}"#,
                HealthLines.status(heart, "maybe"),
            ]
        let result = try archive.run(["take"], stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 2 && result.stdout.isEmpty)
        let errors = result.stderr.split(separator: "\n").map(String.init)
        #expect(errors.contains { $0.hasPrefix("snapshot-delta: <stdin>:3: not valid JSON") })
        #expect(errors.contains { $0.hasPrefix("snapshot-delta: <stdin>:4: sample has no type_identifier") })
        #expect(errors.contains { $0.hasPrefix("snapshot-delta: <stdin>:5: start is not a time: 'soon'") })
        #expect(
            errors.contains {
                $0.hasPrefix(
                    "snapshot-delta: <stdin>:6: type_status wants a quality of complete, partial, unauthorized, failed, unsupported")
            })
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "0")
    }

    @Test("NDJSON round trip: samples written by the archive are health_records that take reads to the same checksum")
    func roundTrip() throws {
        let first = try archive.takeXML(try String(contentsOfFile: healthFixture("synthetic/broken_v12.xml"), encoding: .utf8))
        var lines: [String] = []
        for type in first.snapshot["types"]?.arrayValue?.compactMap(\.objectValue) ?? [] {
            lines += try archive.run(["samples", "--type", type.string("type_identifier")!, "--per-page", "5000"]).lines
        }
        #expect(lines.count == 1000)
        let other = try HealthArchive()
        let second = try other.take(lines, ["--timezone", "UTC"])
        #expect(second.snapshot.string("checksum") == first.snapshot.string("checksum"))
        #expect(try other.sql("SELECT count(*) FROM samples") == "1000")
    }

    @Test("the registry: types outside it are not counted, types in it without records count 0")
    func registry() throws {
        let file = try archive.scratch.write("types", "# monitored\n\(heart)\nHKQuantityTypeIdentifierBodyMass  # weight\n\n")
        let result = try archive.run(
            ["take", "--registry", file],
            stdin: (HealthLines.records(heart, 2) + HealthLines.records("HKQuantityTypeIdentifierStepCount", 3)).joined(separator: "\n"))
        #expect(result.status == 0)
        #expect(result.stderr.contains("3 records of 1 types outside the registry were not counted"))
        let taken = try TakeOutput(result)
        #expect(counts(taken) == [heart: 2, "HKQuantityTypeIdentifierBodyMass": 0])
        #expect(taken.snapshot["registry"] == .array([.string("HKQuantityTypeIdentifierBodyMass"), .string(heart)]))
        // printf 'HKQuantityTypeIdentifierBodyMass\nHKQuantityTypeIdentifierHeartRate' | sha256sum
        #expect(taken.snapshot.string("type_set_hash") == (try sha256sum("HKQuantityTypeIdentifierBodyMass\n\(heart)")))
        #expect(try archive.sql("SELECT count(*) FROM samples") == "2")
        let empty = try archive.scratch.write("empty", "# nothing\n")
        let refused = try archive.run(["take", "--registry", empty], stdin: HealthLines.records(heart, 1).joined(separator: "\n"))
        #expect(refused.status == 2 && refused.stderr.contains("names no type"))
    }

    @Test("SIGINT while reading a slow stream: exit 130 and no snapshot")
    func interrupted() throws {
        let tool = try RunningTool("snapshot-delta", ["--db", archive.db, "take", "--device-id-file", archive.deviceFile, "-"])
        let head = HealthExport.document(
            (0..<200).map { HealthExport.record(heart, "2019-05-10 08:\(10 + $0 % 50):00 -0700", value: "\($0)") })
        try tool.input.write(contentsOf: Data(head.prefix(head.count / 2).utf8))
        // Wait for the tool to have made its archive (it reads the input after that).
        while !FileManager.default.fileExists(atPath: archive.db) || (try? archive.sql("SELECT count(*) FROM snapshots")) != "0" {}
        let (status, rest, _) = tool.stop(SIGINT)
        #expect(status == 130 && rest.isEmpty)
        #expect(try archive.sql("SELECT count(*) FROM snapshots") == "0")
    }
}

@Suite("snapshot-delta: crashes", .hangGuard(minutes: 2))
struct SnapshotDeltaCrashTests {
    @Test("kill -9 in the middle of a take: no snapshot, no sample, an intact archive that takes the next one")
    func killed() throws {
        let archive = try HealthArchive()
        let heart = "HKQuantityTypeIdentifierHeartRate"
        try archive.take(HealthLines.records(heart, 3))
        let tool = try RunningTool("snapshot-delta", ["--db", archive.db, "take", "--device-id-file", archive.deviceFile, "-"])
        let lines = HealthLines.records(heart, 1000).joined(separator: "\n") + "\n"
        try tool.input.write(contentsOf: Data(lines.utf8))
        // The take holds the archive's write lock from its first sample to its commit, and the
        // commit waits for the end of the input, which stays open: wait until the lock is taken.
        while (try runProcess(
            "/usr/bin/env", ["sqlite3", archive.db, "BEGIN IMMEDIATE; ROLLBACK;"], stdin: "",
            environment: toolEnvironment())).status == 0
        {}
        kill(tool.process.pid, SIGKILL)
        tool.process.wait()
        #expect(!tool.process.exited)
        #expect(try archive.sql("PRAGMA integrity_check") == "ok")
        #expect(try archive.sql("SELECT count(*) FROM snapshots; SELECT count(*) FROM samples") == "1\n3")
        let next = try archive.take(HealthLines.records(heart, 4))
        #expect(next.snapshot.string("previous_snapshot_id") == (try archive.sql("SELECT id FROM snapshots WHERE seq = 1")))
        #expect(try archive.run(["verify"]).status == 0)
    }
}

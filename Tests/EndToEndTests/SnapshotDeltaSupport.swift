import Foundation
import Testing
import VitalsKit

/// Real-shaped Apple Health exports, written by the tests.
enum HealthExport {
    /// The DTD a current export (HealthKit Export Version 14) carries, ATTLIST lines and all.
    static let v14DTD = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!-- HealthKit Export Version: 14 -->
        <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
        <!ATTLIST HealthData
          locale CDATA #REQUIRED
        >
        <!ELEMENT ExportDate EMPTY>
        <!ATTLIST ExportDate
          value CDATA #REQUIRED
        >
        <!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
        <!ATTLIST Record
          type          CDATA #REQUIRED
          unit          CDATA #IMPLIED
          value         CDATA #IMPLIED
          sourceName    CDATA #REQUIRED
          sourceVersion CDATA #IMPLIED
          device        CDATA #IMPLIED
          creationDate  CDATA #IMPLIED
          startDate     CDATA #REQUIRED
          endDate       CDATA #REQUIRED
        >
        <!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
        <!ELEMENT Correlation ((MetadataEntry|Record)*)>
        <!ATTLIST Correlation
          type          CDATA #REQUIRED
          sourceName    CDATA #REQUIRED
          startDate     CDATA #REQUIRED
          endDate       CDATA #REQUIRED
        >
        <!ELEMENT MetadataEntry EMPTY>
        <!ATTLIST MetadataEntry
          key   CDATA #REQUIRED
          value CDATA #REQUIRED
        >
        ]>

        """

    /// The iOS 16 (version 12) defects: an ATTLIST without its `>`, a stray attribute line,
    /// a duplicate declaration and a stray `>`.
    static let v12MalformedDTD = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!-- HealthKit Export Version: 12 -->
        <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
        <!ATTLIST HealthData
          locale CDATA #REQUIRED
        >
        <!ELEMENT VisionPrescription ((RightEye|LeftEye|Attachment|MetadataEntry)*)>
        <!ATTLIST VisionPrescription
          type             CDATA #REQUIRED
          dateIssued       CDATA #REQUIRED
        <!ELEMENT RightEye EMPTY>
          device           CDATA #IMPLIED
        <!ELEMENT MetadataEntry EMPTY>
        <!ATTLIST MetadataEntry
          key              CDATA #IMPLIED
          value            CDATA #IMPLIED
        >
        >
        ]>

        """

    /// A whole export around `body` (the lines inside `HealthData`).
    static func document(_ body: [String], dtd: String = v14DTD, exportDate: String = "2024-06-01 08:10:05 -0700") -> String {
        dtd + """
            <HealthData locale="en_US">
             <ExportDate value="\(exportDate)"/>
             <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-02-02" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale" HKCharacteristicTypeIdentifierBloodType="HKBloodTypeNotSet" HKCharacteristicTypeIdentifierFitzpatrickSkinType="HKFitzpatrickSkinTypeNotSet"/>

            """ + body.map { " " + $0 }.joined(separator: "\n") + "\n</HealthData>\n"
    }

    /// One `Record` line, with a device that embeds a memory address like real exports.
    static func record(
        _ type: String, _ start: String, _ end: String? = nil, value: String = "1", unit: String? = "count",
        source: String = "Alex’s Apple Watch", address: String = "0x3012772a0", device: Bool = true,
        children: String = ""
    ) -> String {
        var text = "<Record type=\"\(type)\" sourceName=\"\(source)\" sourceVersion=\"10.2\""
        if device {
            text +=
                " device=\"&lt;&lt;HKDevice: \(address)&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2&gt;\""
        }
        if let unit { text += " unit=\"\(unit)\"" }
        text += " creationDate=\"\(end ?? start)\" startDate=\"\(start)\" endDate=\"\(end ?? start)\" value=\"\(value)\""
        return children.isEmpty ? text + "/>" : text + ">" + children + "</Record>"
    }
}

/// NDJSON inputs: `health_record` and `type_status` lines.
enum HealthLines {
    static func record(
        _ type: String, _ start: String, _ end: String? = nil, value: String = "1", unit: String = "count",
        source: String = "Collector", extra: String = ""
    ) -> String {
        #"{"type":"health_record","type_identifier":"\#(type)","start":"\#(start)","end":"\#(end ?? start)","value":\#(value),"unit":"\#(unit)","source":"\#(source)","device":null\#(extra)}"#
    }

    /// `n` records of `type`, one a minute from `day` 08:00 UTC.
    static func records(_ type: String, _ n: Int, day: String = "2026-01-10", offsetMinutes: Int = 0) -> [String] {
        (0..<n).map { index in
            let minute = index + offsetMinutes
            return record(type, String(format: "%@T%02d:%02d:00Z", day, 8 + minute / 60, minute % 60))
        }
    }

    static func status(_ type: String, _ quality: String) -> String {
        #"{"type":"type_status","type_identifier":"\#(type)","quality":"\#(quality)"}"#
    }
}

/// SHA-256 by sha256sum(1): the independent check of the hashes the tool writes.
func sha256sum(_ text: String) throws -> String {
    let result = try runProcess("/usr/bin/env", ["sha256sum"], stdin: text, environment: toolEnvironment())
    guard result.status == 0 else { throw TestFailure("sha256sum: \(result.stderr)") }
    return String(result.stdout.prefix(64))
}

/// A scratch archive and device id file, and `snapshot-delta` run against them.
final class HealthArchive {
    let scratch: ScratchDirectory
    var db: String { scratch.path("health.db") }
    var deviceFile: String { scratch.path("config/device-id") }
    private var takes = 0

    init() throws { scratch = try ScratchDirectory() }

    /// Runs a subcommand on the archive; `take` gets the device id file and a clock that
    /// moves a minute per take.
    func run(_ arguments: [String], stdin: String = "") throws -> RunResult {
        var arguments = arguments
        if arguments.first == "take" {
            takes += 1
            arguments.insert(contentsOf: ["--device-id-file", deviceFile], at: 1)
            if !arguments.contains("--now") {
                arguments.insert(contentsOf: ["--now", String(format: "2026-02-01T10:%02d:00Z", takes % 60)], at: 1)
            }
        }
        return try EndToEndTests.run("snapshot-delta", ["--db", db] + arguments, stdin: stdin)
    }

    /// Takes a snapshot of NDJSON lines; fails the test when it does not exit 0.
    @discardableResult
    func take(_ lines: [String], _ options: [String] = []) throws -> TakeOutput {
        let result = try run(["take"] + options, stdin: lines.joined(separator: "\n") + "\n")
        guard result.status == 0 else { throw TestFailure("take exited \(result.status): \(result.stderr)") }
        return try TakeOutput(result)
    }

    /// Takes a snapshot of an XML document written to a file.
    @discardableResult
    func takeXML(_ document: String, _ options: [String] = [], name: String = "export.xml") throws -> TakeOutput {
        let file = try scratch.write(name, document)
        let result = try run(["take"] + options + [file])
        guard result.status == 0 else { throw TestFailure("take exited \(result.status): \(result.stderr)") }
        return try TakeOutput(result)
    }

    /// A query through sqlite3(1), the independent reader of the archive.
    func sql(_ query: String) throws -> String { try sqlite(db, query) }
}

/// What `take` wrote: its snapshot, delta and anomalies.
struct TakeOutput {
    var result: RunResult
    var snapshot: JSONObject
    var delta: JSONObject?
    var anomalies: [JSONObject]

    init(_ result: RunResult) throws {
        self.result = result
        let records = try result.records()
        guard let snapshot = records.first(where: { $0.string("type") == "snapshot" }) else {
            throw TestFailure("no snapshot: \(result.stdout)")
        }
        self.snapshot = snapshot
        delta = records.first { $0.string("type") == "delta" }
        anomalies = records.filter { $0.string("type") == "anomaly" }
    }

    var id: String { snapshot.string("id") ?? "" }

    /// The snapshot's entry for a type.
    func type(_ name: String) -> JSONObject? {
        snapshot["types"]?.arrayValue?.compactMap(\.objectValue).first { $0.string("type_identifier") == name }
    }

    /// The delta's entry for a type.
    func change(_ name: String) -> JSONObject? {
        delta?["types"]?.arrayValue?.compactMap(\.objectValue).first { $0.string("type_identifier") == name }
    }
}

extension HealthExport {
    /// The files snapshot-delta(1)'s and the README's examples read: `export.xml`, the same
    /// export zipped as Apple ships it (`export.zip`), a later export with two heart-rate samples
    /// gone and three new ones (`export-later.xml`), and a collector's `records.ndjson` with
    /// its `types.registry`.
    static func writeExamples(into scratch: ScratchDirectory) throws {
        let heart = "HKQuantityTypeIdentifierHeartRate"
        var early = (0..<6).map { record(heart, "2019-0\($0 + 1)-10 08:30:00 -0800", value: "\(70 + $0)") }
        early += [
            record("HKQuantityTypeIdentifierStepCount", "2019-05-10 08:00:00 -0700", "2019-05-10 08:10:00 -0700", value: "812"),
            "<Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"31\" durationUnit=\"min\" sourceName=\"Alex’s Apple Watch\" startDate=\"2019-05-11 07:25:41 -0700\" endDate=\"2019-05-11 07:56:41 -0700\"/>",
        ]
        try scratch.write("export.xml", document(early))
        let later =
            early.enumerated().filter { $0.offset != 1 && $0.offset != 3 }.map(\.element)
            + (0..<3).map { record(heart, "2020-0\($0 + 1)-10 08:30:00 -0800", value: "\(80 + $0)") }
        try scratch.write("export-later.xml", document(later, exportDate: "2020-06-01 08:10:05 -0700"))
        try FileManager.default.createDirectory(atPath: scratch.path("zip/apple_health_export"), withIntermediateDirectories: true)
        try scratch.write("zip/apple_health_export/export.xml", document(early))
        let zip = try shell("cd zip && python3 -m zipfile -c ../export.zip apple_health_export", directory: scratch.url)
        guard zip.status == 0 else { throw TestFailure("cannot make export.zip: \(zip.stderr)") }
        try scratch.write("types.registry", "# the types this collector watches\n\(heart)\nHKQuantityTypeIdentifierStepCount\n")
        try scratch.write(
            "records.ndjson",
            (HealthLines.records(heart, 5) + [HealthLines.status("HKQuantityTypeIdentifierStepCount", "unauthorized")])
                .joined(separator: "\n") + "\n")
    }

    /// The environment the examples run in: the default device id file under the scratch directory.
    static func exampleEnvironment(_ scratch: ScratchDirectory) -> [String: String] {
        ["HOME": scratch.path("home"), "XDG_CONFIG_HOME": scratch.path("home/.config")]
    }
}

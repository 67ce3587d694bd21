import VitalsKit

// Unsafe pointers here are C interop (RawSample holds views, not copies, because its main reader hands over libxml2's
// attribute values in place; this reader fills it from its own array, valid for the call that hands the sample on): kept.

/// Reads `--format ndjson`: one `health_record` per line (Health Sync's sample model), and
/// `type_status` lines from collectors that know each type's authorization.
///
///     {"type":"health_record","type_identifier":"HKQuantityTypeIdentifierHeartRate",
///      "start":"2026-01-27T10:30:00Z","end":"2026-01-27T10:30:00Z","value":72,
///      "unit":"count/min","source":"Apple Watch","device":"…","uuid":"…"}
///     {"type":"type_status","type_identifier":"HKQuantityTypeIdentifierStepCount","quality":"unauthorized"}
///
/// A line without `type` is a health record. Any bad line is reported and means no snapshot.
struct HealthRecordReader {
    private let sink: SampleSink
    private let diagnostics: Diagnostics

    /// A reader handing its samples to `sink`.
    init(sink: SampleSink, diagnostics: Diagnostics) {
        self.sink = sink
        self.diagnostics = diagnostics
    }

    /// The qualities a `type_status` line may state (`unsupported` is failed and unsupported).
    static let statusWords = ["complete", "partial", "unauthorized", "failed", "unsupported"]

    /// The longest line read (as `LineReader`'s limit).
    static let maxLineBytes = LineReader.defaultMaxLineBytes

    /// Reads every line of `reader`; throws only when the archive fails.
    func read(_ reader: LineReader) throws {
        while let event = reader.next() {
            if Signals.stopRequested { return }
            switch event {
            case .tooLong:
                sink.recordError(
                    "line longer than \(HealthRecordReader.maxLineBytes >> 20) MiB", source: reader.source, line: reader.lineNumber)
            case .line(let bytes):
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
                if let problem = try readLine(bytes) {
                    sink.recordError(problem, source: reader.source, line: reader.lineNumber)
                }
            }
        }
    }

    /// Handles one line; returns why it is bad, or nil.
    private func readLine(_ bytes: LineBytes) throws -> String? {
        let object: JSONObject
        do {
            guard case .object(let parsed) = try JSONParser.parse(bytes) else { return "not a JSON object" }
            object = parsed
        } catch {
            return "not valid JSON: \(error)"
        }
        let kind = object["type"]
        guard let identifier = object["type_identifier"]?.stringValue, !identifier.isEmpty else {
            return "\(kind?.stringValue ?? "record") has no type_identifier"
        }
        switch kind {
        case nil, .string("health_record")?:
            return try record(object, identifier)
        case .string("type_status")?:
            guard let word = object["quality"]?.stringValue, HealthRecordReader.statusWords.contains(word) else {
                return "type_status wants a quality of " + HealthRecordReader.statusWords.joined(separator: ", ")
            }
            let status =
                word == "unsupported"
                ? Tally.Status(quality: .failed, unsupported: true)
                : Tally.Status(quality: Quality(rawValue: word)!, unsupported: object["unsupported"]?.boolValue == true)
            _ = sink.tally.setStatus(identifier, status)
            return nil
        case .string(let other)?:
            return "a '\(other)' record is neither a health_record nor a type_status"
        default:
            return "'type' is not a string"
        }
    }

    private func record(_ object: JSONObject, _ identifier: String) throws -> String? {
        guard let startText = object["start"]?.stringValue else { return "health_record has no start" }
        guard let start = Timestamp.parse(startText) else { return "start is not a time: '\(startText)'" }
        var end = start
        if let value = object["end"], !value.isNull {
            guard let text = value.stringValue, let parsed = Timestamp.parse(text) else {
                return "end is not a time: '\(value.stringValue ?? value.jsonText)'"
            }
            end = parsed
        }
        var created: Int64?
        if let value = object["created"], !value.isNull {
            guard let text = value.stringValue, let parsed = Timestamp.parse(text) else { return "created is not a time" }
            created = parsed
        }
        let value: String?
        switch object["value"] {
        case .string(let text)?: value = text
        case .number(let text)?: value = text
        case .bool(let flag)?: value = flag ? "true" : "false"
        case nil, .null?: value = nil
        default: return "value must be a number or a string"
        }
        var texts: [String?] = [identifier, value]
        for key in ["unit", "source", "source_version", "device", "uuid"] {
            switch object[key] {
            case .string(let text)?: texts.append(key == "device" ? DeviceText.stripped(text) : text)
            case nil, .null?: texts.append(nil)
            default: return "\(key) must be a string"
            }
        }
        // The texts side by side in one buffer that stays valid for the call.
        var joined: [UInt8] = []
        var ranges: [Range<Int>?] = []
        for text in texts {
            guard let text else {
                ranges.append(nil)
                continue
            }
            let start = joined.count
            joined.append(contentsOf: text.utf8)
            ranges.append(start..<joined.count)
        }
        try joined.withUnsafeBufferPointer { all in
            func slice(_ index: Int) -> UnsafeBufferPointer<UInt8>? {
                ranges[index].map { UnsafeBufferPointer(rebasing: all[$0]) }
            }
            var sample = RawSample()
            sample.type = slice(0)!
            sample.value = slice(1)
            sample.unit = slice(2)
            sample.source = slice(3)
            sample.sourceVersion = slice(4)
            sample.device = slice(5)
            sample.uuid = slice(6)
            sample.start = start
            sample.end = end
            sample.created = created
            try sink.add(&sample)
        }
        return nil
    }
}

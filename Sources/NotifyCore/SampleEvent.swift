import VitalsKit

/// What notify needs of one `sample` record, read from its bytes without building a JSON tree.
struct SampleEvent: Equatable {
    /// The monitor id.
    var monitor: String
    /// The human name (the id when the sample has none).
    var name: String
    /// When the check started, milliseconds since the epoch: the event time notify runs on.
    var at: Int64
    /// The status.
    var status: SampleStatus
    /// The result in words.
    var message: String?
    /// Why it is not up.
    var reason: String?
    /// The URL probed (already redacted by the prober).
    var target: String?
    /// The integer id store-samples gave the monitor (`monitor_id`, which it adds to the samples it passes on).
    var monitorID: Int? = nil

    /// What a line turned out to be.
    enum Parsed {
        case sample(SampleEvent)
        /// A record of another type: not notify's business, skipped silently.
        case otherRecord
        case invalid(String)
    }

    /// Reads one NDJSON line.
    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Parsed {
        let fields: [FieldRange]
        do {
            fields = try JSONParser.scanObject(line)
        } catch {
            return .invalid("not a JSON object: \(error)")
        }
        var type: String?
        var monitor: String?
        var name: String?
        var atText: String?
        var statusText: String?
        var message: String?
        var reason: String?
        var target: String?
        var atField: FieldRange?
        var monitorID: Int?
        for field in fields {
            let key = UnsafeBufferPointer(rebasing: line[field.keyStart..<field.keyEnd])
            func value() -> String? { stringValue(line, field) }
            switch key.count {
            case 2 where equals(key, "at"): atText = value(); atField = field
            case 4 where equals(key, "type"): type = value()
            case 4 where equals(key, "name"): name = value()
            case 6 where equals(key, "status"): statusText = value()
            case 6 where equals(key, "reason"): reason = value()
            case 6 where equals(key, "target"): target = value()
            case 7 where equals(key, "monitor"): monitor = value()
            case 7 where equals(key, "message"): message = value()
            case 10 where equals(key, "monitor_id"):
                monitorID = Int(String(decoding: UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]), as: UTF8.self))
            default: break
            }
        }
        if let type, type != "sample" { return .otherRecord }
        guard let monitor, !monitor.isEmpty else { return .invalid("a sample needs a non-empty string 'monitor'") }
        guard let atText, atField != nil else { return .invalid("a sample needs 'at' (an RFC 3339 time)") }
        guard let at = Timestamp.parse(atText) else { return .invalid("'at' is not an RFC 3339 time: '\(atText)'") }
        guard let statusText else { return .invalid("a sample needs 'status'") }
        guard let status = SampleStatus(rawValue: statusText) else {
            return .invalid("unknown status '\(statusText)' (up, degraded, down, error or unknown)")
        }
        return .sample(SampleEvent(monitor: monitor, name: name.flatMap { $0.isEmpty ? nil : $0 } ?? monitor, at: at,
                                   status: status, message: message, reason: reason, target: target, monitorID: monitorID))
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        text.withUTF8Buffer { $0.elementsEqual(bytes) }
    }

    /// The string value of a field, unescaped; nil when it is not a string.
    private static func stringValue(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> String? {
        guard field.valueEnd - field.valueStart >= 2, line[field.valueStart] == UInt8(ascii: "\"") else { return nil }
        let inner = UnsafeBufferPointer(rebasing: line[(field.valueStart + 1)..<(field.valueEnd - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        let raw = UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])
        return (try? JSONParser.parse(raw))?.stringValue
    }
}

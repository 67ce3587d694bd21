import VitalsKit

/// One `sample` line read in place: the columns the store keeps, found without building a
/// JSON value. Text fields are byte ranges into the line, decoded only when needed, so a
/// valid only while the line's bytes are (until the reader's next line).
public struct SampleLine {
    /// The line itself.
    public let line: UnsafeBufferPointer<UInt8>
    /// The monitor id.
    public var monitor: String = ""
    /// When the check started, ms since the epoch.
    public var at: Int64 = 0
    /// The status.
    public var status: SampleStatus = .unknown
    /// Latency in ms.
    public var latencyMs: Double?
    /// The HTTP code.
    public var code: Int64?
    /// Certificate days left.
    public var tlsExpiryDays: Int64?
    /// Speed test result.
    public var speedMbps: Double?
    /// The monitor's check interval, seconds.
    public var checkInterval: Int64?
    /// Raw value ranges of the text fields (strings or null).
    var reasonRange: FieldRange?
    var messageRange: FieldRange?
    /// Monitor metadata, as raw value ranges: name, kind, target, agent, description.
    var metaRanges: [FieldRange?] = [nil, nil, nil, nil, nil]

    /// The metadata fields, in `metaRanges` order.
    static let metaKeys = ["name", "kind", "target", "agent", "description"]

    /// Why a line is not a storable sample.
    public struct Problem: Error {
        /// In words.
        public let message: String
    }

    private init(line: UnsafeBufferPointer<UInt8>) { self.line = line }

    /// The raw JSON bytes of a field's value.
    func raw(_ range: FieldRange?) -> UnsafeBufferPointer<UInt8>? {
        guard let range else { return nil }
        return UnsafeBufferPointer(rebasing: line[range.valueStart..<range.valueEnd])
    }

    /// A text field decoded (nil when absent or null).
    func text(_ range: FieldRange?) -> String? {
        guard let bytes = raw(range), bytes.first == UInt8(ascii: "\"") else { return nil }
        let inner = UnsafeBufferPointer(rebasing: bytes[1..<(bytes.count - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        return (try? JSONParser.parse(bytes))?.stringValue
    }

    /// Calls `body` with a text field's UTF-8 bytes, decoding escapes only when there are
    /// any; nil bytes when absent or null.
    func withText<R>(_ range: FieldRange?, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        guard let bytes = raw(range), bytes.first == UInt8(ascii: "\"") else { return try body(nil) }
        let inner = UnsafeBufferPointer(rebasing: bytes[1..<(bytes.count - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return try body(inner) }
        var decoded = text(range) ?? ""
        return try decoded.withUTF8 { try body($0) }
    }

    /// The reason.
    public var reason: String? { text(reasonRange) }
    /// The message.
    public var message: String? { text(messageRange) }
    /// The name the sample gives its monitor.
    public var name: String? { text(metaRanges[0]) }
    /// The kind.
    public var kind: String? { text(metaRanges[1]) }
    /// The target.
    public var target: String? { text(metaRanges[2]) }
    /// The agent.
    public var agent: String? { text(metaRanges[3]) }
    /// The description.
    public var description: String? { text(metaRanges[4]) }

    /// Reads a line; throws a `Problem` for anything that is not a storable sample.
    public static func read(_ line: UnsafeBufferPointer<UInt8>) throws -> SampleLine {
        var fields: [FieldRange] = []
        return try read(line, fields: &fields)
    }

    /// Reads a line, reusing `fields` for its field ranges (the ingest loop keeps one).
    public static func read(_ line: UnsafeBufferPointer<UInt8>, fields: inout [FieldRange]) throws -> SampleLine {
        do {
            try JSONParser.scanObject(line, into: &fields)
        } catch {
            throw Problem(message: "not valid JSON: \(error)")
        }
        var sample = SampleLine(line: line)
        let reader = FieldReader(line: line)
        var type: FieldRange?
        var monitor: FieldRange?
        var at: FieldRange?
        var status: FieldRange?
        for field in fields {
            let key = UnsafeBufferPointer(rebasing: line[field.keyStart..<field.keyEnd])
            switch key.count {
            case 2:
                if equals(key, "at") { at = field }
            case 4:
                if equals(key, "type") { type = field }
                else if equals(key, "name") { sample.metaRanges[0] = try reader.checkedText(field, "name") }
                else if equals(key, "kind") { sample.metaRanges[1] = try reader.checkedText(field, "kind") }
                else if equals(key, "code") { sample.code = try reader.integer(field, "code") }
            case 5:
                if equals(key, "agent") { sample.metaRanges[3] = try reader.checkedText(field, "agent") }
            case 6:
                if equals(key, "status") { status = field }
                else if equals(key, "reason") { sample.reasonRange = try reader.checkedText(field, "reason") }
                else if equals(key, "target") { sample.metaRanges[2] = try reader.checkedText(field, "target") }
            case 7:
                if equals(key, "monitor") { monitor = field }
                else if equals(key, "message") { sample.messageRange = try reader.checkedText(field, "message") }
            case 10:
                if equals(key, "latency_ms") { sample.latencyMs = try reader.number(field, "latency_ms") }
                else if equals(key, "speed_mbps") { sample.speedMbps = try reader.number(field, "speed_mbps") }
            case 11:
                if equals(key, "description") { sample.metaRanges[4] = try reader.checkedText(field, "description") }
            case 14:
                if equals(key, "check_interval") { sample.checkInterval = try reader.number(field, "check_interval").map { Int64($0.rounded()) } }
            case 15:
                if equals(key, "tls_expiry_days") { sample.tlsExpiryDays = try reader.integer(field, "tls_expiry_days") }
            default:
                break
            }
        }
        guard let type else { throw Problem(message: "record has no 'type' (a sample has \"type\":\"sample\")") }
        let typeText = try reader.string(type, "type") ?? "null"
        guard typeText == "sample" else { throw Problem(message: "a '\(typeText)' record is not a sample; only samples are stored") }
        guard let monitor, let monitorText = try reader.string(monitor, "monitor"), !monitorText.isEmpty else {
            throw Problem(message: "sample has no 'monitor'")
        }
        guard let at, let atValue = reader.raw(at).first == UInt8(ascii: "\"") ? reader.raw(at) : nil else {
            throw Problem(message: "sample has no 'at'")
        }
        guard let milliseconds = Timestamp.parse(bytes: UnsafeBufferPointer(rebasing: atValue[1..<(atValue.count - 1)])) else {
            throw Problem(message: "sample 'at' is not an RFC 3339 time: '\(try reader.string(at, "at") ?? "")'")
        }
        guard let status, let statusText = try reader.string(status, "status") else { throw Problem(message: "sample has no 'status'") }
        guard let parsed = SampleStatus(rawValue: statusText) else {
            throw Problem(message: "sample 'status' must be up, degraded, down, error or unknown, not '\(statusText)'")
        }
        sample.monitor = monitorText
        sample.at = milliseconds
        sample.status = parsed
        return sample
    }

    private static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        let other = text.utf8Start
        for index in 0..<bytes.count where bytes[index] != other[index] { return false }
        return true
    }
}

/// Reads typed values out of field ranges; strings without escapes are decoded directly.
struct FieldReader {
    let line: UnsafeBufferPointer<UInt8>

    func raw(_ field: FieldRange) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])
    }

    private func isNull(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count == 4 && bytes[0] == UInt8(ascii: "n")
    }

    /// The field if it is a string or null; any other type is an error.
    func checkedText(_ field: FieldRange, _ name: String) throws -> FieldRange? {
        let bytes = raw(field)
        if isNull(bytes) { return nil }
        guard bytes.first == UInt8(ascii: "\"") else { throw SampleLine.Problem(message: "field '\(name)' must be a string") }
        return field
    }

    /// A string field (nil for null); any other type is an error.
    func string(_ field: FieldRange, _ name: String) throws -> String? {
        let bytes = raw(field)
        if isNull(bytes) { return nil }
        guard bytes.first == UInt8(ascii: "\"") else {
            throw SampleLine.Problem(message: "field '\(name)' must be a string")
        }
        let inner = UnsafeBufferPointer(rebasing: bytes[1..<(bytes.count - 1)])
        if !inner.contains(UInt8(ascii: "\\")) { return String(decoding: inner, as: UTF8.self) }
        return try JSONParser.parse(bytes).stringValue
    }

    /// A number field (nil for null).
    func number(_ field: FieldRange, _ name: String) throws -> Double? {
        let bytes = raw(field)
        if isNull(bytes) { return nil }
        guard let number = JSONNumber.value(bytes) else {
            throw SampleLine.Problem(message: "field '\(name)' must be a number")
        }
        return number
    }

    /// An integral number field (nil for null).
    func integer(_ field: FieldRange, _ name: String) throws -> Int64? {
        guard let number = try number(field, name) else { return nil }
        guard number == number.rounded(), abs(number) < 9e15 else {
            throw SampleLine.Problem(message: "field '\(name)' must be a whole number")
        }
        return Int64(number)
    }
}

import VitalsKit

/// The fields of one `sample` line that the store keeps in columns; the line itself is kept whole.
public struct SampleLine {
    /// The monitor id.
    public var monitor: String
    /// When the check started, ms since the epoch.
    public var at: Int64
    /// The status.
    public var status: SampleStatus
    /// Why it is not up.
    public var reason: String?
    /// Latency in ms.
    public var latencyMs: Double?
    /// Words.
    public var message: String?
    /// The HTTP code.
    public var code: Int64?
    /// Certificate days left.
    public var tlsExpiryDays: Int64?
    /// Speed test result.
    public var speedMbps: Double?
    /// Monitor metadata, as the sample states it.
    public var name: String?
    public var kind: String?
    public var target: String?
    public var agent: String?
    public var description: String?
    public var checkInterval: Int64?

    /// Why a line is not a storable sample.
    public struct Problem: Error {
        /// In words.
        public let message: String
    }

    /// Reads the columns from a line without building a JSON value for it.
    public static func read(_ line: UnsafeBufferPointer<UInt8>) throws -> SampleLine {
        let fields: [FieldRange]
        do {
            fields = try JSONParser.scanObject(line)
        } catch {
            throw Problem(message: "not valid JSON: \(error)")
        }
        let reader = FieldReader(line: line)
        var type: String?
        var monitor: String?
        var at: Int64?
        var atText: String?
        var status: String?
        var sample = SampleLine(monitor: "", at: 0, status: .unknown)
        for field in fields {
            let key = UnsafeBufferPointer(rebasing: line[field.keyStart..<field.keyEnd])
            switch key.count {
            case 2:
                if equals(key, "at") { atText = try reader.string(field, "at"); at = atText.flatMap(Timestamp.parse) }
                else if equals(key, "ip") { break }
            case 4:
                if equals(key, "type") { type = try reader.string(field, "type") }
                else if equals(key, "name") { sample.name = try reader.string(field, "name") }
                else if equals(key, "kind") { sample.kind = try reader.string(field, "kind") }
                else if equals(key, "code") { sample.code = try reader.integer(field, "code") }
            case 5:
                if equals(key, "agent") { sample.agent = try reader.string(field, "agent") }
            case 6:
                if equals(key, "status") { status = try reader.string(field, "status") }
                else if equals(key, "reason") { sample.reason = try reader.string(field, "reason") }
                else if equals(key, "target") { sample.target = try reader.string(field, "target") }
            case 7:
                if equals(key, "monitor") { monitor = try reader.string(field, "monitor") }
                else if equals(key, "message") { sample.message = try reader.string(field, "message") }
            case 10:
                if equals(key, "latency_ms") { sample.latencyMs = try reader.number(field, "latency_ms") }
                else if equals(key, "speed_mbps") { sample.speedMbps = try reader.number(field, "speed_mbps") }
            case 11:
                if equals(key, "description") { sample.description = try reader.string(field, "description") }
            case 14:
                if equals(key, "check_interval") { sample.checkInterval = try reader.number(field, "check_interval").map { Int64($0.rounded()) } }
            case 15:
                if equals(key, "tls_expiry_days") { sample.tlsExpiryDays = try reader.integer(field, "tls_expiry_days") }
            default:
                break
            }
        }
        guard let type else { throw Problem(message: "record has no 'type' (a sample has \"type\":\"sample\")") }
        guard type == "sample" else { throw Problem(message: "a '\(type)' record is not a sample; only samples are stored") }
        guard let monitor, !monitor.isEmpty else { throw Problem(message: "sample has no 'monitor'") }
        guard let atText else { throw Problem(message: "sample has no 'at'") }
        guard let at else { throw Problem(message: "sample 'at' is not an RFC 3339 time: '\(atText)'") }
        guard let status else { throw Problem(message: "sample has no 'status'") }
        guard let parsed = SampleStatus(rawValue: status) else {
            throw Problem(message: "sample 'status' must be up, degraded, down, error or unknown, not '\(status)'")
        }
        sample.monitor = monitor
        sample.at = at
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

    private func value(_ field: FieldRange) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])
    }

    private func isNull(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count == 4 && bytes[0] == UInt8(ascii: "n")
    }

    /// A string field (nil for null); any other type is an error.
    func string(_ field: FieldRange, _ name: String) throws -> String? {
        let bytes = value(field)
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
        let bytes = value(field)
        if isNull(bytes) { return nil }
        guard let first = bytes.first, first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39),
              let number = Double(String(decoding: bytes, as: UTF8.self)) else {
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

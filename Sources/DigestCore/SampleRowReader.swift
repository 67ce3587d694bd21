import VitalsKit

/// Turns `sample` lines into rows: validates the line, finds the few fields digest reads,
/// and keeps every other byte untouched (nothing is built per line but the row).
///
/// Records of another `type` are skipped without a word (a mixed stream is fine); a line that
/// is not a valid sample is an error naming the field.
public struct SampleScanner {
    /// What one line turned out to be.
    public enum Outcome: Equatable {
        /// A valid sample.
        case sample(SampleRow)
        /// A record of another type, or a blank line.
        case skipped
        /// Not a valid sample; the message says why.
        case invalid(String)
    }

    /// The monitors seen so far.
    public let services: ServiceTable
    /// Samples after this instant are left out (`--now`); nil for no limit.
    let notAfter: Int64?
    private var sequence: UInt64 = 0
    private var scratch: [UInt8] = []

    /// The field ranges of the current line, one array reused for every line.
    private var fields: [FieldRange] = []

    /// Creates a scanner adding monitors to `services`.
    public init(services: ServiceTable, notAfter: Int64?) {
        self.services = services
        self.notAfter = notAfter
    }

    /// Reads one line.
    public mutating func scan(_ line: UnsafeBufferPointer<UInt8>) -> Outcome {
        var first = 0
        while first < line.count, line[first] == 0x20 || line[first] == 0x09 { first += 1 }
        if first == line.count { return .skipped }
        do {
            try JSONParser.scanObject(line, into: &fields)
        } catch {
            return .invalid("not valid JSON: \(error)")
        }
        var type: FieldRange?
        var monitor: FieldRange?
        var name: FieldRange?
        var at: FieldRange?
        var status: FieldRange?
        var latency: FieldRange?
        var speed: FieldRange?
        var reason: FieldRange?
        var message: FieldRange?
        for field in fields {
            let length = field.keyEnd - field.keyStart
            switch length {
            case 2 where Self.key(line, field, "at"): at = field
            case 4 where Self.key(line, field, "type"): type = field
            case 4 where Self.key(line, field, "name"): name = field
            case 6 where Self.key(line, field, "status"): status = field
            case 6 where Self.key(line, field, "reason"): reason = field
            case 7 where Self.key(line, field, "monitor"): monitor = field
            case 7 where Self.key(line, field, "message"): message = field
            case 10 where Self.key(line, field, "latency_ms"): latency = field
            case 10 where Self.key(line, field, "speed_mbps"): speed = field
            default: break
            }
        }
        if let type {
            guard line[type.valueStart] == UInt8(ascii: "\"") else { return .invalid("'type' is not a string") }
            if !Self.equals(line, type.valueStart + 1, type.valueEnd - 1, "sample") { return .skipped }
        }
        // monitor
        guard let monitor else { return .invalid("sample without 'monitor'") }
        guard line[monitor.valueStart] == UInt8(ascii: "\""), monitor.valueEnd - monitor.valueStart > 2 else {
            return .invalid("'monitor' is not a non-empty string")
        }
        let service: UInt32
        if let raw = Self.rawString(line, monitor) {
            service = services.intern(raw)
        } else {
            guard let decoded = Self.decodedString(line, monitor) else { return .invalid("'monitor' is not a valid string") }
            service = decoded.withUnsafeBufferPointer { services.intern($0) }
        }
        // at
        guard let at else { return .invalid("sample without 'at'") }
        guard line[at.valueStart] == UInt8(ascii: "\""),
              let instant = Timestamp.parse(bytes: UnsafeBufferPointer(rebasing: line[(at.valueStart + 1)..<(at.valueEnd - 1)])) else {
            return .invalid("'at' is not an RFC 3339 time: \(Self.text(line, at))")
        }
        // status
        guard let status else { return .invalid("sample without 'status'") }
        let statusIndex: UInt8
        if line[status.valueStart] == UInt8(ascii: "\"") {
            switch status.valueEnd - status.valueStart - 2 {
            case 2 where Self.equals(line, status.valueStart + 1, status.valueEnd - 1, "up"): statusIndex = StatusIndex.up
            case 4 where Self.equals(line, status.valueStart + 1, status.valueEnd - 1, "down"): statusIndex = StatusIndex.down
            case 5 where Self.equals(line, status.valueStart + 1, status.valueEnd - 1, "error"): statusIndex = StatusIndex.error
            case 7 where Self.equals(line, status.valueStart + 1, status.valueEnd - 1, "unknown"): statusIndex = StatusIndex.unknown
            case 8 where Self.equals(line, status.valueStart + 1, status.valueEnd - 1, "degraded"): statusIndex = StatusIndex.degraded
            default: return .invalid("'status' is \(Self.text(line, status)); expected up, degraded, down, error or unknown")
            }
        } else {
            return .invalid("'status' is \(Self.text(line, status)); expected up, degraded, down, error or unknown")
        }
        // latency_ms and speed_mbps: numbers or null
        var latencyMicros = SampleRow.none
        if let latency, !Self.isNull(line, latency) {
            guard let value = Self.thousandths(line, latency), value >= 0 else {
                return .invalid("'latency_ms' is \(Self.text(line, latency)); expected a number of milliseconds, 0 or more, or null")
            }
            latencyMicros = value
        }
        var speedMilli = SampleRow.none
        if let speed, !Self.isNull(line, speed) {
            guard let value = Self.thousandths(line, speed), value >= 0 else {
                return .invalid("'speed_mbps' is \(Self.text(line, speed)); expected a number of Mbit/s, 0 or more, or null")
            }
            speedMilli = value
        }
        if let name, line[name.valueStart] == UInt8(ascii: "\"") {
            if let raw = Self.rawString(line, name) {
                services.noteName(service, at: instant, name: raw)
            } else if let decoded = Self.decodedString(line, name) {
                decoded.withUnsafeBufferPointer { services.noteName(service, at: instant, name: $0) }
            }
        }
        if notAfter.map({ instant <= $0 }) ?? true, services.isLatest(service, at: instant) {
            let reasonBytes = reason.flatMap { line[$0.valueStart] == UInt8(ascii: "\"") ? Self.rawString(line, $0) : nil }
            scratch.removeAll(keepingCapacity: true)
            if let message, line[message.valueStart] == UInt8(ascii: "\"") {
                if let raw = Self.rawString(line, message) {
                    scratch.append(contentsOf: raw)
                } else if let decoded = Self.decodedString(line, message) {
                    scratch.append(contentsOf: decoded)
                }
            }
            services.noteLatest(service, at: instant, reason: reasonBytes, message: scratch)
        }
        sequence += 1
        return .sample(SampleRow(at: instant, latencyMicros: latencyMicros, speedMilli: speedMilli,
                                 sequence: sequence, service: service, status: statusIndex))
    }

    // MARK: - Bytes

    @inline(__always)
    private static func key(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange, _ name: StaticString) -> Bool {
        equals(line, field.keyStart, field.keyEnd, name)
    }

    @inline(__always)
    private static func equals(_ line: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ text: StaticString) -> Bool {
        guard end - start == text.utf8CodeUnitCount else { return false }
        let base = text.utf8Start
        for offset in 0..<(end - start) where line[start + offset] != base[offset] { return false }
        return true
    }

    private static func isNull(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> Bool {
        line[field.valueStart] == UInt8(ascii: "n")
    }

    /// The content of a string value without escapes, or nil when it has escapes (or is not a string).
    private static func rawString(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> UnsafeBufferPointer<UInt8>? {
        guard line[field.valueStart] == UInt8(ascii: "\"") else { return nil }
        let content = UnsafeBufferPointer(rebasing: line[(field.valueStart + 1)..<(field.valueEnd - 1)])
        if content.contains(UInt8(ascii: "\\")) { return nil }
        return content
    }

    /// A string value with its escapes decoded.
    private static func decodedString(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> [UInt8]? {
        let value = UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])
        guard let parsed = try? JSONParser.parse(value), let text = parsed.stringValue else { return nil }
        return Array(text.utf8)
    }

    /// A field's value as written, shortened for messages.
    private static func text(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> String {
        let raw = String(decoding: UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]), as: UTF8.self)
        return raw.count > 40 ? String(raw.prefix(40)) + "..." : raw
    }

    /// A JSON number as an integer count of thousandths, rounded half away from zero; nil if not a number.
    static func thousandths(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> Int64? {
        var index = field.valueStart
        let end = field.valueEnd
        var negative = false
        if line[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        guard index < end, line[index] >= 0x30, line[index] <= 0x39 else { return nil }
        var whole: Int64 = 0
        var simple = true
        while index < end, line[index] >= 0x30, line[index] <= 0x39 {
            if whole > 900_000_000_000_000 { simple = false; break }
            whole = whole * 10 + Int64(line[index] - 0x30)
            index += 1
        }
        var fraction: Int64 = 0
        var places = 0
        var roundUp = false
        if simple, index < end, line[index] == UInt8(ascii: ".") {
            index += 1
            while index < end, line[index] >= 0x30, line[index] <= 0x39 {
                if places < 3 {
                    fraction = fraction * 10 + Int64(line[index] - 0x30)
                } else if places == 3 {
                    roundUp = line[index] >= UInt8(ascii: "5")
                }
                places += 1
                index += 1
            }
        }
        if simple && index == end {
            while places < 3 { fraction *= 10; places += 1 }
            let value = whole * 1000 + fraction + (roundUp ? 1 : 0)
            return negative ? -value : value
        }
        // Exponents and huge numbers: the slow, general way.
        let text = String(decoding: UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]), as: UTF8.self)
        guard let value = Double(text), value.isFinite, abs(value) < 9.0e12 else { return nil }
        return Int64((value * 1000).rounded())
    }
}

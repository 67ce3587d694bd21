#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a field of a sample must hold, named in `SampleProblem.badValue`'s message.
public enum SampleValueKind: Sendable, Equatable {
    /// `monitor`.
    case nonEmptyString
    /// `at`.
    case time
    /// `status`.
    case status
    /// `reason`, `agent`, and the text fields tools read (`name`, `message`, ...).
    case text
    /// A measurement that can be negative.
    case number
    /// `latency_ms`, `speed_mbps`: 0 or more.
    case nonNegativeNumber
    /// `code`, `tls_expiry_days`.
    case wholeNumber

    /// The words after "expected" in a diagnostic.
    public var expectation: String {
        switch self {
        case .nonEmptyString: return "a non-empty string"
        case .time: return "an RFC 3339 time"
        case .status: return "up, degraded, down, error or unknown"
        case .text: return "a string or null"
        case .number: return "a number or null"
        case .nonNegativeNumber: return "a number, 0 or more, or null"
        case .wholeNumber: return "a whole number or null"
        }
    }
}

/// Why a line is not a usable sample: the one set of diagnostics every sample reader uses,
/// one wording each (vitals-records(7), READING SAMPLES). Tools report `message` as
/// `tool: file:line: message`.
public enum SampleProblem: Error, Equatable, Sendable {
    /// The line is longer than the reader's limit; its bytes were skipped.
    case lineTooLong(bytes: Int)
    /// The line is not one JSON object.
    case notJSON(JSONSyntaxError)
    /// A JSON object without a string `type`.
    case noType
    /// A sample without one of its required fields (`monitor`, `at`, `status`).
    case missing(String)
    /// A sample field whose value is not what the field holds; `value` is the JSON as written,
    /// shortened.
    case badValue(key: String, value: String, expected: SampleValueKind)

    /// The diagnostic, without the `tool: file:line: ` prefix.
    public var message: String {
        switch self {
        case .lineTooLong(let bytes): return "line is \(bytes) bytes, over the 16 MiB limit"
        case .notJSON(let error): return "not valid JSON: \(error)"
        case .noType: return "record has no 'type'"
        case .missing(let key): return "sample has no '\(key)'"
        case .badValue(let key, let value, let expected): return "sample '\(key)' is \(value); expected \(expected.expectation)"
        }
    }

    /// Whether the line was a JSON object: filters pass such a line on unchanged; a line that
    /// is not JSON (or was too long to read) is dropped.
    public var lineIsRecord: Bool {
        switch self {
        case .lineTooLong, .notJSON: return false
        case .noType, .missing, .badValue: return true
        }
    }

    /// A `badValue` for `field` of `line`, its value quoted by the one rule (`quoted`).
    public static func bad(
        _ key: String, _ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange,
        expected: SampleValueKind
    ) -> SampleProblem {
        .badValue(key: key, value: quoted(line, field), expected: expected)
    }

    /// The longest part of a value a diagnostic quotes, in characters.
    public static let quotedCharacters = 40

    /// The one quoting rule of every reader's diagnostics (the shared reader's, the store's,
    /// digest's and notify's): a field's value as written, its first `quotedCharacters`
    /// characters and `...` when it is longer, so a huge value never floods the error stream.
    public static func quoted(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> String {
        let text = String(decoding: UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd]), as: UTF8.self)
        return text.count > quotedCharacters ? String(text.prefix(quotedCharacters)) + "..." : text
    }
}

/// Where a tool reads its own fields of a sample line, during the spine reader's one pass
/// over the line's top-level fields.
public protocol SampleFieldReader {
    // Raw pointer: the key given as a `SampleKey` (the line's `LineBytes`, the key's start and
    // count), with `tag` and `key(_:is:)` reading it bounds-checked byte by byte, took 1.3% more
    // of digest's instructions and 1.7% more of detect-anomaly's on 50,000 bench lines (583.1 M
    // against 575.6 M; 509.2 M against 500.7 M), 0.85% of notify --dry-run's on 50,000 (1,195.4 M
    // against 1,185.3 M) and 0.50% of a SQLite ingest's on 100,000 (4,673.2 M against 4,649.7 M,
    // callgrind). With SampleLine's own reads safe too, see its figure in `read(_:extra:)`.
    /// Called, in line order, for each top-level field that is not a spine field (`type`,
    /// `monitor`, `at`, `status`, `reason`, `latency_ms`, `agent`), with the key's bytes
    /// (escapes as written) and the field's ranges. A key given twice is passed twice; keep
    /// the last to read as `JSONObject` does. Records of every type pass here: judge the
    /// values only once `SampleLine.read` said `.sample`.
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange)
}

/// A `SampleFieldReader` wanting nothing beyond the spine.
public struct NoSampleFields: SampleFieldReader {
    /// Creates one.
    public init() {}
    // The raw key: its figure is on `SampleFieldReader.take`.
    /// Ignores the field.
    @inlinable public mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {}
}

/// The one reader of `sample` lines: finds a line's top-level fields, decides what the line
/// is, and reads and checks the spine fields in place, without building JSON values; a tool
/// reads its own fields in the same pass through a `SampleFieldReader`.
///
/// One reader serves a whole input: it keeps its field array from line to line. What `read`
/// fills (ranges into the line, and the values) is valid until the next `read`, and only
/// while the line's bytes are.
public struct SampleLine {
    /// What a line turned out to be.
    public enum Kind: Equatable, Sendable {
        /// A sample whose spine is valid: the properties below hold it.
        case sample
        /// A record of another type: filters pass it on, sinks skip it, nobody reports it.
        case otherRecord
        /// An empty line, or spaces and tabs only: not a record, ignored.
        case blank
        /// Not a usable sample (see `SampleProblem.lineIsRecord` for whether to pass it on).
        case problem(SampleProblem)
    }

    /// The line last read.
    public var line = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    /// Its top-level fields, in order.
    public var fields: [FieldRange] = []
    /// `monitor`: a non-empty string (escapes as written; see `withMonitor`).
    public var monitorField = FieldRange(keyStart: 0, keyEnd: 0, valueStart: 0, valueEnd: 0)
    /// Whether `monitor` is written without escapes, so its bytes are the id itself.
    public var monitorIsPlain = true
    /// `at`, milliseconds since the epoch.
    public var atMs: Int64 = 0
    /// `status`.
    public var status = SampleStatus.unknown
    /// Where `status` is (filters may rewrite it).
    public var statusField = FieldRange(keyStart: 0, keyEnd: 0, valueStart: 0, valueEnd: 0)
    /// `reason` when present: a string or null.
    public var reasonField: FieldRange?
    /// `latency_ms` when present: a number, 0 or more, or null.
    public var latencyField: FieldRange?
    /// `agent` when present: a string or null.
    public var agentField: FieldRange?

    /// Creates a reader.
    public init() {
        fields.reserveCapacity(32)
    }

    /// Reads a line with the spine only.
    @inlinable
    public mutating func read(_ line: LineBytes) -> Kind { read(line.buffer) }

    /// Reads a line as `read(_:extra:)` does, from the view `LineReader` hands out.
    @inlinable
    public mutating func read<Extra: SampleFieldReader>(_ line: LineBytes, extra: inout Extra) -> Kind {
        read(line.buffer, extra: &extra)
    }

    /// Reads a line with the spine only.
    @inlinable
    public mutating func read(_ line: UnsafeBufferPointer<UInt8>) -> Kind {
        var none = NoSampleFields()
        return read(line, extra: &none)
    }

    /// Reads a line: what it is, and when it is a sample, its spine. Every field that is not
    /// a spine field is handed to `extra` as it is met.
    @inlinable
    public mutating func read<Extra: SampleFieldReader>(_ line: UnsafeBufferPointer<UInt8>, extra: inout Extra) -> Kind {
        self.line = line
        do {
            try JSONParser.scanObject(line, into: &fields)
        } catch {
            return Self.isBlank(line) ? .blank : .problem(.notJSON(error))
        }
        var type: FieldRange?
        var monitor: FieldRange?
        var at: FieldRange?
        var status: FieldRange?
        var reason: FieldRange?
        var latency: FieldRange?
        var agent: FieldRange?
        // Raw pointers, for this file's reads of the line (here, `value`, `hasEscape`, `status`,
        // and the views `withMonitor`, `raw`, `withText` and `plainText` hand out): reading
        // them through LineBytes, bounds-checked (bytes compared one checked read at a time, the
        // views cut after a check of their range), with the keys handed to readers as
        // `SampleKey`s, measured together, took 5.2% more of digest's instructions and 3.6% more
        // of detect-anomaly's on 50,000 bench lines (605.4 M against 575.6 M; 518.5 M against
        // 500.7 M), 3.7% of notify --dry-run's on 50,000 (1,228.6 M against 1,185.3 M) and 1.8%
        // of a SQLite ingest's on 100,000 (4,735.5 M against 4,649.7 M, callgrind). The keys
        // alone cost 0.5-1.7% (the figure on `SampleFieldReader.take`).
        let base = line.baseAddress!
        fields.withUnsafeBufferPointer { fields in
            for field in fields {
                let key = base + field.keyStart
                let count = field.keyEnd - field.keyStart
                switch Self.tag(key, count) {
                case 0x2_61 where Self.key(key, is: "at"): at = field
                case 0x4_74 where Self.key(key, is: "type"): type = field
                case 0x5_61 where Self.key(key, is: "agent"): agent = field
                case 0x6_73 where Self.key(key, is: "status"): status = field
                case 0x6_72 where Self.key(key, is: "reason"): reason = field
                case 0x7_6D where Self.key(key, is: "monitor"): monitor = field
                case 0xA_6C where Self.key(key, is: "latency_ms"): latency = field
                default: extra.take(key: key, count: count, field: field)
                }
            }
        }
        // What the line is.
        guard let type else { return .problem(.noType) }
        if !Self.value(base, type, is: "\"sample\"") {
            guard base[type.valueStart] == UInt8(ascii: "\"") else { return .problem(.noType) }
            if !Self.escapedString(line, type, is: "sample") { return .otherRecord }
        }
        // The spine, in the order the contract lists it.
        guard let monitor else { return .problem(.missing("monitor")) }
        guard base[monitor.valueStart] == UInt8(ascii: "\""), monitor.valueEnd - monitor.valueStart > 2 else {
            return .problem(SampleProblem.bad("monitor", line, monitor, expected: .nonEmptyString))
        }
        monitorField = monitor
        monitorIsPlain = !Self.hasEscape(base, monitor)
        guard let at else { return .problem(.missing("at")) }
        guard base[at.valueStart] == UInt8(ascii: "\""),
            let milliseconds = Timestamp.parse(
                bytes: UnsafeBufferPointer(
                    start: base + at.valueStart + 1,
                    count: at.valueEnd - at.valueStart - 2))
        else {
            return .problem(SampleProblem.bad("at", line, at, expected: .time))
        }
        atMs = milliseconds
        guard let status else { return .problem(.missing("status")) }
        guard let parsed = Self.status(line, status) else {
            return .problem(SampleProblem.bad("status", line, status, expected: .status))
        }
        self.status = parsed
        statusField = status
        if let reason, !Self.isTextOrNull(base[reason.valueStart]) {
            return .problem(SampleProblem.bad("reason", line, reason, expected: .text))
        }
        reasonField = reason
        if let latency, !Self.isNonNegativeNumberOrNull(line, latency) {
            return .problem(SampleProblem.bad("latency_ms", line, latency, expected: .nonNegativeNumber))
        }
        latencyField = latency
        if let agent, !Self.isTextOrNull(base[agent.valueStart]) {
            return .problem(SampleProblem.bad("agent", line, agent, expected: .text))
        }
        agentField = agent
        return .sample
    }

    // MARK: - Values of the sample last read

    /// Calls `body` with the monitor id's UTF-8 bytes (escapes resolved).
    @inlinable
    public func withMonitor<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if monitorIsPlain {
            return try body(UnsafeBufferPointer(rebasing: line[(monitorField.valueStart + 1)..<(monitorField.valueEnd - 1)]))
        }
        var decoded = text(monitorField) ?? ""
        return try decoded.withUTF8 { try body($0) }
    }

    /// The monitor id.
    public var monitor: String { withMonitor { String(decoding: $0, as: UTF8.self) } }

    /// `latency_ms`; nil when absent or null.
    public var latencyMs: Double? { latencyField.flatMap { JSONNumber.value(raw($0)) } }

    /// `reason`; nil when absent or null.
    public var reason: String? { text(reasonField) }

    /// `agent`; nil when absent or null.
    public var agent: String? { text(agentField) }

    /// The top-level field named `name` of the line last read (any record type); nil when absent.
    public func field(named name: String) -> FieldRange? {
        let wanted = Array(name.utf8)
        return fields.first { field in
            field.keyEnd - field.keyStart == wanted.count
                && wanted.withUnsafeBufferPointer { memcmp(line.baseAddress! + field.keyStart, $0.baseAddress!, wanted.count) == 0 }
        }
    }

    /// A field's value as written.
    @inlinable
    public func raw(_ field: FieldRange) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])
    }

    /// A string field, decoded; nil when absent or not a string.
    public func text(_ field: FieldRange?) -> String? {
        guard let field else { return nil }
        return Self.decodedString(line, field)
    }

    /// Calls `body` with a string field's UTF-8 bytes, decoding escapes only when there are
    /// any; nil bytes when absent or not a string.
    public func withText<R>(_ field: FieldRange?, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        try Self.withText(line, field, body)
    }

    /// `withText` over `line`, for a caller that holds the reader in a property it is changing.
    public static func withText<R>(
        _ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange?, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R
    ) rethrows -> R {
        guard let field, line[field.valueStart] == UInt8(ascii: "\"") else { return try body(nil) }
        if let plain = plainText(line, field) { return try body(plain) }
        var decoded = Self.decodedString(line, field) ?? ""
        return try decoded.withUTF8 { try body($0) }
    }

    /// A string value's bytes between its quotes when it has no escapes; nil when it has any,
    /// or is not a string (a vocabulary word, `reason`, is only ever read this way).
    public static func plainText(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> UnsafeBufferPointer<UInt8>? {
        guard line[field.valueStart] == UInt8(ascii: "\""), !hasEscape(line.baseAddress!, field) else { return nil }
        return UnsafeBufferPointer(rebasing: line[(field.valueStart + 1)..<(field.valueEnd - 1)])
    }

    // MARK: - Bytes
    // Raw reads, kept with the figure in `read(_:extra:)`.

    /// A key's length and first byte in one integer, `0x2_61` for a two-byte key starting with
    /// "a": switching on it is one jump, where a switch on the pair compares case by case.
    /// Then `key(_:is:)` confirms the name. The first byte of an empty key is its closing
    /// quote, still inside the line. Measured with callgrind: the spine's seven keys and the
    /// store's thirteen take 1-2% fewer instructions per run this way; digest (six keys) and
    /// notify (eight) switch on it too, with no loss (their totals on 50,000 bench lines fell
    /// 0.9% and 0.1% with this and the round's other changes). Only detect-anomaly's three keys
    /// stay a switch on the pair, which takes 3.5% fewer of its instructions (the figure is
    /// beside it). `KeyTagTests` holds every hand-written tag to its name.
    @inlinable @inline(__always)
    public static func tag(_ key: UnsafePointer<UInt8>, _ count: Int) -> Int {
        count &<< 8 | Int(key[0])
    }

    /// Whether the key at `key` (whose length the caller checked) is `name`; for tools'
    /// `SampleFieldReader`s too. Keys written with escapes never match.
    @inlinable @inline(__always)
    public static func key(_ key: UnsafePointer<UInt8>, is name: StaticString) -> Bool {
        memcmp(key, name.utf8Start, name.utf8CodeUnitCount) == 0
    }

    /// Whether a value is written exactly as `text` (quotes included for strings).
    @inlinable @inline(__always)
    static func value(_ base: UnsafePointer<UInt8>, _ field: FieldRange, is text: StaticString) -> Bool {
        field.valueEnd - field.valueStart == text.utf8CodeUnitCount
            && memcmp(base + field.valueStart, text.utf8Start, text.utf8CodeUnitCount) == 0
    }

    /// Whether a string value has a backslash in it.
    @inlinable
    static func hasEscape(_ base: UnsafePointer<UInt8>, _ field: FieldRange) -> Bool {
        memchr(base + field.valueStart, Int32(UInt8(ascii: "\\")), field.valueEnd - field.valueStart) != nil
    }

    @inlinable @inline(__always)
    static func isTextOrNull(_ first: UInt8) -> Bool {
        first == UInt8(ascii: "\"") || first == UInt8(ascii: "n")
    }

    /// A number 0 or more (negative zero included), or null. The value is valid JSON already,
    /// so its first byte tells its type.
    @inlinable
    static func isNonNegativeNumberOrNull(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> Bool {
        let first = line[field.valueStart]
        if (first >= 0x30 && first <= 0x39) || first == UInt8(ascii: "n") { return true }
        return first == UInt8(ascii: "-") && JSONNumber.value(UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])) == 0
    }

    /// The status a value names; nil when it is not one of the five.
    @inlinable
    static func status(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> SampleStatus? {
        let base = line.baseAddress!
        switch field.valueEnd - field.valueStart {
        case 4 where value(base, field, is: "\"up\""): return .up
        case 6 where value(base, field, is: "\"down\""): return .down
        case 7 where value(base, field, is: "\"error\""): return .error
        case 9 where value(base, field, is: "\"unknown\""): return .unknown
        case 10 where value(base, field, is: "\"degraded\""): return .degraded
        default: return escapedStatus(line, field)
        }
    }

    /// A status written with escapes (`"\u0075p"`), the slow way.
    @usableFromInline
    static func escapedStatus(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> SampleStatus? {
        guard line[field.valueStart] == UInt8(ascii: "\""), hasEscape(line.baseAddress!, field),
            let text = decodedString(line, field)
        else { return nil }
        return SampleStatus(rawValue: text)
    }

    /// Whether a string value written with escapes decodes to `word`.
    @usableFromInline
    static func escapedString(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange, is word: String) -> Bool {
        hasEscape(line.baseAddress!, field) && decodedString(line, field) == word
    }

    /// A string value, decoded; nil when it is not a string.
    @usableFromInline
    static func decodedString(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange) -> String? {
        guard line[field.valueStart] == UInt8(ascii: "\"") else { return nil }
        if !hasEscape(line.baseAddress!, field) {
            return String(decoding: UnsafeBufferPointer(rebasing: line[(field.valueStart + 1)..<(field.valueEnd - 1)]), as: UTF8.self)
        }
        return (try? JSONParser.parse(UnsafeBufferPointer(rebasing: line[field.valueStart..<field.valueEnd])))?.stringValue
    }

    /// Whether a line is empty or spaces and tabs only.
    @usableFromInline
    static func isBlank(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }
}

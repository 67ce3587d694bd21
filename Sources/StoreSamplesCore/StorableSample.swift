import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (the line and its text fields are views that SQLite binds in
// place; ClickHouse's rows copy them). JSONNumber and SampleProblem, VitalsKit's readers, take the
// same view. The store's own checks read the line through LineBytes, bounds-checked: 0.89% more of
// a SQLite ingest's instructions than through the raw view on 100,000 bench lines (4,666.6 M
// against 4,625.2 M, callgrind), under the 1% that keeps unsafe code.

/// One sample as the store keeps it: the spine the shared reader checked, plus the columns
/// only the store reads. Text fields are byte ranges into the line, decoded only when needed,
/// so a value is valid only while the line's bytes are (until the reader's next line).
struct StorableSample {
    /// The line itself.
    let line: UnsafeBufferPointer<UInt8>
    /// The monitor id.
    let monitor: String
    /// When the check started, ms since the epoch.
    let at: Int64
    /// The status.
    let status: SampleStatus
    /// Latency in ms.
    let latencyMs: Double?
    /// The HTTP code.
    var code: Int64?
    /// Certificate days left.
    var tlsExpiryDays: Int64?
    /// Speed test result.
    var speedMbps: Double?
    /// The monitor's check interval, seconds.
    var checkInterval: Int64?
    /// Whether the monitor is enabled, when the sample says.
    var enabled: Bool?
    /// The raw range of the monitor's `config` object (nil when absent or null).
    var configRange: FieldRange?
    /// The raw range of the agent's name (`agent_name`).
    var agentNameRange: FieldRange?
    /// Raw value ranges of the text fields (strings or null).
    var reasonRange: FieldRange?
    var messageRange: FieldRange?
    /// Monitor metadata, as raw value ranges (strings or null).
    var nameRange: FieldRange?
    var kindRange: FieldRange?
    var targetRange: FieldRange?
    var agentRange: FieldRange?
    var descriptionRange: FieldRange?

    /// The sample `reader` read last, with the store's own fields `own` read in its pass;
    /// throws when one of those has the wrong type.
    init(_ reader: SampleLine, _ own: StoredFields) throws {
        try self.init(
            line: reader.line, monitor: reader.monitor, at: reader.atMs, status: reader.status,
            latencyMs: reader.latencyMs, agent: reader.agentField, own)
        reasonRange = Self.stringOnly(LineBytes(unsafeBuffer: line), reader.reasonField)
    }

    /// A `monitor` record (vitals-records(7) MONITOR), which a probe writes for a target that
    /// is switched off: it states the monitor's name, kind, target, interval, `enabled` and
    /// config, and is no check (the store registers or refreshes the monitor, stores no sample).
    /// `reader` has just read the line as `.otherRecord`.
    static func monitorRecord(_ reader: SampleLine, _ own: StoredFields) throws -> StorableSample {
        let line = reader.line
        func written(_ field: FieldRange) -> String { SampleProblem.quoted(line, field) }
        guard let monitorField = reader.field(named: "monitor") else { throw StoreRefusal("monitor record has no 'monitor'") }
        guard let monitor = reader.text(monitorField), !monitor.isEmpty else {
            throw StoreRefusal("monitor record 'monitor' is \(written(monitorField)); expected a non-empty string")
        }
        guard let atField = reader.field(named: "at") else { throw StoreRefusal("monitor record has no 'at'") }
        guard let atText = reader.text(atField), let at = Timestamp.parse(atText) else {
            throw StoreRefusal("monitor record 'at' is \(written(atField)); expected an RFC 3339 time")
        }
        let agent = reader.field(named: "agent")
        if let agent, line[agent.valueStart] != UInt8(ascii: "\""), line[agent.valueStart] != UInt8(ascii: "n") {
            throw StoreRefusal("monitor record 'agent' is \(written(agent)); expected a string or null")
        }
        return try StorableSample(line: line, monitor: monitor, at: at, status: .unknown, latencyMs: nil, agent: agent, own)
    }

    private init(
        line: UnsafeBufferPointer<UInt8>, monitor: String, at: Int64, status: SampleStatus, latencyMs: Double?,
        agent: FieldRange?, _ own: StoredFields
    ) throws {
        self.line = line
        let line = LineBytes(unsafeBuffer: line)
        self.monitor = monitor
        self.at = at
        self.status = status
        self.latencyMs = latencyMs
        agentRange = Self.stringOnly(line, agent)
        code = try Self.integer(line, own.code, "code")
        tlsExpiryDays = try Self.integer(line, own.tlsExpiryDays, "tls_expiry_days")
        speedMbps = try Self.number(line, own.speedMbps, "speed_mbps", .nonNegativeNumber)
        checkInterval = try Self.number(line, own.checkInterval, "check_interval", .number).map { Int64($0.rounded()) }
        messageRange = try Self.text(line, own.message, "message")
        nameRange = try Self.text(line, own.name, "name")
        kindRange = try Self.text(line, own.kind, "kind")
        targetRange = try Self.text(line, own.target, "target")
        descriptionRange = try Self.text(line, own.description, "description")
        agentNameRange = try Self.text(line, own.agentName, "agent_name")
        if let field = own.config, !Self.isNull(line, field) {
            guard line[field.valueStart] == UInt8(ascii: "{") else {
                throw line.withUnsafeBufferPointer { StoreRefusal.bad("config", $0, field, expected: "an object or null") }
            }
            configRange = field
        }
        if let field = own.enabled, !Self.isNull(line, field) {
            switch line[field.valueStart] {
            case UInt8(ascii: "t"): enabled = true
            case UInt8(ascii: "f"): enabled = false
            default: throw line.withUnsafeBufferPointer { StoreRefusal.bad("enabled", $0, field, expected: "true, false or null") }
            }
        }
    }

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
    var reason: String? { text(reasonRange) }
    /// The message.
    var message: String? { text(messageRange) }
    /// The name the sample gives its monitor.
    var name: String? { text(nameRange) }
    /// The kind.
    var kind: String? { text(kindRange) }
    /// The target.
    var target: String? { text(targetRange) }
    /// The agent.
    var agent: String? { text(agentRange) }
    /// The description.
    var description: String? { text(descriptionRange) }
    /// The agent's name, apart from its id.
    var agentName: String? { text(agentNameRange) }

    /// Reads one line the way `store-samples` ingests it (for tests and one-off callers).
    static func read(_ line: UnsafeBufferPointer<UInt8>) throws -> StorableSample? {
        var reader = SampleLine()
        var own = StoredFields()
        switch reader.read(line, extra: &own) {
        case .sample: return try StorableSample(reader, own)
        case .otherRecord, .blank: return nil
        case .problem(let problem): throw problem
        }
    }

    // MARK: - Checking the store's own fields

    /// A string-or-null field the reader checked, as nil when null.
    private static func stringOnly(_ line: LineBytes, _ field: FieldRange?) -> FieldRange? {
        guard let field, line[field.valueStart] == UInt8(ascii: "\"") else { return nil }
        return field
    }

    private static func isNull(_ line: LineBytes, _ field: FieldRange) -> Bool {
        line[field.valueStart] == UInt8(ascii: "n")
    }

    /// The field if it is a string; nil for null or absent; any other type is a problem.
    private static func text(_ line: LineBytes, _ field: FieldRange?, _ key: String) throws(SampleProblem) -> FieldRange? {
        guard let field, !isNull(line, field) else { return nil }
        guard line[field.valueStart] == UInt8(ascii: "\"") else {
            throw line.withUnsafeBufferPointer { SampleProblem.bad(key, $0, field, expected: .text) }
        }
        return field
    }

    /// A number (nil for null or absent).
    private static func number(
        _ line: LineBytes, _ field: FieldRange?, _ key: String,
        _ kind: SampleValueKind
    ) throws(SampleProblem) -> Double? {
        guard let field, !isNull(line, field) else { return nil }
        guard
            let number = line.withUnsafeBufferPointer({
                JSONNumber.value(UnsafeBufferPointer(rebasing: $0[field.valueStart..<field.valueEnd]))
            }),
            kind != .nonNegativeNumber || number >= 0
        else {
            throw line.withUnsafeBufferPointer { SampleProblem.bad(key, $0, field, expected: kind) }
        }
        return number
    }

    /// A whole number (nil for null or absent).
    private static func integer(_ line: LineBytes, _ field: FieldRange?, _ key: String) throws(SampleProblem) -> Int64? {
        guard let number = try number(line, field, key, .wholeNumber) else { return nil }
        guard number == number.rounded(), abs(number) < 9e15 else {
            throw line.withUnsafeBufferPointer { SampleProblem.bad(key, $0, field!, expected: .wholeNumber) }
        }
        return Int64(number)
    }
}

/// Why the store refuses a sample the shared reader accepted: a field only the store reads
/// has the wrong type, or the sample came from an agent it must not take. Reported as the
/// line's diagnostic; the rest of the input goes on.
struct StoreRefusal: Error {
    /// In words, without the `tool: file:line: ` prefix.
    let message: String

    init(_ message: String) { self.message = message }

    /// A store field whose value is not what the field holds.
    static func bad(_ key: String, _ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange, expected: String) -> StoreRefusal {
        StoreRefusal("sample '\(key)' is \(SampleProblem.quoted(line, field)); expected \(expected)")
    }
}

/// The fields only the store reads, found in the spine reader's pass over a line.
struct StoredFields: SampleFieldReader {
    var code: FieldRange?
    var tlsExpiryDays: FieldRange?
    var speedMbps: FieldRange?
    var checkInterval: FieldRange?
    var message: FieldRange?
    var name: FieldRange?
    var kind: FieldRange?
    var target: FieldRange?
    var description: FieldRange?
    var config: FieldRange?
    var enabled: FieldRange?
    var agentName: FieldRange?
    /// `monitor_id`: only looked for, so a line passed on that has one keeps it (see `Ingester.appendPassingOn`).
    var monitorID: FieldRange?

    // The raw key: the figure that keeps it is on `SampleFieldReader.take`.
    @inline(__always)
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {
        switch SampleLine.tag(key, count) {
        case 0x4_63 where SampleLine.key(key, is: "code"): code = field
        case 0x4_6E where SampleLine.key(key, is: "name"): name = field
        case 0x4_6B where SampleLine.key(key, is: "kind"): kind = field
        case 0x6_74 where SampleLine.key(key, is: "target"): target = field
        case 0x6_63 where SampleLine.key(key, is: "config"): config = field
        case 0x7_65 where SampleLine.key(key, is: "enabled"): enabled = field
        case 0xA_61 where SampleLine.key(key, is: "agent_name"): agentName = field
        case 0x7_6D where SampleLine.key(key, is: "message"): message = field
        case 0xA_73 where SampleLine.key(key, is: "speed_mbps"): speedMbps = field
        case 0xA_6D where SampleLine.key(key, is: "monitor_id"): monitorID = field
        case 0xB_64 where SampleLine.key(key, is: "description"): description = field
        case 0xE_63 where SampleLine.key(key, is: "check_interval"): checkInterval = field
        case 0xF_74 where SampleLine.key(key, is: "tls_expiry_days"): tlsExpiryDays = field
        default: break
        }
    }
}

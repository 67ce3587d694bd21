import VitalsKit

/// Turns `sample` lines into rows: the shared reader checks the line and its spine, and in the
/// same pass finds the few fields digest adds (name, speed, message, check_interval); nothing is
/// built per line but the row. Each row names its place (`ServiceTable` keeps each place's
/// newest sample); the place rule judges the rows later, in time order (`PlaceSweep`).
///
/// Records of another `type` are skipped without a word (a mixed stream is fine); an object
/// without `type`, and a sample with a bad field, are errors in the one wording of
/// `SampleProblem`.
struct SampleRowReader {
    /// What one line turned out to be.
    enum Outcome: Equatable {
        /// A valid sample.
        case sample(SampleRow)
        /// A record of another type, or a blank line.
        case skipped
        /// Not a valid sample.
        case invalid(SampleProblem)
    }

    /// The monitors seen so far.
    let services: ServiceTable
    /// Samples after this instant are left out (`--now`); nil for no limit.
    let notAfter: Int64?
    /// The one place whose samples are read (`--agent`: its agent's bytes, empty for local); nil for every place.
    let onlyPlace: [UInt8]?
    private var sequence: UInt64 = 0
    private var scratch: [UInt8] = []
    /// The one sample reader, kept from line to line.
    private var reader = SampleLine()

    /// Creates a reader adding monitors to `services`, of every place or only of the place named
    /// `onlyPlace` (`--agent`: an agent, or "local" for the samples that name none).
    init(services: ServiceTable, notAfter: Int64?, onlyPlace: String? = nil) {
        self.services = services
        self.notAfter = notAfter
        self.onlyPlace = onlyPlace.map { Array(($0 == PlaceRule.localName ? "" : $0).utf8) }
    }

    /// Reads one line.
    mutating func read(_ bytes: LineBytes) -> Outcome {
        var own = DigestFields()
        switch reader.read(bytes, extra: &own) {
        case .sample: break
        case .otherRecord, .blank: return .skipped
        case .problem(let problem): return .invalid(problem)
        }
        // The place: the agent's bytes, escapes decoded by the shared reader; empty for samples
        // naming none (or an empty name, or null): local.
        return SampleLine.withText(reader.line, reader.agentField) { agent in
            agent.map { readRest(bytes, own, agent: $0) } ?? readRest(bytes, own, agent: EmptyCollection())
        }
    }

    /// Reads the rest of a sample whose spine is read, from place `agent`. The bytes this file
    /// reads itself are read through `bytes`, bounds-checked: 0.66% more of digest's instructions
    /// than through the raw line on 50,000 bench lines (578.0 M against 574.2 M, callgrind), under
    /// the 1% that keeps unsafe code. `line` is the shared reader's view, for its own readers.
    private mutating func readRest<Agent: Collection<UInt8>>(_ bytes: LineBytes, _ own: DigestFields, agent: Agent) -> Outcome {
        let line = reader.line
        if let onlyPlace, !onlyPlace.elementsEqual(agent) { return .skipped }
        let service =
            reader.monitorIsPlain
            ? services.intern(bytes[(reader.monitorField.valueStart + 1)..<(reader.monitorField.valueEnd - 1)])
            : reader.withMonitor { services.intern($0) }
        let instant = reader.atMs
        let statusIndex: UInt8
        switch reader.status {
        case .up: statusIndex = StatusIndex.up
        case .degraded: statusIndex = StatusIndex.degraded
        case .down: statusIndex = StatusIndex.down
        case .error: statusIndex = StatusIndex.error
        case .unknown: statusIndex = StatusIndex.unknown
        }
        // latency_ms (checked by the reader) and speed_mbps: numbers 0 or more, or null
        var latencyMicros = SampleRow.none
        if let latency = reader.latencyField, bytes[latency.valueStart] != UInt8(ascii: "n") {
            guard let value = Self.thousandths(bytes, latency), value >= 0 else {
                return .invalid(SampleProblem.bad("latency_ms", line, latency, expected: .nonNegativeNumber))
            }
            latencyMicros = value
        }
        var speedMilli = SampleRow.none
        if let speed = own.speed, bytes[speed.valueStart] != UInt8(ascii: "n") {
            guard let value = Self.thousandths(bytes, speed), value >= 0 else {
                return .invalid(SampleProblem.bad("speed_mbps", line, speed, expected: .nonNegativeNumber))
            }
            speedMilli = value
        }
        // check_interval: a number or null, whole seconds as the store keeps them (0 or less: 60 s).
        var intervalMs: Int64 = 0
        if let interval = own.checkInterval, bytes[interval.valueStart] != UInt8(ascii: "n") {
            guard let value = JSONNumber.value(reader.raw(interval)) else {
                return .invalid(SampleProblem.bad("check_interval", line, interval, expected: .number))
            }
            let seconds = value.rounded()
            intervalMs = PlaceRule.intervalMs(checkIntervalSeconds: abs(seconds) < 9.0e15 ? Int64(seconds) : nil)
        }
        SampleLine.withText(line, own.name) { name in
            if let name { services.noteName(service, at: instant, name: name) }
        }
        sequence += 1
        var row = SampleRow(
            at: instant, latencyMicros: latencyMicros, speedMilli: speedMilli,
            sequence: sequence, service: service, status: statusIndex)
        if notAfter.map({ instant <= $0 }) ?? true {
            let place = services.place(service, agent: agent)
            if services.isLatest(service, place: place, at: instant) {
                let reasonBytes = reader.reasonField.flatMap { SampleLine.plainText(line, $0) }
                scratch.removeAll(keepingCapacity: true)
                SampleLine.withText(line, own.message) { message in
                    if let message { scratch.append(contentsOf: message) }
                }
                services.noteLatest(service, place: place, at: instant, status: reader.status, reason: reasonBytes, message: scratch)
            }
            // (Past 65,536 places of one monitor, the rest share the last index.)
            row.place = UInt16(min(place, Int(UInt16.max)))
            row.intervalMs = intervalMs
        }
        if let anomaly = own.anomaly { row.episode = AnomalyEpisodeState.read(bytes, anomaly)?.rawValue ?? 0 }
        if let attempts = own.attempts,
            let count = JSONNumber.value(reader.raw(attempts)),
            count >= 2
        {
            row.attempts = UInt8(min(count, 255))
        }
        return .sample(row)
    }

    // MARK: - Bytes

    /// A JSON number as an integer count of thousandths, rounded half away from zero; nil if not a number.
    static func thousandths(_ line: LineBytes, _ field: FieldRange) -> Int64? {
        var index = field.valueStart
        let end = field.valueEnd
        var negative = false
        if line[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < end, line[index] >= 0x30, line[index] <= 0x39 else { return nil }
        var whole: Int64 = 0
        var simple = true
        while index < end, line[index] >= 0x30, line[index] <= 0x39 {
            if whole > 900_000_000_000_000 {
                simple = false
                break
            }
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
            while places < 3 {
                fraction *= 10
                places += 1
            }
            let value = whole * 1000 + fraction + (roundUp ? 1 : 0)
            return negative ? -value : value
        }
        // Exponents and huge numbers: the slow, general way.
        let text = String(decoding: line[field.valueStart..<field.valueEnd], as: UTF8.self)
        guard let value = Double(text), value.isFinite, abs(value) < 9.0e12 else { return nil }
        return Int64((value * 1000).rounded())
    }
}

/// The fields digest reads beyond the spine, found in the reader's pass.
struct DigestFields: SampleFieldReader {
    var name: FieldRange?
    var speed: FieldRange?
    var message: FieldRange?
    var anomaly: FieldRange?
    var checkInterval: FieldRange?
    var attempts: FieldRange?

    // The raw key: the figure that keeps it is on `SampleFieldReader.take`.
    @inline(__always)
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {
        switch SampleLine.tag(key, count) {
        case 0x4_6E where SampleLine.key(key, is: "name"): name = field
        case 0x7_6D where SampleLine.key(key, is: "message"): message = field
        case 0x7_61 where SampleLine.key(key, is: "anomaly"): anomaly = field
        case 0xA_73 where SampleLine.key(key, is: "speed_mbps"): speed = field
        case 0xE_63 where SampleLine.key(key, is: "check_interval"): checkInterval = field
        case 0x8_61 where SampleLine.key(key, is: "attempts"): attempts = field
        default: break
        }
    }
}

import VitalsKit

/// A detector's judgement of one sample, written as the `anomaly` object.
protocol AnomalyReport {
    /// The verdict.
    var verdict: AnomalyVerdict { get }
    /// The score in [0, 1]: 0.5 is where the detector's threshold lies; 0 when unknown.
    var score: Double { get }
    /// Appends the detector's own fields (after `verdict` and `detector`, before `score`).
    func appendFields(to object: inout AnomalyObject)
    /// Each channel's evidence, which the user's verdicts are matched by; nil for a detector without channels.
    var channels: ChannelEvidence? { get }
    /// Sets the sample's own verdict (degrading when `over`, else stable) and score, as the monitor's
    /// sensitivity or the user's verdicts decide.
    mutating func rejudge(over: Bool, score: Double)
}

extension AnomalyReport {
    /// No channels: the user's verdicts and sensitivities do not apply.
    var channels: ChannelEvidence? { nil }
    /// Never called: only a report with channels is judged again.
    mutating func rejudge(over: Bool, score: Double) {}
}

/// The field names of one run: value fields carry the judged field's unit suffix
/// (`mean_ms` for `latency_ms`, `mean_mbps` for `speed_mbps`).
struct AnomalyKeys {
    let mean: [UInt8]
    let stddev: [UInt8]
    let threshold: [UInt8]
    let median: [UInt8]
    let level: [UInt8]
    let upper: [UInt8]
    let lower: [UInt8]

    init(unitSuffix: String) {
        func key(_ base: String) -> [UInt8] {
            var out: [UInt8] = []
            JSONText.appendString(base + unitSuffix, to: &out)
            out.append(UInt8(ascii: ":"))
            return out
        }
        mean = key("mean")
        stddev = key("stddev")
        threshold = key("threshold")
        median = key("median")
        level = key("level")
        upper = key("upper")
        lower = key("lower")
    }
}

/// Writes one `anomaly` object into a reusable byte buffer.
struct AnomalyObject: ~Copyable {
    /// The object's bytes once `write` returns, valid until the next `write`.
    // Raw: `LineBuffer`'s bytes, whose safe form costs 21.9% more of detect-anomaly's instructions
    // on 50,000 bench lines (608.9 M against 499.5 M, callgrind; see LineBuffer.swift).
    var bytes: UnsafeRawBufferPointer { buffer.bytes }
    let keys: AnomalyKeys
    private var buffer = LineBuffer(capacity: 512)
    private let detectorName: [UInt8]
    /// The text of an episode's `started_at`, kept from line to line.
    private var timeText: [UInt8] = []

    init(detector: DetectorKind, keys: AnomalyKeys) {
        self.keys = keys
        var name: [UInt8] = []
        JSONText.appendString(detector.rawValue, to: &name)
        detectorName = name
    }

    /// Writes `{"verdict":...,"detector":...,<fields>,"score":...,"episode":...}` for `report`
    /// and the sample's place in an episode: degrading at its onset and inside it, with the
    /// score halved after the onset (only an onset is a new detection), else the detector's own.
    mutating func write(_ report: some AnomalyReport, episode: EpisodeMark?) {
        buffer.removeAll()
        var verdict = report.verdict
        var score = min(1, max(0, report.score))
        if let episode {
            switch episode.state {
            case .onset: verdict = .degrading
            case .ongoing:
                verdict = .degrading
                score /= 2
            case .end: break
            }
        }
        switch verdict {
        case .unknown: buffer.append("{\"verdict\":\"unknown\",\"detector\":")
        case .stable: buffer.append("{\"verdict\":\"stable\",\"detector\":")
        case .degrading: buffer.append("{\"verdict\":\"degrading\",\"detector\":")
        }
        buffer.append(detectorName)
        report.appendFields(to: &self)
        buffer.append(",\"score\":")
        buffer.append(score, decimals: 3)
        if let episode {
            switch episode.state {
            case .onset: buffer.append(",\"episode\":{\"state\":\"onset\",\"id\":")
            case .ongoing: buffer.append(",\"episode\":{\"state\":\"ongoing\",\"id\":")
            case .end: buffer.append(",\"episode\":{\"state\":\"end\",\"id\":")
            }
            buffer.append(integer: Int(episode.id))
            buffer.append(",\"started_at\":\"")
            timeText.removeAll(keepingCapacity: true)
            Timestamp.append(milliseconds: episode.startedAtMs, to: &timeText)
            buffer.append(timeText)
            buffer.append("\",\"samples\":")
            buffer.append(integer: episode.samples)
            buffer.append(",\"duration_ms\":")
            buffer.append(integer: Int(episode.durationMs))
            buffer.append(",\"peak\":")
            buffer.append(min(1, max(0, episode.peak)), decimals: 3)
            buffer.append("}}")
        } else {
            buffer.append(",\"episode\":null}")
        }
    }

    /// The verdict written for `report` at `episode` (degrading inside an episode).
    static func verdict(_ report: some AnomalyReport, episode: EpisodeMark?) -> AnomalyVerdict {
        guard let episode, episode.state != .end else { return report.verdict }
        return .degrading
    }

    /// Adds `,"name":value` for a static key; nil and non-finite values are `null`.
    mutating func number(_ name: StaticString, _ value: Double?, decimals: Int = 3) {
        key(name)
        appendNumber(value, decimals: decimals)
    }

    /// Adds `,<key>value` for a prepared key (one of `keys`).
    mutating func number(key: [UInt8], _ value: Double?, decimals: Int = 3) {
        buffer.append(byte: UInt8(ascii: ","))
        buffer.append(key)
        appendNumber(value, decimals: decimals)
    }

    /// Adds `,"name":N`.
    mutating func int(_ name: StaticString, _ value: Int) {
        key(name)
        buffer.append(integer: value)
    }

    /// Adds `,"name":"value"` (or null) for a static value.
    mutating func word(_ name: StaticString, _ value: StaticString?) {
        key(name)
        if let value {
            buffer.append(byte: UInt8(ascii: "\""))
            buffer.append(value)
            buffer.append(byte: UInt8(ascii: "\""))
        } else {
            buffer.append("null")
        }
    }

    private mutating func key(_ name: StaticString) {
        buffer.append(",\"")
        buffer.append(name)
        buffer.append("\":")
    }

    private mutating func appendNumber(_ value: Double?, decimals: Int) {
        if let value { buffer.append(value, decimals: decimals) } else { buffer.append("null") }
    }
}

/// `x / (x + scale)` for x > 0, else 0: maps evidence onto [0, 1) with 0.5 at `scale`.
@inline(__always)
func evidenceScore(_ x: Double, scale: Double) -> Double {
    guard x > 0 else { return 0 }
    if x.isInfinite { return 1 }
    return x / (x + scale)
}

import VitalsKit

/// A detector's judgement of one sample, written as the `anomaly` object.
protocol AnomalyReport {
    /// The verdict.
    var verdict: Verdict { get }
    /// The score in [0, 1]: 0.5 is where the detector's threshold lies; 0 when unknown.
    var score: Double { get }
    /// Appends the detector's own fields (after `verdict` and `detector`, before `score`).
    func appendFields(to object: inout AnomalyObject)
}

/// The field names of one run: value fields carry the judged field's unit suffix
/// (`mean_ms` for `latency_ms`, `mean_mbps` for `speed_mbps`).
struct AnomalyKeys {
    let mean: [UInt8]
    let stddev: [UInt8]
    let threshold: [UInt8]
    let median: [UInt8]
    let level: [UInt8]

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
    }
}

/// Writes one `anomaly` object into a reusable byte buffer.
struct AnomalyObject {
    /// The bytes of the object once `write` returns.
    private(set) var bytes: [UInt8] = []
    let keys: AnomalyKeys
    private let detectorName: [UInt8]

    init(detector: DetectorKind, keys: AnomalyKeys) {
        self.keys = keys
        var name: [UInt8] = []
        JSONText.appendString(detector.rawValue, to: &name)
        detectorName = name
        bytes.reserveCapacity(256)
    }

    /// Writes `{"verdict":...,"detector":...,<fields>,"score":...}` for `report`.
    mutating func write(_ report: some AnomalyReport) {
        bytes.removeAll(keepingCapacity: true)
        JSONText.appendLiteral("{\"verdict\":\"", to: &bytes)
        switch report.verdict {
        case .unknown: JSONText.appendLiteral("unknown", to: &bytes)
        case .stable: JSONText.appendLiteral("stable", to: &bytes)
        case .degrading: JSONText.appendLiteral("degrading", to: &bytes)
        }
        JSONText.appendLiteral("\",\"detector\":", to: &bytes)
        bytes.append(contentsOf: detectorName)
        report.appendFields(to: &self)
        JSONText.appendLiteral(",\"score\":", to: &bytes)
        JSONText.appendFixed(min(1, max(0, report.score)), decimals: 3, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Adds `,"name":value` for a static key; nil and non-finite values are `null`.
    mutating func number(_ name: StaticString, _ value: Double?, decimals: Int = 3) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        appendNumber(value, decimals: decimals)
    }

    /// Adds `,<key>value` for a prepared key (one of `keys`).
    mutating func number(key: [UInt8], _ value: Double?, decimals: Int = 3) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(contentsOf: key)
        appendNumber(value, decimals: decimals)
    }

    /// Adds `,"name":N`.
    mutating func int(_ name: StaticString, _ value: Int) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        JSONText.appendLiteral("\":", to: &bytes)
        JSONText.appendInt(value, to: &bytes)
    }

    /// Adds `,"name":"value"` (or null) for a static value.
    mutating func word(_ name: StaticString, _ value: StaticString?) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        JSONText.appendLiteral("\":", to: &bytes)
        if let value {
            bytes.append(UInt8(ascii: "\""))
            value.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(UInt8(ascii: "\""))
        } else {
            JSONText.appendLiteral("null", to: &bytes)
        }
    }

    private mutating func appendNumber(_ value: Double?, decimals: Int) {
        if let value, value.isFinite {
            JSONText.appendFixed(value, decimals: decimals, to: &bytes)
        } else {
            JSONText.appendLiteral("null", to: &bytes)
        }
    }
}

/// `x / (x + scale)` for x > 0, else 0: maps evidence onto [0, 1) with 0.5 at `scale`.
@inline(__always)
func evidenceScore(_ x: Double, scale: Double) -> Double {
    guard x > 0 else { return 0 }
    if x.isInfinite { return 1 }
    return x / (x + scale)
}

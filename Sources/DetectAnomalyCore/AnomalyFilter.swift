import VitalsKit

/// What a run saw, for `--summary` and `--exit-status`.
public struct AnomalyTally: Sendable, Equatable {
    /// Records passed through that are not samples.
    public var otherRecords = 0
    /// Samples whose verdict was unknown (not judged, or too few points).
    public var unknown = 0
    /// Samples judged stable.
    public var stable = 0
    /// Samples judged degrading.
    public var degrading = 0
    /// Samples whose status was changed from up to degraded.
    public var promoted = 0

    /// The one-line summary.
    func line(monitors: Int) -> String {
        let samples = unknown + stable + degrading
        var text = "\(samples) sample\(samples == 1 ? "" : "s") of \(monitors) monitor\(monitors == 1 ? "" : "s"): "
            + "\(degrading) degrading, \(stable) stable, \(unknown) unknown"
        if promoted > 0 { text += "; \(promoted) promoted from up to degraded" }
        if otherRecords > 0 { text += "; \(otherRecords) other record\(otherRecords == 1 ? "" : "s") passed through" }
        return text
    }
}

/// The filter: each valid line goes out again, in order; a sample gets its `anomaly` object
/// (and, when promoted, new `status`, `reason` and `message` values), every other byte as it came.
final class AnomalyFilter<Detector: MonitorDetector> {
    let settings: DetectorSettings
    /// Whether a degrading `up` sample becomes `degraded` (the latency field, unless `--keep-status`).
    let promotes: Bool
    let monitors: MonitorTable<Detector>
    // Touched for every line: exempt from dynamic exclusivity checks, which cost about 5% here;
    // the filter is used from one thread, one call at a time.
    @exclusivity(unchecked) private(set) var tally = AnomalyTally()
    @exclusivity(unchecked) private var object: AnomalyObject
    @exclusivity(unchecked) private var spliced = LineBuffer()
    /// The judged field's name, for the whole run.
    private let valueKey: UnsafeMutableBufferPointer<UInt8>

    init(settings: DetectorSettings, promotes: Bool, monitors: MonitorTable<Detector>) {
        self.settings = settings
        self.promotes = promotes
        self.monitors = monitors
        object = AnomalyObject(detector: settings.detector, keys: AnomalyKeys(unitSuffix: settings.unitSuffix))
        let name = Array(settings.field.utf8)
        valueKey = .allocate(capacity: name.count)
        _ = valueKey.initialize(from: name)
    }

    deinit { valueKey.deallocate() }

    /// The field ranges of the current line, one array reused for every line.
    private var fields: [FieldRange] = []

    /// Processes one line: writes the record to `output`, or throws the line's syntax error
    /// (the caller reports it; nothing is written for the line).
    func process(_ line: UnsafeBufferPointer<UInt8>, to output: RecordWriter) throws {
        try JSONParser.scanObject(line, into: &fields)
        let sample = SampleLine(line, fields: fields, valueKey: UnsafeBufferPointer(valueKey), readsTime: settings.detector == .robust)
        guard sample.isSample else {
            tally.otherRecords += 1
            try output.write(UnsafeRawBufferPointer(line))
            return
        }
        let report: Detector.Report
        if let value = sample.value, sample.status == .up || sample.status == .degraded,
           sample.monitorBytes != nil || sample.decodedMonitor != nil {
            let observation = Observation(value: value, simulated: sample.simulated, atMs: sample.atMs)
            if let range = sample.monitorBytes {
                report = monitors.judge(observation, of: UnsafeBufferPointer(rebasing: line[range]), settings: settings)
            } else {
                report = sample.decodedMonitor!.withUnsafeBufferPointer { monitors.judge(observation, of: $0, settings: settings) }
            }
        } else {
            report = Detector.unjudged
        }
        object.write(report)
        let promote = promotes && report.verdict == .degrading && sample.status == .up
        switch report.verdict {
        case .unknown: tally.unknown += 1
        case .stable: tally.stable += 1
        case .degrading: tally.degrading += 1
        }
        if promote { tally.promoted += 1 }
        splice(line, sample, promote: promote)
        try output.write(spliced.bytes)
    }

    // MARK: - Splicing

    private enum Edit {
        case status
        case reason
        case message(FieldRange)
        case missingReasonAndMessage(reason: Bool, message: Bool)
        case anomalyValue
        case anomalyField
    }

    /// One replacement of the byte range [start, end) of the line.
    private struct Splice {
        var start: Int
        var end: Int
        var edit: Edit
    }

    /// Builds `spliced`: the line's bytes with the edits applied at their byte positions.
    private func splice(_ line: UnsafeBufferPointer<UInt8>, _ sample: SampleLine, promote: Bool) {
        let anomaly: Splice
        if let field = sample.anomalyField {
            anomaly = Splice(start: field.valueStart, end: field.valueEnd, edit: .anomalyValue)
        } else {
            let close = closingBrace(line)
            anomaly = Splice(start: close, end: close, edit: .anomalyField)
        }
        spliced.removeAll()
        guard promote, let status = sample.statusField else {
            apply(anomaly, to: line, from: 0)
            spliced.append(line, anomaly.end..<line.count)
            return
        }
        // A promotion: at most five edits, applied in byte order.
        var edits = [anomaly, Splice(start: status.valueStart, end: status.valueEnd, edit: .status)]
        if let reason = sample.reasonField { edits.append(Splice(start: reason.valueStart, end: reason.valueEnd, edit: .reason)) }
        if let message = sample.messageField {
            edits.append(Splice(start: message.valueStart, end: message.valueEnd, edit: .message(message)))
        }
        if sample.reasonField == nil || sample.messageField == nil {
            edits.append(Splice(start: status.valueEnd, end: status.valueEnd,
                                edit: .missingReasonAndMessage(reason: sample.reasonField == nil, message: sample.messageField == nil)))
        }
        edits.sort { $0.start < $1.start }
        apply(edits, to: line)
    }

    private func apply(_ edits: [Splice], to line: UnsafeBufferPointer<UInt8>) {
        var cursor = 0
        for splice in edits {
            apply(splice, to: line, from: cursor)
            cursor = splice.end
        }
        spliced.append(line, cursor..<line.count)
    }

    /// Appends the line's bytes from `cursor` to the splice's start, then the splice's bytes.
    private func apply(_ splice: Splice, to line: UnsafeBufferPointer<UInt8>, from cursor: Int) {
        spliced.append(line, cursor..<splice.start)
        switch splice.edit {
        case .status:
            spliced.append("\"degraded\"")
        case .reason:
            spliced.append("\"latency\"")
        case .message(let field):
            appendPromotedMessage(line, field)
        case .missingReasonAndMessage(let reason, let message):
            if reason { spliced.append(",\"reason\":\"latency\"") }
            if message {
                spliced.append(",\"message\":")
                appendPromotedMessage(line, nil)
            }
        case .anomalyValue:
            spliced.append(object.bytes.baseAddress!, object.bytes.count)
        case .anomalyField:
            spliced.append(",\"anomaly\":")
            spliced.append(object.bytes.baseAddress!, object.bytes.count)
        }
    }

    /// The message a promotion writes: the old text with "; Latency degrading" after it, or
    /// "Latency degrading" when there was none (null, empty or not a string). The old text's
    /// bytes, escapes included, are kept as they were.
    private func appendPromotedMessage(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange?) {
        if let field, line[field.valueStart] == UInt8(ascii: "\""), field.valueEnd - field.valueStart > 2 {
            spliced.append(line, field.valueStart..<(field.valueEnd - 1))
            spliced.append("; Latency degrading\"")
        } else {
            spliced.append("\"Latency degrading\"")
        }
    }

    /// The index of the object's closing brace (the last non-blank byte of a valid object line).
    private func closingBrace(_ line: UnsafeBufferPointer<UInt8>) -> Int {
        var index = line.count - 1
        while index > 0, line[index] != UInt8(ascii: "}") { index -= 1 }
        return index
    }
}

import VitalsKit

/// What a run saw, for `--summary` and `--exit-status`.
public struct AnomalyTally: Sendable, Equatable {
    /// Records passed through that are not samples.
    public var otherRecords = 0
    /// Samples by verdict.
    public var unknown = 0
    public var stable = 0
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
    private(set) var tally = AnomalyTally()
    private var object: AnomalyObject
    private var spliced: [UInt8] = []
    private let valueKey: [UInt8]

    init(settings: DetectorSettings, promotes: Bool, monitors: MonitorTable<Detector>) {
        self.settings = settings
        self.promotes = promotes
        self.monitors = monitors
        object = AnomalyObject(detector: settings.detector, keys: AnomalyKeys(unitSuffix: settings.unitSuffix))
        valueKey = Array(settings.field.utf8)
        spliced.reserveCapacity(1024)
    }

    /// Processes one line: writes the record to `output`, or throws the line's syntax error
    /// (the caller reports it; nothing is written for the line).
    func process(_ line: UnsafeBufferPointer<UInt8>, to output: RecordWriter) throws {
        let fields = try JSONParser.scanObject(line)
        let sample = SampleLine(line, fields: fields, valueKey: valueKey)
        guard sample.isSample else {
            tally.otherRecords += 1
            try output.write(UnsafeRawBufferPointer(line))
            return
        }
        let report: Detector.Report
        if let monitor = sample.monitor, let value = sample.value, sample.status == .up || sample.status == .degraded {
            let detector = monitors.detector(for: monitor, settings: settings)
            report = detector.judge(Observation(value: value, simulated: sample.simulated, atMs: sample.atMs), settings: settings)
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
        try output.write(spliced[...])
    }

    // MARK: - Splicing

    private enum Edit {
        case status
        case reason
        case message(FieldRange?)
        case missingReasonAndMessage(reason: Bool, message: Bool)
        case anomalyValue
        case anomalyField
    }

    /// Builds `spliced`: the line's bytes with the edits applied at their byte positions.
    private func splice(_ line: UnsafeBufferPointer<UInt8>, _ sample: SampleLine, promote: Bool) {
        // At most four edits, each a byte range [start, end) of the line to replace.
        var edits: [(start: Int, end: Int, edit: Edit)] = []
        edits.reserveCapacity(4)
        if let anomaly = sample.anomalyField {
            edits.append((anomaly.valueStart, anomaly.valueEnd, .anomalyValue))
        } else {
            let close = closingBrace(line)
            edits.append((close, close, .anomalyField))
        }
        if promote, let status = sample.statusField {
            edits.append((status.valueStart, status.valueEnd, .status))
            if let reason = sample.reasonField { edits.append((reason.valueStart, reason.valueEnd, .reason)) }
            if let message = sample.messageField {
                edits.append((message.valueStart, message.valueEnd, .message(message)))
            }
            if sample.reasonField == nil || sample.messageField == nil {
                edits.append((status.valueEnd, status.valueEnd,
                              .missingReasonAndMessage(reason: sample.reasonField == nil, message: sample.messageField == nil)))
            }
            edits.sort { $0.start < $1.start }
        }
        spliced.removeAll(keepingCapacity: true)
        var cursor = 0
        for (start, end, edit) in edits {
            spliced.append(contentsOf: UnsafeBufferPointer(rebasing: line[cursor..<start]))
            switch edit {
            case .status:
                JSONText.appendLiteral("\"degraded\"", to: &spliced)
            case .reason:
                JSONText.appendLiteral("\"latency\"", to: &spliced)
            case .message(let field):
                appendPromotedMessage(line, field)
            case .missingReasonAndMessage(let reason, let message):
                if reason { JSONText.appendLiteral(",\"reason\":\"latency\"", to: &spliced) }
                if message {
                    JSONText.appendLiteral(",\"message\":", to: &spliced)
                    appendPromotedMessage(line, nil)
                }
            case .anomalyValue:
                spliced.append(contentsOf: object.bytes)
            case .anomalyField:
                JSONText.appendLiteral(",\"anomaly\":", to: &spliced)
                spliced.append(contentsOf: object.bytes)
            }
            cursor = end
        }
        spliced.append(contentsOf: UnsafeBufferPointer(rebasing: line[cursor..<line.count]))
    }

    /// The message a promotion writes: the old text with "; Latency degrading" after it, or
    /// "Latency degrading" when there was none (null, empty or not a string). The old text's
    /// bytes, escapes included, are kept as they were.
    private func appendPromotedMessage(_ line: UnsafeBufferPointer<UInt8>, _ field: FieldRange?) {
        if let field, line[field.valueStart] == UInt8(ascii: "\""), field.valueEnd - field.valueStart > 2 {
            spliced.append(contentsOf: UnsafeBufferPointer(rebasing: line[field.valueStart..<(field.valueEnd - 1)]))
            JSONText.appendLiteral("; Latency degrading\"", to: &spliced)
        } else {
            JSONText.appendLiteral("\"Latency degrading\"", to: &spliced)
        }
    }

    /// The index of the object's closing brace (the last non-blank byte of a valid object line).
    private func closingBrace(_ line: UnsafeBufferPointer<UInt8>) -> Int {
        var index = line.count - 1
        while index > 0, line[index] != UInt8(ascii: "}") { index -= 1 }
        return index
    }
}

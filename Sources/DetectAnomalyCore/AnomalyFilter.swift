import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a run saw, for `--summary` and `--exit-status`.
struct AnomalyTally: Sendable, Equatable {
    /// Records passed through without an anomaly object: other types, and objects that are not
    /// valid samples (those are reported too).
    var otherRecords = 0
    /// Samples whose verdict was unknown (not judged, or too few points).
    var unknown = 0
    /// Samples judged stable.
    var stable = 0
    /// Samples judged degrading.
    var degrading = 0
    /// Samples whose status was changed from up to degraded.
    var promoted = 0
    /// Episodes that started (onsets).
    var episodes = 0

    /// The one-line summary.
    func line(monitors: Int) -> String {
        let samples = unknown + stable + degrading
        var text =
            "\(samples) sample\(samples == 1 ? "" : "s") of \(monitors) monitor\(monitors == 1 ? "" : "s"): "
            + "\(degrading) degrading, \(stable) stable, \(unknown) unknown"
            + "; \(episodes) episode\(episodes == 1 ? "" : "s") began"
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
    // Touched for every line: exempt from dynamic exclusivity checks (the filter is used from one
    // thread, one call at a time), the two save 7.3% of detect-anomaly's instructions on 50,000
    // bench lines (callgrind); exempting `tally` as well saved nothing more.
    @exclusivity(unchecked) private var object: AnomalyObject
    @exclusivity(unchecked) private var spliced = LineBuffer()
    /// Whether the detector reads the samples' times.
    private let readsTime: Bool

    init(settings: DetectorSettings, promotes: Bool, monitors: MonitorTable<Detector>) {
        self.settings = settings
        self.promotes = promotes
        self.monitors = monitors
        readsTime = settings.detector == .robust || settings.detector == .envelope
        object = AnomalyObject(detector: settings.detector, keys: AnomalyKeys(unitSuffix: settings.unitSuffix))
    }

    /// Writes a record that is not a valid sample as it came (filters keep what they do not know).
    func passOn(_ line: UnsafeBufferPointer<UInt8>, to output: RecordWriter) throws {
        tally.otherRecords += 1
        try output.write(UnsafeRawBufferPointer(line))
    }

    /// Judges a valid sample (found by `SamplePreparer` in `line`; `monitor` holds its id) and
    /// writes it with its anomaly object, promoted when it is up and degrading.
    func judge(
        _ facts: SampleFacts, line: UnsafeBufferPointer<UInt8>, monitor: UnsafeBufferPointer<UInt8>,
        to output: RecordWriter
    ) throws {
        let report: Detector.Report
        var episode: EpisodeMark?
        if facts.judged {
            let observation = Observation(value: facts.value, simulated: facts.simulated, atMs: readsTime ? facts.atMs : nil)
            (report, episode) = monitors.judge(observation, at: facts.atMs, of: monitor, settings: settings)
        } else {
            report = Detector.unjudged
        }
        object.write(report, episode: episode)
        let verdict = AnomalyObject.verdict(report, episode: episode)
        let promote = promotes && verdict == .degrading && facts.status == .up
        switch verdict {
        case .unknown: tally.unknown += 1
        case .stable: tally.stable += 1
        case .degrading: tally.degrading += 1
        }
        if episode?.state == .onset { tally.episodes += 1 }
        if promote { tally.promoted += 1 }
        splice(line, facts, promote: promote)
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
    private func splice(_ line: UnsafeBufferPointer<UInt8>, _ facts: SampleFacts, promote: Bool) {
        let anomaly: Splice
        if let field = facts.anomalyField {
            anomaly = Splice(start: field.valueStart, end: field.valueEnd, edit: .anomalyValue)
        } else {
            let close = closingBrace(line)
            anomaly = Splice(start: close, end: close, edit: .anomalyField)
        }
        spliced.removeAll()
        guard promote else {
            apply(anomaly, to: line, from: 0)
            spliced.append(line, anomaly.end..<line.count)
            return
        }
        // A promotion: at most five edits, applied in byte order.
        let status = facts.statusField
        let reasonField = facts.reasonField
        var edits = [anomaly, Splice(start: status.valueStart, end: status.valueEnd, edit: .status)]
        if let reason = reasonField { edits.append(Splice(start: reason.valueStart, end: reason.valueEnd, edit: .reason)) }
        if let message = facts.messageField {
            edits.append(Splice(start: message.valueStart, end: message.valueEnd, edit: .message(message)))
        }
        if reasonField == nil || facts.messageField == nil {
            edits.append(
                Splice(
                    start: status.valueEnd, end: status.valueEnd,
                    edit: .missingReasonAndMessage(reason: reasonField == nil, message: facts.messageField == nil)))
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

/// detect-anomaly's own fields of a sample, read in the spine reader's pass: the judged value,
/// and what a promotion or the anomaly object rewrites.
struct AnomalyFields: SampleFieldReader {
    /// The judged field's name; nil when it is `latency_ms`, a spine field the reader reads.
    var valueKey: UnsafeBufferPointer<UInt8>?
    var value: FieldRange?
    var message: FieldRange?
    var anomaly: FieldRange?
    /// `simulated` is `true` (the last one given).
    var simulatedFlag = false

    // The raw key, and its reads here: the figure that keeps them is on `SampleFieldReader.take`.
    @inline(__always)
    mutating func take(key: UnsafePointer<UInt8>, count: Int, field: FieldRange) {
        if let valueKey, count == valueKey.count, memcmp(key, valueKey.baseAddress!, count) == 0 {
            value = field
            return
        }
        // The one reader that switches on the (length, first byte) pair rather than on
        // `SampleLine.tag`: for these three keys the tag took 17.5 M more instructions on 50,000
        // bench lines (3.5% of detect-anomaly's 499 M, callgrind), where digest and notify lost
        // nothing by it.
        switch (count, key[0]) {
        case (7, UInt8(ascii: "m")) where SampleLine.key(key, is: "message"): message = field
        case (7, UInt8(ascii: "a")) where SampleLine.key(key, is: "anomaly"): anomaly = field
        case (9, UInt8(ascii: "s")) where SampleLine.key(key, is: "simulated"):
            // The line starts `keyStart` bytes before the key.
            simulatedFlag = field.valueEnd - field.valueStart == 4 && (key - field.keyStart)[field.valueStart] == UInt8(ascii: "t")
        default: break
        }
    }

    /// Whether the sample is simulated: `simulated` is true, or its message says "simulated".
    func isSimulated(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        if simulatedFlag { return true }
        guard let message, line[message.valueStart] == UInt8(ascii: "\"") else { return false }
        if memchr(line.baseAddress! + message.valueStart, Int32(UInt8(ascii: "\\")), message.valueEnd - message.valueStart) == nil {
            return bytes(
                UnsafeBufferPointer(rebasing: line[(message.valueStart + 1)..<(message.valueEnd - 1)]), contain: Self.simulatedWord)
        }
        guard var text = (try? JSONParser.parse(UnsafeBufferPointer(rebasing: line[message.valueStart..<message.valueEnd])))?.stringValue
        else {
            return false
        }
        return text.withUTF8 { bytes($0, contain: Self.simulatedWord) }
    }

    private static let simulatedWord = Array("simulated".utf8)
}

/// Whether `haystack` contains `needle` as a contiguous run of bytes.
func bytes(_ haystack: UnsafeBufferPointer<UInt8>, contain needle: [UInt8]) -> Bool {
    guard haystack.count >= needle.count else { return false }
    guard let first = needle.first else { return true }
    var start = 0
    let last = haystack.count - needle.count
    outer: while start <= last {
        if haystack[start] != first {
            start += 1
            continue
        }
        for offset in 1..<needle.count where haystack[start + offset] != needle[offset] {
            start += 1
            continue outer
        }
        return true
    }
    return false
}

import VitalsKit

/// The one-line status of a probe run on a terminal (`--progress`; see `ProgressLine`): once through
/// the targets, how many probes are done and their statuses; with `--watch`, each monitor's latest
/// status, the probes so far and when the next one starts. Updated as samples are written and as the
/// run waits (at most five times a second), erased at the end.
public struct ProbeProgress {
    private let line: ProgressLine
    private let tool: String
    private let watch: Bool
    /// Each probe's latest status (nil until its first sample).
    private var latest: [SampleStatus?]
    /// Samples written.
    private var written = 0

    /// A status line for `probes` probes of `tool`, or nil when the run wants no progress.
    public init?(_ line: ProgressLine?, tool: String, probes: Int, watch: Bool) {
        guard let line else { return nil }
        self.line = line
        self.tool = tool
        self.watch = watch
        self.latest = Array(repeating: nil, count: probes)
    }

    /// Notes the sample probe `index` wrote.
    public mutating func record(_ index: Int, _ status: SampleStatus) {
        latest[index] = status
        written += 1
    }

    /// Draws the line when it is time (`inFlight` probes running; `nextInMs` until the next one is due).
    public func update(inFlight: Int, nextInMs: Int?) {
        line.update { text(inFlight: inFlight, nextInMs: nextInMs) }
    }

    /// Draws the last state and erases the line.
    public func finish() {
        line.finish(text(inFlight: 0, nextInMs: nil))
    }

    /// `probe-http: 12 of 40 probes: 10 up, 2 down`, or with `--watch`
    /// `probe-http: watching 40 monitors: 38 up, 2 down; 1,234 probes in 5 min 12 s; next in 12 s`.
    func text(inFlight: Int, nextInMs: Int?) -> String {
        var counts: [SampleStatus: Int] = [:]
        for case let status? in latest { counts[status, default: 0] += 1 }
        let statuses = SampleStatus.allCases.compactMap { status in counts[status].map { "\(ProgressText.count($0)) \(status.rawValue)" } }
        var text = "\(tool): "
        if watch {
            text += "watching \(ProgressText.count(latest.count)) monitor\(latest.count == 1 ? "" : "s")"
            if !statuses.isEmpty { text += ": " + statuses.joined(separator: ", ") }
            text +=
                "; \(ProgressText.count(written)) probe\(written == 1 ? "" : "s") in \(ProgressText.duration(seconds: line.elapsedSeconds))"
            if inFlight > 0 {
                text += "; \(ProgressText.count(inFlight)) running"
            } else if let nextInMs {
                text += "; next in \(ProgressText.duration(seconds: Double(nextInMs) / 1000))"
            }
        } else {
            text += "\(ProgressText.count(written)) of \(ProgressText.count(latest.count)) probes"
            if !statuses.isEmpty { text += ": " + statuses.joined(separator: ", ") }
        }
        return text
    }
}

import VitalsKit

/// Counts kept for `--summary` and `--exit-status`.
public struct ProbeTally: Sendable {
    /// Samples by status.
    public var byStatus: [SampleStatus: Int] = [:]
    /// The slowest answering target and its latency.
    public var slowest: (name: String, latencyMs: Double)?
    /// Samples written.
    public var total: Int { byStatus.values.reduce(0, +) }
    /// No samples yet.
    public init() {}

    /// Whether any sample was not `up`.
    var anyNotUp: Bool { byStatus.contains { $0.key != .up && $0.value > 0 } }

    /// One line for people: `12 probes: 10 up, 1 degraded, 1 down; slowest api (812ms)`.
    public var line: String {
        let parts = SampleStatus.allCases.compactMap { status -> String? in
            guard let count = byStatus[status], count > 0 else { return nil }
            return "\(count) \(status.rawValue)"
        }
        var text = "\(total) probe\(total == 1 ? "" : "s")"
        if !parts.isEmpty { text += ": " + parts.joined(separator: ", ") }
        if let slowest { text += "; slowest \(slowest.name) (\(LatencyWords.milliseconds(slowest.latencyMs)))" }
        return text
    }
}

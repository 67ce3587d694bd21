/// isitup's rules for a simulated latency (`probe-http --simulate-latency`), which every detector
/// follows on `latency_ms`: the seed's own detector in its own words, the others through this.
///
/// A simulated latency is never learned. With no real latency of the monitor to compare with, it
/// is degrading at 1800 ms or more (isitup's `simulatedFallbackDegradingMs`); with some, it is
/// degrading when more than 500 ms above their mean (`simulatedAbsoluteThreshold`), whatever the
/// detector's own statistics say.
enum SimulatedLatency {
    /// Degrading at or above this with no real baseline, ms.
    static let fallbackMs = 1800.0
    /// Degrading above the real mean plus this, ms.
    static let marginMs = 500.0

    /// The threshold a simulated latency is judged against: the fallback with no real values,
    /// else their mean plus the margin.
    static func threshold(realMean: Double?) -> Double {
        realMean.map { $0 + marginMs } ?? fallbackMs
    }

    /// Whether a simulated `value` is degrading against `realMean` (nil: no real values).
    static func isDegrading(_ value: Double, realMean: Double?) -> Bool {
        realMean == nil ? value >= fallbackMs : value > threshold(realMean: realMean)
    }

    /// The score of a simulated value: 0.5 at its threshold, as every detector's score.
    static func score(_ value: Double, realMean: Double?) -> Double {
        evidenceScore(value / threshold(realMean: realMean), scale: 1)
    }

    /// The mean of `values` mapped by `transform`, nil when there are none.
    static func mean(_ values: [Double], _ transform: (Double) -> Double = { $0 }) -> Double? {
        guard !values.isEmpty else { return nil }
        var sum = 0.0
        for value in values { sum += transform(value) }
        return sum / Double(values.count)
    }
}

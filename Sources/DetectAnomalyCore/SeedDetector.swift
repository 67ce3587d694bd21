import VitalsKit

/// isitup's AnomalyDetector, exactly (seed section 7).
///
/// Candidates are a monitor's samples that are up or degraded and have the field. `recent`
/// is the last `window` candidates, the current one included; `latest` is the current one and
/// `previous` the rest. The baseline is `previous`, or only its non-simulated points when the
/// latest is simulated. mean = sum / n, variance = sum((x - mean)^2) / n (population),
/// degrading when latest > mean + threshold * stddev, or when the latest is simulated and
/// latest > mean + 500. A simulated latest with no non-simulated baseline is degrading at
/// 1800 or more, else unknown. Fewer than `minSamples` points in `recent` is unknown, except that
/// a simulated latest can still be degrading by the +500 rule.
///
/// Cost: two passes over at most `window - 1` points per sample (O(window), 49 additions by
/// default), so the mean and deviation are the seed's two-pass arithmetic, not a running
/// approximation of it.
struct SeedDetector: MonitorDetector {
    /// The seed's `simulatedFallbackDegradingMs`, shared with the other detectors.
    static let simulatedFallback = SimulatedLatency.fallbackMs
    /// The seed's `simulatedAbsoluteThreshold` margin over the mean, shared with the other detectors.
    static let simulatedMargin = SimulatedLatency.marginMs

    private var values: Ring<Double>
    private var simulated: Ring<Bool>

    init(settings: DetectorSettings) {
        values = Ring(capacity: settings.window - 1)
        simulated = Ring(capacity: settings.window - 1)
    }

    /// The judgement and the numbers behind it.
    struct Report: AnomalyReport, Equatable {
        var verdict: AnomalyVerdict
        /// Points the mean was taken over.
        var baselineCount: Int
        var mean: Double?
        var stddev: Double?
        /// The value beyond which the sample is degrading (the tighter bound for a simulated one;
        /// 1800 in the fallback).
        var threshold: Double?
        var score: Double

        func appendFields(to object: inout AnomalyObject) {
            object.int("baseline_n", baselineCount)
            object.number(key: object.keys.mean, mean)
            object.number(key: object.keys.stddev, stddev)
            object.number(key: object.keys.threshold, threshold)
        }
    }

    static var unjudged: Report {
        Report(verdict: .unknown, baselineCount: 0, mean: nil, stddev: nil, threshold: nil, score: 0)
    }

    mutating func judge(_ observation: Observation, settings: DetectorSettings) -> Report {
        defer {
            values.append(observation.value)
            simulated.append(observation.simulated)
        }
        let latest = observation.value
        let recentCount = values.count + 1
        let onlyReal = observation.simulated
        let high = settings.direction.judgesHigh

        // Two passes, as the seed: the mean, then the squared deviations from it.
        var n = 0
        var sum = 0.0
        for index in 0..<values.count where !(onlyReal && simulated[index]) {
            sum += values[index]
            n += 1
        }
        if n == 0 {
            // A simulated latest with no real baseline (or no baseline at all): the fallback.
            guard onlyReal, high else { return Self.unjudged }
            let degrading = latest >= Self.simulatedFallback
            return Report(
                verdict: degrading ? .degrading : .unknown, baselineCount: 0, mean: nil, stddev: nil,
                threshold: Self.simulatedFallback,
                score: degrading ? evidenceScore(latest, scale: Self.simulatedFallback) : 0)
        }
        let mean = sum / Double(n)
        var squares = 0.0
        for index in 0..<values.count where !(onlyReal && simulated[index]) {
            let deviation = values[index] - mean
            squares += deviation * deviation
        }
        let stddev = (squares / Double(n)).squareRoot()
        let upper = mean + settings.threshold * stddev
        let lower = mean - settings.threshold * stddev
        let simulatedBound = mean + Self.simulatedMargin

        var threshold: Double
        switch settings.direction {
        case .high: threshold = upper
        case .low: threshold = lower
        case .both: threshold = latest >= mean ? upper : lower
        }
        if onlyReal, high, threshold >= mean { threshold = min(threshold, simulatedBound) }

        let simulatedRule = onlyReal && high && latest > simulatedBound
        let simulatedScore = onlyReal && high ? evidenceScore(latest - mean, scale: Self.simulatedMargin) : 0
        if recentCount < settings.minSamples {
            // Too few points: unknown, unless the simulated rule already holds.
            // Only the simulated rule can decide here, so its bound (mean + 500) is the threshold reported.
            return Report(
                verdict: simulatedRule ? .degrading : .unknown, baselineCount: n, mean: mean, stddev: stddev,
                threshold: onlyReal && high ? simulatedBound : threshold, score: simulatedRule ? simulatedScore : 0)
        }
        let beyondUpper = high && latest > upper
        let beyondLower = settings.direction.judgesLow && latest < lower
        let degrading = beyondUpper || beyondLower || simulatedRule

        // The deviation on the judged side, in standard deviations (infinite when stddev is 0).
        var side: Double
        switch settings.direction {
        case .high: side = latest - mean
        case .low: side = mean - latest
        case .both: side = abs(latest - mean)
        }
        let z = stddev > 0 ? side / stddev : (side > 0 ? Double.infinity : 0)
        let score = max(evidenceScore(z, scale: settings.threshold), simulatedScore)
        return Report(
            verdict: degrading ? .degrading : .stable, baselineCount: n, mean: mean, stddev: stddev,
            threshold: threshold, score: score)
    }

    // MARK: - State

    func encodeState(to out: inout [UInt8]) {
        StateText.numbers("values", values.inOrder, to: &out)
        JSONText.appendLiteral(",\"simulated\":[", to: &out)
        var first = true
        for index in 0..<simulated.count where simulated[index] {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONText.appendInt(index, to: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    init(state: JSONObject, settings: DetectorSettings) throws(StateError) {
        values = Ring(capacity: settings.window - 1)
        simulated = Ring(capacity: settings.window - 1)
        let numbers = try state.stateNumbers("values", limit: settings.window - 1)
        guard let marks = state["simulated"]?.arrayValue else { throw StateError("'simulated' is not an array") }
        var flags = [Bool](repeating: false, count: numbers.count)
        for mark in marks {
            guard let index = mark.intValue, index >= 0, index < numbers.count else {
                throw StateError("'simulated' holds a position that is not one of the values")
            }
            flags[index] = true
        }
        for (value, flag) in zip(numbers, flags) {
            values.append(value)
            simulated.append(flag)
        }
    }
}

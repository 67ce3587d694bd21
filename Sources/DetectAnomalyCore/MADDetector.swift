import Foundation
import VitalsKit

/// Shared by the robust detectors: values are judged in log space, `ln(1 + max(0, x))`, where a
/// latency's noise is about the same size at 10 ms and at 1000 ms.
enum LogScale {
    /// The robust standard deviation never goes below this (about 5%), so a window of nearly
    /// equal values does not make every small wobble an anomaly.
    static let minimumSigma = 0.05
    /// The MAD of normal data times this is its standard deviation.
    static let madToSigma = 1.4826

    @inline(__always) static func log(_ value: Double) -> Double { Foundation.log1p(max(0, value)) }
    @inline(__always) static func exp(_ value: Double) -> Double { Foundation.expm1(value) }

    /// The robust standard deviation of a non-empty window.
    static func sigma(_ window: SortedWindow) -> Double {
        max(madToSigma * window.mad, minimumSigma)
    }
}

/// A point rule on robust statistics: the median and MAD of the window in log space; degrading
/// when the value is more than `threshold` robust standard deviations beyond the median.
/// Simulated samples are treated as any other.
struct MADDetector: MonitorDetector {
    private var window: SortedWindow

    init(settings: DetectorSettings) {
        window = SortedWindow(capacity: settings.window - 1)
    }

    /// The judgement and the numbers behind it.
    struct Report: AnomalyReport, Equatable {
        var verdict: AnomalyVerdict
        var baselineCount: Int
        /// The window's median, in the field's unit.
        var median: Double?
        /// The value beyond which the sample is degrading, in the field's unit.
        var threshold: Double?
        /// The sample's robust z-score against the median (signed).
        var z: Double?
        var score: Double

        func appendFields(to object: inout AnomalyObject) {
            object.int("baseline_n", baselineCount)
            object.number(key: object.keys.median, median)
            object.number(key: object.keys.threshold, threshold)
            object.number("z", z)
        }
    }

    static var unjudged: Report {
        Report(verdict: .unknown, baselineCount: 0, median: nil, threshold: nil, z: nil, score: 0)
    }

    mutating func judge(_ observation: Observation, settings: DetectorSettings) -> Report {
        let y = LogScale.log(observation.value)
        // A simulated latency is never learned, and is judged by isitup's rules (SimulatedLatency).
        defer { if !observation.simulated { window.append(y) } }
        let n = window.count
        if observation.simulated, settings.promotes {
            let realMean = SimulatedLatency.mean(window.sorted, LogScale.exp)
            let degrading = SimulatedLatency.isDegrading(observation.value, realMean: realMean)
            let verdict: AnomalyVerdict = degrading ? .degrading : (n + 1 >= settings.minSamples ? .stable : .unknown)
            return Report(
                verdict: verdict, baselineCount: n, median: n > 0 ? LogScale.exp(window.median) : nil,
                threshold: SimulatedLatency.threshold(realMean: realMean), z: nil,
                score: verdict == .unknown ? 0 : SimulatedLatency.score(observation.value, realMean: realMean))
        }
        guard n > 0 else { return Self.unjudged }
        let median = window.median
        guard n + 1 >= settings.minSamples else {
            return Report(verdict: .unknown, baselineCount: n, median: LogScale.exp(median), threshold: nil, z: nil, score: 0)
        }
        let sigma = LogScale.sigma(window)
        let z = (y - median) / sigma
        let t = settings.threshold
        let side: Double
        let bound: Double
        switch settings.direction {
        case .high:
            side = z
            bound = median + t * sigma
        case .low:
            side = -z
            bound = median - t * sigma
        case .both:
            side = abs(z)
            bound = z >= 0 ? median + t * sigma : median - t * sigma
        }
        return Report(
            verdict: side > t ? .degrading : .stable, baselineCount: n, median: LogScale.exp(median),
            threshold: LogScale.exp(bound), z: z, score: evidenceScore(side, scale: t))
    }

    func encodeState(to out: inout [UInt8]) {
        StateText.numbers("values", window.ring.inOrder, to: &out)
    }

    init(state: JSONObject, settings: DetectorSettings) throws(StateError) {
        window = SortedWindow(capacity: settings.window - 1)
        for value in try state.stateNumbers("values", limit: settings.window - 1) { window.append(value) }
    }
}

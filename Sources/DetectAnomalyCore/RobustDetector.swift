import Foundation
import VitalsKit

/// Sustained changes, not single points: the default detector.
///
/// In log space, `y = ln(1 + max(0, x))`, per monitor:
/// - the level: an exponentially weighted mean of the deseasonalized values, each step clamped to
///   ±1 (so one spike barely moves it), time constant one day; used once the monitor has a day of
///   history;
/// - a seasonal profile: 24 hourly offsets (UTC hour of `at`), each an exponentially weighted mean
///   of `y` minus the level, clamped to ±1, with a time constant of 3 hours of that hour's samples
///   (about three days); after a day of history the offset of the sample's hour, minus the mean of
///   the 24, is subtracted from `y`;
/// - the recent baseline: median and MAD of the last `window - 1` deseasonalized values;
///   sigma = max(1.4826 MAD, 0.05);
/// - a CUSUM per judged side: S = max(0, S + min(z, 4) - 1.5), at most threshold + 2.5, with z the
///   sample's distance in sigmas beyond the higher (for `high`) of the recent median and the level;
///   a shift when S > threshold (7): three samples far out, or more samples nearer; one spike adds
///   at most 2.5; the cap ends an alarm two samples after the values are normal again;
/// - a drift: the recent median more than 50% (ln 1.5) above the level and the median of the last 5
///   values more than 25% (ln 1.25) above it; it lasts while both stay more than 25% above.
/// A sample is degrading in a shift or a drift. Simulated samples are treated as any other.
///
/// Cost: as `SortedWindow` (O(log window) and a small memory move) plus O(1).
struct RobustDetector: MonitorDetector {
    static let cusumCap = 4.0
    static let cusumAllowance = 1.5
    static let driftStart = Foundation.log(1.5)
    static let driftHold = Foundation.log(1.25)
    static let shortMedianCount = 5
    static let stepClamp = 1.0
    static let levelTimeConstantMs = 86_400_000.0
    static let warmupMs: Int64 = 86_400_000
    static let seasonTimeConstantMs = 3 * 3_600_000.0
    static let seasonStepCapMs: Int64 = 3_600_000
    /// The time a sample without `at` is taken to come after the one before it.
    static let assumedIntervalMs: Int64 = 60_000

    private var window: SortedWindow
    private var cusumHigh = 0.0
    private var cusumLow = 0.0
    private var driftHigh = false
    private var driftLow = false
    private var level: Double?
    private var firstMs: Int64?
    private var lastMs: Int64?
    private var profile = [Double](repeating: 0, count: 24)

    init(settings: DetectorSettings) {
        window = SortedWindow(capacity: settings.window - 1)
    }

    /// The judgement and the numbers behind it.
    struct Report: AnomalyReport, Equatable {
        var verdict: AnomalyVerdict
        /// `shift` or `drift` when degrading.
        var rule: Rule?
        var baselineCount: Int
        /// The recent median at this sample's hour, in the field's unit.
        var median: Double?
        /// The level at this sample's hour, in the field's unit (null in the first day).
        var level: Double?
        /// The sample's robust z-score against the recent median (signed).
        var z: Double?
        /// The CUSUM after this sample (the larger side's for `both`).
        var cusum: Double?
        var score: Double

        enum Rule: String { case shift, drift }

        func appendFields(to object: inout AnomalyObject) {
            switch rule {
            case .shift?: object.word("rule", "shift")
            case .drift?: object.word("rule", "drift")
            case nil: object.word("rule", nil)
            }
            object.int("baseline_n", baselineCount)
            object.number(key: object.keys.median, median)
            object.number(key: object.keys.level, level)
            object.number("z", z)
            object.number("cusum", cusum)
        }
    }

    static var unjudged: Report {
        Report(verdict: .unknown, rule: nil, baselineCount: 0, median: nil, level: nil, z: nil, cusum: nil, score: 0)
    }

    mutating func judge(_ observation: Observation, settings: DetectorSettings) -> Report {
        let y = LogScale.log(observation.value)
        let hour: Int?
        let now: Int64
        if let at = observation.atMs {
            now = at
            hour = Int(((at % 86_400_000) + 86_400_000) % 86_400_000 / 3_600_000)
        } else {
            now = (lastMs ?? 0) + Self.assumedIntervalMs
            hour = nil
        }
        if firstMs == nil { firstMs = now }
        let warm = now - firstMs! >= Self.warmupMs
        var offset = 0.0
        if warm, let hour {
            var sum = 0.0
            for value in profile { sum += value }
            offset = profile[hour] - sum / 24
        }
        let adjusted = y - offset

        var report = Self.unjudged
        let n = window.count
        if observation.simulated, settings.promotes {
            // isitup's rules alone, and never learned: the window holds only real values.
            let realMean = SimulatedLatency.mean(window.sorted) { LogScale.exp($0 + offset) }
            if n > 0 {
                report.baselineCount = n
                report.median = LogScale.exp(window.median + offset)
            }
            if SimulatedLatency.isDegrading(observation.value, realMean: realMean) {
                report.verdict = .degrading
            } else if n + 1 >= settings.minSamples {
                report.verdict = .stable
            }
            if report.verdict != .unknown { report.score = SimulatedLatency.score(observation.value, realMean: realMean) }
            return report
        }
        if n > 0 {
            let median = window.median
            let levelNow = warm ? level : nil
            report.baselineCount = n
            report.median = LogScale.exp(median + offset)
            if let levelNow { report.level = LogScale.exp(levelNow + offset) }
            if n + 1 >= settings.minSamples {
                judge(adjusted, median: median, level: levelNow, settings: settings, report: &report)
            }
        }

        // Learn: the window, the level, this hour's seasonal offset.
        window.append(adjusted)
        let elapsed = lastMs.map { max(0, now - $0) }
        if let current = level {
            let weight = 1 - Foundation.exp(-Double(elapsed ?? 0) / Self.levelTimeConstantMs)
            level = current + weight * clamp(adjusted - current)
        } else {
            level = adjusted
        }
        if let hour, let elapsed, let level {
            let weight = 1 - Foundation.exp(-Double(min(elapsed, Self.seasonStepCapMs)) / Self.seasonTimeConstantMs)
            profile[hour] += weight * (clamp(y - level) - profile[hour])
        }
        lastMs = max(lastMs ?? now, now)
        return report
    }

    @inline(__always)
    private func clamp(_ value: Double) -> Double { min(Self.stepClamp, max(-Self.stepClamp, value)) }

    /// The median of the last `shortMedianCount` (5) values: the window's newest four and `latest`.
    private func shortMedian(_ latest: Double) -> Double {
        // Insertion into a fixed five-slot buffer on the stack: no allocation per sample. An
        // InlineArray, no unsafe code: 0.28% fewer of `--detector robust`'s instructions than the
        // tuple written through a raw pointer before it (50,000 bench lines, callgrind).
        var slots = InlineArray<5, Double>(repeating: 0)
        slots[0] = latest
        let ring = window.ring
        let first = max(0, ring.count - (Self.shortMedianCount - 1))
        let count = ring.count - first + 1
        for (filled, offset) in (first..<ring.count).enumerated() {
            var position = filled + 1
            let value = ring[offset]
            while position > 0, slots[position - 1] > value {
                slots[position] = slots[position - 1]
                position -= 1
            }
            slots[position] = value
        }
        return count % 2 == 1 ? slots[count / 2] : (slots[count / 2 - 1] + slots[count / 2]) / 2
    }

    /// One side's outcome.
    private struct SideOutcome {
        var cusum: Double
        var drifting: Bool
        var shifted: Bool
        /// How far the last values are beyond the reference (the level, for a drift), when degrading (log units).
        var excess = 0.0
        /// The drift evidence when not drifting (log units).
        var driftEvidence = 0.0
    }

    private mutating func judge(_ y: Double, median: Double, level: Double?, settings: DetectorSettings, report: inout Report) {
        let sigma = LogScale.sigma(window)
        let h = settings.threshold
        report.z = (y - median) / sigma
        let recent = shortMedian(y)
        var high: SideOutcome?
        var low: SideOutcome?
        if settings.direction.judgesHigh {
            let outcome = judgeSide(
                y, sign: 1, median: median, level: level, recent: recent, sigma: sigma, h: h,
                cusum: cusumHigh, drifting: driftHigh)
            cusumHigh = outcome.cusum
            driftHigh = outcome.drifting
            high = outcome
        }
        if settings.direction.judgesLow {
            let outcome = judgeSide(
                y, sign: -1, median: median, level: level, recent: recent, sigma: sigma, h: h,
                cusum: cusumLow, drifting: driftLow)
            cusumLow = outcome.cusum
            driftLow = outcome.drifting
            low = outcome
        }
        let shift = high?.shifted == true || low?.shifted == true
        let drift = high?.drifting == true || low?.drifting == true
        let cusum = max(high?.cusum ?? 0, low?.cusum ?? 0)
        report.cusum = cusum
        if shift || drift {
            report.verdict = .degrading
            report.rule = shift ? .shift : .drift
            // Above 0.5, rising with how far the last five values are beyond the baseline: 2x is 0.75.
            let excess = max(high?.excess ?? 0, low?.excess ?? 0)
            report.score = 0.5 + 0.5 * evidenceScore(excess, scale: Foundation.log(2.0))
        } else {
            report.verdict = .stable
            let driftEvidence = max(high?.driftEvidence ?? 0, low?.driftEvidence ?? 0)
            report.score = max(evidenceScore(cusum, scale: h), evidenceScore(driftEvidence, scale: Self.driftStart))
        }
    }

    /// The CUSUM and drift rules on one side: `sign` 1 for high values, -1 for low ones.
    private func judgeSide(
        _ y: Double, sign: Double, median: Double, level: Double?, recent: Double, sigma: Double,
        h: Double, cusum: Double, drifting: Bool
    ) -> SideOutcome {
        let reference = sign > 0 ? max(median, level ?? median) : min(median, level ?? median)
        let z = sign * (y - reference) / sigma
        let limit = h + Self.cusumCap - Self.cusumAllowance
        var outcome = SideOutcome(
            cusum: min(limit, max(0, cusum + min(z, Self.cusumCap) - Self.cusumAllowance)),
            drifting: false, shifted: false)
        outcome.shifted = outcome.cusum > h
        if let level {
            let rise = sign * (median - level)
            let recentRise = sign * (recent - level)
            outcome.drifting =
                (rise > Self.driftStart && recentRise > Self.driftHold)
                || (drifting && rise > Self.driftHold && recentRise > Self.driftHold)
            if !outcome.drifting { outcome.driftEvidence = max(0, min(rise, recentRise)) }
        }
        if outcome.shifted { outcome.excess = max(0, sign * (recent - reference)) }
        if outcome.drifting, let level { outcome.excess = max(outcome.excess, sign * (recent - level)) }
        return outcome
    }

    // MARK: - State

    func encodeState(to out: inout [UInt8]) {
        StateText.numbers("values", window.ring.inOrder, to: &out)
        StateText.number("cusum_high", cusumHigh, to: &out)
        StateText.number("cusum_low", cusumLow, to: &out)
        StateText.bool("drift_high", driftHigh, to: &out)
        StateText.bool("drift_low", driftLow, to: &out)
        StateText.optionalNumber("level", level, to: &out)
        StateText.optionalInteger("first_at", firstMs, to: &out)
        StateText.optionalInteger("last_at", lastMs, to: &out)
        StateText.numbers("profile", profile, to: &out)
    }

    init(state: JSONObject, settings: DetectorSettings) throws(StateError) {
        window = SortedWindow(capacity: settings.window - 1)
        for value in try state.stateNumbers("values", limit: settings.window - 1) { window.append(value) }
        cusumHigh = try state.stateNumber("cusum_high")
        cusumLow = try state.stateNumber("cusum_low")
        driftHigh = try state.stateBool("drift_high")
        driftLow = try state.stateBool("drift_low")
        level = try state.optionalStateNumber("level")
        firstMs = try state.optionalStateInteger("first_at")
        lastMs = try state.optionalStateInteger("last_at")
        profile = try state.stateNumbers("profile", limit: 24)
        guard profile.count == 24 else { throw StateError("'profile' has \(profile.count) values, not 24") }
        guard cusumHigh >= 0, cusumLow >= 0 else { throw StateError("a CUSUM is negative") }
    }
}

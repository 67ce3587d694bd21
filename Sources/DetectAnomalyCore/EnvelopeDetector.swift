import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Values that break out of what the monitor has shown: the default detector.
///
/// Per monitor, on the raw values (no logarithm: zeros, negative and [0, 1]-rescaled values are
/// ordinary numbers here), in arrival order (the daily profile reads the hour of a sample's time,
/// and the envelope of changes the time since the last sample; irregular cadence, repeated or
/// backward timestamps otherwise count as samples):
/// - the baseline: the median of the last `window - 1` values;
/// - the scale: the larger of 1.4826 times their MAD, 1.8 times an exponentially weighted mean
///   of past absolute deviations from the median (weight 1%, about the last 100 samples), and
///   0.1% of the median's size. The mean deviation keeps the scale above 0 on a series that is
///   mostly one value (mostly zeros), where the MAD is 0 and every other value would be an outlier;
///   until 5 learned samples differed from their median there is no scale, and no verdict;
/// - an envelope: the highest and lowest values seen, each pulled back toward the median by 0.23%
///   of the distance per sample that differs from the median (a half-life of about 300 such
///   samples), so it remembers the range the series has shown for a few hundred samples, and a
///   value that rose to it once is not new;
/// - evidence on the high side: min(z / threshold, (x - upper) / (0.065 spread)), with z the robust
///   z-score and spread the larger of upper - lower and the scale; likewise below on the low side.
///   Both must exceed 1: far from the median in robust deviations, and beyond the envelope.
/// - the change channel, a prediction error with the last value as the prediction: the change
///   c = x - previous against the exponentially weighted mean absolute change (weight 1%) and an
///   envelope of changes (the largest rise and fall, drawn back toward 0 on each nonzero change by
///   1 - exp(-t / 1.8 days), t the time since the last sample): min(c / (1.7 threshold mean
///   changes), (c - rise) / (0.53 spread of changes)) on the high side, likewise for a fall. It
///   catches a jump on a smooth series that the value channel finds ordinary (the series was there
///   before); a jump like those of the last day or two is not new.
/// - the daily profile, a seasonal baseline in 24 phases (the UTC hour of `at`): per phase, the
///   mean residual from the median and the mean absolute deviation from it, weighted 3% a day
///   (a sample sooner after its phase's day began weighs in proportion to the time). After 3
///   days, (x - median - phase mean) / (1.3 threshold deviations), the deviation at least 0.8 of
///   the mean deviation above; off while the MAD is 0 (mostly one value).
/// - the repeat channel (--direction both only): a value equal to the last one for the 3rd to the
///   10th time in a row, on a series where fewer than 2% of samples begin a run of repeats, once
///   the window is full: evidence repeats / 2.5, at most 1.5. A stuck metric.
/// The evidence of a sample is the largest of the four channels'. A sample is over the limit
/// (its own verdict degrading) when the evidence of a judged side is over 1. The score is
/// evidence / (evidence + 1): 0.5 at the limit, rising toward 1. The episodes (`EpisodeTracker`)
/// end after `episodeEnd` quiet samples, so one incident with normal-looking values inside it is
/// one episode, not several.
/// A sample after a sustained shift finds the envelope already at the new level, so the score
/// falls back quickly instead of staying at 1 for the whole shift.
///
/// Simulated samples (isitup's rule): judged as any other, also degrading when more than 500 above
/// the median on the latency field, and never learned, so they do not move the baseline.
///
/// Cost: as `SortedWindow` (O(log window) and a small memory move) plus O(1); memory is the window
/// and fourteen numbers per monitor, and 120 for the daily profile once a sample with an `at` is learned.
struct EnvelopeDetector: MonitorDetector {
    static let madToSigma = 1.4826
    /// The mean deviation's weight per sample.
    static let deviationWeight = 0.01
    /// The mean deviation times this is a floor of the scale.
    static let deviationFactor = 1.8
    /// The scale never goes below this share of the median's size.
    static let relativeFloor = 0.001
    /// How far the envelope moves back toward the median per sample.
    static let envelopeDecay = 0.0023
    /// How far beyond the envelope, in spreads, a value must be (at the default threshold's limit).
    static let envelopeMargin = 0.065
    /// Quiet samples in a row (evidence at most 1) that end an episode: the episode stays
    /// degrading through the first `episodeEnd - 1` of them.
    static let episodeEnd = 11
    /// The change channel's limit, in mean absolute changes, is this times the threshold (9.69 at
    /// the default 5.7).
    static let changeThresholdFactor = 1.7
    /// The mean absolute change's weight per sample.
    static let changeWeight = 0.01
    /// The envelope of changes moves back toward 0 on each nonzero change by 1 - exp(-elapsed /
    /// this), with the seconds since the last sample: it remembers the steps of the last day or two
    /// (the time constant is 1.8 days), whatever the cadence.
    static let changeTime = 1.8 * 86_400
    /// How far beyond the envelope of changes, in its spreads, a change must be.
    static let changeMargin = 0.53
    /// The daily profile's phases: the hours of the day (UTC) of a sample's `at`.
    static let phases = 24
    /// The profile's weight per day: a visit of a phase a day or more after its last day's first
    /// weighs this much, one sooner in proportion to the time (none at the same time or earlier).
    static let profileWeight = 0.03
    /// Days a phase must have been visited on before its profile judges (a visit 12 hours or more
    /// after the last counted one starts a day).
    static let profileVisits = 3
    /// Numbers kept per phase: the sums of residuals, of deviations and of weights, the days
    /// visited (up to `profileVisits`), and the `at` of the last counted day's first visit.
    static let profileStride = 5
    /// The profile channel's limit, in the phase's mean deviations, is this times the threshold
    /// (7.41 at the default 5.7).
    static let profileThresholdFactor = 1.3
    /// The phase's deviation is at least this share of the series' mean deviation.
    static let profileFloor = 0.8
    /// Samples that differed from their median the detector must have learned before it judges:
    /// until a series has varied a few times it has no scale to judge a departure by (a series of
    /// zeros meeting its first nonzero value).
    static let neededDeviations = 5
    /// The repeat channel: this many repeats in a row (the value the same as the last one this
    /// many times, so one more values in all) is a stuck value...
    static let stuckRepeats = 3
    /// ... up to this many repeats; a value that stays longer is the series' new normal (the
    /// window fills with it) ...
    static let stuckLongest = 10
    /// ... on a series where runs of repeats begin on fewer than this share of samples ...
    static let stuckRate = 0.02
    /// ... measured with this weight per sample (about the last 100 samples).
    static let repeatWeight = 0.01
    /// The evidence of a stuck value: repeats / this, at most `stuckCeiling` (1.2 at 3 repeats,
    /// score 0.55; 1.5 from 4 on, score 0.6).
    static let stuckDivisor = 2.5
    static let stuckCeiling = 1.5

    private var window: SortedWindow
    /// Exponentially weighted sum of absolute deviations and of their weights (bias-corrected mean).
    private var deviationSum = 0.0
    private var deviationWeights = 0.0
    private var upper: Double?
    private var lower: Double?
    /// Exponentially weighted sum of absolute changes between consecutive learned values, and of
    /// their weights.
    private var changeSum = 0.0
    private var changeWeights = 0.0
    /// The envelope of changes: the largest rise and fall seen, each decaying toward 0.
    private var changeUpper: Double?
    private var changeLower: Double?
    /// The daily profile, `profileStride` numbers per phase: the weighted sum of the residuals from
    /// the median, of their absolute deviations from the phase's mean residual, of the weights, the
    /// days visited, and the time (ms) the last of them started. Empty until a sample with an
    /// `at` is learned.
    private var profile: [Double] = []
    /// The weighted share of learned samples that begin a run of repeats (a value equal to the
    /// last one after a different one), and the repeats in a row up to the last learned value.
    private var repeatRate = 0.0
    private var repeats = 0
    /// Learned samples that differed from their median, up to `neededDeviations`.
    private var deviations = 0
    /// The `at` of the last learned sample with one (ms), for the decays per time.
    private var lastAtMs: Int64?

    init(settings: DetectorSettings) {
        window = SortedWindow(capacity: settings.window - 1)
    }

    /// The judgement and the numbers behind it.
    struct Report: AnomalyReport, Equatable {
        var verdict: AnomalyVerdict
        var baselineCount: Int
        /// The baseline median, in the field's unit.
        var median: Double?
        /// The envelope before this sample.
        var upper: Double?
        var lower: Double?
        /// The sample's robust z-score against the median (signed).
        var z: Double?
        var score: Double
        /// Each channel's evidence, each side apart (zero when the sample was not judged by them).
        var evidence = ChannelEvidence(repeating: 0)

        /// The channels' evidence, for the user's verdicts and sensitivities.
        var channels: ChannelEvidence? { evidence }

        /// Sets the verdict and score a sensitivity or a verdict decided.
        mutating func rejudge(over: Bool, score: Double) {
            verdict = over ? .degrading : .stable
            self.score = score
        }

        func appendFields(to object: inout AnomalyObject) {
            object.int("baseline_n", baselineCount)
            object.number(key: object.keys.median, median)
            object.number(key: object.keys.upper, upper)
            object.number(key: object.keys.lower, lower)
            object.number("z", z)
        }
    }

    static var unjudged: Report {
        Report(verdict: .unknown, baselineCount: 0, median: nil, upper: nil, lower: nil, z: nil, score: 0)
    }

    mutating func judge(_ observation: Observation, settings: DetectorSettings) -> Report {
        let x = observation.value
        let n = window.count
        let simulated = observation.simulated && settings.promotes
        guard n > 0, let high = upper, let low = lower else {
            if !observation.simulated { learn(x, median: x, atMs: observation.atMs) }
            // isitup's fallback: a simulated latency with no real one to compare with.
            guard simulated, SimulatedLatency.isDegrading(x, realMean: nil) else { return Self.unjudged }
            return Report(
                verdict: .degrading, baselineCount: 0, median: nil, upper: nil, lower: nil, z: nil,
                score: SimulatedLatency.score(x, realMean: nil))
        }
        let median = window.median
        var report = Report(verdict: .unknown, baselineCount: n, median: median, upper: high, lower: low, z: nil, score: 0)
        // isitup's +500 ms over the real mean (the window holds only real values).
        let realMean = simulated ? SimulatedLatency.mean(window.sorted) : nil
        let simulatedOver = simulated && SimulatedLatency.isDegrading(x, realMean: realMean)
        if n + 1 >= settings.minSamples, deviations >= Self.neededDeviations {
            let mad = window.mad
            var scale = max(Self.madToSigma * mad, Self.relativeFloor * abs(median), Double.leastNormalMagnitude)
            if deviationWeights > 0 { scale = max(scale, Self.deviationFactor * deviationSum / deviationWeights) }
            let z = (x - median) / scale
            let spread = max(high - low, scale)
            let k = settings.threshold
            let margin = Self.envelopeMargin * spread
            // Each channel's evidence on each side: lanes 0-3 high (value, change, profile, repeat),
            // 4-7 low; the sample's evidence is the largest.
            var lanes = ChannelEvidence(repeating: 0)
            if settings.direction.judgesHigh { lanes[0] = min(z / k, (x - high) / margin) }
            if settings.direction.judgesLow { lanes[4] = min(-z / k, (low - x) / margin) }
            // The change channel: the step from the last value against the steps seen before.
            if let rise = changeUpper, let fall = changeLower, changeWeights > 0 {
                let change = x - window.newest
                let changeScale = max(changeSum / changeWeights, Double.leastNormalMagnitude)
                let zc = change / changeScale
                let kc = Self.changeThresholdFactor * k
                let changeMargin = Self.changeMargin * max(rise - fall, changeScale)
                if settings.direction.judgesHigh { lanes[1] = min(zc / kc, (change - rise) / changeMargin) }
                if settings.direction.judgesLow { lanes[5] = min(-zc / kc, (fall - change) / changeMargin) }
            }
            // The daily profile: the value against the median plus its phase's usual offset. A
            // window that is mostly one value (MAD 0) has no profile to speak of.
            if mad > 0, let phase = Self.phase(observation.atMs), !profile.isEmpty,
                case let base = Self.profileStride * phase,
                profile[base + 3] >= Double(Self.profileVisits), profile[base + 2] > 0
            {
                let weight = profile[base + 2]
                var deviation = profile[base + 1] / weight
                if deviationWeights > 0 { deviation = max(deviation, Self.profileFloor * deviationSum / deviationWeights) }
                if deviation > 0 {
                    let residual = (x - (median + profile[base] / weight)) / (Self.profileThresholdFactor * k * deviation)
                    if settings.direction.judgesHigh { lanes[2] = residual }
                    if settings.direction.judgesLow { lanes[6] = -residual }
                }
            }
            // The repeat channel: a value stuck on one number, on a series that seldom repeats
            // itself, once the window is full (so the rate has been learned). It judges neither
            // side, so only --direction both.
            if settings.direction == .both, window.ring.isFull, x == window.newest,
                (Self.stuckRepeats...Self.stuckLongest).contains(repeats + 1), repeatRate < Self.stuckRate
            {
                lanes[3] = min(Self.stuckCeiling, Double(repeats + 1) / Self.stuckDivisor)
            }
            let evidence = max(0, lanes.max())
            report.evidence = lanes
            let over = evidence > 1 || simulatedOver
            report.verdict = over ? .degrading : .stable
            report.z = z
            report.score = evidenceScore(evidence, scale: 1)
        } else if simulatedOver {
            // Too few real values for the detector, but isitup's rule needs only their mean.
            report.verdict = .degrading
            report.score = SimulatedLatency.score(x, realMean: realMean)
        }
        if !observation.simulated {
            learn(x, median: median, atMs: observation.atMs)
            if let at = observation.atMs { learnProfile(x - median, at: at) }
        }
        return report
    }

    /// The hour of the day (UTC) of `atMs`, when there is one.
    static func phase(_ atMs: Int64?) -> Int? {
        guard let at = atMs else { return nil }
        let day: Int64 = 86_400_000
        return Int(((at % day) + day) % day / (day / Int64(phases)))
    }

    /// Learns a residual from the median in the phase of `at`, weighted by the time since the
    /// phase's last day started: a day or more, the full weight; sooner, in proportion (a sample
    /// every minute moves its hour's profile about as much in an hour as one sample an hour does);
    /// a repeated or earlier `at`, none.
    private mutating func learnProfile(_ residual: Double, at: Int64) {
        guard let phase = Self.phase(at) else { return }
        if profile.isEmpty { profile = [Double](repeating: 0, count: Self.profileStride * Self.phases) }
        let base = Self.profileStride * phase
        let day = 86_400_000.0
        var w = Self.profileWeight
        var newDay = true
        if profile[base + 3] > 0 {
            let elapsed = Double(at) - profile[base + 4]
            w = Self.profileWeight * min(1, max(0, elapsed / day))
            newDay = elapsed >= day / 2
        }
        let mean = profile[base + 2] > 0 ? profile[base] / profile[base + 2] : 0
        profile[base + 1] = (1 - w) * profile[base + 1] + w * abs(residual - mean)
        profile[base] = (1 - w) * profile[base] + w * residual
        profile[base + 2] = (1 - w) * profile[base + 2] + w
        if newDay {
            profile[base + 3] = min(profile[base + 3] + 1, Double(Self.profileVisits))
            profile[base + 4] = Double(at)
        }
    }

    /// Learns a value: the mean deviation from `median` (the baseline it was judged against), the
    /// envelope, the window.
    private mutating func learn(_ x: Double, median: Double, atMs: Int64?) {
        // The seconds since the last learned sample (0 without times, or when time steps back).
        var elapsed = 0.0
        if let at = atMs {
            if let last = lastAtMs { elapsed = max(0, Double(at &- last) / 1000) }
            lastAtMs = at
        }
        if window.count > 0 {
            let change = x - window.newest
            // The repeat rate counts the first repeat of a run and every sample that is not a
            // repeat; the later repeats of a run leave it as it was, so a long stuck run does not
            // raise the rate it is judged against.
            if change == 0 {
                if repeats == 0 { repeatRate += Self.repeatWeight * (1 - repeatRate) }
                repeats += 1
            } else {
                repeatRate *= 1 - Self.repeatWeight
                repeats = 0
            }
            changeSum = (1 - Self.changeWeight) * changeSum + Self.changeWeight * abs(change)
            changeWeights = (1 - Self.changeWeight) * changeWeights + Self.changeWeight
            if let rise = changeUpper, let fall = changeLower {
                // A step of 0 says nothing about the size of steps (as a value at the median above).
                if change != 0 {
                    let decay = Self.forgetting(elapsed, Self.changeTime)
                    changeUpper = max(change, rise * (1 - decay))
                    changeLower = min(change, fall * (1 - decay))
                }
            } else {
                changeUpper = change
                changeLower = change
            }
            deviationSum = (1 - Self.deviationWeight) * deviationSum + Self.deviationWeight * abs(x - median)
            deviationWeights = (1 - Self.deviationWeight) * deviationWeights + Self.deviationWeight
            if x != median, deviations < Self.neededDeviations { deviations += 1 }
        }
        if let high = upper, let low = lower {
            // A value equal to the median says nothing about the range: on a series that is mostly
            // one value (mostly zeros) the envelope then keeps the size of the occasional others.
            if x != median {
                upper = max(x, high + Self.envelopeDecay * (median - high))
                lower = min(x, low + Self.envelopeDecay * (median - low))
            }
        } else {
            upper = x
            lower = x
        }
        window.append(x)
    }

    /// The share forgotten over `elapsed` seconds at the time constant `time`: 1 - exp(-elapsed / time).
    @inline(__always)
    static func forgetting(_ elapsed: Double, _ time: Double) -> Double {
        elapsed > 0 ? -expm1(-elapsed / time) : 0
    }

    // MARK: - State

    func encodeState(to out: inout [UInt8]) {
        StateText.numbers("values", window.ring.inOrder, to: &out)
        StateText.number("deviation_sum", deviationSum, to: &out)
        StateText.number("deviation_weights", deviationWeights, to: &out)
        StateText.optionalNumber("upper", upper, to: &out)
        StateText.optionalNumber("lower", lower, to: &out)
        StateText.number("change_sum", changeSum, to: &out)
        StateText.number("change_weights", changeWeights, to: &out)
        StateText.optionalNumber("change_upper", changeUpper, to: &out)
        StateText.optionalNumber("change_lower", changeLower, to: &out)
        StateText.numbers("profile", profile, to: &out)
        StateText.number("repeat_rate", repeatRate, to: &out)
        StateText.optionalInteger("repeats", Int64(repeats), to: &out)
        StateText.optionalInteger("deviations", Int64(deviations), to: &out)
        StateText.optionalInteger("last_at_ms", lastAtMs, to: &out)
    }

    init(state: JSONObject, settings: DetectorSettings) throws(StateError) {
        window = SortedWindow(capacity: settings.window - 1)
        for value in try state.stateNumbers("values", limit: settings.window - 1) { window.append(value) }
        deviationSum = try state.stateNumber("deviation_sum")
        deviationWeights = try state.stateNumber("deviation_weights")
        upper = try state.optionalStateNumber("upper")
        lower = try state.optionalStateNumber("lower")
        guard deviationSum >= 0, (0...1).contains(deviationWeights) else { throw StateError("the mean deviation is out of range") }
        guard (upper == nil) == (lower == nil), (upper == nil) == (window.count == 0) else {
            throw StateError("the envelope does not match the values")
        }
        changeSum = try state.stateNumber("change_sum")
        changeWeights = try state.stateNumber("change_weights")
        changeUpper = try state.optionalStateNumber("change_upper")
        changeLower = try state.optionalStateNumber("change_lower")
        guard changeSum >= 0, (0...1).contains(changeWeights) else { throw StateError("the mean change is out of range") }
        guard (changeUpper == nil) == (changeLower == nil), window.count > 0 || changeUpper == nil else {
            throw StateError("the envelope of changes does not match the values")
        }
        let size = Self.profileStride * Self.phases
        profile = try state.stateNumbers("profile", limit: size)
        guard profile.isEmpty || profile.count == size else {
            throw StateError("'profile' has \(profile.count) numbers, not 0 or \(size)")
        }
        repeatRate = try state.stateNumber("repeat_rate")
        guard (0...1).contains(repeatRate) else { throw StateError("'repeat_rate' is not from 0 to 1") }
        guard let run = try state.optionalStateInteger("repeats"), run >= 0 else {
            throw StateError("'repeats' is not a whole number of 0 or more")
        }
        repeats = Int(run)
        guard let varied = try state.optionalStateInteger("deviations"), (0...Int64(Self.neededDeviations)).contains(varied) else {
            throw StateError("'deviations' is not a whole number from 0 to \(Self.neededDeviations)")
        }
        deviations = Int(varied)
        lastAtMs = try state.optionalStateInteger("last_at_ms")
        for phase in 0..<(profile.count / Self.profileStride) {
            let base = Self.profileStride * phase
            let visits = profile[base + 3]
            guard profile[base + 1] >= 0, (0...1).contains(profile[base + 2]),
                visits == visits.rounded(), (0...Double(Self.profileVisits)).contains(visits)
            else {
                throw StateError("'profile' is out of range at phase \(phase)")
            }
        }
    }
}

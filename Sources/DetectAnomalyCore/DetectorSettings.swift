/// Which detector judges the samples.
enum DetectorKind: String, Sendable, CaseIterable {
    /// isitup's AnomalyDetector, exactly: mean and population standard deviation of the window.
    case seed
    /// A point rule on robust statistics: median and MAD of the window, in log space.
    case mad
    /// Sustained changes: a CUSUM of robust z-scores against the higher of the recent median and a
    /// day-long level, a drift rule, and hourly seasonal offsets. The default before `envelope`.
    case robust
    /// Values that break out of what the monitor has shown: far from the median in robust
    /// deviations and beyond a slowly shrinking envelope of past values, or a change from the
    /// last value beyond the changes seen. The default.
    case envelope

    /// The default `--threshold` of each detector.
    var defaultThreshold: Double {
        switch self {
        case .seed: return 2.5
        case .mad: return 3.5
        case .robust: return 7
        case .envelope: return 5.7
        }
    }

    /// The default `--window` of each detector.
    var defaultWindow: Int {
        self == .envelope ? 100 : 50
    }

    /// Samples in a row that are not over the detector's limit (quiet samples) that end an episode:
    /// 11 for envelope, which keeps an episode degrading through 10 of them; 1 for the others, so
    /// their episode is a run of degrading samples and their verdicts are their own.
    var episodeEnd: Int {
        self == .envelope ? EnvelopeDetector.episodeEnd : 1
    }
}

/// Which side of the baseline is bad.
enum Direction: String, Sendable, CaseIterable {
    /// Higher is worse (latency).
    case high
    /// Lower is worse (speed).
    case low
    /// Either side.
    case both

    /// Whether high values are judged.
    var judgesHigh: Bool { self != .low }
    /// Whether low values are judged.
    var judgesLow: Bool { self != .high }
}

/// What shapes a detector's judgements and its per-monitor state; written into the state file,
/// which a run with other settings refuses.
struct DetectorSettings: Sendable, Equatable {
    /// The detector.
    var detector: DetectorKind
    /// The record field judged.
    var field: String = "latency_ms"
    /// The bad side.
    var direction: Direction = .high
    /// Points kept per monitor (the current one included); the detector's default in `init`.
    var window: Int
    /// Points needed in the window, the current one included, before a verdict other than unknown.
    var minSamples: Int = 10
    /// The detector's threshold (see `DetectorKind.defaultThreshold`).
    var threshold: Double

    /// Settings with each detector's defaults (its window and threshold from `DetectorKind`, the
    /// one place they are written).
    init(detector: DetectorKind = .envelope) {
        self.detector = detector
        self.window = detector.defaultWindow
        self.threshold = detector.defaultThreshold
    }

    /// Whether promotion to `degraded` applies: the seed promotes on latency only.
    var promotes: Bool { field == "latency_ms" }

    /// The unit suffix of the field (`_ms` for `latency_ms`, `_mbps` for `speed_mbps`, empty for `rtt`),
    /// which the anomaly object's value fields carry.
    var unitSuffix: String {
        guard let underscore = field.lastIndex(of: "_") else { return "" }
        return String(field[underscore...])
    }
}

/// One candidate point of a monitor: a sample that is up or degraded and has the field as a number.
struct Observation: Sendable, Equatable {
    /// The field's value.
    var value: Double
    /// Whether the sample is simulated (`simulated: true`, or "simulated" in its message).
    var simulated: Bool
    /// The sample's `at`, in milliseconds since the epoch, when it has a valid one.
    var atMs: Int64?

    /// Creates an observation.
    init(value: Double, simulated: Bool = false, atMs: Int64? = nil) {
        self.value = value
        self.simulated = simulated
        self.atMs = atMs
    }
}

/// A detector's verdict on one sample, isitup's three.
enum AnomalyVerdict: String, Sendable {
    /// Not enough data, or nothing to judge.
    case unknown
    /// Within the baseline.
    case stable
    /// Anomalous on the bad side.
    case degrading
}

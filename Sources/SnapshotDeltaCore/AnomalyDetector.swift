import VitalsKit

/// The anomaly rules' thresholds (HealthProbe's numbers are the defaults).
struct AnomalyRules: Sendable, Equatable {
    /// A sync anomaly needs at least this many types changing by more than `syncChangePercent`.
    var syncMinTypes = 4
    /// The change, in percent of the count before, that counts towards a sync anomaly.
    var syncChangePercent = 10.0
    /// Duplication: the count grew by more than this percentage...
    var duplicationChangePercent = 50.0
    /// ...with both ends of the date range moving by at most this much (ms).
    var duplicationWindowMs: Int64 = 86_400_000
    /// A deletion losing at least this share (percent) is a warning; below, info.
    var deletionWarningPercent = 10.0
    /// A deletion losing at least this share is critical.
    var deletionCriticalPercent = 50.0

    /// The defaults.
    init() {}
}

/// What detection found for one delta.
struct Detection: Sendable {
    /// The anomalies, each carrying the delta's id.
    var anomalies: [AnomalyRecord]
    /// The previous snapshot's post-restore token was used by this detection: the caller
    /// records the delta's id on it, so no later delta is suppressed again.
    var consumedPostRestoreToken: Bool
    /// Anomalies the post-restore mark suppressed.
    var suppressed: [AnomalyKind]
}

/// HealthProbe's AnomalyDetector: a pure function of two snapshots' type counts and the delta
/// between them. It changes nothing; the caller persists what it returns.
enum AnomalyDetector {
    /// Applies the rules.
    ///
    /// - The quality gate: both snapshots must be complete, or nothing is detected at all (this
    ///   alone silences the first authorization after a full deny).
    /// - The -1 guard: a type whose quality is not complete on either side is skipped.
    /// - The registry gate: an appeared or disappeared type is skipped unless its reason is normal.
    /// - Post-restore suppression: a sync anomaly is suppressed when the previous snapshot is a
    ///   post-restore baseline whose token is unused; running detection uses the token.
    static func detect(
        previous: Snapshot, current: Snapshot, delta: Delta, rules: AnomalyRules,
        at time: Int64, newID: () -> String
    ) -> Detection {
        guard previous.quality == .complete, current.quality == .complete else {
            return Detection(anomalies: [], consumedPostRestoreToken: false, suppressed: [])
        }
        // The time-zone guard: the counts of two zones are not compared, so nothing fires.
        guard previous.timezone == current.timezone else {
            return Detection(anomalies: [], consumedPostRestoreToken: false, suppressed: [])
        }
        var anomalies: [AnomalyRecord] = []
        var syncTypes: [String] = []
        func make(
            _ kind: AnomalyKind, _ severity: Severity, _ type: TypeDelta?, percent: Double?, types: [String] = [],
            _ message: String
        ) {
            anomalies.append(
                AnomalyRecord(
                    delta: delta, id: newID(), detectedAt: time, kind: kind, severity: severity,
                    typeIdentifier: type?.typeIdentifier, countBefore: type?.countBefore,
                    countAfter: type?.countAfter, countDelta: type?.countDelta,
                    changePercent: percent, types: types, message: message))
        }
        for type in delta.types {
            // The -1 guard: only complete sides are compared (an absent side is an empty one).
            if let quality = type.qualityBefore, quality != .complete { continue }
            if let quality = type.qualityAfter, quality != .complete { continue }
            // The registry gate.
            if type.transition == .appeared || type.transition == .disappeared, type.reason != .normal { continue }
            let before = max(type.countBefore ?? 0, 0)
            let after = max(type.countAfter ?? 0, 0)
            let change = type.countDelta
            // Multiplied before dividing, so a change of exactly a threshold compares equal to it
            // (7 / 100 * 100 is 7.000000000000001; 7 * 100 / 100 is 7).
            let percent: Double? = before > 0 ? Double(change) * 100 / Double(before) : nil
            let old = previous.type(type.typeIdentifier)
            let new = current.type(type.typeIdentifier)
            let name = type.typeIdentifier

            if change > 0, let old, let new, let oldEarliest = old.earliest, let newEarliest = new.earliest,
                let oldLatest = old.latest, let newLatest = new.latest, before > 0,
                newEarliest < oldEarliest || newLatest <= oldLatest
            {
                let why =
                    newEarliest < oldEarliest
                    ? "the earliest sample moved back from \(day(oldEarliest)) to \(day(newEarliest))"
                    : "the latest sample did not move past \(day(oldLatest))"
                make(
                    .historicalInsertion, .warning, type, percent: percent,
                    "\(name): \(change) samples added and \(why): samples were inserted into the past")
            }
            if change < 0 {
                let lost = before > 0 ? Double(-change) * 100 / Double(before) : 100
                let severity: Severity =
                    lost >= rules.deletionCriticalPercent
                    ? .critical
                    : lost >= rules.deletionWarningPercent ? .warning : .info
                make(
                    .deletion, severity, type, percent: percent,
                    "\(name): \(-change) of \(before) samples gone (\(formatPercent(lost)) lost)")
            }
            if change > 0, before > 0, let percent, percent > rules.duplicationChangePercent, let old, let new,
                let oldEarliest = old.earliest, let newEarliest = new.earliest, let oldLatest = old.latest,
                let newLatest = new.latest, abs(newEarliest - oldEarliest) <= rules.duplicationWindowMs,
                abs(newLatest - oldLatest) <= rules.duplicationWindowMs
            {
                make(
                    .duplication, .warning, type, percent: percent,
                    "\(name): \(before) samples became \(after) (+\(formatPercent(percent))) within the same dates: likely duplicates")
            }
            if change == 0, type.transition == .unchanged, let hashBefore = type.hashBefore, let hashAfter = type.hashAfter,
                hashBefore != hashAfter
            {
                make(
                    .silentReplacement, .warning, type, percent: 0,
                    "\(name): the same \(after) samples, but the date range changed: samples were replaced")
            }
            if let percent, abs(percent) > rules.syncChangePercent { syncTypes.append(name) }
        }
        var suppressed: [AnomalyKind] = []
        let token = previous.isPostRestore && previous.postRestoreSuppressedDeltaID == nil
        if syncTypes.count >= rules.syncMinTypes {
            if token {
                suppressed.append(.syncAnomaly)
            } else {
                make(
                    .syncAnomaly, .critical, nil, percent: nil, types: syncTypes,
                    "\(syncTypes.count) types changed by more than \(formatPercent(rules.syncChangePercent)) at once")
            }
        }
        return Detection(anomalies: anomalies, consumedPostRestoreToken: token, suppressed: suppressed)
    }

    private static func day(_ milliseconds: Int64) -> String {
        String(Timestamp.format(milliseconds: milliseconds).prefix(10))
    }

    static func formatPercent(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? "\(Int(rounded))%" : "\(rounded)%"
    }
}

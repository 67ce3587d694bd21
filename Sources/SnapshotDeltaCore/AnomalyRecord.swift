/// The anomaly rules' names.
enum AnomalyKind: String, Sendable, CaseIterable {
    /// Samples added with dates inside or before what was already there.
    case historicalInsertion = "historical_insertion"
    /// Samples gone.
    case deletion
    /// The count jumped by more than half with the date range unchanged.
    case duplication
    /// Same count, different hash: samples swapped for others.
    case silentReplacement = "silent_replacement"
    /// Many types changing by more than 10% at once.
    case syncAnomaly = "sync_anomaly"
}

/// How serious an anomaly is.
enum Severity: String, Sendable, CaseIterable {
    case info, warning, critical
}

/// One anomaly found in a delta. Its delta id is set by the detector from the delta it was
/// given and cannot be changed afterwards (HealthProbe's structural guarantee).
struct AnomalyRecord: Sendable, Equatable {
    /// A random UUID.
    let id: String
    /// The delta it was found in.
    let deltaID: String
    /// The later snapshot.
    let snapshotID: String
    /// The earlier snapshot.
    let previousSnapshotID: String
    /// When it was found.
    let detectedAt: Int64
    /// Which rule.
    let kind: AnomalyKind
    /// How serious.
    let severity: Severity
    /// The type (nil for a sync anomaly, which spans types).
    let typeIdentifier: String?
    /// Counts before and after, and the change.
    let countBefore: Int64?
    /// Count after.
    let countAfter: Int64?
    /// after - before.
    let countDelta: Int64?
    /// The change as a percentage of the count before.
    let changePercent: Double?
    /// For a sync anomaly: the types that changed by more than the threshold.
    let types: [String]
    /// In words.
    let message: String

    /// Only the detector makes records, from the delta they belong to.
    init(
        delta: Delta, id: String, detectedAt: Int64, kind: AnomalyKind, severity: Severity, typeIdentifier: String?,
        countBefore: Int64?, countAfter: Int64?, countDelta: Int64?, changePercent: Double?, types: [String], message: String
    ) {
        self.id = id
        self.deltaID = delta.id
        self.snapshotID = delta.toSnapshotID
        self.previousSnapshotID = delta.fromSnapshotID
        self.detectedAt = detectedAt
        self.kind = kind
        self.severity = severity
        self.typeIdentifier = typeIdentifier
        self.countBefore = countBefore
        self.countAfter = countAfter
        self.countDelta = countDelta
        self.changePercent = changePercent
        self.types = types
        self.message = message
    }

    /// Rebuilds a stored record (the archive's reader), keeping its stored delta id.
    static func stored(
        id: String, deltaID: String, snapshotID: String, previousSnapshotID: String, detectedAt: Int64,
        kind: AnomalyKind, severity: Severity, typeIdentifier: String?, countBefore: Int64?,
        countAfter: Int64?, countDelta: Int64?, changePercent: Double?, types: [String],
        message: String
    ) -> AnomalyRecord {
        let carrier = Delta(
            id: deltaID, fromSnapshotID: previousSnapshotID, toSnapshotID: snapshotID, createdAt: 0,
            checksumBefore: "", checksumAfter: "", timezoneBefore: "", timezoneAfter: "", mergedFrom: nil,
            detection: .ran, postRestoreSuppressed: false, types: [])
        return AnomalyRecord(
            delta: carrier, id: id, detectedAt: detectedAt, kind: kind, severity: severity,
            typeIdentifier: typeIdentifier, countBefore: countBefore, countAfter: countAfter,
            countDelta: countDelta, changePercent: changePercent, types: types, message: message)
    }
}

/// How far a count can be trusted: HealthProbe's five quality states.
///
/// A type is `complete` (every sample counted), `partial` (some were: a lower bound),
/// `unauthorized` (the collector may not read it) or `failed` (it could not be counted:
/// a timeout, an unsupported type). `loading` only describes a snapshot still being taken.
public enum Quality: String, Sendable, CaseIterable, Equatable {
    case complete, partial, unauthorized, loading, failed

    /// HealthProbe's aggregation: loading wins; unauthorized only when every type is;
    /// any failed, unauthorized or partial type makes the snapshot partial; else complete.
    public static func aggregate(_ qualities: [Quality]) -> Quality {
        if qualities.contains(.loading) { return .loading }
        if !qualities.isEmpty, qualities.allSatisfy({ $0 == .unauthorized }) { return .unauthorized }
        if qualities.contains(where: { $0 != .complete }) { return .partial }
        return .complete
    }
}

/// Samples of one type in one calendar year of the snapshot's time zone.
public struct YearlyCount: Sendable, Equatable {
    /// The year, in the snapshot's time zone.
    public var year: Int
    /// Samples starting in that year.
    public var count: Int64
    /// Set when a sample counted here covers more than a day, so it may belong partly to
    /// a neighbouring year (HealthProbe: a bucket wider than a day).
    public var isApproximate: Bool

    /// Creates a yearly count.
    public init(year: Int, count: Int64, isApproximate: Bool) {
        self.year = year
        self.count = count
        self.isApproximate = isApproximate
    }
}

/// One type's line in a snapshot: count, date range, quality and hash.
public struct TypeCount: Sendable, Equatable {
    /// The HealthKit type identifier (`HKQuantityTypeIdentifierHeartRate`).
    public var typeIdentifier: String
    /// Samples counted, or -1 when the count is unavailable (failed, unauthorized, unsupported).
    public var count: Int64
    /// The earliest start, ms since the epoch (nil without samples).
    public var earliest: Int64?
    /// The latest end, ms since the epoch (nil without samples).
    public var latest: Int64?
    /// How far the count can be trusted.
    public var quality: Quality
    /// SHA-256 of `typeIdentifier|count|earliest|latest`.
    public var typeHash: String
    /// The collector said the type does not exist where it ran.
    public var isUnsupported: Bool
    /// Per-year counts.
    public var yearly: [YearlyCount]

    /// Creates a type count; the hash is computed from the fields.
    public init(typeIdentifier: String, count: Int64, earliest: Int64?, latest: Int64?, quality: Quality,
                isUnsupported: Bool = false, yearly: [YearlyCount] = []) {
        self.typeIdentifier = typeIdentifier
        self.count = count
        self.earliest = earliest
        self.latest = latest
        self.quality = quality
        self.isUnsupported = isUnsupported
        self.yearly = yearly
        self.typeHash = Hashing.typeHash(typeIdentifier, count: count, earliest: earliest, latest: latest)
    }

    /// The count/quality coherence rule: a type that is not complete or partial has no count.
    /// Returns the corrected type and whether a correction was needed (HealthProbe asserts
    /// in debug builds and corrects to -1 in release; here the caller warns).
    public func coherent() -> (TypeCount, corrected: Bool) {
        let mustBeUnavailable = quality == .unauthorized || quality == .failed || isUnsupported
        if mustBeUnavailable, count != -1 || earliest != nil || latest != nil || !yearly.isEmpty {
            return (TypeCount(typeIdentifier: typeIdentifier, count: -1, earliest: nil, latest: nil, quality: quality,
                              isUnsupported: isUnsupported), true)
        }
        if !mustBeUnavailable, count < 0 {
            return (TypeCount(typeIdentifier: typeIdentifier, count: -1, earliest: nil, latest: nil, quality: .failed,
                              isUnsupported: isUnsupported), true)
        }
        return (self, false)
    }
}

/// One snapshot of the chain: per-type counts and the chain's metadata.
public struct Snapshot: Sendable, Equatable {
    /// The archive's local order (1, 2, ...), never reused.
    public var seq: Int64 = 0
    /// A random UUID.
    public var id: String
    /// When it was taken, ms since the epoch.
    public var createdAt: Int64
    /// What asked for it (`manual` unless `--trigger` said otherwise).
    public var trigger: String
    /// The aggregate of the types' qualities.
    public var quality: Quality
    /// SHA-256 over the hashes of the complete types, in identifier order.
    public var checksum: String
    /// SHA-256 of the sorted registry (of the empty text when every type is monitored).
    public var typeSetHash: String
    /// The monitored types, or nil when every type in the input is monitored.
    public var registry: [String]?
    /// The time zone the yearly counts are bucketed in.
    public var timezone: String
    /// The export's `HealthKit Export Version`, when the input said.
    public var exportVersion: String?
    /// The export's `ExportDate`, ms since the epoch.
    public var exportDate: Int64?
    /// Where the records came from (a path, `<stdin>`).
    public var source: String
    /// The snapshot before this one in the chain.
    public var previousSnapshotID: String?
    /// The first snapshot of a chain.
    public var isChainStart: Bool
    /// A baseline after a restore (stated with --post-restore, or inferred).
    public var isPostRestore: Bool
    /// The post-restore mark was inferred (full deny to complete, or a large chain start).
    public var isPostRestoreInferred: Bool
    /// The mark was carried over from a post-restore predecessor that could not use it yet.
    public var isPostRestoreForwarded: Bool
    /// The delta whose sync anomaly this post-restore mark suppressed (the token, once used).
    public var postRestoreSuppressedDeltaID: String?
    /// The stable device id kept outside the archive.
    public var deviceID: String
    /// The archive was empty but the device id already existed: the archive was reset.
    public var recoveredDeviceID: Bool
    /// The samples themselves were archived with this snapshot.
    public var samplesArchived: Bool
    /// Records read (every counted sample, whatever its type).
    public var recordCount: Int64
    /// Per-type counts, in identifier order.
    public var types: [TypeCount]

    /// The type count for an identifier.
    public func type(_ identifier: String) -> TypeCount? { types.first { $0.typeIdentifier == identifier } }

    /// Whether a type is monitored by this snapshot's registry (every type when there is none).
    public func monitors(_ identifier: String) -> Bool { registry.map { $0.contains(identifier) } ?? true }
}

/// How a type's presence and count moved between two snapshots.
public enum Transition: String, Sendable, CaseIterable {
    /// Absent before, present now.
    case appeared
    /// Present before, absent now.
    case disappeared
    /// More samples.
    case increased
    /// Fewer samples.
    case decreased
    /// The same count.
    case unchanged
    /// One side has no count (-1): no comparison.
    case unavailable
}

/// Why a type's delta is what it is, by priority: the first that applies wins.
public enum DeltaReason: String, Sendable, CaseIterable, Comparable {
    /// Either side is unauthorized (HealthProbe's authorizationChanged).
    case authorizationChanged = "authorization_changed"
    /// Either side is unsupported.
    case unsupported
    /// The type joined or left the registry (registryChanged).
    case registryChanged = "registry_changed"
    /// Either side is not complete for another reason (failed, partial).
    case unknown
    /// Both sides complete and monitored: the delta is the data's own.
    case normal

    /// Lower is stronger: authorizationChanged > unsupported > registryChanged > unknown > normal.
    public var priority: Int { DeltaReason.allCases.firstIndex(of: self)! }
    /// Stronger reasons sort first.
    public static func < (a: DeltaReason, b: DeltaReason) -> Bool { a.priority < b.priority }
}

/// One year's counts on both sides of a delta.
public struct YearlyDelta: Sendable, Equatable {
    /// The year.
    public var year: Int
    /// Count before (0 when the year was absent).
    public var before: Int64
    /// Count after.
    public var after: Int64
    /// after - before, or 0 under the time-zone or unavailable-count guards.
    public var delta: Int64
}

/// One type's change between two snapshots.
public struct TypeDelta: Sendable, Equatable {
    /// The type identifier.
    public var typeIdentifier: String
    /// How presence and count moved.
    public var transition: Transition
    /// Why, by priority.
    public var reason: DeltaReason
    /// The count before (nil when absent).
    public var countBefore: Int64?
    /// The count after (nil when absent).
    public var countAfter: Int64?
    /// after - before; 0 when either side is not complete (the unavailable-count guard).
    public var countDelta: Int64
    /// Quality before (nil when absent).
    public var qualityBefore: Quality?
    /// Quality after (nil when absent).
    public var qualityAfter: Quality?
    /// Type hash before.
    public var hashBefore: String?
    /// Type hash after.
    public var hashAfter: String?
    /// Per-year deltas.
    public var yearly: [YearlyDelta]
    /// Why the yearly deltas cannot be read as losses (a time-zone change), or nil.
    public var yearlyCountNote: String?
}

/// The change from one snapshot to the next.
public struct Delta: Sendable, Equatable {
    /// A random UUID.
    public var id: String
    /// The earlier snapshot.
    public var fromSnapshotID: String
    /// The later snapshot.
    public var toSnapshotID: String
    /// When it was computed.
    public var createdAt: Int64
    /// The earlier snapshot's checksum, recomputed from its type counts.
    public var checksumBefore: String
    /// The later snapshot's checksum, recomputed likewise.
    public var checksumAfter: String
    /// Time zones of both sides.
    public var timezoneBefore: String
    /// The later snapshot's time zone.
    public var timezoneAfter: String
    /// The deltas this one replaced when an intermediate snapshot was deleted.
    public var mergedFrom: [String]?
    /// Whether anomaly detection ran (both snapshots complete) or the quality gate stopped it.
    public var detection: Detection
    /// Whether this delta used a post-restore suppression token.
    public var postRestoreSuppressed: Bool
    /// One entry per type present on either side.
    public var types: [TypeDelta]

    /// Whether anomaly rules were applied to a delta.
    public enum Detection: String, Sendable {
        /// Both snapshots complete: the rules ran.
        case ran
        /// A snapshot was not complete: no rule ran (HealthProbe's quality gate).
        case qualityGate = "quality_gate"
    }
}

/// The anomaly rules' names.
public enum AnomalyKind: String, Sendable, CaseIterable {
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
public enum Severity: String, Sendable, CaseIterable {
    case info, warning, critical
}

/// One anomaly found in a delta. Its delta id is set by the detector from the delta it was
/// given and cannot be changed afterwards (HealthProbe's structural guarantee).
public struct AnomalyRecord: Sendable, Equatable {
    /// A random UUID.
    public let id: String
    /// The delta it was found in.
    public let deltaID: String
    /// The later snapshot.
    public let snapshotID: String
    /// The earlier snapshot.
    public let previousSnapshotID: String
    /// When it was found.
    public let detectedAt: Int64
    /// Which rule.
    public let kind: AnomalyKind
    /// How serious.
    public let severity: Severity
    /// The type (nil for a sync anomaly, which spans types).
    public let typeIdentifier: String?
    /// Counts before and after, and the change.
    public let countBefore: Int64?
    /// Count after.
    public let countAfter: Int64?
    /// after - before.
    public let countDelta: Int64?
    /// The change as a percentage of the count before.
    public let changePercent: Double?
    /// For a sync anomaly: the types that changed by more than the threshold.
    public let types: [String]
    /// In words.
    public let message: String

    /// Only the detector makes records, from the delta they belong to.
    init(delta: Delta, id: String, detectedAt: Int64, kind: AnomalyKind, severity: Severity, typeIdentifier: String?,
         countBefore: Int64?, countAfter: Int64?, countDelta: Int64?, changePercent: Double?, types: [String], message: String) {
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
    static func stored(id: String, deltaID: String, snapshotID: String, previousSnapshotID: String, detectedAt: Int64,
                       kind: AnomalyKind, severity: Severity, typeIdentifier: String?, countBefore: Int64?,
                       countAfter: Int64?, countDelta: Int64?, changePercent: Double?, types: [String],
                       message: String) -> AnomalyRecord {
        let carrier = Delta(id: deltaID, fromSnapshotID: previousSnapshotID, toSnapshotID: snapshotID, createdAt: 0,
                            checksumBefore: "", checksumAfter: "", timezoneBefore: "", timezoneAfter: "", mergedFrom: nil,
                            detection: .ran, postRestoreSuppressed: false, types: [])
        return AnomalyRecord(delta: carrier, id: id, detectedAt: detectedAt, kind: kind, severity: severity,
                             typeIdentifier: typeIdentifier, countBefore: countBefore, countAfter: countAfter,
                             countDelta: countDelta, changePercent: changePercent, types: types, message: message)
    }
}

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
    /// SHA-256 of the sorted monitored types: the registry, or the types counted when there is none.
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

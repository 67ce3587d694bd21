/// How far a count can be trusted: HealthProbe's five quality states.
///
/// A type is `complete` (every sample counted), `partial` (some were: a lower bound),
/// `unauthorized` (the collector may not read it) or `failed` (it could not be counted:
/// a timeout, an unsupported type). `loading` only describes a snapshot still being taken.
enum Quality: String, Sendable, CaseIterable, Equatable {
    case complete, partial, unauthorized, loading, failed

    /// HealthProbe's aggregation: loading wins; unauthorized only when every type is;
    /// any failed, unauthorized or partial type makes the snapshot partial; else complete.
    static func aggregate(_ qualities: [Quality]) -> Quality {
        if qualities.contains(.loading) { return .loading }
        if !qualities.isEmpty, qualities.allSatisfy({ $0 == .unauthorized }) { return .unauthorized }
        if qualities.contains(where: { $0 != .complete }) { return .partial }
        return .complete
    }
}

/// Samples of one type in one calendar year of the snapshot's time zone.
struct YearlyCount: Sendable, Equatable {
    /// The year, in the snapshot's time zone.
    var year: Int
    /// Samples starting in that year.
    var count: Int64
    /// Set when a sample counted here covers more than a day, so it may belong partly to
    /// a neighbouring year (HealthProbe: a bucket wider than a day).
    var isApproximate: Bool
}

/// One type's line in a snapshot: count, date range, quality and hash.
struct TypeCount: Sendable, Equatable {
    /// The HealthKit type identifier (`HKQuantityTypeIdentifierHeartRate`).
    var typeIdentifier: String
    /// Samples counted, or -1 when the count is unavailable (failed, unauthorized, unsupported).
    var count: Int64
    /// The earliest start, ms since the epoch (nil without samples).
    var earliest: Int64?
    /// The latest end, ms since the epoch (nil without samples).
    var latest: Int64?
    /// How far the count can be trusted.
    var quality: Quality
    /// SHA-256 of `typeIdentifier|count|earliest|latest`.
    var typeHash: String
    /// The collector said the type does not exist where it ran.
    var isUnsupported: Bool
    /// Per-year counts.
    var yearly: [YearlyCount]

    /// Creates a type count; the hash is computed from the fields.
    init(
        typeIdentifier: String, count: Int64, earliest: Int64?, latest: Int64?, quality: Quality,
        isUnsupported: Bool = false, yearly: [YearlyCount] = []
    ) {
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
    func coherent() -> (TypeCount, corrected: Bool) {
        let mustBeUnavailable = quality == .unauthorized || quality == .failed || isUnsupported
        if mustBeUnavailable, count != -1 || earliest != nil || latest != nil || !yearly.isEmpty {
            return (
                TypeCount(
                    typeIdentifier: typeIdentifier, count: -1, earliest: nil, latest: nil, quality: quality,
                    isUnsupported: isUnsupported), true
            )
        }
        if !mustBeUnavailable, count < 0 {
            return (
                TypeCount(
                    typeIdentifier: typeIdentifier, count: -1, earliest: nil, latest: nil, quality: .failed,
                    isUnsupported: isUnsupported), true
            )
        }
        return (self, false)
    }
}

/// One snapshot of the chain: per-type counts and the chain's metadata.
struct Snapshot: Sendable, Equatable {
    /// The archive's local order (1, 2, ...), never reused.
    var seq: Int64 = 0
    /// A random UUID.
    var id: String
    /// When it was taken, ms since the epoch.
    var createdAt: Int64
    /// What asked for it (`manual` unless `--trigger` said otherwise).
    var trigger: String
    /// The aggregate of the types' qualities.
    var quality: Quality
    /// SHA-256 over the hashes of the complete types, in identifier order.
    var checksum: String
    /// SHA-256 of the sorted monitored types: the registry, or the types counted when there is none.
    var typeSetHash: String
    /// The monitored types, or nil when every type in the input is monitored.
    var registry: [String]?
    /// The time zone the yearly counts are bucketed in.
    var timezone: String
    /// The export's `HealthKit Export Version`, when the input said.
    var exportVersion: String?
    /// The export's `ExportDate`, ms since the epoch.
    var exportDate: Int64?
    /// Where the records came from (a path, `<stdin>`).
    var source: String
    /// The snapshot before this one in the chain.
    var previousSnapshotID: String?
    /// The first snapshot of a chain.
    var isChainStart: Bool
    /// A baseline after a restore (stated with --post-restore, or inferred).
    var isPostRestore: Bool
    /// The post-restore mark was inferred (full deny to complete, or a large chain start).
    var isPostRestoreInferred: Bool
    /// The mark was carried over from a post-restore predecessor that could not use it yet.
    var isPostRestoreForwarded: Bool
    /// The delta whose sync anomaly this post-restore mark suppressed (the token, once used).
    var postRestoreSuppressedDeltaID: String?
    /// The stable device id kept outside the archive.
    var deviceID: String
    /// The archive was empty but the device id already existed: the archive was reset.
    var recoveredDeviceID: Bool
    /// The samples themselves were archived with this snapshot.
    var samplesArchived: Bool
    /// Records read (every counted sample, whatever its type).
    var recordCount: Int64
    /// Per-type counts, in identifier order.
    var types: [TypeCount]

    /// The type count for an identifier.
    func type(_ identifier: String) -> TypeCount? { types.first { $0.typeIdentifier == identifier } }

    /// Whether a type is monitored by this snapshot's registry (every type when there is none).
    func monitors(_ identifier: String) -> Bool { registry.map { $0.contains(identifier) } ?? true }
}

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

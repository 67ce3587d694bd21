/// How a type's presence and count moved between two snapshots.
enum Transition: String, Sendable, CaseIterable {
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
enum DeltaReason: String, Sendable, CaseIterable, Comparable {
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
    var priority: Int { DeltaReason.allCases.firstIndex(of: self)! }
    /// Stronger reasons sort first.
    static func < (a: DeltaReason, b: DeltaReason) -> Bool { a.priority < b.priority }
}

/// One year's counts on both sides of a delta.
struct YearlyDelta: Sendable, Equatable {
    /// The year.
    var year: Int
    /// Count before (0 when the year was absent).
    var before: Int64
    /// Count after.
    var after: Int64
    /// after - before, or 0 under the time-zone or unavailable-count guards.
    var delta: Int64
}

/// One type's change between two snapshots.
struct TypeDelta: Sendable, Equatable {
    /// The type identifier.
    var typeIdentifier: String
    /// How presence and count moved.
    var transition: Transition
    /// Why, by priority.
    var reason: DeltaReason
    /// The count before (nil when absent).
    var countBefore: Int64?
    /// The count after (nil when absent).
    var countAfter: Int64?
    /// after - before; 0 when either side is not complete (the unavailable-count guard).
    var countDelta: Int64
    /// Quality before (nil when absent).
    var qualityBefore: Quality?
    /// Quality after (nil when absent).
    var qualityAfter: Quality?
    /// Type hash before.
    var hashBefore: String?
    /// Type hash after.
    var hashAfter: String?
    /// Per-year deltas.
    var yearly: [YearlyDelta]
    /// Why the yearly deltas cannot be read as losses (a time-zone change), or nil.
    var yearlyCountNote: String?
}

/// The change from one snapshot to the next.
struct Delta: Sendable, Equatable {
    /// A random UUID.
    var id: String
    /// The earlier snapshot.
    var fromSnapshotID: String
    /// The later snapshot.
    var toSnapshotID: String
    /// When it was computed.
    var createdAt: Int64
    /// The earlier snapshot's checksum, recomputed from its type counts.
    var checksumBefore: String
    /// The later snapshot's checksum, recomputed likewise.
    var checksumAfter: String
    /// Time zones of both sides.
    var timezoneBefore: String
    /// The later snapshot's time zone.
    var timezoneAfter: String
    /// The deltas this one replaced when an intermediate snapshot was deleted.
    var mergedFrom: [String]?
    /// Whether anomaly detection ran (both snapshots complete) or the quality gate stopped it.
    var detection: Detection
    /// Whether this delta used a post-restore suppression token.
    var postRestoreSuppressed: Bool
    /// One entry per type present on either side.
    var types: [TypeDelta]

    /// Whether anomaly rules were applied to a delta.
    enum Detection: String, Sendable {
        /// Both snapshots complete: the rules ran.
        case ran
        /// A snapshot was not complete: no rule ran (HealthProbe's quality gate).
        case qualityGate = "quality_gate"
    }
}

import VitalsKit

/// How a sample's status is stored (SQLite's `status` column, ClickHouse's `status UInt8`):
/// one mapping for both backends. Only up (0) is uptime, as OnlineTracker counts it.
extension SampleStatus {
    /// The stored code.
    var storeCode: UInt8 {
        switch self {
        case .up: return 0
        case .degraded: return 1
        case .down: return 2
        case .error: return 3
        case .unknown: return 4
        }
    }

    /// The status a stored code stands for; a code store-samples never writes is an error
    /// (another program wrote it, or the answer was damaged).
    init(storeCode code: Int64) throws {
        switch code {
        case 0: self = .up
        case 1: self = .degraded
        case 2: self = .down
        case 3: self = .error
        case 4: self = .unknown
        default: throw ToolError("the store holds a sample status code \(code) that store-samples never writes (0 to 4)")
        }
    }
}

/// The writing side of a store: all an ingest needs (`Ingester`). Every store writes; a store that
/// only writes (the remote store an agent sends its samples through, which has nothing to
/// answer a view with) implements this alone.
protocol SampleWriter: AnyObject {
    /// Adds one sample (and its line, kept whole for export) to the open batch, opening one
    /// when none is open. Nothing is visible to readers until `commitBatch`. Returns the
    /// monitor's integer id, the `id` the views show, or nil from a store that gives none (a
    /// remote store: the server numbers the monitors).
    ///
    /// A sample is identified by its monitor, its own `agent` (none when it names none) and its
    /// time in ms: one that is stored already is not stored again. The batch's outcome says which
    /// of its samples were (`BatchOutcome`).
    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64?
    /// Registers or refreshes a monitor from a `monitor` record (see
    /// `StorableSample.monitorRecord`), in the open batch, opening one when none is open; no
    /// sample is stored. Returns the monitor's integer id (nil as for `add`).
    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64?
    /// Applies retention to the monitors the batch touched and commits it atomically; says which
    /// of its samples were stored already.
    @discardableResult
    func commitBatch(retention: Retention, now: Int64) throws -> BatchOutcome
    /// As `commitBatch`, but may return before the store has acknowledged the batch: nothing
    /// of it counts as stored until `awaitSubmitted` returns. At most one batch is in flight.
    func submitBatch(retention: Retention, now: Int64) throws
    /// Waits until the batch submitted last is stored (or throws: it may not be), and says which
    /// of its samples were stored already (an empty outcome when none was in flight).
    @discardableResult
    func awaitSubmitted() throws -> BatchOutcome
    /// Drops the open batch, if any.
    func abortBatch()
    /// Whether the open batch should be committed now, before the ingester's own limits (rows, time):
    /// a remote store's batch is one request's worth of bytes, and the records the ingester keeps to
    /// pass on are then bounded by it.
    var batchIsFull: Bool { get }
    /// The most samples a batch of this store holds (`Ingester.maxRows` unless the store says).
    var maxBatchRows: Int { get }
}

extension SampleWriter {
    /// A store whose batches only the ingester's limits bound.
    var batchIsFull: Bool { false }
    var maxBatchRows: Int { Ingester.maxRows }
}

/// The reading side of a store: what the views (`Views`, the API's answers, `metrics`) ask of it,
/// and all they may ask. Every view is written against this protocol alone, so a second backend
/// that answers it serves every view unchanged.
protocol SampleQueries: AnyObject {
    /// Every monitor, by id.
    func monitors() throws -> [MonitorRecord]
    /// The monitor with integer id or monitor id `key`.
    func monitor(matching key: String) throws -> MonitorRecord?
    /// The newest sample of each place a monitor was seen from (places whose samples all went, to
    /// retention or clear, are gone), by place.
    func places(monitorID: Int64) throws -> [StoredSample]
    /// Samples of a monitor in `[from, until)`, oldest first: time, status (as `selection` says),
    /// latency.
    func forEachSample(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection,
        _ visit: (Int64, SampleStatus, Double?) throws -> Void) throws
    /// The 15-minute buckets of a monitor's samples in `[from, until)`, oldest first, only those
    /// with checks (`HistoryBucket` says what each figure is).
    func forEachBucket(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, _ visit: (HistoryBucket) throws -> Void) throws
    /// A page of samples of a monitor in `[from, until)`, newest first (each with its own status).
    func page(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, offset: Int, limit: Int) throws -> [StoredSample]
    /// Totals of a monitor in `[from, until)` (speed only when asked: it costs more); `good`
    /// counts the samples up as `selection` says.
    func totals(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, withSpeed: Bool) throws -> SampleTotals
    /// The number of samples of a monitor in `[from, until)`.
    func count(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection) throws -> Int
    /// Every sample stored and counted (not held), by monitor id and status: each monitor's
    /// counts indexed by the status's `storeCode` (`metrics`' `vitals_checks_total`).
    func checkCounts() throws -> [Int64: [Int]]
    /// Every agent.
    func agents() throws -> [AgentRecord]
    /// A number that changes with every write to the store (samples, monitors, agents), for
    /// answers kept between requests (`ViewCache`); nil when the store keeps none.
    func generation() throws -> Int64?
    /// The earliest sample time at or after `from`, and the earliest after `after` (held samples
    /// included): when a time window's contents next change as the clock moves.
    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?)
}

/// The keeping side of a store: the agents' statuses, clearing, exporting the lines as stored,
/// and the unit of work that bounds what an instance remembers.
protocol SampleMaintenance: AnyObject {
    /// Approves the agents the ingest policy lists (`--approve-agents`), counting the samples
    /// they had held, before ingesting.
    func approveListedAgents(now: Int64) throws
    /// One agent's status, or the status a new agent would get under the store's policy (one
    /// indexed lookup, cached with the other agents' statuses for the request or command).
    func status(ofAgent agent: String) throws -> AgentStatus
    /// Sets an agent's status; false when there is no such agent.
    func setAgentStatus(_ id: String, to status: AgentStatus) throws -> Bool
    /// Deletes the samples before `before` (all when nil), of one monitor or of all; monitors
    /// and agents stay. Returns how many were deleted.
    func clear(monitorID: Int64?, before: Int64?) throws -> Int
    /// Stored sample lines in `[from, until)`, in time order, optionally of one monitor.
    func export(
        from: Int64, until: Int64, monitorID: Int64?,
        _ visit: (LineBytes) throws -> Void) throws
    /// Starts a unit of work at `now`. The cache model: what an instance remembers of the store
    /// between calls (ClickHouse's read caches, the monitors and agents' statuses learnt while
    /// writing) holds for one unit of work. A command is one; a long-lived instance (a
    /// responder's) calls this first thing in each request, so it answers from the store as it
    /// is now, whoever wrote to it meanwhile.
    ///
    /// Each store keeps all it remembers for a unit of work in one value (its `UnitCaches`),
    /// which this replaces whole, and drops a batch left open; whatever else an instance holds
    /// (a connection, prepared statements, a retention clock) is valid across requests, for the
    /// reason written beside it.
    func startRequest(now: Int64)
}

/// A whole store: it writes, answers the views and keeps itself. SQLite (`SQLite/`) is the
/// embedded default and ClickHouse (`ClickHouse/`) the distributed one; an agent's remote store
/// (`Remote/`) is a `SampleWriter` only. Each of the three seams is what one kind of caller
/// needs: the ingester writes, the views query, the subcommands that keep the store maintain.
protocol SampleStore: SampleWriter, SampleQueries, SampleMaintenance {}

extension SampleQueries {
    /// The buckets folded in Swift from the samples, in time order.
    func forEachBucket(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, _ visit: (HistoryBucket) throws -> Void
    ) throws {
        var buckets = HistoryBuckets()
        try forEachSample(monitorID: monitorID, from: from, until: until, selection: selection) { at, status, latency in
            try buckets.add(at: at, status: status, latency: latency, visit)
        }
        try buckets.finish(visit)
    }

    func generation() throws -> Int64? { nil }
    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?) { (nil, nil) }
}

/// A store that is not there yet, or not at this build's version (ClickHouse): a query says so
/// and fails (the API answers 503), a long-lived follower waits for an ingest to make it.
struct StoreMissing: Error, CustomStringConvertible {
    /// What is missing, and what makes it.
    let description: String
}

/// What became of a batch's samples that were not stored because a sample of the same identity
/// (monitor, agent, time) was stored first: each by its position among the batch's samples, in
/// the order they were added. The same bytes are a duplicate (a replay: nothing to say); other
/// bytes a conflict (the first stored wins, and the user is told).
struct BatchOutcome: Equatable, Sendable {
    var duplicates: [Int] = []
    var conflicts: [Int] = []

    /// Samples of the batch not stored.
    var skipped: Int { duplicates.count + conflicts.count }
}

import VitalsKit

/// A monitor as the store knows it, registered from its samples.
struct MonitorRecord: Sendable {
    /// The stable integer id of the API views.
    var id: Int64
    /// The monitor id of the samples.
    var monitor: String
    var name: String?
    var kind: String?
    var target: String?
    var agent: String?
    var description: String?
    var checkInterval: Int64?
    /// First and last sample times, ms since the epoch.
    var firstSeen: Int64
    var lastSeen: Int64
    /// The latest monitor config its samples stated, as JSON text (OnlineTracker's config object).
    var config: String?
    /// Whether the latest sample that said so called the monitor enabled.
    var enabled: Bool?
}

/// One stored sample's columns.
struct StoredSample: Sendable {
    var id: Int64
    var at: Int64
    var status: SampleStatus
    var latencyMs: Double?
    var message: String?
    var tlsExpiryDays: Int64?
}

/// An agent seen in samples, with its approval status.
struct AgentRecord: Sendable {
    var id: String
    var status: String
    var createdAt: Int64
    var lastSeen: Int64
    var monitorCount: Int
    /// The name its samples gave it (`agent_name`), apart from its id.
    var name: String?
}

/// Where ingested samples come from. The user's own command line (the default) counts at
/// once whatever a sample's `agent` says; samples from elsewhere (`--remote`, for the API
/// that receives them) count only once their agent is approved.
struct IngestPolicy: Sendable {
    /// The samples came from elsewhere.
    var remote = false
    /// A new agent is approved on sight instead of pending.
    var autoApprove = false
    /// Agents approved before ingesting.
    var approvedAgents: [String] = []
    /// The user's own samples.
    init(remote: Bool = false, autoApprove: Bool = false, approvedAgents: [String] = []) {
        self.remote = remote
        self.autoApprove = autoApprove
        self.approvedAgents = approvedAgents
    }
}

/// Totals over a window for one monitor.
struct SampleTotals: Sendable {
    /// Checks in the window.
    var checks = 0
    /// Checks that were up (a degraded check is not uptime, as OnlineTracker counts it).
    var good = 0
    /// Sum and count of latencies present.
    var latencySum = 0.0
    var latencyCount = 0
    /// Sum and count of speeds present.
    var speedSum = 0.0
    var speedCount = 0
    /// The newest check time.
    var lastAt: Int64?
}

/// How much history to keep.
struct Retention: Sendable, Equatable {
    /// Days of samples kept unless --keep-days says otherwise (the API's ingest keeps as many).
    static let defaultDays = 400
    /// Samples kept per monitor at most (nil: no limit).
    var perMonitor: Int?
    /// Days of samples kept (nil: no limit).
    var days: Int?
    /// Creates a policy.
    init(perMonitor: Int? = nil, days: Int? = Retention.defaultDays) {
        self.perMonitor = perMonitor
        self.days = days
    }
}

/// The storage the views are written against. SQLite is the embedded default; a second
/// backend (a distributed engine, for agents in many places) implements this protocol and
/// every view works unchanged.
protocol SampleStore: AnyObject {
    /// Adds one sample (and its line, kept whole for export) to the open batch, opening one
    /// when none is open. Nothing is visible to readers until `commitBatch`. Returns the
    /// monitor's integer id, the `id` the views show.
    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64
    /// Registers or refreshes a monitor from a `monitor` record (see
    /// `StorableSample.monitorRecord`), in the open batch, opening one when none is open; no
    /// sample is stored. Returns the monitor's integer id.
    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64
    /// Approves the agents the ingest policy lists (`--approve-agents`), counting the samples
    /// they had held, before ingesting.
    func approveListedAgents(now: Int64) throws
    /// Applies retention to the monitors the batch touched and commits it atomically.
    func commitBatch(retention: Retention, now: Int64) throws
    /// As `commitBatch`, but may return before the store has acknowledged the batch: nothing
    /// of it counts as stored until `awaitSubmitted` returns. At most one batch is in flight.
    func submitBatch(retention: Retention, now: Int64) throws
    /// Waits until the batch submitted last is stored (or throws: it may not be).
    func awaitSubmitted() throws
    /// Drops the open batch, if any.
    func abortBatch()
    /// Every monitor, by id.
    func monitors() throws -> [MonitorRecord]
    /// The monitor with integer id or monitor id `key`.
    func monitor(matching key: String) throws -> MonitorRecord?
    /// The newest sample of a monitor.
    func latest(monitorID: Int64) throws -> StoredSample?
    /// Samples of a monitor in `[from, until)`, oldest first: time, status, latency.
    func forEachSample(monitorID: Int64, from: Int64, until: Int64,
                       _ visit: (Int64, SampleStatus, Double?) throws -> Void) throws
    /// A page of samples of a monitor in `[from, until)`, newest first.
    func page(monitorID: Int64, from: Int64, until: Int64, offset: Int, limit: Int) throws -> [StoredSample]
    /// Totals of a monitor in `[from, until)` (speed only when asked: it costs more).
    func totals(monitorID: Int64, from: Int64, until: Int64, withSpeed: Bool) throws -> SampleTotals
    /// The number of samples of a monitor in `[from, until)`.
    func count(monitorID: Int64, from: Int64, until: Int64) throws -> Int
    /// Every agent.
    func agents() throws -> [AgentRecord]
    /// Sets an agent's status; false when there is no such agent.
    func setAgentStatus(_ id: String, to status: String) throws -> Bool
    /// Deletes the samples before `before` (all when nil), of one monitor or of all; monitors
    /// and agents stay. Returns how many were deleted.
    func clear(monitorID: Int64?, before: Int64?) throws -> Int
    /// Stored sample lines in `[from, until)`, in time order, optionally of one monitor.
    func export(from: Int64, until: Int64, monitorID: Int64?,
                _ visit: (UnsafeBufferPointer<UInt8>) throws -> Void) throws
    /// The most samples one batch holds: a commit costs SQLite little, while every INSERT
    /// makes ClickHouse a new part to merge, so its batches are larger.
    var batchRows: Int { get }
    /// A number that changes with every write to the store (samples, monitors, agents), for
    /// answers kept between requests (`ViewCache`); nil when the store keeps none.
    func generation() throws -> Int64?
    /// The earliest sample time at or after `from`, and the earliest after `after` (held samples
    /// included): when a time window's contents next change as the clock moves.
    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?)
    /// Starts a unit of work at `now`. The cache model: what an instance remembers of the store
    /// between calls (ClickHouse's read caches, the monitors and agents' statuses learnt while
    /// writing) holds for one unit of work. A command is one; a long-lived instance (a
    /// responder's) calls this first thing in each request, so it answers from the store as it
    /// is now, whoever wrote to it meanwhile.
    func startRequest(now: Int64)
}

extension SampleStore {
    var batchRows: Int { 1000 }
    func generation() throws -> Int64? { nil }
    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?) { (nil, nil) }
    func submitBatch(retention: Retention, now: Int64) throws { try commitBatch(retention: retention, now: now) }
    func awaitSubmitted() throws {}
}

/// The earliest and latest sample time of an agent: its `created_at` and `last_seen` are
/// these, whatever batches its samples came in.
struct AgentSpan: Equatable {
    var first: Int64
    var last: Int64

    init(_ first: Int64, _ last: Int64? = nil) {
        self.first = first
        self.last = last ?? first
    }

    mutating func widen(_ at: Int64) {
        first = min(first, at)
        last = max(last, at)
    }

    mutating func widen(_ other: AgentSpan) {
        first = min(first, other.first)
        last = max(last, other.last)
    }

    /// Whether `other` lies within this span.
    func holds(_ other: AgentSpan) -> Bool { first <= other.first && other.last <= last }
}

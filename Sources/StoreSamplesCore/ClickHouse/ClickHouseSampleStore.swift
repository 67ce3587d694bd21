import VitalsKit

/// The shared backend: ClickHouse, over its HTTP interface, for agents in many places writing
/// into one store; one server, or a `Distributed` table over the shards of a cluster.
///
/// The tables are `ClickHouseSchema`'s, their rows `ClickHouseRows`' (doubles travel in
/// `RowBinary`, exact both ways). The work is split by concept: writing
/// (`ClickHouseSampleStore+Writing`), reading (`+Reading`), and retention, clear and export
/// (`+Maintenance`). Every method answers as `SQLiteSampleStore` does, so the views print the
/// same bytes. This file holds the client and all the state an instance keeps, each with how
/// long it holds.
final class ClickHouseSampleStore: SampleStore {
    // MARK: - State valid across requests

    /// The HTTP client (one kept-alive connection; it holds no answer).
    let client: ClickHouseClient
    let location: ClickHouseLocation
    /// Where the tables are (database, cluster).
    let placement: ClickHouseSchema.Placement
    /// Where the samples being ingested come from: fixed when the store is opened.
    let policy: IngestPolicy
    /// A random number naming this instance's writes (part of each sample's key): any number
    /// serves, as long as no other writer has it.
    let writer = UInt64.random(in: 1...UInt64.max)
    /// The last version given a monitor or agent row: versions only have to grow (see `nextVersion`).
    var version: UInt64 = 0
    /// When retention last listed the partitions: a throttle on this instance's own work (it
    /// checks at most hourly), not a memory of the store; each check lists them afresh.
    var retentionCheckedAt: Int64?

    // MARK: - State of one unit of work

    /// A monitor as this unit of work knows it: the row it would write, whether it must, and
    /// whether a sample of it was seen (its first may take first_seen back). A reference,
    /// changed in place: a sample costs one dictionary lookup (a struct in the dictionary took
    /// six, a quarter of a ClickHouse ingest's instructions with the set of monitors seen).
    final class MonitorRow {
        var record: MonitorRecord
        var dirty: Bool
        var touched = false
        /// Made by this unit of work: its id is settled once it is written (`settleMonitorIDs`).
        var created = false
        /// The batch (`Batch.number`) whose `spans` hold this monitor's, and where.
        var spanBatch: UInt64 = 0
        var span = 0

        init(record: MonitorRecord, dirty: Bool = false) {
            self.record = record
            self.dirty = dirty
        }
    }

    // `caches`, `batch` and `inFlight` are touched several times for every sample: exempt from
    // dynamic exclusivity checks (a store is used from the thread that made it, one call at a
    // time), they save 7% of a ClickHouse ingest's instructions on 100,000 bench lines (callgrind).
    /// What this instance learnt of the store and remembers for one unit of work (a command, or
    /// one request of a responder): replaced whole by `startRequest`, and by `abortBatch` (what
    /// the batch changed in memory was not stored).
    struct UnitCaches {
        /// The time views take as now (the window of the latest-sample query).
        var now: Int64
        /// Monitors by monitor id, as read and then changed by the samples written (nil: not read yet).
        var monitors: [String: MonitorRow]?
        /// The monitors table as `readMonitors` last read it (nil: not read since this unit began or wrote it).
        var monitorTable: [MonitorRecord]?
        /// The integer id the next new monitor gets.
        var nextMonitorID: Int64 = 1
        /// Agents by id, as read and then written (nil: not read yet).
        var agents: [String: AgentRecord]?
        /// Agents' statuses as read (or decided for a new agent).
        var agentStatus: [String: AgentStatus] = [:]
        /// The span of sample times of each agent whose row this unit has written.
        var agentsWritten: [String: AgentSpan] = [:]
        /// The number the next sample gets (nil: not read from `marks` yet).
        var nextSampleID: Int64?
        /// Per identity agent, the latest time stored before this unit of work and the samples it
        /// added since (nil: `marks` not read yet): which samples may be stored already.
        var agentTimes: [String: AgentTimes]?
        /// The identity agent of the sample added last, and its times (most batches name one agent).
        var lastAgent: (name: String, times: AgentTimes)?
        /// The monitors as the views last read them, by integer id (the id → monitor map of every query).
        var monitorsByID: [Int64: MonitorRecord]?
        /// Whether a view listed every monitor (it then asks each one's latest sample and totals:
        /// answered from one query each).
        var listed = false
        /// Every monitor's places' newest samples, once asked for all.
        var places: [String: [StoredSample]]?
        /// Totals of every monitor, by window and selection.
        var totals: [TotalsWindow: [String: SampleTotals]] = [:]
        /// Whether some batch was ever sent again (`samplesTable()` then reads with FINAL), once asked.
        var samplesResent: Bool?

        init(now: Int64) { self.now = now }

        /// What `totals` are kept by: a view of every monitor asks each one's totals of the
        /// same window, so the key is made without building a string each time.
        struct TotalsWindow: Hashable {
            let from: Int64
            let until: Int64
            let selection: SampleSelection
        }
    }

    @exclusivity(unchecked) var caches: UnitCaches

    // MARK: - State of the open batch

    /// The batch being gathered: its sample rows and the agents they named. Emptied whenever it is sent or dropped.
    struct Batch {
        var rows = RowBinaryWriter()
        var count = 0
        /// Where each sample's row begins, and its number's 8 bytes.
        var rowStarts: [Int] = []
        var idOffsets: [Int] = []
        /// The positions of the samples that may be stored already (see `isNew`).
        var uncertain: [Int] = []
        /// Each monitor's counted samples in the batch (`PlaceSpan`), and the span of each sample's
        /// monitor, by position (a held sample's too).
        var spans: [PlaceSpan] = []
        var rowSpans: [Int32] = []
        /// The number given the batch's first sample.
        var firstID: Int64 = 0
        /// Whether a sample or monitor record was added since the last commit.
        var open = false
        var agents = AgentSightings()
        /// The number of the INSERT the batch is sent as (the samples' `batch`): random, so writers
        /// that insert at once need not agree on one; a new one for each batch.
        var number = Batch.newNumber()

        /// A batch number: any but 0, which marks the samples a follower never writes.
        static func newNumber() -> UInt64 { UInt64.random(in: 1...UInt64.max) }

        /// Empties the batch, keeping its buffer for the next.
        mutating func clear() {
            rows.bytes.removeAll(keepingCapacity: true)
            count = 0
            rowStarts.removeAll(keepingCapacity: true)
            idOffsets.removeAll(keepingCapacity: true)
            uncertain.removeAll(keepingCapacity: true)
            spans.removeAll(keepingCapacity: true)
            rowSpans.removeAll(keepingCapacity: true)
            open = false
            agents.removeAll()
            number = Batch.newNumber()
        }
    }

    /// One monitor's counted samples in a batch, as far as judging needs them: the first and last
    /// time, and the place they came from.
    struct PlaceSpan {
        /// None counted yet, one place (its identity agent, '' for none), or more than one.
        enum Places: Equatable {
            case none
            case one(String)
            case several
        }

        let row: MonitorRow
        var firstAt = Int64.max
        var lastAt = Int64.min
        var places = Places.none
    }

    @exclusivity(unchecked) var batch = Batch()
    /// The rows of the batch in flight, in the table's key order (`ClickHouseRows.appendSorted`): the
    /// buffer is kept from batch to batch, as the open batch's is, so neither is allocated (and
    /// faulted in page by page) again for each INSERT.
    @exclusivity(unchecked) var sending: [UInt8] = []
    /// The samples INSERT sent and not yet answered: its request, the sample numbers it holds,
    /// and which of the batch's samples were not sent, being stored already.
    @exclusivity(unchecked) var inFlight: (pending: ClickHouseClient.Pending?, firstID: Int64, lastID: Int64, outcome: BatchOutcome)?

    /// Opens the store; with `create`, creates the database and tables or migrates them;
    /// without, a store that was never written is an error.
    init(location: ClickHouseLocation, waitMs: Int64, create: Bool, now: Int64, policy: IngestPolicy = IngestPolicy()) throws {
        self.location = location
        self.policy = policy
        placement = ClickHouseSchema.Placement(database: location.database, cluster: location.cluster, shardEndpoints: location.shards)
        caches = UnitCaches(now: now)
        client = ClickHouseClient(location: location, waitMs: waitMs)
        try openSchema(create: create)
    }

    var isCluster: Bool { location.cluster != nil }

    /// Where statements that change every server's tables run: each shard endpoint, or the URL's
    /// server (nil) with `ON CLUSTER` in the statement when a cluster names no endpoints.
    var ddlEndpoints: [String?] { location.shards.isEmpty ? [nil] : location.shards.map { Optional($0) } }

    private func openSchema(create: Bool) throws {
        var present = try rows(
            "SELECT count() FROM system.tables WHERE database = \(clickHouseLiteral(location.database)) "
                + "AND name = '\(ClickHouseSchema.versionTable)'")
        var stored: Int64 = 0
        if try present.uint64() > 0 {
            var answer = try rows("SELECT toInt64(max(version)) FROM \(placement.table(ClickHouseSchema.versionTable))")
            stored = try answer.int64()
        }
        switch ClickHouseSchema.plan(stored: stored, create: create) {
        case .current:
            return
        case .refuseNewer(let version):
            throw ToolError(
                "\(location.display) holds store-samples schema version \(version), newer than this build's "
                    + "\(ClickHouseSchema.version): use a newer store-samples")
        case .missing:
            throw StoreMissing(
                description: stored == 0
                    ? "no store-samples tables in \(location.display) (store samples in it first, or name another with --db)"
                    : "\(location.display) holds store-samples schema version \(stored), older than this build's "
                        + "\(ClickHouseSchema.version): storing samples in it upgrades it")
        case .upgrade(let from):
            guard let statements = ClickHouseSchema.upgrade(from: from, placement, appliedAt: Clock.wallMilliseconds()) else {
                throw ToolError(
                    "\(location.display) holds store-samples schema version \(from): upgrading it copies each shard's samples, "
                        + "so name every shard's HTTP endpoint with shards=HOST:PORT,... (see store-samples(1), CLICKHOUSE)")
            }
            if from > 0 { try addColumns(since: from) }
            for statement in statements {
                for endpoint in ddlEndpoints { try client.execute(statement, endpoint: endpoint) }
            }
        }
    }

    /// Adds the columns versions after `stored` added (`ClickHouseSchema.addedColumns`) to every
    /// table that lacks them, on each server (or once, `ON CLUSTER`): asked of `system.columns`
    /// first, so an upgrade interrupted halfway is finished by the next.
    private func addColumns(since stored: Int64) throws {
        let added = ClickHouseSchema.addedColumns.filter { $0.version > stored }
        guard !added.isEmpty else { return }
        for endpoint in ddlEndpoints {
            for addition in added {
                for table in ClickHouseSchema.columnHolders(addition.table, placement) {
                    var present = try rows(
                        "SELECT count() FROM system.columns WHERE database = \(clickHouseLiteral(location.database)) "
                            + "AND table = \(clickHouseLiteral(table)) AND name = \(clickHouseLiteral(addition.column))", endpoint: endpoint
                    )
                    guard try present.uint64() == 0 else { continue }
                    try client.execute(
                        "ALTER TABLE \(location.database).\(table)\(placement.onCluster) ADD COLUMN \(addition.column) \(addition.type)",
                        endpoint: endpoint)
                }
            }
        }
    }

    /// Runs a query and reads its `RowBinary` answer.
    func rows(_ query: String, endpoint: String? = nil) throws -> RowBinaryReader {
        RowBinaryReader(try client.run(query + " FORMAT RowBinary", endpoint: endpoint))
    }

    func startRequest(now: Int64) {
        abortBatch()
        caches = UnitCaches(now: now)
    }

    func abortBatch() {
        batch = Batch()
        inFlight = nil
        caches = UnitCaches(now: caches.now)
    }
}

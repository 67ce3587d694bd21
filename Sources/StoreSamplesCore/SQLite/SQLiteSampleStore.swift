import SQLiteStore
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The embedded backend: one SQLite file in WAL mode (schema in `SQLiteSchema`).
///
/// Several processes may write at once: every write is one `BEGIN IMMEDIATE` transaction,
/// waiting for the others with a busy timeout. The work is split by concept: writing
/// (`SQLiteSampleStore+Writing`), reading (`+Reading`), and retention, clear and export
/// (`+Maintenance`). This file holds the connection and all the state an instance keeps,
/// each with how long it holds.
final class SQLiteSampleStore: SampleStore {
    /// The page cache, KiB (bounded: part of the memory a long ingest may use). 24 MiB: ingesting
    /// the bench's million samples took 9.0-10.5 s at 24 MiB and 9.3-9.7 s at 32 MiB, four million
    /// into 10,000 monitors 82-84 s and 71-84 s (two runs each, in turn), so the larger cache bought
    /// no speed, and its 8 MB more put the ingest's peak at 64.8 MB (now 56.0; goal 64).
    static let cacheKiB = 24576
    /// Bytes of the file a query may map.
    static let mapBytes = 1 << 30
    /// WAL pages between automatic checkpoints (SQLite's default is 1,000).
    static let checkpointPages = 16_384

    // MARK: - State valid across requests

    /// The connection, owned by the thread that made the store. Its prepared statements (kept by
    /// `withCached`) and `insertSample` hold SQL, not data: valid whatever others write.
    let db: SQLiteConnection
    /// Where the samples being ingested come from, and which agents to approve on sight: fixed
    /// when the store is opened.
    let policy: IngestPolicy
    lazy var insertSample = try? db.prepare(
        """
        INSERT INTO samples (id, monitor_id, at, status, latency_ms, reason, code, message, tls_expiry_days, speed_mbps, record,
                             origin, agent, held, identity_agent, consensus, batch)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (at, monitor_id, identity_agent) DO NOTHING
        """)

    // MARK: - State of one unit of work

    // `caches` and the batch's fields are touched for every sample: exempt from dynamic
    // exclusivity checks (a store is used from the thread that made it, one call at a time),
    // they save 1.3% of a SQLite ingest's instructions on 100,000 bench lines (callgrind; SQLite
    // itself takes most of the rest).
    /// What the writing side learnt of the store and remembers for one unit of work (a command, or
    /// one request of a responder): replaced whole by `startRequest`, and by `abortBatch` (a
    /// rolled-back transaction may have written part of it).
    struct UnitCaches {
        /// Agents' statuses as read (or decided for a new agent).
        var agentStatus: [String: AgentStatus] = [:]
        /// Monitors registered or read, by monitor id: their integer id and metadata as stored.
        var monitors: [String: KnownMonitor] = [:]
        /// Per monitor id: samples counted and the oldest time, for retention (see `applyRetention`).
        var retentionHints: [Int64: (count: Int, oldest: Int64?)] = [:]
        /// The span of sample times of each agent whose row this unit has written.
        var agentsWritten: [String: AgentSpan] = [:]
    }

    @exclusivity(unchecked) var caches = UnitCaches()

    /// A monitor's integer id and metadata as stored, changed in place for each sample (a
    /// reference: a struct copied out of the dictionary and back retained its eight strings).
    final class KnownMonitor {
        let id: Int64
        var metadata: MonitorMetadata
        /// Its places' identity agents as stored and added ('' for the local place), once read:
        /// nil before; `onlyPlace` while there is exactly one, so a sample of a monitor with no
        /// other place is its own consensus without hashing a place.
        var places: Set<String>?
        var onlyPlace: String?
        /// What the open transaction knows of its votes: every counted sample from `votesFrom` on,
        /// read once and then added to as the transaction stores samples (nothing else writes
        /// during a transaction); nil when not read in this one.
        var votes: [StoredConsensus.Vote]?
        var votesFrom = Int64.max
        /// The open transaction's newest sample of the local place and of each agent, for `places`.
        var batchLocalNewest = Int64.min
        var batchAgentNewest: [String: Int64] = [:]
        /// Whether the open transaction touched it (it is in `batchKnown`).
        var inBatch = false

        init(id: Int64, metadata: MonitorMetadata) {
            self.id = id
            self.metadata = metadata
        }

        /// Whether a place other than `place` is known.
        func hasPlace(besides place: String) -> Bool {
            guard let places else { return false }
            if places.count <= 1 { return onlyPlace != nil && onlyPlace != place }
            return true
        }

        /// Notes a place a sample was stored of.
        func addPlace(_ place: String) {
            guard places != nil else { return }
            if places!.count == 1, onlyPlace == place { return }
            places!.insert(place)
            onlyPlace = places!.count == 1 ? places!.first : nil
        }

        /// Forgets what the open transaction knew.
        func endBatch() {
            votes = nil
            votesFrom = Int64.max
            batchLocalNewest = Int64.min
            batchAgentNewest.removeAll()
            inBatch = false
        }
    }

    // MARK: - State of the open batch (one transaction)

    /// The monitors and agents the open transaction's samples touched: retention and the agents
    /// table are brought up to date for them at the commit. Emptied by every commit and abort.
    @exclusivity(unchecked) var batchMonitors: Set<Int64> = []
    @exclusivity(unchecked) var batchAgents = AgentSightings()
    /// The monitors the open transaction stored counted samples of (their places' newest times
    /// and votes are kept on each).
    @exclusivity(unchecked) var batchKnown: [KnownMonitor] = []
    /// Samples added to the open transaction, and those of them stored already.
    @exclusivity(unchecked) var batchSamples = 0
    @exclusivity(unchecked) var batchOutcome = BatchOutcome()
    /// The open transaction's batch number (the generation its commit makes) and the largest sample
    /// id given so far (see `SQLiteSchema.storageOrder`), read from `store_state` under the write
    /// lock at its first sample; nil until then.
    @exclusivity(unchecked) var numbering: (batch: Int64, lastID: Int64)?
    /// The outcome of the batch `submitBatch` committed, until `awaitSubmitted` hands it over.
    var submitted = BatchOutcome()

    /// Opens the store at `path`. With `create`, a missing file is created with the current
    /// schema; without, a missing file is an error. Every failure is a `ToolError` in words.
    init(path: String, create: Bool, policy: IngestPolicy = IngestPolicy()) throws {
        self.policy = policy
        if !create, access(path, F_OK) != 0 {
            throw StoreMissing(description: "no database at \(path) (store samples in it first, or name another with --db or VITALS_DB)")
        }
        // Commits come every 20,000 rows at most (`Ingester.maxRows`), so the same index pages
        // are written to the WAL again and again: a larger cache keeps them from being read back,
        // and a larger checkpoint interval copies each page to the database once instead of many
        // times. Queries read the file through a memory map instead of copying each page.
        let pragmas =
            (create ? ["PRAGMA journal_mode=WAL"] : []) + [
                "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-\(SQLiteSampleStore.cacheKiB)",
                "PRAGMA wal_autocheckpoint=\(SQLiteSampleStore.checkpointPages)",
            ] + (create ? [] : ["PRAGMA mmap_size=\(SQLiteSampleStore.mapBytes)"])
        do {
            db = try SQLiteConnection.openVersioned(path: path, create: create, schema: SQLiteSchema.versioned, pragmas: pragmas)
        } catch let error as SQLiteError {
            throw SQLiteSampleStore.explain(error, path: path)
        } catch let error as SQLiteSchemaError {
            throw ToolError(error.description)
        }
    }

    /// Turns SQLite's codes into what a user can act on.
    static func explain(_ error: SQLiteError, path: String) -> ToolError {
        ToolError(error.explained(path: path, afterFull: "nothing of the failed batch was stored or passed on"))
    }

    func translate(_ error: Error) -> Error {
        if let sqliteError = error as? SQLiteError { return SQLiteSampleStore.explain(sqliteError, path: db.path) }
        return error
    }

    /// Runs `body`, turning SQLite's codes into words.
    func translated<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw translate(error) }
    }

    func startRequest(now: Int64) {
        abortBatch()
    }

    func abortBatch() {
        if db.inTransaction { try? db.execute("ROLLBACK") }
        batchMonitors.removeAll()
        batchAgents.removeAll()
        for known in batchKnown { known.endBatch() }
        batchKnown.removeAll()
        batchSamples = 0
        batchOutcome = BatchOutcome()
        numbering = nil
        submitted = BatchOutcome()
        // What the transaction cached may have been rolled back with it.
        caches = UnitCaches()
    }
}

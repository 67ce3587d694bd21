import SQLiteStore
import VitalsKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded backend: one SQLite file in WAL mode.
///
/// Samples are stored whole (the `record` column, for export) with the columns the views
/// read; the covering index `(monitor_id, at, status, latency_ms)` answers history, results
/// and uptime without touching the table. Several processes may write at once: every write
/// is one `BEGIN IMMEDIATE` transaction, waiting for the others with a busy timeout.
final class SQLiteSampleStore: SampleStore {
    /// The schema version this build writes; older files are migrated forward, newer refused.
    static var schemaVersion: Int64 { versionedSchema.currentVersion }

    /// The page cache, KiB (bounded: part of the memory a long ingest may use).
    static let cacheKiB = 32768
    /// Bytes of the file a query may map.
    static let mapBytes = 1 << 30
    /// WAL pages between automatic checkpoints (SQLite's default is 1,000).
    static let checkpointPages = 16_384

    /// The schema, as `CREATE` statements (the benchmark gives the sqlite3 shell the same).
    static let schema = """
    CREATE TABLE monitors (
        id INTEGER PRIMARY KEY,
        monitor TEXT NOT NULL UNIQUE,
        name TEXT, kind TEXT, target TEXT, agent TEXT, description TEXT, check_interval INTEGER,
        first_seen INTEGER NOT NULL
    );
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY,
        monitor_id INTEGER NOT NULL,
        at INTEGER NOT NULL,
        status INTEGER NOT NULL,
        latency_ms REAL,
        reason TEXT,
        code INTEGER,
        message TEXT,
        tls_expiry_days INTEGER,
        speed_mbps REAL,
        record TEXT NOT NULL
    );
    CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms);
    CREATE INDEX samples_by_time ON samples(at);
    CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL DEFAULT 'approved',
        created_at INTEGER NOT NULL,
        last_seen INTEGER NOT NULL
    );
    """

    /// Version 2: the latest monitor config and enabled flag its samples stated.
    static let monitorSettings = """
    ALTER TABLE monitors ADD COLUMN config TEXT;
    ALTER TABLE monitors ADD COLUMN enabled INTEGER;
    """

    /// Version 3: OnlineTracker's agent model. Each sample records its origin (0: the user's
    /// own command line, 1: from elsewhere, through `--remote`), the agent a remote one came
    /// from, and whether it is held (from an agent nobody approved: stored, not counted). Every
    /// view reads the covering index, now partial over the samples not held.
    static let agentModel = """
    ALTER TABLE agents ADD COLUMN name TEXT;
    ALTER TABLE samples ADD COLUMN origin INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE samples ADD COLUMN agent TEXT;
    ALTER TABLE samples ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
    DROP INDEX samples_by_monitor_time;
    CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms) WHERE held = 0;
    CREATE INDEX samples_held_by_agent ON samples(agent) WHERE held = 1;
    """

    /// Version 4: a generation number every write transaction increments, so an answer kept
    /// between requests (the API's overview) knows whether the store changed since.
    static let generationCounter = """
    CREATE TABLE store_state (generation INTEGER NOT NULL);
    INSERT INTO store_state VALUES (0);
    """

    /// Forward migrations: entry `n` takes a file from version `n` to `n + 1`.
    static let migrations: [String] = [schema, monitorSettings, agentModel, generationCounter]

    /// The schema and its migrations, for `SQLiteConnection.openVersioned`.
    static let versionedSchema = VersionedSchema(tool: "store-samples", kind: "store-samples database", migrations: migrations)

    /// Status codes in the `status` column: only up (0) is uptime, as OnlineTracker counts it.
    static func code(_ status: SampleStatus) -> Int64 {
        switch status {
        case .up: return 0
        case .degraded: return 1
        case .down: return 2
        case .error: return 3
        case .unknown: return 4
        }
    }

    static func status(_ code: Int64) -> SampleStatus {
        switch code {
        case 0: return .up
        case 1: return .degraded
        case 2: return .down
        case 3: return .error
        default: return .unknown
        }
    }

    private let db: SQLiteConnection
    /// Where the samples being ingested come from, and which agents to approve on sight.
    private let policy: IngestPolicy
    /// Agents' statuses as known to this process (loaded on first use, kept for the run).
    private var agentStatus: [String: String] = [:]
    private var monitorIDs: [String: Int64] = [:]
    private var monitorMeta: [Int64: [[UInt8]?]] = [:]
    private var hints: [Int64: (count: Int, oldest: Int64?)] = [:]
    /// The earliest and latest sample time of each agent this run has stored.
    private var agentSeen: [String: AgentSpan] = [:]
    private lazy var insertSample = try? db.prepare("""
        INSERT INTO samples (monitor_id, at, status, latency_ms, reason, code, message, tls_expiry_days, speed_mbps, record,
                             origin, agent, held)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """)

    /// Opens the store at `path`. With `create`, a missing file is created with the current
    /// schema; without, a missing file is an error. Every failure is a `ToolError` in words.
    init(path: String, create: Bool, policy: IngestPolicy = IngestPolicy()) throws {
        self.policy = policy
        if !create, access(path, F_OK) != 0 {
            throw ToolError("no database at \(path) (store samples in it first, or name another with --db or VITALS_DB)")
        }
        // Commits come every 1,000 rows at most, so the same index pages are written to the WAL
        // again and again: a larger cache keeps them from being read back, and a larger checkpoint
        // interval copies each page to the database once instead of many times. Queries read the
        // file through a memory map instead of copying each page.
        let pragmas = (create ? ["PRAGMA journal_mode=WAL"] : []) + [
            "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-\(SQLiteSampleStore.cacheKiB)",
            "PRAGMA wal_autocheckpoint=\(SQLiteSampleStore.checkpointPages)",
        ] + (create ? [] : ["PRAGMA mmap_size=\(SQLiteSampleStore.mapBytes)"])
        do {
            db = try SQLiteConnection.openVersioned(path: path, create: create, schema: SQLiteSampleStore.versionedSchema,
                                                    pragmas: pragmas)
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

    // MARK: - Writing

    private var batchMonitors: Set<Int64> = []
    private var batchAgents: [String: AgentSpan] = [:]
    private var batchAgentNames: [String: String] = [:]

    /// Runs `body`, turning SQLite's codes into words.
    private func translated<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw translate(error) }
    }

    /// An agent's status; an agent seen for the first time is approved when the policy says
    /// so (or when its samples are the user's own), else pending.
    private func status(ofAgent agent: String) throws -> String {
        if let known = agentStatus[agent] { return known }
        let select = try db.prepare("SELECT status FROM agents WHERE id = ?")
        select.bind(1, agent)
        let status = try select.step() ? (select.text(0) ?? "pending")
            : (!policy.remote || policy.autoApprove || policy.approvedAgents.contains(agent) ? "approved" : "pending")
        agentStatus[agent] = status
        return status
    }

    /// Approves the policy's listed agents before ingesting, releasing what they had held.
    func approveListedAgents(now: Int64) throws {
        for agent in policy.approvedAgents {
            try db.writeTransaction {
                let upsert = try db.prepare("""
                    INSERT INTO agents (id, created_at, last_seen, status) VALUES (?, ?, ?, 'approved')
                    ON CONFLICT(id) DO UPDATE SET status = 'approved'
                    """)
                upsert.bind(1, agent)
                upsert.bind(2, now)
                upsert.bind(3, now)
                try upsert.step()
                try release(agent)
                try bumpGeneration()
            }
            agentStatus[agent] = "approved"
        }
    }

    /// Counts the held samples of an approved agent.
    private func release(_ agent: String) throws {
        let update = try db.prepare("UPDATE samples SET held = 0 WHERE agent = ? AND held = 1")
        update.bind(1, agent)
        try update.step()
    }

    /// Under `--remote`, the agent a record names and whether its samples are held (pending);
    /// a record without an agent, or from a rejected one, is refused (a line error, the batch
    /// goes on). (nil, false) for the user's own records.
    private func remoteAgent(of sample: StorableSample, record: String) throws -> (agent: String?, held: Bool) {
        guard policy.remote else { return (nil, false) }
        guard let agent = sample.agent, !agent.isEmpty else {
            throw StoreRefusal("a \(record) from elsewhere (--remote) must name its 'agent'")
        }
        let status: String = try translated { try self.status(ofAgent: agent) }
        if status == "rejected" {
            throw StoreRefusal("agent '\(agent)' is rejected: its \(record)s are refused "
                               + "(store-samples agents approve \(agent) lets them in)")
        }
        return (agent, status != "approved")
    }

    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64 {
        _ = try remoteAgent(of: monitor, record: "monitor record")
        do {
            if !db.inTransaction { try db.beginImmediate() }
            return try monitorID(for: monitor)
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64 {
        // A remote sample names its agent; a rejected agent's are refused (a line error, the
        // batch goes on); a pending agent's are stored but held out of every view.
        let (remoteAgent, held) = try remoteAgent(of: sample, record: "sample")
        do {
            if !db.inTransaction { try db.beginImmediate() }
            guard let insert = insertSample else { throw ToolError("cannot prepare the insert statement") }
            let monitorID = try monitorID(for: sample)
            insert.bind(1, monitorID)
            insert.bind(2, sample.at)
            insert.bind(3, SQLiteSampleStore.code(sample.status))
            insert.bind(4, sample.latencyMs)
            sample.withText(sample.reasonRange) { bytes in if let bytes { insert.bind(5, bytes: bytes) } else { insert.bind(5, nil as String?) } }
            insert.bind(6, sample.code)
            sample.withText(sample.messageRange) { bytes in if let bytes { insert.bind(7, bytes: bytes) } else { insert.bind(7, nil as String?) } }
            insert.bind(8, sample.tlsExpiryDays)
            insert.bind(9, sample.speedMbps)
            insert.bind(10, bytes: sample.line)
            insert.bind(11, Int64(policy.remote ? 1 : 0))
            insert.bind(12, remoteAgent)
            insert.bind(13, Int64(held ? 1 : 0))
            defer { insert.reset() }
            try insert.step()
            batchMonitors.insert(monitorID)
            if var hint = hints[monitorID] {
                hint.count += 1
                hint.oldest = min(hint.oldest ?? sample.at, sample.at)
                hints[monitorID] = hint
            }
            if sample.metaRanges[3] != nil, let agent = sample.agent {
                batchAgents[agent, default: AgentSpan(sample.at)].widen(sample.at)
                if let name = sample.agentName { batchAgentNames[agent] = name }
            }
            return monitorID
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    func commitBatch(retention: Retention, now: Int64) throws {
        guard db.inTransaction else { return }
        do {
            for (agent, seen) in batchAgents where !(agentSeen[agent]?.holds(seen) ?? false) || batchAgentNames[agent] != nil {
                let upsert = try db.prepare("""
                    INSERT INTO agents (id, created_at, last_seen, status, name) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET created_at = min(created_at, excluded.created_at),
                        last_seen = max(last_seen, excluded.last_seen), name = coalesce(excluded.name, name)
                    """)
                upsert.bind(1, agent)
                upsert.bind(2, seen.first)
                upsert.bind(3, seen.last)
                upsert.bind(4, agentStatus[agent] ?? "approved")
                upsert.bind(5, batchAgentNames[agent])
                try upsert.step()
                agentSeen[agent, default: seen].widen(seen)
            }
            try applyRetention(batchMonitors, retention: retention, now: now)
            try bumpGeneration()
            try db.execute("COMMIT", context: "commit")
            batchMonitors.removeAll(keepingCapacity: true)
            batchAgents.removeAll(keepingCapacity: true)
            batchAgentNames.removeAll(keepingCapacity: true)
        } catch {
            abortBatch()
            throw translate(error)
        }
    }

    /// Every write transaction calls this before it commits (see `generation()`).
    private func bumpGeneration() throws {
        _ = try db.withCached("UPDATE store_state SET generation = generation + 1") { try $0.step() }
    }

    func generation() throws -> Int64? {
        try db.withCached("SELECT generation FROM store_state") { try $0.step() ? $0.int64(0) : nil }
    }

    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?) {
        let first = try db.withCached("SELECT min(at) FROM samples INDEXED BY samples_by_time WHERE at >= ?") { statement in
            statement.bind(1, from)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
        let next = try db.withCached("SELECT min(at) FROM samples INDEXED BY samples_by_time WHERE at > ?") { statement in
            statement.bind(1, after)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
        return (first, next)
    }

    func startRequest(now: Int64) {
        agentStatus.removeAll()
        monitorIDs.removeAll()
        monitorMeta.removeAll()
        hints.removeAll()
        agentSeen.removeAll()
    }

    func abortBatch() {
        if db.inTransaction { try? db.execute("ROLLBACK") }
        batchMonitors.removeAll()
        batchAgents.removeAll()
        batchAgentNames.removeAll()
        agentStatus.removeAll()
        // What the transaction cached may have been rolled back with it.
        monitorIDs.removeAll()
        monitorMeta.removeAll()
        hints.removeAll()
        agentSeen.removeAll()
    }

    private func translate(_ error: Error) -> Error {
        if let sqliteError = error as? SQLiteError { return SQLiteSampleStore.explain(sqliteError, path: db.path) }
        return error
    }

    /// The integer id of a sample's monitor, registering it, or refreshing its name, kind,
    /// target, agent, description and interval when the sample states other ones (compared
    /// as raw bytes, so an unchanged monitor costs no allocation).
    private func monitorID(for sample: StorableSample) throws -> Int64 {
        if let id = monitorIDs[sample.monitor] {
            if metaChanged(id, sample) { try refresh(id, sample) }
            return id
        }
        let insert = try db.prepare("INSERT OR IGNORE INTO monitors (monitor, first_seen) VALUES (?, ?)")
        insert.bind(1, sample.monitor)
        insert.bind(2, sample.at)
        try insert.step()
        let select = try db.prepare("SELECT id, first_seen FROM monitors WHERE monitor = ?")
        select.bind(1, sample.monitor)
        guard try select.step() else { throw ToolError("monitor \(sample.monitor) vanished while registering it") }
        let id = select.int64(0)
        let firstSeen = select.int64(1)
        monitorIDs[sample.monitor] = id
        try refresh(id, sample)
        if sample.at < firstSeen {
            let update = try db.prepare("UPDATE monitors SET first_seen = ? WHERE id = ? AND first_seen > ?")
            update.bind(1, sample.at)
            update.bind(2, id)
            update.bind(3, sample.at)
            try update.step()
        }
        return id
    }

    private func metaChanged(_ id: Int64, _ sample: StorableSample) -> Bool {
        guard let known = monitorMeta[id] else { return true }
        for index in 0..<5 {
            guard let raw = sample.raw(sample.metaRanges[index]) else { continue }
            guard let stored = known[index], stored.elementsEqual(raw) else { return true }
        }
        if let interval = sample.checkInterval, known[5] != Array(String(interval).utf8) { return true }
        if let config = sample.raw(sample.configRange), !(known[6].map { $0.elementsEqual(config) } ?? false) { return true }
        if let enabled = sample.enabled, known[7] != [enabled ? 1 : 0] { return true }
        return false
    }

    private func refresh(_ id: Int64, _ sample: StorableSample) throws {
        let update = try db.prepare("""
            UPDATE monitors SET name = coalesce(?, name), kind = coalesce(?, kind), target = coalesce(?, target),
                agent = coalesce(?, agent), description = coalesce(?, description), check_interval = coalesce(?, check_interval),
                config = coalesce(?, config), enabled = coalesce(?, enabled)
            WHERE id = ?
            """)
        update.bind(1, sample.name)
        update.bind(2, sample.kind)
        update.bind(3, sample.target)
        update.bind(4, sample.agent)
        update.bind(5, sample.description)
        update.bind(6, sample.checkInterval)
        if let config = sample.raw(sample.configRange) { update.bind(7, bytes: config) } else { update.bind(7, nil as String?) }
        update.bind(8, sample.enabled.map { $0 ? Int64(1) : Int64(0) })
        update.bind(9, id)
        try update.step()
        var known = monitorMeta[id] ?? Array(repeating: nil, count: 8)
        for index in 0..<5 {
            if let raw = sample.raw(sample.metaRanges[index]) { known[index] = Array(raw) }
        }
        if let interval = sample.checkInterval { known[5] = Array(String(interval).utf8) }
        if let config = sample.raw(sample.configRange) { known[6] = Array(config) }
        if let enabled = sample.enabled { known[7] = [enabled ? 1 : 0] }
        monitorMeta[id] = known
    }

    /// Keeps each touched monitor within the limits. Counts and oldest times are hints kept
    /// in memory (loaded once per monitor); the deletes themselves are exact. Samples past
    /// the day limit go once they are an hour past it, so a busy monitor is trimmed about
    /// once an hour rather than on every batch.
    private func applyRetention(_ touched: Set<Int64>, retention: Retention, now: Int64) throws {
        guard retention.perMonitor != nil || retention.days != nil else { return }
        for id in touched {
            var hint: (count: Int, oldest: Int64?)
            if let known = hints[id] {
                hint = known
            } else if retention.perMonitor != nil {
                let statement = try db.prepare("SELECT count(*), min(at) FROM samples WHERE monitor_id = ?")
                statement.bind(1, id)
                try statement.step()
                hint = (Int(statement.int64(0)), statement.optionalInt64(1))
            } else {
                // Only the oldest sample matters (one step down the index); counting every sample
                // of the monitor made each API request cost more as its history grew.
                hint = (0, try oldestAt(id))
            }
            if let days = retention.days, let oldest = hint.oldest {
                let cutoff = now - Int64(days) * 86_400_000
                if oldest < cutoff - 3_600_000 {
                    let delete = try db.prepare("DELETE FROM samples WHERE monitor_id = ? AND at < ?")
                    delete.bind(1, id)
                    delete.bind(2, cutoff)
                    try delete.step()
                    hint.count -= db.changes
                    hint.oldest = try oldestAt(id)
                }
            }
            if let keep = retention.perMonitor, hint.count > keep {
                let delete = try db.prepare("""
                    DELETE FROM samples WHERE id IN (
                        SELECT id FROM samples WHERE monitor_id = ? ORDER BY at, id LIMIT ?)
                    """)
                delete.bind(1, id)
                delete.bind(2, Int64(hint.count - keep))
                try delete.step()
                hint.count -= db.changes
                hint.oldest = try oldestAt(id)
            }
            hints[id] = hint
        }
    }

    private func oldestAt(_ id: Int64) throws -> Int64? {
        try db.withCached("SELECT min(at) FROM samples WHERE monitor_id = ?") { statement in
            statement.bind(1, id)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
    }

    // MARK: - Reading

    func monitors() throws -> [MonitorRecord] {
        let statement = try db.prepare("""
            SELECT m.id, m.monitor, m.name, m.kind, m.target, m.agent, m.description, m.check_interval, m.first_seen,
                   (SELECT max(at) FROM samples s WHERE s.held = 0 AND s.monitor_id = m.id), m.config, m.enabled
            FROM monitors m ORDER BY m.id
            """)
        var result: [MonitorRecord] = []
        while try statement.step() { result.append(monitorRecord(statement)) }
        return result
    }

    func monitor(matching key: String) throws -> MonitorRecord? {
        // A monitor id first, then an integer id: two lookups by index (one query with OR
        // scanned every monitor: 1 ms a request at 10,000 monitors).
        let columns = """
            SELECT m.id, m.monitor, m.name, m.kind, m.target, m.agent, m.description, m.check_interval, m.first_seen,
                   (SELECT max(at) FROM samples s WHERE s.held = 0 AND s.monitor_id = m.id), m.config, m.enabled
            FROM monitors m
            """
        let byName = try db.withCached(columns + " WHERE m.monitor = ?") { statement in
            statement.bind(1, key)
            return try statement.step() ? monitorRecord(statement) : nil
        }
        if let byName { return byName }
        guard !key.isEmpty, key.utf8.count <= 18, key.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let id = Int64(key),
              String(id) == key else { return nil }
        return try db.withCached(columns + " WHERE m.id = ?") { statement in
            statement.bind(1, id)
            return try statement.step() ? monitorRecord(statement) : nil
        }
    }

    private func monitorRecord(_ statement: SQLiteStatement) -> MonitorRecord {
        MonitorRecord(id: statement.int64(0), monitor: statement.text(1) ?? "", name: statement.text(2), kind: statement.text(3),
                      target: statement.text(4), agent: statement.text(5), description: statement.text(6),
                      checkInterval: statement.optionalInt64(7), firstSeen: statement.int64(8),
                      lastSeen: statement.optionalInt64(9) ?? statement.int64(8), config: statement.text(10),
                      enabled: statement.optionalInt64(11).map { $0 != 0 })
    }

    func latest(monitorID: Int64) throws -> StoredSample? {
        try db.withCached("""
            SELECT id, at, status, latency_ms, message, tls_expiry_days FROM samples
            WHERE held = 0 AND monitor_id = ? ORDER BY at DESC, id DESC LIMIT 1
            """) { statement in
            statement.bind(1, monitorID)
            return try statement.step() ? storedSample(statement) : nil
        }
    }

    private func storedSample(_ statement: SQLiteStatement) -> StoredSample {
        StoredSample(id: statement.int64(0), at: statement.int64(1), status: SQLiteSampleStore.status(statement.int64(2)),
                     latencyMs: statement.optionalDouble(3), message: statement.text(4), tlsExpiryDays: statement.optionalInt64(5))
    }

    func forEachSample(monitorID: Int64, from: Int64, until: Int64,
                              _ visit: (Int64, SampleStatus, Double?) throws -> Void) throws {
        let statement = try db.prepare("""
            SELECT at, status, latency_ms FROM samples INDEXED BY samples_by_monitor_time
            WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ? ORDER BY at
            """)
        statement.bind(1, monitorID)
        statement.bind(2, from)
        statement.bind(3, until)
        while try statement.step() {
            try visit(statement.int64(0), SQLiteSampleStore.status(statement.int64(1)), statement.optionalDouble(2))
        }
    }

    func page(monitorID: Int64, from: Int64, until: Int64, offset: Int, limit: Int) throws -> [StoredSample] {
        let statement = try db.prepare("""
            SELECT id, at, status, latency_ms, message, tls_expiry_days FROM samples
            WHERE id IN (SELECT id FROM samples INDEXED BY samples_by_monitor_time
                         WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ? ORDER BY at DESC, id DESC LIMIT ? OFFSET ?)
            ORDER BY at DESC, id DESC
            """)
        statement.bind(1, monitorID)
        statement.bind(2, from)
        statement.bind(3, until)
        statement.bind(4, Int64(limit))
        statement.bind(5, Int64(offset))
        var result: [StoredSample] = []
        while try statement.step() { result.append(storedSample(statement)) }
        return result
    }

    func totals(monitorID: Int64, from: Int64, until: Int64, withSpeed: Bool) throws -> SampleTotals {
        // Checks, uptime and latency come from the covering index alone; speed needs the rows.
        var totals = SampleTotals()
        try db.withCached("""
            SELECT count(*), sum(status = 0), sum(latency_ms), count(latency_ms), max(at)
            FROM samples INDEXED BY samples_by_monitor_time WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?
            """) { statement in
            statement.bind(1, monitorID)
            statement.bind(2, from)
            statement.bind(3, until)
            try statement.step()
            totals.checks = Int(statement.int64(0))
            totals.good = Int(statement.optionalInt64(1) ?? 0)
            totals.latencySum = statement.optionalDouble(2) ?? 0
            totals.latencyCount = Int(statement.int64(3))
            totals.lastAt = statement.optionalInt64(4)
        }
        if withSpeed {
            let speed = try db.prepare("""
                SELECT sum(speed_mbps), count(speed_mbps) FROM samples INDEXED BY samples_by_monitor_time
                WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?
                """)
            speed.bind(1, monitorID)
            speed.bind(2, from)
            speed.bind(3, until)
            try speed.step()
            totals.speedSum = speed.optionalDouble(0) ?? 0
            totals.speedCount = Int(speed.int64(1))
        }
        return totals
    }

    func count(monitorID: Int64, from: Int64, until: Int64) throws -> Int {
        let statement = try db.prepare("""
            SELECT count(*) FROM samples INDEXED BY samples_by_monitor_time WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?
            """)
        statement.bind(1, monitorID)
        statement.bind(2, from)
        statement.bind(3, until)
        try statement.step()
        return Int(statement.int64(0))
    }

    func agents() throws -> [AgentRecord] {
        let statement = try db.prepare("""
            SELECT a.id, a.status, a.created_at, a.last_seen, (SELECT count(*) FROM monitors m WHERE m.agent = a.id), a.name
            FROM agents a ORDER BY a.created_at, a.id
            """)
        var result: [AgentRecord] = []
        while try statement.step() {
            result.append(AgentRecord(id: statement.text(0) ?? "", status: statement.text(1) ?? "approved",
                                      createdAt: statement.int64(2), lastSeen: statement.int64(3), monitorCount: Int(statement.int64(4)),
                                      name: statement.text(5)))
        }
        return result
    }

    func setAgentStatus(_ id: String, to status: String) throws -> Bool {
        var changed = false
        try db.writeTransaction {
            let statement = try db.prepare("UPDATE agents SET status = ? WHERE id = ?")
            statement.bind(1, status)
            statement.bind(2, id)
            try statement.step()
            changed = db.changes > 0
            if changed, status == "approved" { try release(id) }
            if changed { try bumpGeneration() }
        }
        return changed
    }

    func clear(monitorID: Int64?, before: Int64?) throws -> Int {
        var deleted = 0
        do {
            try db.writeTransaction {
                let statement = try db.prepare("DELETE FROM samples WHERE (?1 IS NULL OR monitor_id = ?1) AND at < ?2")
                statement.bind(1, monitorID)
                statement.bind(2, before ?? Int64.max)
                try statement.step()
                deleted = db.changes
                try bumpGeneration()
            }
        } catch {
            throw translate(error)
        }
        hints.removeAll()
        return deleted
    }

    func export(from: Int64, until: Int64, monitorID: Int64?,
                       _ visit: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        let statement: SQLiteStatement
        if let monitorID {
            statement = try db.prepare("""
                SELECT record FROM samples INDEXED BY samples_by_monitor_time
                WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ? ORDER BY at, id
                """)
            statement.bind(1, monitorID)
            statement.bind(2, from)
            statement.bind(3, until)
        } else {
            statement = try db.prepare("SELECT record FROM samples INDEXED BY samples_by_time WHERE at >= ? AND at < ? AND held = 0 ORDER BY at, id")
            statement.bind(1, from)
            statement.bind(2, until)
        }
        while try statement.step() { try visit(statement.textBytes(0)) }
    }
}

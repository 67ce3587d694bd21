import VitalsKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The shared backend: ClickHouse, over its HTTP interface, for agents in many places writing
/// into one store; one server, or a `Distributed` table over the shards of a cluster.
///
/// Samples live in a `ReplacingMergeTree` partitioned by month and ordered by (monitor, at),
/// keyed by (monitor, at, id, writer): `writer` is a random number of this run and `id` its
/// sample's number, so a batch sent again after a lost acknowledgement replaces itself instead
/// of doubling, and the reads say `FINAL` once a batch was ever sent again. Monitors, agents and writers are small
/// `ReplacingMergeTree` tables whose newest version of a row wins. Doubles travel in `RowBinary`,
/// exact both ways. Every method answers as `SQLiteSampleStore` does, so the views print the same bytes.
final class ClickHouseSampleStore: SampleStore {
    /// The schema version this build writes (the `store_samples_schema` table holds it).
    static var schemaVersion: Int64 { Int64(migrations.count) }

    /// One table: its name, columns and the engine clause of its local (MergeTree) table, and the
    /// sharding key of its `Distributed` table in a cluster.
    struct Table {
        let name: String
        let columns: String
        let engine: String
        let shardingKey: String
    }

    /// The tables of schema version 1.
    static let tables = [
        Table(name: "samples", columns: """
            monitor String, at Int64, id UInt64, writer UInt64, status UInt8, latency_ms Nullable(Float64), \
            reason Nullable(String), code Nullable(Int64), message Nullable(String), tls_expiry_days Nullable(Int64), \
            speed_mbps Nullable(Float64), origin UInt8, agent Nullable(String), held UInt8, record String
            """,
              engine: "ReplacingMergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(at, 1000))) ORDER BY (monitor, at, id, writer)",
              shardingKey: "cityHash64(monitor)"),
        Table(name: "monitors", columns: """
            monitor String, id UInt64, name Nullable(String), kind Nullable(String), target Nullable(String), \
            agent Nullable(String), description Nullable(String), check_interval Nullable(Int64), first_seen Int64, \
            config Nullable(String), enabled Nullable(UInt8), version UInt64
            """,
              engine: "ReplacingMergeTree(version) ORDER BY monitor", shardingKey: "cityHash64(monitor)"),
        Table(name: "agents", columns: "id String, status String, created_at Int64, last_seen Int64, name Nullable(String), version UInt64",
              engine: "ReplacingMergeTree(version) ORDER BY id", shardingKey: "cityHash64(id)"),
        Table(name: "writers", columns: "writer UInt64, last_id UInt64, updated_at Int64",
              engine: "ReplacingMergeTree(last_id) ORDER BY writer", shardingKey: "cityHash64(writer)"),
        // Version 2: a row before a batch of samples is sent again (see `samplesTable`).
        Table(name: "resends", columns: "writer UInt64, first_id UInt64, at Int64",
              engine: "MergeTree() ORDER BY writer", shardingKey: "cityHash64(writer)"),
    ]

    /// The schema version table: one row per version applied, on every server.
    static let versionTable = "store_samples_schema"

    /// Forward migrations: entry `n` takes a store from version `n` to `n + 1` (table names only:
    /// the statements are made for one server or a cluster by `statements(migration:)`).
    static let migrations: [[String]] = [["samples", "monitors", "agents", "writers"], ["resends"]]

    let client: ClickHouseClient
    private let location: ClickHouseLocation
    private let policy: IngestPolicy
    /// The time views take as now (the window of the latest-sample query).
    private var now: Int64
    /// A random number naming this run's writes (part of each sample's key).
    private let writer = UInt64.random(in: 1...UInt64.max)

    /// Opens the store; with `create`, creates the database and tables or migrates them;
    /// without, a store that was never written is an error.
    init(location: ClickHouseLocation, waitMs: Int64, create: Bool, now: Int64, policy: IngestPolicy = IngestPolicy()) throws {
        self.location = location
        self.policy = policy
        self.now = now
        client = ClickHouseClient(location: location, waitMs: waitMs)
        try openSchema(create: create)
    }

    // MARK: - Schema

    private var isCluster: Bool { location.cluster != nil }

    /// The name queries read and write: the table, or in a cluster its `Distributed` table.
    private func table(_ name: String) -> String { "\(location.database).\(name)" }

    /// The table that holds the rows on a server: `name`, or `name_local` in a cluster.
    private func localTable(_ name: String) -> String { "\(location.database).\(name)\(isCluster ? "_local" : "")" }

    /// Where statements that change every server's tables run: each shard endpoint, or the URL's
    /// server (nil) with `ON CLUSTER` in the statement when a cluster names no endpoints.
    private var ddlEndpoints: [String?] { location.shards.isEmpty ? [nil] : location.shards.map { Optional($0) } }

    private var onCluster: String {
        guard let cluster = location.cluster, location.shards.isEmpty else { return "" }
        return " ON CLUSTER \(cluster)"
    }

    /// The statements that create table `name` (schema version 1): the MergeTree table, and in a
    /// cluster the `Distributed` table over it. Written for 18.16 and current releases alike.
    static func createStatements(_ table: Table, database: String, cluster: String?, onCluster: String) -> [String] {
        guard let cluster else {
            return ["CREATE TABLE IF NOT EXISTS \(database).\(table.name)\(onCluster) (\(table.columns)) ENGINE = \(table.engine)"]
        }
        return [
            "CREATE TABLE IF NOT EXISTS \(database).\(table.name)_local\(onCluster) (\(table.columns)) ENGINE = \(table.engine)",
            "CREATE TABLE IF NOT EXISTS \(database).\(table.name)\(onCluster) AS \(database).\(table.name)_local "
                + "ENGINE = Distributed(\(cluster), \(database), \(table.name)_local, \(table.shardingKey))",
        ]
    }

    private func openSchema(create: Bool) throws {
        let present = try client.run("SELECT count() FROM system.tables WHERE database = \(clickHouseLiteral(location.database)) "
                                     + "AND name = '\(ClickHouseSampleStore.versionTable)' FORMAT RowBinary")
        var reader = RowBinaryReader(present)
        let exists = try reader.uint64() > 0
        var version: Int64 = 0
        if exists {
            var answer = RowBinaryReader(try client.run("SELECT toInt64(max(version)) FROM \(table(ClickHouseSampleStore.versionTable)) FORMAT RowBinary"))
            version = try answer.int64()
        }
        if version > ClickHouseSampleStore.schemaVersion {
            throw ToolError("\(location.display) holds store-samples schema version \(version), newer than this build's "
                            + "\(ClickHouseSampleStore.schemaVersion): use a newer store-samples")
        }
        if version == ClickHouseSampleStore.schemaVersion { return }
        guard create else {
            throw ToolError("no store-samples tables in \(location.display) (store samples in it first, or name another with --db)")
        }
        for endpoint in ddlEndpoints {
            try client.execute("CREATE DATABASE IF NOT EXISTS \(location.database)\(onCluster)", endpoint: endpoint)
            try client.execute("CREATE TABLE IF NOT EXISTS \(table(ClickHouseSampleStore.versionTable))\(onCluster) "
                               + "(version UInt32, applied_at Int64) ENGINE = MergeTree() ORDER BY version", endpoint: endpoint)
        }
        for step in Int(version)..<ClickHouseSampleStore.migrations.count {
            for name in ClickHouseSampleStore.migrations[step] {
                guard let table = ClickHouseSampleStore.tables.first(where: { $0.name == name }) else { continue }
                for statement in ClickHouseSampleStore.createStatements(table, database: location.database, cluster: location.cluster,
                                                                        onCluster: onCluster) {
                    for endpoint in ddlEndpoints { try client.execute(statement, endpoint: endpoint) }
                }
            }
            for endpoint in ddlEndpoints {
                try client.execute("INSERT INTO \(table(ClickHouseSampleStore.versionTable)) (version, applied_at) "
                                   + "VALUES (\(step + 1), \(Clock.wallMilliseconds()))", endpoint: endpoint)
            }
        }
    }

    // MARK: - Writing

    /// A monitor as this run knows it: the row it would write.
    private struct MonitorRow {
        var record: MonitorRecord
        var dirty = false
    }

    private struct AgentRow {
        var record: AgentRecord
        var dirty = false
    }

    private var monitorsByName: [String: MonitorRow]?
    /// Monitors whose first sample of this run was seen (their first_seen may go back then only, as SQLite's does).
    private var touched: Set<String> = []
    private var nextMonitorID: Int64 = 1
    private var agentsByID: [String: AgentRow]?
    private var agentStatus: [String: String] = [:]
    private var agentSeen: [String: AgentSpan] = [:]
    private var batchAgents: [String: AgentSpan] = [:]
    private var batchAgentNames: [String: String] = [:]
    private var nextSampleID: Int64?
    private var batch = RowBinaryWriter()
    private var rowsInBatch = 0
    private var batchOpen = false
    private var version: UInt64 = 0
    private var retentionCheckedAt: Int64?

    /// A version for a monitor or agent row: newer than any this run wrote, and than the clock's µs.
    /// Up to 20,000 samples an INSERT (still at most 200 ms after the first, as on SQLite):
    /// ClickHouse makes a part of each INSERT and merges parts in the background, and 18.16
    /// slows inserts at 150 parts in a partition and refuses them at 300; its own advice is
    /// fewer, larger inserts.
    var batchRows: Int { 20_000 }

    private func nextVersion() -> UInt64 {
        version = max(version + 1, UInt64(max(0, Clock.wallMilliseconds())) * 1000)
        return version
    }

    private func loadMonitors() throws -> [String: MonitorRow] {
        if let known = monitorsByName { return known }
        var rows: [String: MonitorRow] = [:]
        for record in try readMonitors() { rows[record.monitor] = MonitorRow(record: record) }
        monitorsByName = rows
        nextMonitorID = (rows.values.map(\.record.id).max() ?? 0) + 1
        return rows
    }

    private func loadAgents() throws -> [String: AgentRow] {
        if let known = agentsByID { return known }
        var rows: [String: AgentRow] = [:]
        for record in try readAgents() { rows[record.id] = AgentRow(record: record) }
        agentsByID = rows
        return rows
    }

    private func status(ofAgent agent: String) throws -> String {
        if let known = agentStatus[agent] { return known }
        let status = try loadAgents()[agent]?.record.status
            ?? (!policy.remote || policy.autoApprove || policy.approvedAgents.contains(agent) ? "approved" : "pending")
        agentStatus[agent] = status
        return status
    }

    /// As `SQLiteSampleStore.remoteAgent`: under `--remote`, the agent and whether its samples are held.
    private func remoteAgent(of sample: StorableSample, record: String) throws -> (agent: String?, held: Bool) {
        guard policy.remote else { return (nil, false) }
        guard let agent = sample.agent, !agent.isEmpty else {
            throw StoreRefusal("a \(record) from elsewhere (--remote) must name its 'agent'")
        }
        let status = try self.status(ofAgent: agent)
        if status == "rejected" {
            throw StoreRefusal("agent '\(agent)' is rejected: its \(record)s are refused "
                               + "(store-samples agents approve \(agent) lets them in)")
        }
        return (agent, status != "approved")
    }

    func approveListedAgents(now: Int64) throws {
        for agent in policy.approvedAgents {
            var rows = try loadAgents()
            var row = rows[agent] ?? AgentRow(record: AgentRecord(id: agent, status: "approved", createdAt: now, lastSeen: now, monitorCount: 0))
            row.record.status = "approved"
            rows[agent] = row
            agentsByID = rows
            try writeAgents([row.record])
            try release(agent)
            agentStatus[agent] = "approved"
        }
    }

    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64 {
        _ = try remoteAgent(of: monitor, record: "monitor record")
        batchOpen = true
        return try monitorID(for: monitor)
    }

    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64 {
        let (remoteAgent, held) = try remoteAgent(of: sample, record: "sample")
        batchOpen = true
        let monitorID = try monitorID(for: sample)
        if nextSampleID == nil {
            var answer = RowBinaryReader(try client.run("SELECT toInt64(max(last_id)) FROM \(table("writers")) FORMAT RowBinary"))
            nextSampleID = try answer.int64() + 1
        }
        let id = nextSampleID!
        nextSampleID = id + 1
        batch.string(sample.monitor)
        batch.int64(sample.at)
        batch.uint64(UInt64(id))
        batch.uint64(writer)
        batch.uint8(UInt8(SQLiteSampleStore.code(sample.status)))
        batch.optionalFloat64(sample.latencyMs)
        sample.withText(sample.reasonRange) { batch.optionalBytes($0) }
        batch.optionalInt64(sample.code)
        sample.withText(sample.messageRange) { batch.optionalBytes($0) }
        batch.optionalInt64(sample.tlsExpiryDays)
        batch.optionalFloat64(sample.speedMbps)
        batch.uint8(policy.remote ? 1 : 0)
        batch.optionalString(remoteAgent)
        batch.uint8(held ? 1 : 0)
        batch.string(sample.line)
        rowsInBatch += 1
        // Keep the batch in flight moving while this one is read (an upload stalls otherwise).
        if inFlight != nil, rowsInBatch & 255 == 0 { client.pump() }
        if sample.metaRanges[3] != nil, let agent = sample.agent {
            batchAgents[agent, default: AgentSpan(sample.at)].widen(sample.at)
            if let name = sample.agentName { batchAgentNames[agent] = name }
        }
        return monitorID
    }

    /// The monitor's id, registering it or refreshing what the sample states (as SQLite does:
    /// each field the sample gives replaces the stored one; first_seen goes back only on the
    /// monitor's first sample of a run).
    private func monitorID(for sample: StorableSample) throws -> Int64 {
        // The table is changed in place (`monitorsByName![...] = row`): a local copy of it changed
        // would copy every monitor's row on each sample.
        _ = try loadMonitors()
        var row: MonitorRow
        if let known = monitorsByName![sample.monitor] {
            row = known
            if !touched.contains(sample.monitor), sample.at < row.record.firstSeen {
                row.record.firstSeen = sample.at
                row.dirty = true
            }
        } else {
            row = MonitorRow(record: MonitorRecord(id: nextMonitorID, monitor: sample.monitor, firstSeen: sample.at, lastSeen: sample.at),
                             dirty: true)
            nextMonitorID += 1
        }
        touched.insert(sample.monitor)
        func take(_ value: String?, _ field: WritableKeyPath<MonitorRecord, String?>) {
            if let value, row.record[keyPath: field] != value {
                row.record[keyPath: field] = value
                row.dirty = true
            }
        }
        take(sample.name, \.name)
        take(sample.kind, \.kind)
        take(sample.target, \.target)
        take(sample.agent, \.agent)
        take(sample.description, \.description)
        if let config = sample.raw(sample.configRange) { take(String(decoding: config, as: UTF8.self), \.config) }
        if let interval = sample.checkInterval, row.record.checkInterval != interval {
            row.record.checkInterval = interval
            row.dirty = true
        }
        if let enabled = sample.enabled, row.record.enabled != enabled {
            row.record.enabled = enabled
            row.dirty = true
        }
        monitorsByName![sample.monitor] = row
        return row.record.id
    }

    func commitBatch(retention: Retention, now: Int64) throws {
        try submitBatch(retention: retention, now: now)
        try awaitSubmitted()
    }

    /// The samples INSERT sent and not yet answered: its request, and the sample ids it holds.
    private var inFlight: (pending: ClickHouseClient.Pending, firstID: Int64, lastID: Int64)?

    /// Stores the batch's monitors and agents, then sends its samples without waiting for the
    /// answer, so the next batch is read meanwhile; `awaitSubmitted` waits (one batch in flight).
    func submitBatch(retention: Retention, now: Int64) throws {
        try awaitSubmitted()
        guard batchOpen else { return }
        do {
            // Monitors first, so no sample is ever stored under a monitor the store does not list.
            var monitorRows = RowBinaryWriter()
            var dirty: [String] = []
            for (name, row) in monitorsByName ?? [:] where row.dirty {
                let record = row.record
                monitorRows.string(record.monitor)
                monitorRows.uint64(UInt64(record.id))
                monitorRows.optionalString(record.name)
                monitorRows.optionalString(record.kind)
                monitorRows.optionalString(record.target)
                monitorRows.optionalString(record.agent)
                monitorRows.optionalString(record.description)
                monitorRows.optionalInt64(record.checkInterval)
                monitorRows.int64(record.firstSeen)
                monitorRows.optionalString(record.config)
                monitorRows.optionalUInt8(record.enabled.map { $0 ? 1 : 0 })
                monitorRows.uint64(nextVersion())
                dirty.append(name)
            }
            if !dirty.isEmpty {
                try insert("monitors", "monitor, id, name, kind, target, agent, description, check_interval, first_seen, config, enabled, version",
                           monitorRows.bytes)
            }
            var agentRecords: [AgentRecord] = []
            if !batchAgents.isEmpty {
                var rows = try loadAgents()
                for (agent, seen) in batchAgents where !(agentSeen[agent]?.holds(seen) ?? false) || batchAgentNames[agent] != nil {
                    var record = rows[agent]?.record
                        ?? AgentRecord(id: agent, status: agentStatus[agent] ?? "approved", createdAt: seen.first, lastSeen: seen.last, monitorCount: 0)
                    record.createdAt = min(record.createdAt, seen.first)
                    record.lastSeen = max(record.lastSeen, seen.last)
                    if let name = batchAgentNames[agent] { record.name = name }
                    rows[agent] = AgentRow(record: record)
                    agentRecords.append(record)
                }
                agentsByID = rows
            }
            try writeAgents(agentRecords)
            if rowsInBatch > 0 {
                let last = (nextSampleID ?? 1) - 1
                let pending = client.start("INSERT INTO \(table("samples")) (monitor, at, id, writer, status, latency_ms, reason, code, message, "
                                           + "tls_expiry_days, speed_mbps, origin, agent, held, record) FORMAT RowBinary",
                                           data: batch.bytes, settings: insertSettings)
                inFlight = (pending, last - Int64(rowsInBatch) + 1, last)
            }
            for name in dirty { monitorsByName?[name]?.dirty = false }
            for record in agentRecords { agentSeen[record.id, default: AgentSpan(record.createdAt)].widen(AgentSpan(record.createdAt, record.lastSeen)) }
            clearBatch()
            try applyRetention(retention, now: now)
        } catch {
            abortBatch()
            throw error
        }
    }

    /// Waits for the samples INSERT in flight, if any (sending it again after a transport failure,
    /// marked first in `resends`), then records the writer's last sample id.
    func awaitSubmitted() throws {
        guard let flight = inFlight else { return }
        inFlight = nil
        do {
            _ = try client.finish(flight.pending) { try self.markResend(firstID: flight.firstID) }
            var writerRow = RowBinaryWriter()
            writerRow.uint64(writer)
            writerRow.uint64(UInt64(max(0, flight.lastID)))
            writerRow.int64(Clock.wallMilliseconds())
            try insert("writers", "writer, last_id, updated_at", writerRow.bytes)
        } catch {
            abortBatch()
            throw error
        }
    }

    private func clearBatch() {
        batch.bytes.removeAll(keepingCapacity: true)
        rowsInBatch = 0
        batchOpen = false
        batchAgents.removeAll(keepingCapacity: true)
        batchAgentNames.removeAll(keepingCapacity: true)
    }

    func abortBatch() {
        clearBatch()
        inFlight = nil
        // What the batch changed in memory was not stored: read it again when needed.
        monitorsByName = nil
        agentsByID = nil
        agentStatus.removeAll()
        agentSeen.removeAll()
        touched.removeAll()
        nextSampleID = nil
    }

    /// Settings of every INSERT: into a cluster's `Distributed` tables, answered once every shard has its rows.
    private var insertSettings: [String: String] { isCluster ? ["insert_distributed_sync": "1"] : [:] }

    private func insert(_ name: String, _ columns: String, _ rows: [UInt8]) throws {
        _ = try client.run("INSERT INTO \(table(name)) (\(columns)) FORMAT RowBinary", data: rows, settings: insertSettings)
    }

    /// Before samples are sent a second time (the first try may have been stored), says so in
    /// `resends` (once a batch): from then on the reads dedup with FINAL.
    private func markResend(firstID: Int64) throws {
        guard markedResend != firstID else { return }
        var marker = RowBinaryWriter()
        marker.uint64(writer)
        marker.uint64(UInt64(max(0, firstID)))
        marker.int64(Clock.wallMilliseconds())
        try insert("resends", "writer, first_id, at", marker.bytes)
        markedResend = firstID
        samplesFrom = nil
    }

    /// The batch (its first sample id) whose resend is marked.
    private var markedResend: Int64?

    private func writeAgents(_ records: [AgentRecord]) throws {
        guard !records.isEmpty else { return }
        var rows = RowBinaryWriter()
        for record in records {
            rows.string(record.id)
            rows.string(record.status)
            rows.int64(record.createdAt)
            rows.int64(record.lastSeen)
            rows.optionalString(record.name)
            rows.uint64(nextVersion())
        }
        try insert("agents", "id, status, created_at, last_seen, name, version", rows.bytes)
    }

    /// Days of retention drop whole months (a partition) once all of the month is past the
    /// limit: checked on the first commit, then hourly. A per-monitor count is SQLite's only.
    private func applyRetention(_ retention: Retention, now: Int64) throws {
        guard let days = retention.days else { return }
        if let checked = retentionCheckedAt, now - checked < 3_600_000, now >= checked { return }
        retentionCheckedAt = now
        let cutoff = now - Int64(days) * 86_400_000
        let cutoffDay = Timestamp.civil(fromDays: cutoff >= 0 ? cutoff / 86_400_000 : (cutoff - 86_399_999) / 86_400_000)
        // A month is wholly before the cutoff when it is before the cutoff's month.
        let cutoffMonth = cutoffDay.year * 100 + cutoffDay.month
        for endpoint in ddlEndpoints {
            let local = localTable("samples")
            let parts = try client.run("""
                SELECT DISTINCT partition FROM system.parts WHERE database = \(clickHouseLiteral(location.database)) \
                AND table = \(clickHouseLiteral(String(local.split(separator: ".").last!))) AND active FORMAT RowBinary
                """, endpoint: endpoint)
            var reader = RowBinaryReader(parts)
            while !reader.atEnd {
                let partition = try reader.string()
                guard let month = Int(partition), month < cutoffMonth else { continue }
                try client.execute("ALTER TABLE \(local)\(onCluster) DROP PARTITION \(month)", endpoint: endpoint)
            }
        }
    }

    /// Runs a mutation (ALTER ... UPDATE or DELETE) on every server's samples and waits until it is done.
    private func mutate(_ command: String) throws {
        for endpoint in ddlEndpoints {
            try client.execute("ALTER TABLE \(localTable("samples"))\(onCluster) \(command)", endpoint: endpoint)
        }
        try waitForMutations(on: "samples")
    }

    /// Counts the held samples of an approved agent.
    private func release(_ agent: String) throws {
        try mutate("UPDATE held = 0 WHERE agent = \(clickHouseLiteral(agent)) AND held = 1")
    }

    // MARK: - Reading

    private func rows(_ query: String) throws -> RowBinaryReader {
        RowBinaryReader(try client.run(query + " FORMAT RowBinary"))
    }

    private func readMonitors() throws -> [MonitorRecord] {
        var reader = try rows("""
            SELECT toInt64(id), monitor, name, kind, target, agent, description, check_interval, first_seen, config, enabled, version
            FROM \(table("monitors")) FINAL ORDER BY id, monitor
            """)
        var result: [MonitorRecord] = []
        while !reader.atEnd {
            let id = try reader.int64()
            let monitor = try reader.string()
            let name = try reader.optionalString()
            let kind = try reader.optionalString()
            let target = try reader.optionalString()
            let agent = try reader.optionalString()
            let description = try reader.optionalString()
            let interval = try reader.optionalInt64()
            let firstSeen = try reader.int64()
            let config = try reader.optionalString()
            let enabled = try reader.optionalUInt8()
            _ = try reader.uint64()  // the version (18.16 wants it read for FINAL through a Distributed table)
            result.append(MonitorRecord(id: id, monitor: monitor, name: name, kind: kind, target: target, agent: agent,
                                        description: description, checkInterval: interval, firstSeen: firstSeen, lastSeen: firstSeen,
                                        config: config, enabled: enabled.map { $0 != 0 }))
        }
        return result
    }

    /// The monitors as the views last read them, by integer id (the id → monitor map of every query).
    private var monitorCache: [Int64: MonitorRecord]?

    private func monitorName(_ id: Int64) throws -> String? {
        if monitorCache == nil { _ = try monitors() }
        return monitorCache?[id]?.monitor
    }

    /// Whether a view listed every monitor (it then asks each one's latest sample and totals:
    /// answered from one query each).
    private var listed = false

    func monitors() throws -> [MonitorRecord] {
        listed = true
        var records = try readMonitors()
        let latest = try latestAll()
        for index in records.indices {
            if let sample = latest[records[index].monitor] { records[index].lastSeen = sample.at }
        }
        monitorCache = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return records
    }

    func monitor(matching key: String) throws -> MonitorRecord? {
        let records = try readMonitors()
        monitorCache = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        guard var record = records.first(where: { $0.monitor == key }) ?? records.first(where: { String($0.id) == key }) else { return nil }
        if let latest = try latest(monitorID: record.id) { record.lastSeen = latest.at }
        return record
    }

    private static let sampleColumns = "toInt64(id), at, status, latency_ms, message, tls_expiry_days"

    private func storedSample(_ reader: inout RowBinaryReader) throws -> StoredSample {
        StoredSample(id: try reader.int64(), at: try reader.int64(), status: SQLiteSampleStore.status(Int64(try reader.uint8())),
                     latencyMs: try reader.optionalFloat64(), message: try reader.optionalString(), tlsExpiryDays: try reader.optionalInt64())
    }

    private var latestCache: [String: StoredSample]?
    /// `samplesTable()`'s answer, once asked.
    private var samplesFrom: String?

    /// Every monitor's newest sample in two queries: those with one in the last 25 hours before
    /// now (or after it), then, for the rest, over all time.
    private func latestAll() throws -> [String: StoredSample] {
        if let known = latestCache { return known }
        var result: [String: StoredSample] = [:]
        func read(_ condition: String) throws {
            var reader = try rows("""
                SELECT monitor, \(ClickHouseSampleStore.sampleColumns) FROM \(try samplesTable())
                WHERE held = 0 AND \(condition) ORDER BY monitor, at DESC, id DESC LIMIT 1 BY monitor
                """)
            while !reader.atEnd {
                let monitor = try reader.string()
                result[monitor] = try storedSample(&reader)
            }
        }
        try read("at >= \(now - 25 * 3_600_000)")
        let names = try readMonitors().map(\.monitor).filter { result[$0] == nil }
        if !names.isEmpty {
            for start in stride(from: 0, to: names.count, by: 1000) {
                try read("monitor IN (\(names[start..<min(names.count, start + 1000)].map(clickHouseLiteral).joined(separator: ", ")))")
            }
        }
        latestCache = result
        return result
    }

    func latest(monitorID: Int64) throws -> StoredSample? {
        guard let monitor = try monitorName(monitorID) else { return nil }
        if let cached = latestCache { return cached[monitor] }
        if listed { return try latestAll()[monitor] }
        // The newest time first, without FINAL (a resent copy has the same time), so the
        // query that dedups reads only the last granule instead of the monitor's whole history.
        var newest = try rows("SELECT toInt64(count()), max(at) FROM \(table("samples")) WHERE held = 0 AND monitor = \(clickHouseLiteral(monitor))")
        guard try newest.int64() > 0 else { return nil }
        let at = try newest.int64()
        var reader = try rows("""
            SELECT \(ClickHouseSampleStore.sampleColumns) FROM \(try samplesTable())
            WHERE held = 0 AND monitor = \(clickHouseLiteral(monitor)) AND at >= \(at) ORDER BY at DESC, id DESC LIMIT 1
            """)
        return reader.atEnd ? nil : try storedSample(&reader)
    }

    /// What the reads of samples say: the table, with `FINAL` only when some batch was ever sent
    /// again (a `resends` row is written before the second try). Without a resend no sample has
    /// a copy, and `FINAL` would only cost time: 18.16 merges every part of the range on one
    /// thread (a year of one monitor: 0.25 s instead of 0.13 s). Asked once a run.
    func startRequest(now: Int64) {
        self.now = now
        monitorsByName = nil
        agentsByID = nil
        agentStatus.removeAll()
        agentSeen.removeAll()
        touched.removeAll()
        monitorCache = nil
        listed = false
        latestCache = nil
        totalsCache.removeAll()
        samplesFrom = nil
    }

    private func samplesTable() throws -> String {
        if let known = samplesFrom { return known }
        var reader = try rows("SELECT toInt64(count()) FROM \(table("resends"))")
        let resent = try reader.int64() > 0
        let from = table("samples") + (resent ? " FINAL" : "")
        samplesFrom = from
        return from
    }

    private func window(_ monitor: String, _ from: Int64, _ until: Int64) -> String {
        "held = 0 AND monitor = \(clickHouseLiteral(monitor)) AND at >= \(from) AND at < \(until)"
    }

    func forEachSample(monitorID: Int64, from: Int64, until: Int64, _ visit: (Int64, SampleStatus, Double?) throws -> Void) throws {
        guard let monitor = try monitorName(monitorID) else { return }
        var reader = try rows("""
            SELECT at, status, latency_ms FROM \(try samplesTable()) WHERE \(window(monitor, from, until))
            ORDER BY at, status, latency_ms
            """)
        while !reader.atEnd {
            try visit(try reader.int64(), SQLiteSampleStore.status(Int64(try reader.uint8())), try reader.optionalFloat64())
        }
    }

    func page(monitorID: Int64, from: Int64, until: Int64, offset: Int, limit: Int) throws -> [StoredSample] {
        guard let monitor = try monitorName(monitorID) else { return [] }
        var reader = try rows("""
            SELECT \(ClickHouseSampleStore.sampleColumns) FROM \(try samplesTable()) WHERE \(window(monitor, from, until))
            ORDER BY at DESC, id DESC LIMIT \(max(0, offset)), \(max(0, limit))
            """)
        var result: [StoredSample] = []
        while !reader.atEnd { result.append(try storedSample(&reader)) }
        return result
    }

    private var totalsCache: [String: [String: SampleTotals]] = [:]

    /// Totals of every monitor over a window in one query (the views ask monitor by monitor).
    func totals(monitorID: Int64, from: Int64, until: Int64, withSpeed: Bool) throws -> SampleTotals {
        guard let monitor = try monitorName(monitorID) else { return SampleTotals() }
        let key = "\(from) \(until)"
        if totalsCache[key] == nil {
            var all: [String: SampleTotals] = [:]
            var reader = try rows("""
                SELECT monitor, toInt64(count()), toInt64(countIf(status = 0)), sum(latency_ms), toInt64(count(latency_ms)), max(at),
                       sum(speed_mbps), toInt64(count(speed_mbps))
                FROM \(try samplesTable()) WHERE held = 0 AND at >= \(from) AND at < \(until) GROUP BY monitor
                """)
            while !reader.atEnd {
                let name = try reader.string()
                var totals = SampleTotals()
                totals.checks = Int(try reader.int64())
                totals.good = Int(try reader.int64())
                totals.latencySum = try reader.optionalFloat64() ?? 0
                totals.latencyCount = Int(try reader.int64())
                totals.lastAt = try reader.int64()
                totals.speedSum = try reader.optionalFloat64() ?? 0
                totals.speedCount = Int(try reader.int64())
                all[name] = totals
            }
            totalsCache[key] = all
        }
        var totals = totalsCache[key]?[monitor] ?? SampleTotals()
        if !withSpeed {
            totals.speedSum = 0
            totals.speedCount = 0
        }
        return totals
    }

    func count(monitorID: Int64, from: Int64, until: Int64) throws -> Int {
        guard let monitor = try monitorName(monitorID) else { return 0 }
        var reader = try rows("SELECT toInt64(count()) FROM \(try samplesTable()) WHERE \(window(monitor, from, until))")
        return Int(try reader.int64())
    }

    private func readAgents() throws -> [AgentRecord] {
        var reader = try rows("SELECT id, status, created_at, last_seen, name, version FROM \(table("agents")) FINAL ORDER BY created_at, id")
        var result: [AgentRecord] = []
        while !reader.atEnd {
            result.append(AgentRecord(id: try reader.string(), status: try reader.string(), createdAt: try reader.int64(),
                                      lastSeen: try reader.int64(), monitorCount: 0, name: try reader.optionalString()))
            _ = try reader.uint64()  // the version, as for monitors
        }
        return result
    }

    func agents() throws -> [AgentRecord] {
        let monitors = try readMonitors()
        var perAgent: [String: Int] = [:]
        for monitor in monitors { if let agent = monitor.agent { perAgent[agent, default: 0] += 1 } }
        return try readAgents().map { agent in
            var agent = agent
            agent.monitorCount = perAgent[agent.id] ?? 0
            return agent
        }
    }

    func setAgentStatus(_ id: String, to status: String) throws -> Bool {
        agentsByID = nil
        guard var row = try loadAgents()[id] else { return false }
        row.record.status = status
        try writeAgents([row.record])
        agentsByID = nil
        if status == "approved" { try release(id) }
        return true
    }

    func clear(monitorID: Int64?, before: Int64?) throws -> Int {
        var conditions: [String] = []
        if let monitorID {
            guard let monitor = try monitorName(monitorID) else { return 0 }
            conditions.append("monitor = \(clickHouseLiteral(monitor))")
        }
        if let before { conditions.append("at < \(before)") }
        let condition = conditions.isEmpty ? "1" : conditions.joined(separator: " AND ")
        var reader = try rows("SELECT toInt64(count()) FROM \(table("samples")) FINAL WHERE \(condition)")
        let deleted = Int(try reader.int64())
        if deleted > 0 { try mutate("DELETE WHERE \(condition)") }
        // As SQLite numbers a new sample one past the largest left, so do the writers from now on.
        var largest = try rows("SELECT toInt64(max(id)) FROM \(table("samples"))")
        let left = try largest.int64()
        for endpoint in ddlEndpoints {
            try client.execute("ALTER TABLE \(localTable("writers"))\(onCluster) DELETE WHERE 1", endpoint: endpoint)
        }
        var writerRow = RowBinaryWriter()
        writerRow.uint64(0)
        writerRow.uint64(UInt64(max(0, left)))
        writerRow.int64(Clock.wallMilliseconds())
        try waitForMutations(on: "writers")
        try insert("writers", "writer, last_id, updated_at", writerRow.bytes)
        latestCache = nil
        totalsCache.removeAll()
        return deleted
    }

    /// Waits until every server finished the mutations of table `name` (5 minutes at most).
    private func waitForMutations(on name: String) throws {
        let deadline = Clock.monotonicMilliseconds() + 300_000
        for endpoint in ddlEndpoints {
            while true {
                var answer = RowBinaryReader(try client.run("""
                    SELECT count() FROM system.mutations WHERE database = \(clickHouseLiteral(location.database)) \
                    AND table = \(clickHouseLiteral(name + (isCluster ? "_local" : ""))) AND is_done = 0 FORMAT RowBinary
                    """, endpoint: endpoint))
                if try answer.uint64() == 0 { break }
                guard Clock.monotonicMilliseconds() < deadline else {
                    throw ToolError("ClickHouse at \(location.display) did not finish changing \(name) within 5 minutes; it goes on in the background")
                }
                usleep(20_000)
            }
        }
    }

    /// Rows of one export page at most (pages keep memory bounded whatever the store holds).
    static let exportPage = 20_000

    func export(from: Int64, until: Int64, monitorID: Int64?, _ visit: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        var condition = "held = 0 AND at >= \(from) AND at < \(until)"
        if let monitorID {
            guard let monitor = try monitorName(monitorID) else { return }
            condition += " AND monitor = \(clickHouseLiteral(monitor))"
        }
        var after: (at: Int64, id: Int64, writer: UInt64)?
        while true {
            var keyset = ""
            if let after {
                keyset = " AND (at > \(after.at) OR (at = \(after.at) AND (id > \(after.id) OR (id = \(after.id) AND writer > \(after.writer)))))"
            }
            var reader = try rows("""
                SELECT at, toInt64(id), writer, record FROM \(try samplesTable()) WHERE \(condition)\(keyset)
                ORDER BY at, id, writer LIMIT \(ClickHouseSampleStore.exportPage)
                """)
            var count = 0
            while !reader.atEnd {
                after = (try reader.int64(), try reader.int64(), try reader.uint64())
                try reader.withStringBytes(visit)
                count += 1
            }
            if count < ClickHouseSampleStore.exportPage { return }
        }
    }
}

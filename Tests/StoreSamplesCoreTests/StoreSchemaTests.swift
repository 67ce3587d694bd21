import SQLiteStore
import Testing
@testable import StoreSamplesCore

@Suite("the stores' schemas and migrations")
struct StoreSchemaTests {
    // MARK: - SQLite

    /// Each table's columns, in order, and each index's definition, as SQLite reports them.
    static func layout(_ db: SQLiteConnection) throws -> [String] {
        var lines: [String] = []
        let tables = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var names: [String] = []
        while try tables.step() { names.append(tables.text(0) ?? "") }
        for name in names {
            let columns = try db.prepare("SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info(?) ORDER BY cid")
            columns.bind(name)
            var parts: [String] = []
            while try columns.step() {
                parts.append([columns.text(0), columns.text(1), columns.int64(2) == 1 ? "NOT NULL" : nil, columns.text(3).map { "DEFAULT " + $0 }]
                    .compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " "))
            }
            lines.append("\(name): " + parts.joined(separator: ", "))
        }
        let indexes = try db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        while try indexes.step() { lines.append(indexes.text(0) ?? "") }
        return lines
    }

    @Test("a new file gets version 4: these tables, columns and indexes (written out by hand from store-samples(1))")
    func sqliteFresh() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.migrate(SQLiteSchema.migrations)
        #expect(try db.scalarInt("PRAGMA user_version") == 4)
        #expect(SQLiteSchema.version == 4)
        #expect(try StoreSchemaTests.layout(db) == [
            "agents: id TEXT, status TEXT NOT NULL DEFAULT 'approved', created_at INTEGER NOT NULL, last_seen INTEGER NOT NULL, name TEXT",
            "monitors: id INTEGER, monitor TEXT NOT NULL, name TEXT, kind TEXT, target TEXT, agent TEXT, description TEXT, "
                + "check_interval INTEGER, first_seen INTEGER NOT NULL, config TEXT, enabled INTEGER",
            "samples: id INTEGER, monitor_id INTEGER NOT NULL, at INTEGER NOT NULL, status INTEGER NOT NULL, latency_ms REAL, reason TEXT, "
                + "code INTEGER, message TEXT, tls_expiry_days INTEGER, speed_mbps REAL, record TEXT NOT NULL, "
                + "origin INTEGER NOT NULL DEFAULT 0, agent TEXT, held INTEGER NOT NULL DEFAULT 0",
            "store_state: generation INTEGER NOT NULL",
            "CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms) WHERE held = 0",
            "CREATE INDEX samples_by_time ON samples(at)",
            "CREATE INDEX samples_held_by_agent ON samples(agent) WHERE held = 1",
        ])
        #expect(try db.scalarInt("SELECT generation FROM store_state") == 0)
    }

    @Test("a version-1 file with rows migrates to version 4: rows kept, the new columns at their defaults, the same layout as a new file")
    func sqliteFromVersionOne() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.migrate(Array(SQLiteSchema.migrations.prefix(1)))
        #expect(try db.scalarInt("PRAGMA user_version") == 1)
        try db.execute("""
            INSERT INTO monitors (monitor, first_seen) VALUES ('api', 5);
            INSERT INTO samples (monitor_id, at, status, record) VALUES (1, 5, 0, '{}');
            INSERT INTO agents (id, created_at, last_seen) VALUES ('paris', 5, 6);
            """)
        try db.migrate(SQLiteSchema.migrations)
        #expect(try db.scalarInt("PRAGMA user_version") == 4)
        #expect(try db.scalarText("SELECT origin || ',' || coalesce(agent, 'null') || ',' || held FROM samples") == "0,null,0")
        #expect(try db.scalarText("SELECT status || ',' || coalesce(name, 'null') FROM agents") == "approved,null")
        #expect(try db.scalarText("SELECT coalesce(config, 'null') || ',' || coalesce(enabled, 'null') FROM monitors") == "null,null")
        let fresh = try SQLiteConnection(path: ":memory:")
        try fresh.migrate(SQLiteSchema.migrations)
        #expect(try StoreSchemaTests.layout(db) == StoreSchemaTests.layout(fresh))
        // Each migration moves exactly one version.
        for version in 0..<SQLiteSchema.migrations.count {
            let step = try SQLiteConnection(path: ":memory:")
            try step.migrate(Array(SQLiteSchema.migrations.prefix(version + 1)))
            #expect(try step.scalarInt("PRAGMA user_version") == Int64(version + 1))
        }
    }

    // MARK: - ClickHouse

    @Test("one server: each table once, as MergeTree; a cluster: a local table and a Distributed one over it, ON CLUSTER without shard endpoints")
    func clickHouseCreateStatements() throws {
        let writers = try #require(ClickHouseSchema.tables.first { $0.name == "writers" })
        let one = ClickHouseSchema.Placement(database: "vitals", cluster: nil, shardEndpoints: [])
        #expect(ClickHouseSchema.createStatements(writers, one) == [
            "CREATE TABLE IF NOT EXISTS vitals.writers (writer UInt64, last_id UInt64, updated_at Int64) "
                + "ENGINE = ReplacingMergeTree(last_id) ORDER BY writer",
        ])
        let shards = ClickHouseSchema.Placement(database: "vitals", cluster: "pair", shardEndpoints: ["127.0.0.1:1", "127.0.0.1:2"])
        #expect(ClickHouseSchema.createStatements(writers, shards) == [
            "CREATE TABLE IF NOT EXISTS vitals.writers_local (writer UInt64, last_id UInt64, updated_at Int64) "
                + "ENGINE = ReplacingMergeTree(last_id) ORDER BY writer",
            "CREATE TABLE IF NOT EXISTS vitals.writers AS vitals.writers_local ENGINE = Distributed(pair, vitals, writers_local, cityHash64(writer))",
        ])
        let keeper = ClickHouseSchema.Placement(database: "vitals", cluster: "pair", shardEndpoints: [])
        #expect(ClickHouseSchema.createStatements(writers, keeper) == [
            "CREATE TABLE IF NOT EXISTS vitals.writers_local ON CLUSTER pair (writer UInt64, last_id UInt64, updated_at Int64) "
                + "ENGINE = ReplacingMergeTree(last_id) ORDER BY writer",
            "CREATE TABLE IF NOT EXISTS vitals.writers ON CLUSTER pair AS vitals.writers_local "
                + "ENGINE = Distributed(pair, vitals, writers_local, cityHash64(writer))",
        ])
        #expect(shards.table("samples") == "vitals.samples" && shards.localTable("samples") == "vitals.samples_local")
        #expect(one.localTable("samples") == "vitals.samples" && one.localName("samples") == "samples")
    }

    @Test("opening: the current version does nothing, an older one upgrades (only when creating), a newer one is refused")
    func clickHousePlan() {
        #expect(ClickHouseSchema.version == 2)
        #expect(ClickHouseSchema.plan(stored: 2, create: true) == .current)
        #expect(ClickHouseSchema.plan(stored: 2, create: false) == .current)
        #expect(ClickHouseSchema.plan(stored: 0, create: true) == .upgrade(from: 0))
        #expect(ClickHouseSchema.plan(stored: 1, create: true) == .upgrade(from: 1))
        #expect(ClickHouseSchema.plan(stored: 0, create: false) == .missing)
        #expect(ClickHouseSchema.plan(stored: 1, create: false) == .missing)
        #expect(ClickHouseSchema.plan(stored: 3, create: true) == .refuseNewer(3))
    }

    @Test("the upgrade from each version: the database and version table, then each migration's tables and its version row, in order")
    func clickHouseUpgrade() {
        let one = ClickHouseSchema.Placement(database: "v", cluster: nil, shardEndpoints: [])
        let fromOne = ClickHouseSchema.upgrade(from: 1, one, appliedAt: 77)
        #expect(fromOne == [
            "CREATE DATABASE IF NOT EXISTS v",
            "CREATE TABLE IF NOT EXISTS v.store_samples_schema (version UInt32, applied_at Int64) ENGINE = MergeTree() ORDER BY version",
            "CREATE TABLE IF NOT EXISTS v.resends (writer UInt64, first_id UInt64, at Int64) ENGINE = MergeTree() ORDER BY writer",
            "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (2, 77)",
        ])
        let fromZero = ClickHouseSchema.upgrade(from: 0, one, appliedAt: 77)
        #expect(fromZero.filter { $0.hasPrefix("CREATE TABLE IF NOT EXISTS v.") }.map { $0.split(separator: " ")[5] }
                == ["v.store_samples_schema", "v.samples", "v.monitors", "v.agents", "v.writers", "v.resends"])
        #expect(fromZero.filter { $0.hasPrefix("INSERT") } == [
            "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (1, 77)",
            "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (2, 77)",
        ])
        #expect(fromZero.firstIndex { $0.contains("VALUES (1,") }! < fromZero.firstIndex { $0.contains("v.resends") }!,
                "version 1 is recorded before version 2's table is made")
        #expect(ClickHouseSchema.upgrade(from: 2, one, appliedAt: 77).count == 2, "nothing but the idempotent database and version table")
        let cluster = ClickHouseSchema.Placement(database: "v", cluster: "c", shardEndpoints: [])
        #expect(ClickHouseSchema.upgrade(from: 0, cluster, appliedAt: 1).filter { $0.contains("Distributed(") }.count == 5)
        #expect(ClickHouseSchema.upgrade(from: 0, cluster, appliedAt: 1).allSatisfy { $0.hasPrefix("INSERT") || $0.contains(" ON CLUSTER c ") || $0.hasSuffix(" ON CLUSTER c") })
    }
}

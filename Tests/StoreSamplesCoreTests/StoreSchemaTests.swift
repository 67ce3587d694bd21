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
                parts.append(
                    [columns.text(0), columns.text(1), columns.int64(2) == 1 ? "NOT NULL" : nil, columns.text(3).map { "DEFAULT " + $0 }]
                        .compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " "))
            }
            lines.append("\(name): " + parts.joined(separator: ", "))
        }
        let indexes = try db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
        while try indexes.step() { lines.append(indexes.text(0) ?? "") }
        return lines
    }

    @Test("a new file gets version 8: these tables, columns and indexes (written out by hand from store-samples(1))")
    func sqliteFresh() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.migrate(SQLiteSchema.migrations)
        #expect(try db.scalarInt("PRAGMA user_version") == 8)
        #expect(SQLiteSchema.version == 8)
        #expect(
            try StoreSchemaTests.layout(db) == [
                "agents: id TEXT, status TEXT NOT NULL DEFAULT 'approved', created_at INTEGER NOT NULL, last_seen INTEGER NOT NULL, name TEXT",
                "check_counts: monitor_id INTEGER NOT NULL, status INTEGER NOT NULL, checks INTEGER NOT NULL",
                "check_counts_state: through_id INTEGER NOT NULL, deletions INTEGER NOT NULL",
                "monitors: id INTEGER, monitor TEXT NOT NULL, name TEXT, kind TEXT, target TEXT, agent TEXT, description TEXT, "
                    + "check_interval INTEGER, first_seen INTEGER NOT NULL, config TEXT, enabled INTEGER",
                "places: monitor_id INTEGER NOT NULL, agent TEXT NOT NULL, last_at INTEGER NOT NULL",
                "samples: id INTEGER, monitor_id INTEGER NOT NULL, at INTEGER NOT NULL, status INTEGER NOT NULL, latency_ms REAL, reason TEXT, "
                    + "code INTEGER, message TEXT, tls_expiry_days INTEGER, speed_mbps REAL, record TEXT NOT NULL, "
                    + "origin INTEGER NOT NULL DEFAULT 0, agent TEXT, held INTEGER NOT NULL DEFAULT 0, identity_agent TEXT NOT NULL DEFAULT '', "
                    + "consensus INTEGER, batch INTEGER NOT NULL DEFAULT 0",
                "store_state: generation INTEGER NOT NULL, deletions INTEGER NOT NULL DEFAULT 0, last_sample_id INTEGER NOT NULL DEFAULT 0",
                "CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms, consensus, identity_agent, held) WHERE held = 0",
                "CREATE INDEX samples_held_by_agent ON samples(agent) WHERE held = 1",
                "CREATE UNIQUE INDEX samples_identity ON samples(at, monitor_id, identity_agent)",
            ])
        #expect(try db.scalarText("SELECT generation || ',' || deletions FROM store_state") == "2,1", "versions 5 and 6 each count one")
    }

    @Test("the reads of counted samples (history, totals, one place's, the votes a new sample is judged by) use the index alone")
    func sqliteCoveringIndex() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.migrate(SQLiteSchema.migrations)
        // The shapes of SQLiteSampleStore's reads: `held = 0` always (the partial index's condition), then the
        // window, and a place's samples by identity_agent. Version 6's index lacked `held`, and SQLite read the
        // table beside it for every sample ("USING INDEX", not "USING COVERING INDEX").
        let window = "FROM samples INDEXED BY samples_by_monitor_time WHERE held = 0 AND monitor_id = 1 AND at >= 0 AND at < 9"
        for query in [
            "SELECT at, coalesce(consensus, status), latency_ms \(window) ORDER BY at",
            "SELECT at, status, latency_ms \(window) AND identity_agent = 'paris' ORDER BY at",
            "SELECT count(*), sum(coalesce(consensus, status) = 0), sum(latency_ms), count(latency_ms), max(at) \(window)",
            "SELECT identity_agent, at, status \(window)",
        ] {
            let plan = try db.prepare("EXPLAIN QUERY PLAN " + query)
            var steps: [String] = []
            while try plan.step() { steps.append(plan.text(3) ?? "") }
            #expect(steps == ["SEARCH samples USING COVERING INDEX samples_by_monitor_time (monitor_id=? AND at>? AND at<?)"], "\(query)")
        }
    }

    @Test(
        "a version-1 file with rows migrates to version 8: rows kept, a sample stored twice kept once (the first), the new columns at their defaults, the places found, ids given on from the largest"
    )
    func sqliteFromVersionOne() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.migrate(Array(SQLiteSchema.migrations.prefix(1)))
        #expect(try db.scalarInt("PRAGMA user_version") == 1)
        try db.execute(
            """
            INSERT INTO monitors (monitor, first_seen) VALUES ('api', 5);
            INSERT INTO samples (monitor_id, at, status, record) VALUES (1, 5, 0, '{"agent":"paris","n":1}');
            INSERT INTO samples (monitor_id, at, status, record) VALUES (1, 5, 0, '{"agent":"tokyo"}');
            INSERT INTO samples (monitor_id, at, status, record) VALUES (1, 5, 2, '{"agent":"paris","n":2}');
            INSERT INTO samples (monitor_id, at, status, record) VALUES (1, 5, 0, '{"agent":7}');
            INSERT INTO agents (id, created_at, last_seen) VALUES ('paris', 5, 6);
            """)
        try db.migrate(SQLiteSchema.migrations)
        #expect(try db.scalarInt("PRAGMA user_version") == 8)
        #expect(try db.scalarInt("SELECT last_sample_id FROM store_state") == 4, "the next sample is numbered 5")
        #expect(
            try db.scalarInt("SELECT count(*) FROM samples WHERE batch != 0") == 0, "samples stored before version 7 are never followed")
        // The three samples kept are three places of api (paris, tokyo, and none), each newest at 5; none judged.
        #expect(
            try db.scalarText("SELECT group_concat(agent || ':' || last_at, ',') FROM (SELECT * FROM places ORDER BY agent)")
                == ":5,paris:5,tokyo:5")
        #expect(try db.scalarInt("SELECT count(*) FROM samples WHERE consensus IS NOT NULL") == 0)
        let rows = try db.prepare("SELECT id, identity_agent, origin, coalesce(agent, 'null'), held FROM samples ORDER BY id")
        var seen: [String] = []
        while try rows.step() {
            seen.append("\(rows.int64(0)) \(rows.text(1) ?? "?") \(rows.int64(2)) \(rows.text(3) ?? "?") \(rows.int64(4))")
        }
        #expect(seen == ["1 paris 0 null 0", "2 tokyo 0 null 0", "4  0 null 0"], "paris at 5 twice: the first kept; a number is no agent")
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

    @Test(
        "one server: each table once, as MergeTree; a cluster: a local table and a Distributed one over it, ON CLUSTER without shard endpoints"
    )
    func clickHouseCreateStatements() throws {
        let resends = try #require(ClickHouseSchema.tables.first { $0.name == "resends" })
        let one = ClickHouseSchema.Placement(database: "vitals", cluster: nil, shardEndpoints: [])
        #expect(
            ClickHouseSchema.createStatements(resends, one) == [
                "CREATE TABLE IF NOT EXISTS vitals.resends (writer UInt64, first_id UInt64, at Int64) ENGINE = MergeTree() ORDER BY writer"
            ])
        let shards = ClickHouseSchema.Placement(database: "vitals", cluster: "pair", shardEndpoints: ["127.0.0.1:1", "127.0.0.1:2"])
        #expect(
            ClickHouseSchema.createStatements(resends, shards) == [
                "CREATE TABLE IF NOT EXISTS vitals.resends_local (writer UInt64, first_id UInt64, at Int64) ENGINE = MergeTree() ORDER BY writer",
                "CREATE TABLE IF NOT EXISTS vitals.resends AS vitals.resends_local ENGINE = Distributed(pair, vitals, resends_local, cityHash64(writer))",
            ])
        let keeper = ClickHouseSchema.Placement(database: "vitals", cluster: "pair", shardEndpoints: [])
        #expect(
            ClickHouseSchema.createStatements(resends, keeper) == [
                "CREATE TABLE IF NOT EXISTS vitals.resends_local ON CLUSTER pair (writer UInt64, first_id UInt64, at Int64) "
                    + "ENGINE = MergeTree() ORDER BY writer",
                "CREATE TABLE IF NOT EXISTS vitals.resends ON CLUSTER pair AS vitals.resends_local "
                    + "ENGINE = Distributed(pair, vitals, resends_local, cityHash64(writer))",
            ])
        #expect(shards.table("samples") == "vitals.samples" && shards.localTable("samples") == "vitals.samples_local")
        #expect(one.localTable("samples") == "vitals.samples" && one.localName("samples") == "samples")
        #expect(
            ClickHouseSchema.marksView(shards) == "CREATE MATERIALIZED VIEW IF NOT EXISTS vitals.samples_marks_local TO vitals.marks_local "
                + "AS SELECT identity_agent, maxState(at) AS upto, maxState(id) AS last_id FROM vitals.samples_local GROUP BY identity_agent"
        )
    }

    @Test("opening: the current version does nothing, an older one upgrades (only when creating), a newer one is refused")
    func clickHousePlan() {
        #expect(ClickHouseSchema.version == 5)
        #expect(ClickHouseSchema.plan(stored: 5, create: true) == .current)
        #expect(ClickHouseSchema.plan(stored: 5, create: false) == .current)
        #expect(ClickHouseSchema.plan(stored: 4, create: true) == .upgrade(from: 4))
        #expect(ClickHouseSchema.plan(stored: 4, create: false) == .missing)
        #expect(ClickHouseSchema.plan(stored: 0, create: true) == .upgrade(from: 0))
        #expect(ClickHouseSchema.plan(stored: 3, create: true) == .upgrade(from: 3))
        #expect(ClickHouseSchema.plan(stored: 0, create: false) == .missing)
        #expect(ClickHouseSchema.plan(stored: 3, create: false) == .missing)
        #expect(ClickHouseSchema.plan(stored: 6, create: true) == .refuseNewer(6))
    }

    @Test(
        "a new store gets every table, the marks and places views and version 5; a version-3 one gains the places, a version-4 one batch and received_ms; an older one has its samples copied by identity first"
    )
    func clickHouseUpgrade() throws {
        let one = ClickHouseSchema.Placement(database: "v", cluster: nil, shardEndpoints: [])
        let fresh = try #require(ClickHouseSchema.upgrade(from: 0, one, appliedAt: 77))
        #expect(
            fresh.map { $0.split(separator: " ").prefix(7).joined(separator: " ") } == [
                "CREATE DATABASE IF NOT EXISTS v",
                "CREATE TABLE IF NOT EXISTS v.store_samples_schema (version",
                "CREATE TABLE IF NOT EXISTS v.samples (monitor",
                "CREATE TABLE IF NOT EXISTS v.places (monitor",
                "CREATE TABLE IF NOT EXISTS v.monitors (monitor",
                "CREATE TABLE IF NOT EXISTS v.agents (id",
                "CREATE TABLE IF NOT EXISTS v.marks (identity_agent",
                "CREATE TABLE IF NOT EXISTS v.resends (writer",
                "CREATE MATERIALIZED VIEW IF NOT EXISTS v.samples_marks",
                "CREATE MATERIALIZED VIEW IF NOT EXISTS v.samples_places",
                "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (5,",
            ])
        #expect(fresh.last == "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (5, 77)")
        #expect(fresh[2].hasSuffix("ORDER BY (intDiv(at, 86400000), monitor, at, identity_agent) SETTINGS index_granularity = 1024"))
        // Version 3 to 4: nothing copied; the places table and view, then the places of the samples stored.
        let three = try #require(ClickHouseSchema.upgrade(from: 3, one, appliedAt: 77))
        #expect(!three.contains { $0.contains("samples_next") || $0.hasPrefix("INSERT INTO v.marks") })
        #expect(
            Array(three.suffix(2)) == [
                "INSERT INTO v.places (monitor, identity_agent, last_at) SELECT monitor, identity_agent, maxState(at) FROM v.samples "
                    + "WHERE held = 0 AND 1 GROUP BY monitor, identity_agent",
                "INSERT INTO v.store_samples_schema (version, applied_at) VALUES (5, 77)",
            ])
        #expect(
            ClickHouseSchema.addedColumns.map { "\($0.version) \($0.table).\($0.column)" } == [
                "4 samples.consensus", "4 samples.reason", "5 samples.batch", "5 samples.received_ms",
            ])
        #expect(
            fresh[2].contains(
                " consensus UInt8 DEFAULT status, reason Nullable(String) DEFAULT nullIf(visitParamExtractString(record, 'reason'), ''), batch UInt64, received_ms Int64) "
            ),
            "a new table has the added columns last, where ADD COLUMN puts them in an older one")
        // Version 4 to 5: the columns alone (added before these statements, where missing).
        let four = try #require(ClickHouseSchema.upgrade(from: 4, one, appliedAt: 77))
        #expect(
            !four.contains { $0.contains("samples_next") || $0.hasPrefix("INSERT INTO v.marks") || $0.hasPrefix("INSERT INTO v.places") })
        let older = try #require(ClickHouseSchema.upgrade(from: 2, one, appliedAt: 77))
        #expect(
            Array(older[2...5]) == [
                "DROP TABLE IF EXISTS v.samples_v2",
                "DROP TABLE IF EXISTS v.samples_next",
                "CREATE TABLE v.samples_next (\(ClickHouseSchema.samples.columns)) ENGINE = \(ClickHouseSchema.samples.engine)",
                "INSERT INTO v.samples_next (monitor, at, identity_agent, id, status, latency_ms, message, tls_expiry_days, speed_mbps, origin, "
                    + "agent, held, record) SELECT monitor, at, visitParamExtractString(record, 'agent') AS identity_agent, id, status, latency_ms, "
                    + "message, tls_expiry_days, speed_mbps, origin, agent, held, record FROM v.samples ORDER BY id LIMIT 1 BY monitor, at, identity_agent",
            ])
        #expect(older.contains("RENAME TABLE v.samples TO v.samples_v2, v.samples_next TO v.samples"))
        #expect(
            older.firstIndex(of: "DROP TABLE IF EXISTS v.resends")! < older.firstIndex {
                $0.hasPrefix("CREATE TABLE IF NOT EXISTS v.resends")
            }!,
            "the resends of the copied store are forgotten: the copy holds each sample once")
        #expect(
            older.contains(
                "INSERT INTO v.marks (identity_agent, upto, last_id) SELECT identity_agent, maxState(at), maxState(id) "
                    + "FROM v.samples GROUP BY identity_agent"), "the marks of what was copied")
        #expect(ClickHouseSchema.upgrade(from: 1, one, appliedAt: 77) == older)
        let shards = ClickHouseSchema.Placement(database: "v", cluster: "c", shardEndpoints: ["h:1", "h:2"])
        let onShards = try #require(ClickHouseSchema.upgrade(from: 2, shards, appliedAt: 1))
        #expect(onShards.contains("RENAME TABLE v.samples_local TO v.samples_v2, v.samples_next TO v.samples_local"))
        #expect(
            onShards.firstIndex(of: "DROP TABLE IF EXISTS v.samples")! < onShards.firstIndex {
                $0.hasPrefix("CREATE TABLE IF NOT EXISTS v.samples AS")
            }!,
            "the Distributed table over the copied one is made again")
        let keeper = ClickHouseSchema.Placement(database: "v", cluster: "c", shardEndpoints: [])
        #expect(ClickHouseSchema.upgrade(from: 2, keeper, appliedAt: 1) == nil, "a copy needs each shard's endpoint")
        #expect(
            try #require(ClickHouseSchema.upgrade(from: 0, keeper, appliedAt: 1)).allSatisfy {
                $0.hasPrefix("INSERT") || $0.contains(" ON CLUSTER c ") || $0.hasSuffix(" ON CLUSTER c")
            })
    }
}

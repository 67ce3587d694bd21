import VitalsKit

/// The ClickHouse store's schema: its tables, their migrations, and the statements that make
/// them on one server or across a cluster. Pure: statements are built here and run by
/// `ClickHouseSampleStore`. Written for 18.16 and current releases alike.
enum ClickHouseSchema {
    /// One table: its name, columns and the engine clause of its local (MergeTree) table, and the
    /// sharding key of its `Distributed` table in a cluster.
    struct Table: Equatable {
        let name: String
        let columns: String
        let engine: String
        let shardingKey: String
    }

    /// The samples: a `ReplacingMergeTree` whose key is a sample's identity (its time, monitor and
    /// own agent; '' for none) behind the day of its time, partitioned by month. The day first
    /// keeps every read by time to the days it asks for (the last day's overview reads one day
    /// whatever the store holds); a monitor's samples of a day lie together, in time order, and
    /// granules of 1,024 rows keep one monitor's year to about its own rows. `batch` and
    /// `received_ms` (version 5) are how `follow` reads them in the order stored (see `addedColumns`).
    static let samples = Table(
        name: "samples",
        columns: """
            monitor String, at Int64, identity_agent String, id UInt64, status UInt8, latency_ms Nullable(Float64), \
            message Nullable(String), tls_expiry_days Nullable(Int64), speed_mbps Nullable(Float64), origin UInt8, \
            agent Nullable(String), held UInt8, record String, consensus UInt8 DEFAULT status, \
            reason Nullable(String) DEFAULT nullIf(visitParamExtractString(record, 'reason'), ''), batch UInt64, received_ms Int64
            """,
        engine: "ReplacingMergeTree() PARTITION BY toYYYYMM(toDateTime(intDiv(at, 1000))) "
            + "ORDER BY (intDiv(at, 86400000), monitor, at, identity_agent) SETTINGS index_granularity = 1024",
        shardingKey: "cityHash64(monitor)")

    /// For each identity agent, the latest sample time and the largest sample number stored, kept
    /// by a materialized view as samples are inserted (so they are true exactly when the samples
    /// are: a writer killed after an INSERT leaves both or neither).
    static let marks = Table(
        name: "marks",
        columns: "identity_agent String, upto AggregateFunction(max, Int64), last_id AggregateFunction(max, UInt64)",
        engine: "AggregatingMergeTree() ORDER BY identity_agent", shardingKey: "cityHash64(identity_agent)")

    /// Each monitor's places (identity agents, '' for samples that name none) and the time of each
    /// one's newest counted sample, kept by a materialized view as samples are inserted (and by
    /// hand when held samples come to count, or samples are cleared).
    static let places = Table(
        name: "places",
        columns: "monitor String, identity_agent String, last_at AggregateFunction(max, Int64)",
        engine: "AggregatingMergeTree() ORDER BY (monitor, identity_agent)", shardingKey: "cityHash64(monitor)")

    /// Columns added to a table after it was made, by the version that added them: an older store
    /// gets each one its table lacks (18.16 has no `ADD COLUMN IF NOT EXISTS`, so the store asks
    /// `system.columns` first). Version 4 keeps each sample's consensus (`StoredConsensus`; older
    /// samples: their own status) and its reason (older samples: the record's). Version 5 keeps the
    /// order samples were stored in, for `follow` (ClickHouse has no rowid, and several writers
    /// and shards insert at once): `batch`, a random number given each INSERT (0 for a sample held
    /// from a pending agent, and for older samples: samples a follower never writes), and
    /// `received_ms`, the writer's clock when it sent the INSERT.
    static let addedColumns: [(version: Int64, table: String, column: String, type: String)] = [
        (4, "samples", "consensus", "UInt8 DEFAULT status"),
        (4, "samples", "reason", "Nullable(String) DEFAULT nullIf(visitParamExtractString(record, 'reason'), '')"),
        (5, "samples", "batch", "UInt64"),
        (5, "samples", "received_ms", "Int64"),
    ]

    /// Every table of this version.
    static let tables = [
        samples,
        places,
        Table(
            name: "monitors",
            columns: """
                monitor String, id UInt64, name Nullable(String), kind Nullable(String), target Nullable(String), \
                agent Nullable(String), description Nullable(String), check_interval Nullable(Int64), first_seen Int64, \
                config Nullable(String), enabled Nullable(UInt8), version UInt64
                """,
            engine: "ReplacingMergeTree(version) ORDER BY monitor", shardingKey: "cityHash64(monitor)"),
        Table(
            name: "agents", columns: "id String, status String, created_at Int64, last_seen Int64, name Nullable(String), version UInt64",
            engine: "ReplacingMergeTree(version) ORDER BY id", shardingKey: "cityHash64(id)"),
        marks,
        // A row before a batch of samples is sent again (see `ClickHouseSampleStore.samplesTable`).
        Table(
            name: "resends", columns: "writer UInt64, first_id UInt64, at Int64",
            engine: "MergeTree() ORDER BY writer", shardingKey: "cityHash64(writer)"),
    ]

    /// The schema version table: one row per version applied, on every server.
    static let versionTable = "store_samples_schema"

    /// The schema version this build writes (the `store_samples_schema` table holds it). Version 1
    /// had samples keyed by writer and number, monitors, agents and writers; version 2 added
    /// resends; version 3 keys samples by their identity and adds marks; version 4 adds places and
    /// each sample's consensus and reason; version 5 each sample's batch and received_ms.
    static let version: Int64 = 5

    /// Where a store's tables are: its database, and the cluster of a `Distributed` table over
    /// local ones (nil for one server). `onCluster` is ` ON CLUSTER NAME` when DDL goes to the
    /// cluster through one server (no shard endpoints given), else empty.
    struct Placement: Equatable {
        var database: String
        var cluster: String?
        var onCluster: String

        init(database: String, cluster: String?, shardEndpoints: [String]) {
            self.database = database
            self.cluster = cluster
            onCluster = cluster.map { shardEndpoints.isEmpty ? " ON CLUSTER \($0)" : "" } ?? ""
        }

        /// The name queries read and write: the table, or in a cluster its `Distributed` table.
        func table(_ name: String) -> String { "\(database).\(name)" }

        /// The table that holds the rows on a server: `name`, or `name_local` in a cluster.
        func localTable(_ name: String) -> String { "\(database).\(localName(name))" }

        /// A local table's name within its database.
        func localName(_ name: String) -> String { cluster == nil ? name : name + "_local" }
    }

    /// The statements that create `table`: the MergeTree table, and in a cluster the
    /// `Distributed` table over it.
    static func createStatements(_ table: Table, _ placement: Placement) -> [String] {
        let (database, onCluster) = (placement.database, placement.onCluster)
        guard let cluster = placement.cluster else {
            return ["CREATE TABLE IF NOT EXISTS \(database).\(table.name)\(onCluster) (\(table.columns)) ENGINE = \(table.engine)"]
        }
        return [
            "CREATE TABLE IF NOT EXISTS \(database).\(table.name)_local\(onCluster) (\(table.columns)) ENGINE = \(table.engine)",
            distributed(table, placement, cluster: cluster),
        ]
    }

    private static func distributed(_ table: Table, _ placement: Placement, cluster: String) -> String {
        let database = placement.database
        return "CREATE TABLE IF NOT EXISTS \(database).\(table.name)\(placement.onCluster) AS \(database).\(table.name)_local "
            + "ENGINE = Distributed(\(cluster), \(database), \(table.name)_local, \(table.shardingKey))"
    }

    /// The view that keeps `marks` as samples are inserted, on every server's local tables.
    static func marksView(_ placement: Placement) -> String {
        "CREATE MATERIALIZED VIEW IF NOT EXISTS \(placement.localTable("samples_marks"))\(placement.onCluster) "
            + "TO \(placement.localTable("marks")) AS SELECT identity_agent, maxState(at) AS upto, maxState(id) AS last_id "
            + "FROM \(placement.localTable("samples")) GROUP BY identity_agent"
    }

    /// The view that keeps `places` as counted samples are inserted, on every server's local tables.
    static func placesView(_ placement: Placement) -> String {
        "CREATE MATERIALIZED VIEW IF NOT EXISTS \(placement.localTable("samples_places"))\(placement.onCluster) "
            + "TO \(placement.localTable("places")) AS SELECT monitor, identity_agent, maxState(at) AS last_at "
            + "FROM \(placement.localTable("samples")) WHERE held = 0 GROUP BY monitor, identity_agent"
    }

    /// Fills a server's `places` from its own counted samples (a store older than version 4, or
    /// one whose samples were cleared), given the table's local name on that server.
    /// In a cluster whose DDL goes through one server (`ON CLUSTER`), through the `Distributed`
    /// tables, which put each monitor's places on the shard of its samples.
    static func placesRecount(_ placement: Placement, where condition: String = "1") -> String {
        let through = placement.cluster != nil && !placement.onCluster.isEmpty
        let (into, from) =
            through
            ? (placement.table("places"), placement.table("samples")) : (placement.localTable("places"), placement.localTable("samples"))
        return "INSERT INTO \(into) (monitor, identity_agent, last_at) "
            + "SELECT monitor, identity_agent, maxState(at) FROM \(from) WHERE held = 0 AND \(condition) GROUP BY monitor, identity_agent"
    }

    /// The tables on a server that carry `table`'s columns: its local table, and in a cluster its
    /// `Distributed` table too, each as (database, name).
    static func columnHolders(_ table: String, _ placement: Placement) -> [String] {
        placement.cluster == nil ? [table] : [placement.localName(table), table]
    }

    /// What opening a store whose version table says `stored` (0: no tables) must do.
    enum Plan: Equatable {
        /// Nothing: the store is this build's version.
        case current
        /// Run `upgrade(from:)`.
        case upgrade(from: Int64)
        /// Refuse: a newer build made the store.
        case refuseNewer(Int64)
        /// Refuse: there is no store, and this command does not create one.
        case missing
    }

    /// The plan for a store at version `stored`, when the command may (`create`) or may not make tables.
    static func plan(stored: Int64, create: Bool) -> Plan {
        if stored > version { return .refuseNewer(stored) }
        if stored == version { return .current }
        return create ? .upgrade(from: stored) : .missing
    }

    /// The statements, in order, that take a store from version `stored` to this build's, each
    /// to be run on every server that holds tables (each shard endpoint, or the one server); nil
    /// when the store's samples must be copied and the cluster names no shard endpoints (the copy
    /// runs on each shard's local tables). A new store gets this version's tables. An older one
    /// gets its samples copied into a table keyed by identity, the first stored of each identity
    /// kept, then swapped in; each statement can be run again, so an interrupted upgrade is
    /// finished by the next run. `appliedAt` is the time recorded beside the version.
    static func upgrade(from stored: Int64, _ placement: Placement, appliedAt: Int64) -> [String]? {
        let (database, onCluster) = (placement.database, placement.onCluster)
        var statements = [
            "CREATE DATABASE IF NOT EXISTS \(database)\(onCluster)",
            "CREATE TABLE IF NOT EXISTS \(database).\(versionTable)\(onCluster) (version UInt32, applied_at Int64) "
                + "ENGINE = MergeTree() ORDER BY version",
        ]
        if stored > 0, stored < 3 {
            guard placement.cluster == nil || onCluster.isEmpty else { return nil }
            statements += identityCopy(placement)
        }
        for table in tables { statements += createStatements(table, placement) }
        statements.append(marksView(placement))
        statements.append(placesView(placement))
        if stored > 0, stored < 3 {
            statements.append(
                "INSERT INTO \(placement.localTable("marks")) (identity_agent, upto, last_id) "
                    + "SELECT identity_agent, maxState(at), maxState(id) FROM \(placement.localTable("samples")) GROUP BY identity_agent")
        }
        if stored > 0, stored < 4 {
            // From the samples (maxima: a rerun after an interruption changes nothing).
            statements.append(placesRecount(placement))
        }
        statements.append("INSERT INTO \(database).\(versionTable) (version, applied_at) VALUES (\(version), \(appliedAt))")
        return statements
    }

    /// Version 3's copy of an older store's samples (see `upgrade`), on each server's local tables.
    private static func identityCopy(_ placement: Placement) -> [String] {
        let database = placement.database
        let local = placement.localTable("samples")
        let next = "\(database).samples_next"
        let old = "\(database).samples_v2"
        let columns =
            "monitor, at, identity_agent, id, status, latency_ms, message, tls_expiry_days, speed_mbps, origin, agent, held, record"
        var statements = [
            "DROP TABLE IF EXISTS \(old)",
            "DROP TABLE IF EXISTS \(next)",
            "CREATE TABLE \(next) (\(samples.columns)) ENGINE = \(samples.engine)",
            // The identity agent of an older sample is the record's own `agent` string.
            "INSERT INTO \(next) (\(columns)) SELECT monitor, at, visitParamExtractString(record, 'agent') AS identity_agent, id, status, "
                + "latency_ms, message, tls_expiry_days, speed_mbps, origin, agent, held, record FROM \(local) "
                + "ORDER BY id LIMIT 1 BY monitor, at, identity_agent",
            "RENAME TABLE \(local) TO \(old), \(next) TO \(local)",
            "DROP TABLE \(old)",
            // The copy holds each sample once: no read needs FINAL for an earlier resend.
            "DROP TABLE IF EXISTS \(placement.localTable("resends"))",
            "DROP TABLE IF EXISTS \(placement.localTable("writers"))",
        ]
        if placement.cluster != nil {
            // The Distributed tables over changed local ones are made again.
            statements += ["samples", "resends", "writers"].map { "DROP TABLE IF EXISTS \(database).\($0)" }
        }
        return statements
    }
}

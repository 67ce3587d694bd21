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

    /// Every table. Samples live in a `ReplacingMergeTree` partitioned by month and ordered by
    /// (monitor, at), keyed by (monitor, at, id, writer): `writer` is a random number of the run
    /// and `id` its sample's number, so a batch sent again after a lost acknowledgement replaces
    /// itself instead of doubling. Monitors, agents and writers are small `ReplacingMergeTree`
    /// tables whose newest version of a row wins.
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
        // Version 2: a row before a batch of samples is sent again (see `ClickHouseSampleStore.samplesTable`).
        Table(name: "resends", columns: "writer UInt64, first_id UInt64, at Int64",
              engine: "MergeTree() ORDER BY writer", shardingKey: "cityHash64(writer)"),
    ]

    /// The schema version table: one row per version applied, on every server.
    static let versionTable = "store_samples_schema"

    /// Forward migrations: entry `n` takes a store from version `n` to `n + 1`, by the tables it creates.
    static let migrations: [[String]] = [["samples", "monitors", "agents", "writers"], ["resends"]]

    /// The schema version this build writes (the `store_samples_schema` table holds it).
    static var version: Int64 { Int64(migrations.count) }

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
            "CREATE TABLE IF NOT EXISTS \(database).\(table.name)\(onCluster) AS \(database).\(table.name)_local "
                + "ENGINE = Distributed(\(cluster), \(database), \(table.name)_local, \(table.shardingKey))",
        ]
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
    /// to be run on every server that holds tables (each shard endpoint, or the one server).
    /// Every statement can be run again (`IF NOT EXISTS`), so two processes upgrading at once
    /// end the same; `appliedAt` is the time recorded beside each version.
    static func upgrade(from stored: Int64, _ placement: Placement, appliedAt: Int64) -> [String] {
        let (database, onCluster) = (placement.database, placement.onCluster)
        var statements = [
            "CREATE DATABASE IF NOT EXISTS \(database)\(onCluster)",
            "CREATE TABLE IF NOT EXISTS \(database).\(versionTable)\(onCluster) (version UInt32, applied_at Int64) "
                + "ENGINE = MergeTree() ORDER BY version",
        ]
        for step in Int(max(0, stored))..<migrations.count {
            for name in migrations[step] {
                guard let table = tables.first(where: { $0.name == name }) else { continue }
                statements += createStatements(table, placement)
            }
            statements.append("INSERT INTO \(database).\(versionTable) (version, applied_at) VALUES (\(step + 1), \(appliedAt))")
        }
        return statements
    }
}

import SQLiteStore

/// The SQLite store's schema: version 1's tables and each migration since, as SQL text (no
/// I/O here). `SQLiteConnection.openVersioned` applies the ones a file lacks, in order, in one
/// transaction; a file of a newer version is refused.
enum SQLiteSchema {
    /// Version 1: monitors, samples (each kept whole in `record`, for export, beside the columns
    /// the views read) and agents. The covering index `(monitor_id, at, status, latency_ms)`
    /// answers history, results and uptime without touching the table.
    static let tables = """
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

    /// Version 5: a sample is identified by its monitor, its own agent (the record's `agent`
    /// when it is a string, else '') and its time: a unique index on them, which also serves the
    /// reads by time that `samples_by_time` served, so an ingest keeps three indexes. Samples
    /// stored twice before are kept once, the first stored. `deletions` counts the writes that
    /// took samples away or let held ones count (retention, clear, an approval), so the kept
    /// counts of checks (`check_counts`, for `metrics`) know when to count again from scratch.
    static let sampleIdentity = """
        ALTER TABLE samples ADD COLUMN identity_agent TEXT NOT NULL DEFAULT '';
        UPDATE samples SET identity_agent = json_extract(record, '$.agent') WHERE json_type(record, '$.agent') = 'text';
        DELETE FROM samples WHERE id NOT IN (SELECT min(id) FROM samples GROUP BY at, monitor_id, identity_agent);
        DROP INDEX samples_by_time;
        CREATE UNIQUE INDEX samples_identity ON samples(at, monitor_id, identity_agent);
        ALTER TABLE store_state ADD COLUMN deletions INTEGER NOT NULL DEFAULT 0;
        UPDATE store_state SET generation = generation + 1, deletions = deletions + 1;
        CREATE TABLE check_counts (
            monitor_id INTEGER NOT NULL, status INTEGER NOT NULL, checks INTEGER NOT NULL, PRIMARY KEY (monitor_id, status)
        ) WITHOUT ROWID;
        CREATE TABLE check_counts_state (through_id INTEGER NOT NULL, deletions INTEGER NOT NULL);
        INSERT INTO check_counts_state VALUES (0, -1);
        """

    /// Version 6: places (a monitor seen from several agents; vitals(7), PLACES). Each sample keeps
    /// the monitor's consensus when it was stored, where it differs from the sample's own status
    /// (NULL: the same, as for every sample of a monitor seen from one place, and every older
    /// sample); `places` keeps each monitor's places (identity agents, '' for samples that name
    /// none) and the time of each one's newest sample. The covering index gains both columns, so
    /// uptime by consensus, one place's samples and the judging of a new sample read it alone.
    static let placeModel = """
        ALTER TABLE samples ADD COLUMN consensus INTEGER;
        DROP INDEX samples_by_monitor_time;
        CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms, consensus, identity_agent) WHERE held = 0;
        CREATE TABLE places (
            monitor_id INTEGER NOT NULL, agent TEXT NOT NULL, last_at INTEGER NOT NULL, PRIMARY KEY (monitor_id, agent)
        ) WITHOUT ROWID;
        INSERT INTO places SELECT monitor_id, identity_agent, max(at) FROM samples WHERE held = 0 GROUP BY monitor_id, identity_agent;
        UPDATE store_state SET generation = generation + 1;
        """

    /// Version 7: the order samples were stored in, for `follow`. Sample ids are given by the writer
    /// from `store_state.last_sample_id`, the largest ever given, so an id is never given twice
    /// (SQLite's own rowid reuses the ids of the newest rows once they are cleared or pruned, and a
    /// follower's cursor would then miss the samples given them again): ids grow in the order the
    /// write transactions committed. `batch` is the generation of the transaction that stored the
    /// sample (the value `generation` takes at its commit), so a follower knows where each stored
    /// batch begins and ends; 0 for a sample held from a pending agent, and for those stored before
    /// this version: samples a follower never writes.
    static let storageOrder = """
        ALTER TABLE samples ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE store_state ADD COLUMN last_sample_id INTEGER NOT NULL DEFAULT 0;
        UPDATE store_state SET last_sample_id = (SELECT coalesce(max(id), 0) FROM samples);
        """

    /// Version 8: the index of counted samples holds `held` as well, so it covers the reads it was
    /// made for. Every such read says `held = 0` (the index's own condition, without which SQLite
    /// will not use a partial index), and SQLite 3.40 looks the row up in the table for a column the
    /// index lacks, even one its condition fixes: version 6's index was read beside the table, one
    /// lookup a sample. A year of one monitor's history (525,600 samples) took 1,096.9 M
    /// instructions before and 980.1 M after (callgrind), 175-211 ms against 118-185 ms here; the
    /// entry grows by one byte.
    static let coveringIndex = """
        DROP INDEX samples_by_monitor_time;
        CREATE INDEX samples_by_monitor_time ON samples(monitor_id, at, status, latency_ms, consensus, identity_agent, held) WHERE held = 0;
        """

    /// Forward migrations: entry `n` takes a file from version `n` to `n + 1`.
    static let migrations: [String] = [
        tables, monitorSettings, agentModel, generationCounter, sampleIdentity, placeModel, storageOrder, coveringIndex,
    ]

    /// The schema and its migrations, for `SQLiteConnection.openVersioned`.
    static let versioned = VersionedSchema(tool: "store-samples", kind: "store-samples database", migrations: migrations)

    /// The schema version this build writes; older files are migrated forward, newer refused.
    static var version: Int64 { versioned.currentVersion }
}

import Foundation
import SQLiteStore
import VitalsKit

/// The archive's tables, and the migrations that bring an older file to them.
extension Archive {
    /// The schema version this build writes.
    static var schemaVersion: Int64 { versionedSchema.currentVersion }

    /// The schema, as `CREATE` statements.
    static let schema = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE snapshots (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            created_at INTEGER NOT NULL,
            trigger TEXT NOT NULL,
            quality TEXT NOT NULL,
            checksum TEXT NOT NULL,
            type_set_hash TEXT NOT NULL,
            registry TEXT,
            timezone TEXT NOT NULL,
            export_version TEXT,
            export_date INTEGER,
            source TEXT NOT NULL,
            previous_snapshot_id TEXT,
            is_chain_start INTEGER NOT NULL,
            is_post_restore INTEGER NOT NULL,
            is_post_restore_inferred INTEGER NOT NULL,
            is_post_restore_forwarded INTEGER NOT NULL,
            post_restore_suppressed_delta_id TEXT,
            device_id TEXT NOT NULL,
            recovered_device_id INTEGER NOT NULL,
            samples_archived INTEGER NOT NULL,
            record_count INTEGER NOT NULL
        );
        CREATE TABLE type_counts (
            snapshot_seq INTEGER NOT NULL,
            type_identifier TEXT NOT NULL,
            count INTEGER NOT NULL,
            earliest INTEGER,
            latest INTEGER,
            quality TEXT NOT NULL,
            type_hash TEXT NOT NULL,
            is_unsupported INTEGER NOT NULL,
            PRIMARY KEY (snapshot_seq, type_identifier)
        ) WITHOUT ROWID;
        CREATE TABLE yearly_counts (
            snapshot_seq INTEGER NOT NULL,
            type_identifier TEXT NOT NULL,
            year INTEGER NOT NULL,
            count INTEGER NOT NULL,
            is_approximate INTEGER NOT NULL,
            PRIMARY KEY (snapshot_seq, type_identifier, year)
        ) WITHOUT ROWID;
        CREATE TABLE deltas (
            id TEXT PRIMARY KEY,
            from_snapshot_id TEXT NOT NULL,
            to_snapshot_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            checksum_before TEXT NOT NULL,
            checksum_after TEXT NOT NULL,
            timezone_before TEXT NOT NULL,
            timezone_after TEXT NOT NULL,
            merged_from TEXT,
            detection TEXT NOT NULL,
            post_restore_suppressed INTEGER NOT NULL,
            type_count INTEGER NOT NULL
        );
        CREATE INDEX deltas_by_target ON deltas(to_snapshot_id);
        CREATE TABLE type_deltas (
            delta_id TEXT NOT NULL,
            type_identifier TEXT NOT NULL,
            transition TEXT NOT NULL,
            reason TEXT NOT NULL,
            count_before INTEGER,
            count_after INTEGER,
            count_delta INTEGER NOT NULL,
            quality_before TEXT,
            quality_after TEXT,
            hash_before TEXT,
            hash_after TEXT,
            yearly TEXT NOT NULL,
            yearly_count_note TEXT,
            PRIMARY KEY (delta_id, type_identifier)
        ) WITHOUT ROWID;
        CREATE TABLE anomalies (
            id TEXT PRIMARY KEY,
            delta_id TEXT NOT NULL,
            snapshot_id TEXT NOT NULL,
            previous_snapshot_id TEXT NOT NULL,
            detected_at INTEGER NOT NULL,
            kind TEXT NOT NULL,
            severity TEXT NOT NULL,
            type_identifier TEXT,
            count_before INTEGER,
            count_after INTEGER,
            count_delta INTEGER,
            change_percent REAL,
            types TEXT NOT NULL,
            message TEXT NOT NULL
        );
        CREATE INDEX anomalies_by_delta ON anomalies(delta_id);
        CREATE TABLE operations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            operation TEXT NOT NULL,
            snapshot_ids TEXT NOT NULL,
            detail TEXT NOT NULL,
            critical INTEGER NOT NULL DEFAULT 0
        );
        CREATE TRIGGER operations_append_only_update BEFORE UPDATE ON operations
            BEGIN SELECT RAISE(ABORT, 'the operation log is append-only'); END;
        CREATE TRIGGER operations_append_only_delete BEFORE DELETE ON operations
            BEGIN SELECT RAISE(ABORT, 'the operation log is append-only'); END;
        CREATE TABLE sample_types (id INTEGER PRIMARY KEY, identifier TEXT NOT NULL UNIQUE);
        CREATE TABLE samples (
            id INTEGER PRIMARY KEY,
            type_id INTEGER NOT NULL,
            start_ms INTEGER NOT NULL,
            fingerprint BLOB NOT NULL,
            occurrence INTEGER NOT NULL,
            end_ms INTEGER NOT NULL,
            created_ms INTEGER,
            value TEXT,
            unit TEXT,
            source TEXT,
            source_version TEXT,
            device TEXT,
            uuid TEXT,
            first_seen INTEGER NOT NULL,
            last_seen INTEGER NOT NULL,
            present INTEGER NOT NULL,
            verified_at INTEGER NOT NULL,
            disappeared_in INTEGER,
            disappeared_at INTEGER
        );
        CREATE UNIQUE INDEX samples_identity ON samples(type_id, start_ms, fingerprint, occurrence);
        CREATE INDEX samples_absent ON samples(last_seen) WHERE present = 0;
        CREATE TABLE sample_events (
            sample_id INTEGER NOT NULL,
            snapshot_seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY (sample_id, snapshot_seq)
        ) WITHOUT ROWID;
        CREATE INDEX sample_events_by_snapshot ON sample_events(snapshot_seq, kind);
        """

    /// Version 2: anomalies can be resolved, as on HealthProbe's dashboard.
    static let resolvableAnomalies = """
        ALTER TABLE anomalies ADD COLUMN resolved_at INTEGER;
        """

    /// Version 3: a sample's metadata entries (`MetadataEntry` children in an export), as a JSON object.
    static let sampleMetadata = """
        ALTER TABLE samples ADD COLUMN metadata TEXT;
        """

    /// Version 4: Health Sync's pairing. One-time tokens are kept only as their SHA-256; paired
    /// clients are the SHA-256 fingerprints of their certificates, soft-deleted when unpaired
    /// (the seed's `PairedDevice` with `deletedAt`).
    static let pairing = """
        CREATE TABLE pairing_tokens (
            id INTEGER PRIMARY KEY,
            token_sha256 TEXT NOT NULL UNIQUE,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            used_at INTEGER,
            used_by TEXT
        );
        CREATE TABLE paired_clients (
            id TEXT PRIMARY KEY,
            certificate_fingerprint TEXT NOT NULL,
            paired_at INTEGER NOT NULL,
            last_seen INTEGER,
            deleted_at INTEGER,
            token_id INTEGER
        );
        CREATE UNIQUE INDEX paired_clients_active ON paired_clients(certificate_fingerprint) WHERE deleted_at IS NULL;
        """

    /// Version 5: which types Health Sync shares (the seed's `SyncConfiguration.enabledTypes`).
    /// While `meta` has no `sharing` row every type is shared, as before this version and as the
    /// seed's default (`HealthDataType.allCases`); once the user chooses (`sharing` = `chosen`),
    /// exactly the types listed here are.
    static let sharedTypes = """
        CREATE TABLE shared_types (
            type_identifier TEXT PRIMARY KEY,
            shared_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        """

    /// Forward migrations: entry `n` takes a file from version `n` to `n + 1`.
    static let migrations: [String] = [schema, resolvableAnomalies, sampleMetadata, pairing, sharedTypes]

    /// The schema and its migrations, for `SQLiteConnection.openVersioned`.
    static let versionedSchema = VersionedSchema(tool: "snapshot-delta", kind: "snapshot-delta archive", migrations: migrations)
}

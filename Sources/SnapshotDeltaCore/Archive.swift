import Foundation
import SQLiteStore
import VitalsKit

/// The archive: one SQLite file in WAL mode holding the chain (snapshots, type counts,
/// yearly counts, deltas, anomalies), the append-only operation log, and the samples
/// themselves (see `SampleArchiveWriter`).
///
/// Every change is one `BEGIN IMMEDIATE` transaction; the schema version is kept in
/// `PRAGMA user_version`, older files are migrated forward and newer ones refused.
public final class Archive {
    /// The schema version this build writes.
    public static var schemaVersion: Int64 { versionedSchema.currentVersion }

    /// The schema, as `CREATE` statements.
    public static let schema = """
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

    /// Forward migrations: entry `n` takes a file from version `n` to `n + 1`.
    static let migrations: [String] = [schema]

    /// The schema and its migrations, for `SQLiteConnection.openVersioned`.
    static let versionedSchema = VersionedSchema(tool: "snapshot-delta", kind: "snapshot-delta archive", migrations: migrations)

    let db: SQLiteConnection
    /// The file.
    public let path: String

    /// Opens the archive at `path`; with `create`, a missing file is created.
    public init(path: String, create: Bool) throws {
        self.path = path
        if !create, access(path, F_OK) != 0 {
            throw ToolError("no archive at \(path) (take a snapshot first, or name another with --db or VITALS_HEALTH_DB)")
        }
        do {
            db = try SQLiteConnection.openVersioned(path: path, create: create, schema: Archive.versionedSchema, pragmas: [
                "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA cache_size=-32768", "PRAGMA temp_store=MEMORY",
            ])
        } catch let error as SQLiteError {
            throw Archive.explain(error, path: path)
        } catch let error as SQLiteSchemaError {
            throw ToolError(error.description)
        }
    }

    /// Turns SQLite's codes into what a user can act on.
    static func explain(_ error: SQLiteError, path: String) -> ToolError {
        ToolError(error.explained(path: path, afterFull: "nothing was changed"))
    }

    /// Turns any error into a `ToolError` naming the archive.
    func translate(_ error: Error) -> Error {
        if let sqliteError = error as? SQLiteError { return Archive.explain(sqliteError, path: path) }
        return error
    }

    // MARK: - Transactions

    /// Starts a write transaction (waiting for other writers).
    func begin() throws { try db.beginImmediate() }

    /// Commits the open transaction.
    func commit() throws { try db.execute("COMMIT", context: "commit") }

    /// Abandons the open transaction, if any.
    func rollback() { if db.inTransaction { try? db.execute("ROLLBACK") } }

    /// Runs `body` in one write transaction, rolled back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        do {
            return try db.writeTransaction(body)
        } catch {
            throw translate(error)
        }
    }

    // MARK: - Meta

    /// A value from the meta table.
    func meta(_ key: String) throws -> String? {
        let statement = try db.prepare("SELECT value FROM meta WHERE key = ?")
        statement.bind(1, key)
        return try statement.step() ? statement.text(0) : nil
    }

    /// Sets a meta value.
    func setMeta(_ key: String, _ value: String) throws {
        let statement = try db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        statement.bind(1, key)
        statement.bind(2, value)
        try statement.step()
    }

    // MARK: - Snapshots

    static let snapshotColumns = """
        seq, id, created_at, trigger, quality, checksum, type_set_hash, registry, timezone, export_version, export_date,
        source, previous_snapshot_id, is_chain_start, is_post_restore, is_post_restore_inferred, is_post_restore_forwarded,
        post_restore_suppressed_delta_id, device_id, recovered_device_id, samples_archived, record_count
        """

    /// How many snapshots the archive holds.
    public func snapshotCount() throws -> Int { Int(try db.scalarInt("SELECT count(*) FROM snapshots") ?? 0) }

    /// Reserves the next snapshot number with a placeholder row (quality `loading`); the
    /// transaction that holds it either fills it in or rolls it back.
    func insertPlaceholder(id: String, createdAt: Int64, deviceID: String, source: String) throws -> Int64 {
        let statement = try db.prepare("""
            INSERT INTO snapshots (id, created_at, trigger, quality, checksum, type_set_hash, timezone, source,
                is_chain_start, is_post_restore, is_post_restore_inferred, is_post_restore_forwarded, device_id,
                recovered_device_id, samples_archived, record_count)
            VALUES (?, ?, '', 'loading', '', '', '', ?, 0, 0, 0, 0, ?, 0, 0, 0)
            """)
        statement.bind(1, id)
        statement.bind(2, createdAt)
        statement.bind(3, source)
        statement.bind(4, deviceID)
        try statement.step()
        return db.lastInsertRowID
    }

    /// Fills in a snapshot (its placeholder row) and writes its type and yearly counts.
    func saveSnapshot(_ snapshot: Snapshot) throws {
        let update = try db.prepare("""
            UPDATE snapshots SET created_at = ?, trigger = ?, quality = ?, checksum = ?, type_set_hash = ?, registry = ?,
                timezone = ?, export_version = ?, export_date = ?, source = ?, previous_snapshot_id = ?, is_chain_start = ?,
                is_post_restore = ?, is_post_restore_inferred = ?, is_post_restore_forwarded = ?,
                post_restore_suppressed_delta_id = ?, device_id = ?, recovered_device_id = ?, samples_archived = ?,
                record_count = ?
            WHERE seq = ?
            """)
        update.bind(1, snapshot.createdAt)
        update.bind(2, snapshot.trigger)
        update.bind(3, snapshot.quality.rawValue)
        update.bind(4, snapshot.checksum)
        update.bind(5, snapshot.typeSetHash)
        update.bind(6, snapshot.registry.map { JSONValue.array($0.map { .string($0) }).jsonText })
        update.bind(7, snapshot.timezone)
        update.bind(8, snapshot.exportVersion)
        update.bind(9, snapshot.exportDate)
        update.bind(10, snapshot.source)
        update.bind(11, snapshot.previousSnapshotID)
        update.bind(12, Int64(snapshot.isChainStart ? 1 : 0))
        update.bind(13, Int64(snapshot.isPostRestore ? 1 : 0))
        update.bind(14, Int64(snapshot.isPostRestoreInferred ? 1 : 0))
        update.bind(15, Int64(snapshot.isPostRestoreForwarded ? 1 : 0))
        update.bind(16, snapshot.postRestoreSuppressedDeltaID)
        update.bind(17, snapshot.deviceID)
        update.bind(18, Int64(snapshot.recoveredDeviceID ? 1 : 0))
        update.bind(19, Int64(snapshot.samplesArchived ? 1 : 0))
        update.bind(20, snapshot.recordCount)
        update.bind(21, snapshot.seq)
        try update.step()
        let typeRow = try db.prepare("""
            INSERT INTO type_counts (snapshot_seq, type_identifier, count, earliest, latest, quality, type_hash, is_unsupported)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let yearRow = try db.prepare("INSERT INTO yearly_counts (snapshot_seq, type_identifier, year, count, is_approximate) VALUES (?, ?, ?, ?, ?)")
        for type in snapshot.types {
            typeRow.bind(1, snapshot.seq)
            typeRow.bind(2, type.typeIdentifier)
            typeRow.bind(3, type.count)
            typeRow.bind(4, type.earliest)
            typeRow.bind(5, type.latest)
            typeRow.bind(6, type.quality.rawValue)
            typeRow.bind(7, type.typeHash)
            typeRow.bind(8, Int64(type.isUnsupported ? 1 : 0))
            try typeRow.step()
            typeRow.reset()
            for year in type.yearly {
                yearRow.bind(1, snapshot.seq)
                yearRow.bind(2, type.typeIdentifier)
                yearRow.bind(3, Int64(year.year))
                yearRow.bind(4, year.count)
                yearRow.bind(5, Int64(year.isApproximate ? 1 : 0))
                try yearRow.step()
                yearRow.reset()
            }
        }
    }

    /// Records that a snapshot's post-restore token was used by `deltaID` (nil re-arms it).
    func setSuppressionToken(snapshotID: String, deltaID: String?) throws {
        let statement = try db.prepare("UPDATE snapshots SET post_restore_suppressed_delta_id = ? WHERE id = ?")
        statement.bind(1, deltaID)
        statement.bind(2, snapshotID)
        try statement.step()
    }

    /// Every finished snapshot, oldest first; with `types`, their type and yearly counts too.
    public func snapshots(types: Bool) throws -> [Snapshot] {
        try loadSnapshots(where: "quality <> 'loading'", bind: { _ in }, types: types)
    }

    /// The snapshot with this number.
    public func snapshot(seq: Int64) throws -> Snapshot? {
        try loadSnapshots(where: "seq = ? AND quality <> 'loading'", bind: { $0.bind(1, seq) }, types: true).first
    }

    /// The snapshot with this id.
    public func snapshot(id: String) throws -> Snapshot? {
        try loadSnapshots(where: "id = ? AND quality <> 'loading'", bind: { $0.bind(1, id) }, types: true).first
    }

    /// The newest finished snapshot (the chain's head).
    public func latestSnapshot() throws -> Snapshot? {
        guard let seq = try db.scalarInt("SELECT max(seq) FROM snapshots WHERE quality <> 'loading'") else { return nil }
        return try snapshot(seq: seq)
    }

    /// The snapshot whose previous is `id` (the next in the chain), if any.
    public func successor(of id: String) throws -> Snapshot? {
        try loadSnapshots(where: "previous_snapshot_id = ? AND quality <> 'loading'", bind: { $0.bind(1, id) }, types: true).first
    }

    /// Finds a snapshot by id, unique id prefix (4 characters or more), number, or `latest`.
    ///
    /// Digits only can be a number and an id prefix at once (ids are hexadecimal): when both
    /// readings find a snapshot and they differ, the reference is ambiguous and both are named.
    public func resolve(_ reference: String) throws -> Snapshot {
        if reference == "latest" {
            guard let latest = try latestSnapshot() else { throw ToolError("\(path) holds no snapshot yet") }
            return latest
        }
        if let exact = try snapshot(id: reference) { return exact }
        let number = reference.count <= 9 && reference.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? Int64(reference) : nil
        let byNumber = try number.flatMap { $0 > 0 ? try snapshot(seq: $0) : nil }
        let byPrefix = reference.count >= 4 ? try snapshots(idPrefix: reference) : []
        if byPrefix.count > 1 { throw ToolError("'\(reference)' names more than one snapshot; give more of the id") }
        switch (byNumber, byPrefix.first) {
        case (let numbered?, let prefixed?) where numbered.id != prefixed.id:
            throw ToolError("'\(reference)' is both snapshot number \(numbered.seq) (id \(numbered.id)) and the start of "
                            + "snapshot \(prefixed.seq)'s id \(prefixed.id); give the full id of the one you mean")
        case (let numbered?, _):
            return numbered
        case (nil, let prefixed?):
            return prefixed
        case (nil, nil):
            if let number, number > 0 { throw ToolError("no snapshot number \(number) in \(path), and no id starts with '\(reference)'") }
            if reference.count < 4 {
                throw ToolError("no snapshot '\(reference)' in \(path) (name one by id, by an id prefix of 4 characters or more, by number, or latest)")
            }
            throw ToolError("no snapshot '\(reference)' in \(path)")
        }
    }

    /// The finished snapshots whose id starts with `prefix` (at most two: enough to tell one from many).
    private func snapshots(idPrefix prefix: String) throws -> [Snapshot] {
        let statement = try db.prepare("SELECT id FROM snapshots WHERE substr(id, 1, ?) = ? AND quality <> 'loading' LIMIT 2")
        statement.bind(1, Int64(prefix.utf8.count))
        statement.bind(2, prefix)
        var ids: [String] = []
        while try statement.step() { ids.append(statement.text(0) ?? "") }
        return try ids.compactMap { try snapshot(id: $0) }
    }

    private func loadSnapshots(where condition: String, bind: (SQLiteStatement) -> Void, types: Bool) throws -> [Snapshot] {
        let statement = try db.prepare("SELECT \(Archive.snapshotColumns) FROM snapshots WHERE \(condition) ORDER BY seq")
        bind(statement)
        var result: [Snapshot] = []
        while try statement.step() {
            let registry: [String]? = statement.text(7).flatMap { text in
                (try? JSONParser.parse(text))?.arrayValue?.compactMap(\.stringValue)
            }
            result.append(Snapshot(
                seq: statement.int64(0), id: statement.text(1) ?? "", createdAt: statement.int64(2),
                trigger: statement.text(3) ?? "", quality: Quality(rawValue: statement.text(4) ?? "") ?? .failed,
                checksum: statement.text(5) ?? "", typeSetHash: statement.text(6) ?? "", registry: registry,
                timezone: statement.text(8) ?? "", exportVersion: statement.text(9), exportDate: statement.optionalInt64(10),
                source: statement.text(11) ?? "", previousSnapshotID: statement.text(12),
                isChainStart: statement.int64(13) != 0, isPostRestore: statement.int64(14) != 0,
                isPostRestoreInferred: statement.int64(15) != 0, isPostRestoreForwarded: statement.int64(16) != 0,
                postRestoreSuppressedDeltaID: statement.text(17), deviceID: statement.text(18) ?? "",
                recoveredDeviceID: statement.int64(19) != 0, samplesArchived: statement.int64(20) != 0,
                recordCount: statement.int64(21), types: []))
        }
        if types {
            for index in result.indices { result[index].types = try typeCounts(seq: result[index].seq).map(\.type) }
        }
        return result
    }

    /// A snapshot's type counts as stored, each with the hash stored beside it.
    func typeCounts(seq: Int64) throws -> [(type: TypeCount, storedHash: String)] {
        let years = try db.prepare("SELECT type_identifier, year, count, is_approximate FROM yearly_counts WHERE snapshot_seq = ? ORDER BY type_identifier, year")
        years.bind(1, seq)
        var yearly: [String: [YearlyCount]] = [:]
        while try years.step() {
            yearly[years.text(0) ?? "", default: []].append(
                YearlyCount(year: Int(years.int64(1)), count: years.int64(2), isApproximate: years.int64(3) != 0))
        }
        let statement = try db.prepare("""
            SELECT type_identifier, count, earliest, latest, quality, type_hash, is_unsupported FROM type_counts
            WHERE snapshot_seq = ? ORDER BY type_identifier
            """)
        statement.bind(1, seq)
        var result: [(TypeCount, String)] = []
        while try statement.step() {
            let identifier = statement.text(0) ?? ""
            let type = TypeCount(typeIdentifier: identifier, count: statement.int64(1), earliest: statement.optionalInt64(2),
                                 latest: statement.optionalInt64(3), quality: Quality(rawValue: statement.text(4) ?? "") ?? .failed,
                                 isUnsupported: statement.int64(6) != 0, yearly: yearly[identifier] ?? [])
            result.append((type, statement.text(5) ?? ""))
        }
        return result.sorted { $0.0.typeIdentifier.utf8.lexicographicallyPrecedes($1.0.typeIdentifier.utf8) }
    }

    /// The ids of snapshots that name the same previous snapshot (a fork), if any.
    func forks() throws -> [(previous: String, snapshots: [String])] {
        let statement = try db.prepare("""
            SELECT previous_snapshot_id, group_concat(id, ' ') FROM snapshots
            WHERE previous_snapshot_id IS NOT NULL AND quality <> 'loading'
            GROUP BY previous_snapshot_id HAVING count(*) > 1
            """)
        var result: [(String, [String])] = []
        while try statement.step() {
            result.append((statement.text(0) ?? "", (statement.text(1) ?? "").split(separator: " ").map(String.init)))
        }
        return result
    }

    /// Removes a snapshot and its counts.
    func deleteSnapshot(seq: Int64) throws {
        for sql in ["DELETE FROM yearly_counts WHERE snapshot_seq = ?", "DELETE FROM type_counts WHERE snapshot_seq = ?",
                    "DELETE FROM snapshots WHERE seq = ?"] {
            let statement = try db.prepare(sql)
            statement.bind(1, seq)
            try statement.step()
        }
    }

    /// Makes a snapshot follow another (nil: a chain start).
    func relink(snapshotID: String, previous: String?) throws {
        let statement = try db.prepare("UPDATE snapshots SET previous_snapshot_id = ?, is_chain_start = ? WHERE id = ?")
        statement.bind(1, previous)
        statement.bind(2, Int64(previous == nil ? 1 : 0))
        statement.bind(3, snapshotID)
        try statement.step()
    }

    // MARK: - Deltas

    /// Writes a delta and its type deltas.
    func saveDelta(_ delta: Delta) throws {
        let row = try db.prepare("""
            INSERT INTO deltas (id, from_snapshot_id, to_snapshot_id, created_at, checksum_before, checksum_after,
                timezone_before, timezone_after, merged_from, detection, post_restore_suppressed, type_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        row.bind(1, delta.id)
        row.bind(2, delta.fromSnapshotID)
        row.bind(3, delta.toSnapshotID)
        row.bind(4, delta.createdAt)
        row.bind(5, delta.checksumBefore)
        row.bind(6, delta.checksumAfter)
        row.bind(7, delta.timezoneBefore)
        row.bind(8, delta.timezoneAfter)
        row.bind(9, delta.mergedFrom.map { JSONValue.array($0.map { .string($0) }).jsonText })
        row.bind(10, delta.detection.rawValue)
        row.bind(11, Int64(delta.postRestoreSuppressed ? 1 : 0))
        row.bind(12, Int64(delta.types.count))
        try row.step()
        let typeRow = try db.prepare("""
            INSERT INTO type_deltas (delta_id, type_identifier, transition, reason, count_before, count_after, count_delta,
                quality_before, quality_after, hash_before, hash_after, yearly, yearly_count_note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for type in delta.types {
            typeRow.bind(1, delta.id)
            typeRow.bind(2, type.typeIdentifier)
            typeRow.bind(3, type.transition.rawValue)
            typeRow.bind(4, type.reason.rawValue)
            typeRow.bind(5, type.countBefore)
            typeRow.bind(6, type.countAfter)
            typeRow.bind(7, type.countDelta)
            typeRow.bind(8, type.qualityBefore?.rawValue)
            typeRow.bind(9, type.qualityAfter?.rawValue)
            typeRow.bind(10, type.hashBefore)
            typeRow.bind(11, type.hashAfter)
            typeRow.bind(12, JSONValue.array(type.yearly.map {
                .array([.integer($0.year), .number(String($0.before)), .number(String($0.after)), .number(String($0.delta))])
            }).jsonText)
            typeRow.bind(13, type.yearlyCountNote)
            try typeRow.step()
            typeRow.reset()
        }
    }

    /// A delta as stored (nil when absent), with how many type deltas its row declares.
    func storedDelta(to snapshotID: String) throws -> (delta: Delta, declaredTypes: Int)? {
        let statement = try db.prepare("""
            SELECT id, from_snapshot_id, to_snapshot_id, created_at, checksum_before, checksum_after, timezone_before,
                timezone_after, merged_from, detection, post_restore_suppressed, type_count
            FROM deltas WHERE to_snapshot_id = ? ORDER BY created_at DESC LIMIT 1
            """)
        statement.bind(1, snapshotID)
        guard try statement.step() else { return nil }
        let id = statement.text(0) ?? ""
        let merged: [String]? = statement.text(8).flatMap { (try? JSONParser.parse($0))?.arrayValue?.compactMap(\.stringValue) }
        var delta = Delta(id: id, fromSnapshotID: statement.text(1) ?? "", toSnapshotID: statement.text(2) ?? "",
                          createdAt: statement.int64(3), checksumBefore: statement.text(4) ?? "",
                          checksumAfter: statement.text(5) ?? "", timezoneBefore: statement.text(6) ?? "",
                          timezoneAfter: statement.text(7) ?? "", mergedFrom: merged,
                          detection: Delta.Detection(rawValue: statement.text(9) ?? "") ?? .ran,
                          postRestoreSuppressed: statement.int64(10) != 0, types: [])
        let declared = Int(statement.int64(11))
        let types = try db.prepare("""
            SELECT type_identifier, transition, reason, count_before, count_after, count_delta, quality_before, quality_after,
                hash_before, hash_after, yearly, yearly_count_note
            FROM type_deltas WHERE delta_id = ? ORDER BY type_identifier
            """)
        types.bind(1, id)
        while try types.step() {
            let yearly: [YearlyDelta] = ((try? JSONParser.parse(types.text(10) ?? "[]"))?.arrayValue ?? []).compactMap { item in
                guard let values = item.arrayValue, values.count == 4, let year = values[0].intValue, let before = values[1].intValue,
                      let after = values[2].intValue, let change = values[3].intValue else { return nil }
                return YearlyDelta(year: year, before: Int64(before), after: Int64(after), delta: Int64(change))
            }
            delta.types.append(TypeDelta(
                typeIdentifier: types.text(0) ?? "", transition: Transition(rawValue: types.text(1) ?? "") ?? .unavailable,
                reason: DeltaReason(rawValue: types.text(2) ?? "") ?? .unknown, countBefore: types.optionalInt64(3),
                countAfter: types.optionalInt64(4), countDelta: types.int64(5),
                qualityBefore: types.text(6).flatMap(Quality.init(rawValue:)), qualityAfter: types.text(7).flatMap(Quality.init(rawValue:)),
                hashBefore: types.text(8), hashAfter: types.text(9), yearly: yearly, yearlyCountNote: types.text(11)))
        }
        delta.types.sort { $0.typeIdentifier.utf8.lexicographicallyPrecedes($1.typeIdentifier.utf8) }
        return (delta, declared)
    }

    /// Removes a delta, its type deltas and its anomalies; returns the anomalies' ids.
    @discardableResult
    func deleteDelta(id: String) throws -> [String] {
        let anomalyIDs = try anomalies(deltaID: id).map(\.id)
        for sql in ["DELETE FROM anomalies WHERE delta_id = ?", "DELETE FROM type_deltas WHERE delta_id = ?",
                    "DELETE FROM deltas WHERE id = ?"] {
            let statement = try db.prepare(sql)
            statement.bind(1, id)
            try statement.step()
        }
        return anomalyIDs
    }

    // MARK: - Anomalies

    /// Writes anomaly records.
    func saveAnomalies(_ anomalies: [AnomalyRecord]) throws {
        let row = try db.prepare("""
            INSERT INTO anomalies (id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
                count_before, count_after, count_delta, change_percent, types, message)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for anomaly in anomalies {
            row.bind(1, anomaly.id)
            row.bind(2, anomaly.deltaID)
            row.bind(3, anomaly.snapshotID)
            row.bind(4, anomaly.previousSnapshotID)
            row.bind(5, anomaly.detectedAt)
            row.bind(6, anomaly.kind.rawValue)
            row.bind(7, anomaly.severity.rawValue)
            row.bind(8, anomaly.typeIdentifier)
            row.bind(9, anomaly.countBefore)
            row.bind(10, anomaly.countAfter)
            row.bind(11, anomaly.countDelta)
            row.bind(12, anomaly.changePercent)
            row.bind(13, JSONValue.array(anomaly.types.map { .string($0) }).jsonText)
            row.bind(14, anomaly.message)
            try row.step()
            row.reset()
        }
    }

    /// The anomalies found in a delta.
    func anomalies(deltaID: String) throws -> [AnomalyRecord] {
        let statement = try db.prepare("""
            SELECT id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
                count_before, count_after, count_delta, change_percent, types, message
            FROM anomalies WHERE delta_id = ? ORDER BY rowid
            """)
        statement.bind(1, deltaID)
        var result: [AnomalyRecord] = []
        while try statement.step() {
            let types = ((try? JSONParser.parse(statement.text(12) ?? "[]"))?.arrayValue ?? []).compactMap(\.stringValue)
            result.append(AnomalyRecord.stored(
                id: statement.text(0) ?? "", deltaID: statement.text(1) ?? "", snapshotID: statement.text(2) ?? "",
                previousSnapshotID: statement.text(3) ?? "", detectedAt: statement.int64(4),
                kind: AnomalyKind(rawValue: statement.text(5) ?? "") ?? .deletion,
                severity: Severity(rawValue: statement.text(6) ?? "") ?? .warning, typeIdentifier: statement.text(7),
                countBefore: statement.optionalInt64(8), countAfter: statement.optionalInt64(9),
                countDelta: statement.optionalInt64(10), changePercent: statement.optionalDouble(11), types: types,
                message: statement.text(13) ?? ""))
        }
        return result
    }

    // MARK: - Operation log

    /// One entry of the operation log.
    public struct Operation: Sendable {
        /// Its number.
        public var id: Int64
        /// When.
        public var at: Int64
        /// `take`, `delete`, `samples`, `disappeared`, `verify`.
        public var operation: String
        /// The snapshots it concerned.
        public var snapshotIDs: [String]
        /// What it did, as a JSON object.
        public var detail: JSONObject
        /// Set on entries recorded after something went wrong with the log itself.
        public var critical: Bool
    }

    /// Appends an entry; returns its id.
    func appendLog(_ operation: String, snapshotIDs: [String], detail: JSONObject, at time: Int64, critical: Bool = false) throws -> Int64 {
        let statement = try db.prepare("INSERT INTO operations (at, operation, snapshot_ids, detail, critical) VALUES (?, ?, ?, ?, ?)")
        statement.bind(1, time)
        statement.bind(2, operation)
        statement.bind(3, JSONValue.array(snapshotIDs.map { .string($0) }).jsonText)
        statement.bind(4, JSONValue.object(detail).jsonText)
        statement.bind(5, Int64(critical ? 1 : 0))
        try statement.step()
        return db.lastInsertRowID
    }

    /// Whether a log entry is there.
    func logEntryExists(_ id: Int64) throws -> Bool {
        let statement = try db.prepare("SELECT 1 FROM operations WHERE id = ?")
        statement.bind(1, id)
        return try statement.step()
    }

    /// The log, oldest first.
    public func operations() throws -> [Operation] {
        let statement = try db.prepare("SELECT id, at, operation, snapshot_ids, detail, critical FROM operations ORDER BY id")
        var result: [Operation] = []
        while try statement.step() {
            let ids = ((try? JSONParser.parse(statement.text(3) ?? "[]"))?.arrayValue ?? []).compactMap(\.stringValue)
            let detail = (try? JSONParser.parse(statement.text(4) ?? "{}"))?.objectValue ?? JSONObject()
            result.append(Operation(id: statement.int64(0), at: statement.int64(1), operation: statement.text(2) ?? "",
                                    snapshotIDs: ids, detail: detail, critical: statement.int64(5) != 0))
        }
        return result
    }

    /// Writes an entry, then reads it back after the commit; a missing entry is written
    /// again and reported (HealthProbe's post-save verification of the log).
    /// `body` runs inside the transaction with the entry's id, so the log entry and the change
    /// it records commit together.
    func withLoggedChange<T>(_ operation: String, snapshotIDs: [String], at time: Int64, diagnostics: Diagnostics,
                             _ body: () throws -> (T, JSONObject)) throws -> T {
        var entry: (id: Int64, ids: [String], detail: JSONObject)?
        let result: T = try transaction {
            let (value, detail) = try body()
            let id = try appendLog(operation, snapshotIDs: snapshotIDs, detail: detail, at: time)
            entry = (id, snapshotIDs, detail)
            return value
        }
        if let entry { try verifyLogEntry(entry.id, operation: operation, snapshotIDs: entry.ids, detail: entry.detail, at: time, diagnostics: diagnostics) }
        return result
    }

    /// The post-save check: re-reads the entry and re-inserts it when it is missing.
    func verifyLogEntry(_ id: Int64, operation: String, snapshotIDs: [String], detail: JSONObject, at time: Int64,
                        diagnostics: Diagnostics) throws {
        guard try !logEntryExists(id) else { return }
        var recovered = detail
        recovered["recovered_entry"] = .integer(Int(id))
        let newID = try transaction {
            try appendLog(operation, snapshotIDs: snapshotIDs, detail: recovered, at: time, critical: true)
        }
        if try logEntryExists(newID) {
            diagnostics.error("critical: operation log entry \(id) (\(operation)) was missing after it was saved; written again as entry \(newID)")
        } else {
            diagnostics.error("critical: operation log entry \(id) (\(operation)) was missing after it was saved, and writing it again failed")
        }
    }
}

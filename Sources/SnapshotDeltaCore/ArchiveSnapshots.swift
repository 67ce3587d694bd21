import Foundation
import SQLiteStore
import VitalsKit

/// The chain's snapshots in the archive: their rows, type counts and yearly counts, and how a
/// reference (`latest`, a number, an id or its prefix) finds one.
extension Archive {
    static let snapshotColumns = """
        seq, id, created_at, trigger, quality, checksum, type_set_hash, registry, timezone, export_version, export_date,
        source, previous_snapshot_id, is_chain_start, is_post_restore, is_post_restore_inferred, is_post_restore_forwarded,
        post_restore_suppressed_delta_id, device_id, recovered_device_id, samples_archived, record_count
        """

    /// How many snapshots the archive holds.
    func snapshotCount() throws -> Int { Int(try db.scalarInt("SELECT count(*) FROM snapshots") ?? 0) }

    /// Reserves the next snapshot number with a placeholder row (quality `loading`); the
    /// transaction that holds it either fills it in or rolls it back.
    func insertPlaceholder(id: String, createdAt: Int64, deviceID: String, source: String) throws -> Int64 {
        let statement = try db.prepare(
            """
            INSERT INTO snapshots (id, created_at, trigger, quality, checksum, type_set_hash, timezone, source,
                is_chain_start, is_post_restore, is_post_restore_inferred, is_post_restore_forwarded, device_id,
                recovered_device_id, samples_archived, record_count)
            VALUES (?, ?, '', 'loading', '', '', '', ?, 0, 0, 0, 0, ?, 0, 0, 0)
            """)
        statement.bind(id, createdAt, source, deviceID)
        try statement.step()
        return db.lastInsertRowID
    }

    /// Fills in a snapshot (its placeholder row) and writes its type and yearly counts.
    func saveSnapshot(_ snapshot: Snapshot) throws {
        let update = try db.prepare(
            """
            UPDATE snapshots SET created_at = ?, trigger = ?, quality = ?, checksum = ?, type_set_hash = ?, registry = ?,
                timezone = ?, export_version = ?, export_date = ?, source = ?, previous_snapshot_id = ?, is_chain_start = ?,
                is_post_restore = ?, is_post_restore_inferred = ?, is_post_restore_forwarded = ?,
                post_restore_suppressed_delta_id = ?, device_id = ?, recovered_device_id = ?, samples_archived = ?,
                record_count = ?
            WHERE seq = ?
            """)
        update.bind(
            snapshot.createdAt, snapshot.trigger, snapshot.quality.rawValue, snapshot.checksum, snapshot.typeSetHash,
            snapshot.registry.map { JSONValue.array($0.map { .string($0) }).jsonText }, snapshot.timezone, snapshot.exportVersion,
            snapshot.exportDate, snapshot.source, snapshot.previousSnapshotID, snapshot.isChainStart, snapshot.isPostRestore,
            snapshot.isPostRestoreInferred, snapshot.isPostRestoreForwarded, snapshot.postRestoreSuppressedDeltaID, snapshot.deviceID,
            snapshot.recoveredDeviceID, snapshot.samplesArchived, snapshot.recordCount, snapshot.seq)
        try update.step()
        let typeRow = try db.prepare(
            """
            INSERT INTO type_counts (snapshot_seq, type_identifier, count, earliest, latest, quality, type_hash, is_unsupported)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let yearRow = try db.prepare(
            "INSERT INTO yearly_counts (snapshot_seq, type_identifier, year, count, is_approximate) VALUES (?, ?, ?, ?, ?)")
        for type in snapshot.types {
            typeRow.bind(
                snapshot.seq, type.typeIdentifier, type.count, type.earliest, type.latest, type.quality.rawValue, type.typeHash,
                type.isUnsupported)
            try typeRow.step()
            typeRow.reset()
            for year in type.yearly {
                yearRow.bind(snapshot.seq, type.typeIdentifier, year.year, year.count, year.isApproximate)
                try yearRow.step()
                yearRow.reset()
            }
        }
    }

    /// Records that a snapshot's post-restore token was used by `deltaID` (nil re-arms it).
    func setSuppressionToken(snapshotID: String, deltaID: String?) throws {
        let statement = try db.prepare("UPDATE snapshots SET post_restore_suppressed_delta_id = ? WHERE id = ?")
        statement.bind(deltaID, snapshotID)
        try statement.step()
    }

    /// Every finished snapshot, oldest first; with `types`, their type and yearly counts too.
    func snapshots(types: Bool) throws -> [Snapshot] {
        try loadSnapshots(where: "quality <> 'loading'", bind: { _ in }, types: types)
    }

    /// The snapshot with this number.
    func snapshot(seq: Int64) throws -> Snapshot? {
        try loadSnapshots(where: "seq = ? AND quality <> 'loading'", bind: { $0.bind(seq) }, types: true).first
    }

    /// The snapshot with this id.
    func snapshot(id: String) throws -> Snapshot? {
        try loadSnapshots(where: "id = ? AND quality <> 'loading'", bind: { $0.bind(id) }, types: true).first
    }

    /// The newest finished snapshot (the chain's head).
    func latestSnapshot() throws -> Snapshot? {
        guard let seq = try db.scalarInt("SELECT max(seq) FROM snapshots WHERE quality <> 'loading'") else { return nil }
        return try snapshot(seq: seq)
    }

    /// The snapshot whose previous is `id` (the next in the chain), if any.
    func successor(of id: String) throws -> Snapshot? {
        try loadSnapshots(where: "previous_snapshot_id = ? AND quality <> 'loading'", bind: { $0.bind(id) }, types: true).first
    }

    /// Finds a snapshot by id, unique id prefix (4 characters or more), number, or `latest`.
    ///
    /// Digits only can be a number and an id prefix at once (ids are hexadecimal): when both
    /// readings find a snapshot and they differ, the reference is ambiguous and both are named.
    func resolve(_ reference: String) throws -> Snapshot {
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
            throw ToolError(
                "'\(reference)' is both snapshot number \(numbered.seq) (id \(numbered.id)) and the start of "
                    + "snapshot \(prefixed.seq)'s id \(prefixed.id); give the full id of the one you mean")
        case (let numbered?, _):
            return numbered
        case (nil, let prefixed?):
            return prefixed
        case (nil, nil):
            if let number, number > 0 { throw ToolError("no snapshot number \(number) in \(path), and no id starts with '\(reference)'") }
            if reference.count < 4 {
                throw ToolError(
                    "no snapshot '\(reference)' in \(path) (name one by id, by an id prefix of 4 characters or more, by number, or latest)")
            }
            throw ToolError("no snapshot '\(reference)' in \(path)")
        }
    }

    /// The finished snapshots whose id starts with `prefix` (at most two: enough to tell one from many).
    private func snapshots(idPrefix prefix: String) throws -> [Snapshot] {
        let statement = try db.prepare("SELECT id FROM snapshots WHERE substr(id, 1, ?) = ? AND quality <> 'loading' LIMIT 2")
        statement.bind(Int64(prefix.utf8.count), prefix)
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
            result.append(
                Snapshot(
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
        let years = try db.prepare(
            "SELECT type_identifier, year, count, is_approximate FROM yearly_counts WHERE snapshot_seq = ? ORDER BY type_identifier, year")
        years.bind(seq)
        var yearly: [String: [YearlyCount]] = [:]
        while try years.step() {
            yearly[years.text(0) ?? "", default: []].append(
                YearlyCount(year: Int(years.int64(1)), count: years.int64(2), isApproximate: years.int64(3) != 0))
        }
        let statement = try db.prepare(
            """
            SELECT type_identifier, count, earliest, latest, quality, type_hash, is_unsupported FROM type_counts
            WHERE snapshot_seq = ? ORDER BY type_identifier
            """)
        statement.bind(seq)
        var result: [(TypeCount, String)] = []
        while try statement.step() {
            let identifier = statement.text(0) ?? ""
            let type = TypeCount(
                typeIdentifier: identifier, count: statement.int64(1), earliest: statement.optionalInt64(2),
                latest: statement.optionalInt64(3), quality: Quality(rawValue: statement.text(4) ?? "") ?? .failed,
                isUnsupported: statement.int64(6) != 0, yearly: yearly[identifier] ?? [])
            result.append((type, statement.text(5) ?? ""))
        }
        return result.sorted { $0.0.typeIdentifier.utf8.lexicographicallyPrecedes($1.0.typeIdentifier.utf8) }
    }

    /// The ids of snapshots that name the same previous snapshot (a fork), if any.
    func forks() throws -> [(previous: String, snapshots: [String])] {
        let statement = try db.prepare(
            """
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
        for sql in [
            "DELETE FROM yearly_counts WHERE snapshot_seq = ?", "DELETE FROM type_counts WHERE snapshot_seq = ?",
            "DELETE FROM snapshots WHERE seq = ?",
        ] {
            let statement = try db.prepare(sql)
            statement.bind(seq)
            try statement.step()
        }
    }

    /// Makes a snapshot follow another (nil: a chain start).
    func relink(snapshotID: String, previous: String?) throws {
        let statement = try db.prepare("UPDATE snapshots SET previous_snapshot_id = ?, is_chain_start = ? WHERE id = ?")
        statement.bind(previous, previous == nil, snapshotID)
        try statement.step()
    }
}

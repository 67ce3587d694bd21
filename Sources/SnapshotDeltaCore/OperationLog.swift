import Foundation
import SQLiteStore
import VitalsKit

/// The archive's append-only operation log, and HealthProbe's check that an entry is there after it was saved.
extension Archive {
    /// One entry of the operation log.
    struct Operation: Sendable {
        /// Its number.
        var id: Int64
        /// When.
        var at: Int64
        /// `take`, `delete`, `samples`, `disappeared`, `verify`.
        var operation: String
        /// The snapshots it concerned.
        var snapshotIDs: [String]
        /// What it did, as a JSON object.
        var detail: JSONObject
        /// Set on entries recorded after something went wrong with the log itself.
        var critical: Bool
    }

    /// Appends an entry; returns its id.
    func appendLog(_ operation: String, snapshotIDs: [String], detail: JSONObject, at time: Int64, critical: Bool = false) throws -> Int64 {
        let statement = try db.prepare("INSERT INTO operations (at, operation, snapshot_ids, detail, critical) VALUES (?, ?, ?, ?, ?)")
        statement.bind(
            time, operation, JSONValue.array(snapshotIDs.map { .string($0) }).jsonText, JSONValue.object(detail).jsonText, critical)
        try statement.step()
        return db.lastInsertRowID
    }

    /// Whether a log entry is there.
    func logEntryExists(_ id: Int64) throws -> Bool {
        let statement = try db.prepare("SELECT 1 FROM operations WHERE id = ?")
        statement.bind(id)
        return try statement.step()
    }

    /// The log, oldest first.
    func operations() throws -> [Operation] {
        let statement = try db.prepare("SELECT id, at, operation, snapshot_ids, detail, critical FROM operations ORDER BY id")
        var result: [Operation] = []
        while try statement.step() {
            let ids = ((try? JSONParser.parse(statement.text(3) ?? "[]"))?.arrayValue ?? []).compactMap(\.stringValue)
            let detail = (try? JSONParser.parse(statement.text(4) ?? "{}"))?.objectValue ?? JSONObject()
            result.append(
                Operation(
                    id: statement.int64(0), at: statement.int64(1), operation: statement.text(2) ?? "",
                    snapshotIDs: ids, detail: detail, critical: statement.int64(5) != 0))
        }
        return result
    }

    /// Writes an entry, then reads it back after the commit; a missing entry is written
    /// again and reported (HealthProbe's post-save verification of the log).
    /// `body` runs inside the transaction with the entry's id, so the log entry and the change
    /// it records commit together.
    func withLoggedChange<T>(
        _ operation: String, snapshotIDs: [String], at time: Int64, diagnostics: Diagnostics,
        _ body: () throws -> (T, JSONObject)
    ) throws -> T {
        var entry: (id: Int64, ids: [String], detail: JSONObject)?
        let result: T = try transaction {
            let (value, detail) = try body()
            let id = try appendLog(operation, snapshotIDs: snapshotIDs, detail: detail, at: time)
            entry = (id, snapshotIDs, detail)
            return value
        }
        if let entry {
            try verifyLogEntry(
                entry.id, operation: operation, snapshotIDs: entry.ids, detail: entry.detail, at: time, diagnostics: diagnostics)
        }
        return result
    }

    /// The post-save check: re-reads the entry and re-inserts it when it is missing.
    func verifyLogEntry(
        _ id: Int64, operation: String, snapshotIDs: [String], detail: JSONObject, at time: Int64,
        diagnostics: Diagnostics
    ) throws {
        guard try !logEntryExists(id) else { return }
        var recovered = detail
        recovered["recovered_entry"] = .integer(Int(id))
        let newID = try transaction {
            try appendLog(operation, snapshotIDs: snapshotIDs, detail: recovered, at: time, critical: true)
        }
        if try logEntryExists(newID) {
            diagnostics.error(
                "critical: operation log entry \(id) (\(operation)) was missing after it was saved; written again as entry \(newID)")
        } else {
            diagnostics.error(
                "critical: operation log entry \(id) (\(operation)) was missing after it was saved, and writing it again failed")
        }
    }
}

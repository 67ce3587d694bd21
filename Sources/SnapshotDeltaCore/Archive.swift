import Foundation
import SQLiteStore
import VitalsKit

/// The archive: one SQLite file in WAL mode holding the chain (snapshots, type counts,
/// yearly counts, deltas, anomalies), the append-only operation log, and the samples
/// themselves (see `SampleArchiveWriter`).
///
/// Every change is one `BEGIN IMMEDIATE` transaction; the schema version is kept in
/// `PRAGMA user_version`, older files are migrated forward and newer ones refused.
final class Archive {
    let db: SQLiteConnection
    /// The file.
    let path: String

    /// Opens the archive at `path`; with `create`, a missing file is created.
    init(path: String, create: Bool) throws {
        self.path = path
        if !create, access(path, F_OK) != 0 {
            throw ToolError("no archive at \(path) (take a snapshot first, or name another with --db or VITALS_HEALTH_DB)")
        }
        do {
            db = try SQLiteConnection.openVersioned(
                path: path, create: create, schema: Archive.versionedSchema,
                pragmas: [
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
        statement.bind(key)
        return try statement.step() ? statement.text(0) : nil
    }

    /// Sets a meta value.
    func setMeta(_ key: String, _ value: String) throws {
        let statement = try db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        statement.bind(key, value)
        try statement.step()
    }
}

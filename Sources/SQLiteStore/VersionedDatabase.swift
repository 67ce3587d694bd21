import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A database schema that changes over time: its migrations in order, entry `n` taking a file
/// from version `n` (in `PRAGMA user_version`) to `n + 1`. Version 0 is a file with no tables.
public struct VersionedSchema: Sendable {
    /// The tool that owns such files, for messages (`store-samples`).
    public let tool: String
    /// What such a file is called, for messages (`store-samples database`).
    public let kind: String
    /// The migrations, oldest first.
    public let migrations: [String]

    /// The version this build writes.
    public var currentVersion: Int64 { Int64(migrations.count) }

    /// Creates a schema.
    public init(tool: String, kind: String, migrations: [String]) {
        self.tool = tool
        self.kind = kind
        self.migrations = migrations
    }
}

/// A file the code cannot use whatever SQLite says: newer than it knows, or someone else's.
public struct SQLiteSchemaError: Error, CustomStringConvertible {
    /// In words, naming the file and what to do.
    public let description: String
}

extension SQLiteConnection {
    /// Opens the database at `path` the one way every tool does: a busy timeout, the version
    /// check, the `pragmas` (each a full statement), then the migrations it lacks, in order, in
    /// one write transaction. A file created here gets mode 0600.
    ///
    /// - Throws: `SQLiteSchemaError` for a file whose version is newer than `schema` knows, or
    ///   a version-0 file that already holds tables (another program's); `SQLiteError` for
    ///   anything SQLite refused.
    public static func openVersioned(
        path: String, create: Bool, schema: VersionedSchema, pragmas: [String],
        busyTimeoutMs: Int32 = 10_000
    ) throws -> SQLiteConnection {
        let existed = access(path, F_OK) == 0
        let db = try SQLiteConnection(path: path, create: create)
        db.setBusyTimeout(busyTimeoutMs)
        let version = try db.scalarInt("PRAGMA user_version") ?? 0
        if version > schema.currentVersion {
            throw SQLiteSchemaError(
                description: "\(path) has schema version \(version); this \(schema.tool) knows versions up to "
                    + "\(schema.currentVersion) (use a newer vitals)")
        }
        if version == 0, existed, try db.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0 > 0 {
            throw SQLiteSchemaError(description: "\(path) is a SQLite database but not a \(schema.kind)")
        }
        for pragma in pragmas { try db.execute(pragma, context: pragma) }
        if version < schema.currentVersion {
            try db.migrate(schema.migrations)
            if !existed { chmod(path, 0o600) }
        }
        return db
    }
}

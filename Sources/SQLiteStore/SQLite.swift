import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (SQLite binds and reads text and blobs through raw pointers): kept.

/// A SQLite failure: the library's code and words, and what was being done.
public struct SQLiteError: Error, CustomStringConvertible {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, ...).
    public let code: Int32
    /// SQLite's message.
    public let message: String
    /// What the caller was doing.
    public let context: String

    /// `context: message`.
    public var description: String { "\(context): \(message)" }

    /// The database (or its disk) is full.
    public var isFull: Bool { code == SQLITE_FULL || (code == SQLITE_IOERR && message.contains("disk")) }
    /// Another connection holds a lock.
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }

    /// What a user can act on, for a failure on the database at `path`; `afterFull` says
    /// what a full disk left behind (each tool knows what it had not yet done).
    public func explained(path: String, afterFull: String) -> String {
        switch code {
        case SQLITE_NOTADB: return "\(path) is not a SQLite database (file is not a database)"
        case SQLITE_CANTOPEN: return "cannot open \(path): the directory does not exist or is not writable"
        case SQLITE_READONLY: return "cannot write \(path): it is read-only (\(message))"
        case SQLITE_CORRUPT: return "\(path) is corrupt: \(message)"
        default:
            if isFull { return "cannot write \(path): the disk or file size limit is full (\(message)); \(afterFull)" }
            if isBusy { return "\(path) stayed locked by another writer: \(message)" }
            return "\(path): \(self)"
        }
    }
}

/// One connection to a SQLite database, owned by one thread (the only importer of CSQLite).
public final class SQLiteConnection {
    let handle: OpaquePointer
    /// The database path.
    public let path: String

    /// Opens (or creates, unless `readOnly`) the database at `path`.
    public init(path: String, readOnly: Bool = false, create: Bool = true) throws {
        var db: OpaquePointer?
        var flags = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        flags |= SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            if let db { sqlite3_close(db) }
            throw SQLiteError(code: code & 0xFF, message: message, context: "cannot open \(path)")
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 0)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Waits up to `milliseconds` for another connection's lock before failing with SQLITE_BUSY.
    public func setBusyTimeout(_ milliseconds: Int32) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs one or more statements with no results.
    public func execute(_ sql: String, context: String? = nil) throws {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        if code != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(error)
            throw SQLiteError(code: code & 0xFF, message: message, context: context ?? "SQL")
        }
    }

    /// Prepares a statement for repeated use.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            throw SQLiteError(code: code & 0xFF, message: String(cString: sqlite3_errmsg(handle)), context: "prepare")
        }
        return SQLiteStatement(statement, connection: self)
    }

    /// Statements prepared once and kept for the connection's life (`withCached`).
    private var statementCache: [String: SQLiteStatement] = [:]

    /// Runs `body` with the statement for `sql`, prepared the first time and reused after
    /// (a view that asks the same question of 1,000 monitors prepares it once), and resets it
    /// afterwards so no read stays open. Not for a statement already in use higher up the stack.
    public func withCached<T>(_ sql: String, _ body: (SQLiteStatement) throws -> T) throws -> T {
        let statement: SQLiteStatement
        if let kept = statementCache[sql] {
            statement = kept
        } else {
            statement = try prepare(sql)
            statementCache[sql] = statement
        }
        defer { statement.reset() }
        return try body(statement)
    }

    /// The single integer a query returns (nil for no row or NULL).
    public func scalarInt(_ sql: String) throws -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.isNull(0) ? nil : statement.int64(0)
    }

    /// The single text a query returns.
    public func scalarText(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the last insert.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open.
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Starts a write transaction with `BEGIN IMMEDIATE`; a lock still held after the busy
    /// timeout is waited for a few times more before the error is thrown.
    public func beginImmediate(attempts: Int = 5) throws {
        var attempt = 0
        while true {
            do {
                try execute("BEGIN IMMEDIATE", context: "begin")
                return
            } catch let error as SQLiteError where error.isBusy && attempt < attempts {
                attempt += 1
                usleep(UInt32(20_000 * attempt))
            }
        }
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction: committed when it returns, rolled
    /// back when it throws.
    public func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try beginImmediate()
        do {
            let result = try body()
            try execute("COMMIT", context: "commit")
            return result
        } catch {
            if inTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Brings the schema version (`PRAGMA user_version`) up to `migrations.count` in one write
    /// transaction, entry `n` taking a file from version `n` to `n + 1`. The version is read
    /// again under the lock: another process may have migrated while this one waited.
    public func migrate(_ migrations: [String]) throws {
        try writeTransaction {
            var current = try scalarInt("PRAGMA user_version") ?? 0
            while current < Int64(migrations.count) {
                try execute(migrations[Int(current)], context: "migrate \(path) to version \(current + 1)")
                current += 1
                try execute("PRAGMA user_version = \(current)")
            }
        }
    }

    func error(_ code: Int32, _ context: String) -> SQLiteError {
        SQLiteError(code: code & 0xFF, message: String(cString: sqlite3_errmsg(handle)), context: context)
    }
}

/// A prepared statement; bind, step, read columns, reset.
public final class SQLiteStatement {
    @usableFromInline let handle: OpaquePointer
    private unowned let connection: SQLiteConnection

    @usableFromInline nonisolated(unsafe) static let emptyText: UnsafePointer<CChar> = {
        let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return UnsafePointer(pointer)
    }()

    init(_ handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// The first bind that failed since the last step or reset: `step` throws it, so no
    /// statement runs with a parameter missing.
    private var bindFailure: SQLiteError?

    // The binds are inlinable down to SQLite's C calls: `bind(_:...)` (SQLiteBinds.swift) is on
    // the ingest's path, 13 values a sample.
    @inlinable
    func check(_ code: Int32, _ index: Int32) {
        if code != SQLITE_OK { recordFailure(code, index) }
    }

    @usableFromInline
    func recordFailure(_ code: Int32, _ index: Int32) {
        if bindFailure == nil { bindFailure = connection.error(code, "bind parameter \(index)") }
    }

    /// Binds NULL (1-based index).
    @inlinable func bindNull(_ index: Int32) { check(sqlite3_bind_null(handle, index), index) }
    /// Binds an integer (1-based index).
    @inlinable func bind(_ index: Int32, _ value: Int64) { check(sqlite3_bind_int64(handle, index, value), index) }
    /// Binds an integer or NULL.
    @inlinable func bind(_ index: Int32, _ value: Int64?) {
        check(value.map { sqlite3_bind_int64(handle, index, $0) } ?? sqlite3_bind_null(handle, index), index)
    }
    /// Binds a double or NULL.
    @inlinable func bind(_ index: Int32, _ value: Double?) {
        check(value.map { sqlite3_bind_double(handle, index, $0) } ?? sqlite3_bind_null(handle, index), index)
    }
    /// Binds text (copied) or NULL.
    @inlinable func bind(_ index: Int32, _ value: String?) {
        guard let value else {
            check(sqlite3_bind_null(handle, index), index)
            return
        }
        var copy = value
        copy.withUTF8 { bind(index, bytes: $0) }
    }
    /// Binds UTF-8 bytes as text (copied).
    @inlinable func bind(_ index: Int32, bytes: UnsafeBufferPointer<UInt8>) {
        let code = bytes.withMemoryRebound(to: CChar.self) { chars in
            csqlite_bind_text_transient(handle, index, chars.baseAddress ?? SQLiteStatement.emptyText, Int32(bytes.count))
        }
        check(code, index)
    }

    /// Binds `value` to the parameter after `index`.
    @inlinable
    func bindNext<Value: SQLiteBindable>(_ value: Value, _ index: inout Int32) {
        index += 1
        value.bind(to: self, at: index)
    }

    /// As `bind(_:)`, for a statement whose first parameters are a list known only when it runs
    /// (the values of an `IN (?, ?, ...)`): `list` goes to parameters 1 to n, `rest` after them.
    @inlinable
    public func bind<Element: SQLiteBindable, each Value: SQLiteBindable>(list: [Element], _ rest: repeat each Value) {
        var index: Int32 = 0
        for value in list {
            index += 1
            value.bind(to: self, at: index)
        }
        repeat bindNext(each rest, &index)
        expectParameters(index)
    }

    /// Records a failure unless the statement has `count` parameters.
    public func expectParameters(_ count: Int32) {
        let wanted = sqlite3_bind_parameter_count(handle)
        if count != wanted && bindFailure == nil {
            bindFailure = SQLiteError(
                code: SQLITE_RANGE, message: "\(count) values bound to a statement of \(wanted) parameters",
                context: "bind")
        }
    }

    /// Steps once: true when a row is available, false when done.
    @discardableResult
    public func step() throws -> Bool {
        if let failure = bindFailure {
            bindFailure = nil
            throw failure
        }
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        let error = connection.error(code, "step")
        sqlite3_reset(handle)
        throw error
    }

    /// Resets for another run and clears bindings.
    public func reset() {
        bindFailure = nil
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Whether column `index` (0-based) is NULL.
    public func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }
    /// Column as an integer.
    public func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
    /// Column as an integer, nil for NULL.
    public func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }
    /// Column as a double, nil for NULL.
    public func optionalDouble(_ index: Int32) -> Double? { isNull(index) ? nil : sqlite3_column_double(handle, index) }
    /// Column as text, nil for NULL.
    public func text(_ index: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, index) else { return nil }
        return String(cString: pointer)
    }
    /// Column as raw UTF-8 bytes (valid until the next step), empty for NULL.
    public func textBytes(_ index: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let pointer = sqlite3_column_text(handle, index) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, index)))
    }
}

/// A value `SQLiteStatement.bind(_:)` can bind: integers, doubles, text (a `String`, or UTF-8
/// bytes), a flag (as 0 or 1), or an optional of one of them (nil binds NULL).
public protocol SQLiteBindable {
    /// Binds the value to parameter `index` (1-based) of `statement`.
    func bind(to statement: SQLiteStatement, at index: Int32)
    /// Binds `value`, or NULL. (Optional's conformance calls this on its wrapped type, so each
    /// type binds its optionals with its own code: the calls of a parameter pack go through
    /// witness tables, and Optional's generic code copied every value through its metadata.)
    static func bind(optional value: Self?, to statement: SQLiteStatement, at index: Int32)
}

extension SQLiteBindable {
    /// Binds `value`, or NULL.
    @inlinable
    public static func bind(optional value: Self?, to statement: SQLiteStatement, at index: Int32) {
        if let value { value.bind(to: statement, at: index) } else { statement.bindNull(index) }
    }
}

extension Int64: SQLiteBindable {
    /// Binds the integer.
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, self) }
}

extension Int: SQLiteBindable {
    /// Binds the integer.
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, Int64(self)) }
}

extension Double: SQLiteBindable {
    /// Binds the double.
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, Optional(self)) }
}

extension Bool: SQLiteBindable {
    /// Binds 1 for true, 0 for false.
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, Int64(self ? 1 : 0)) }
}

extension String: SQLiteBindable {
    /// Binds the text (copied).
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, Optional(self)) }
}

extension UnsafeBufferPointer: SQLiteBindable where Element == UInt8 {
    /// Binds the UTF-8 bytes as text (copied).
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) { statement.bind(index, bytes: self) }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    /// Binds the value, or NULL.
    @inlinable public func bind(to statement: SQLiteStatement, at index: Int32) {
        Wrapped.bind(optional: self, to: statement, at: index)
    }
}

/// The SQLite library version, e.g. `3.40.1`.
public var sqliteVersion: String { String(cString: sqlite3_libversion()) }

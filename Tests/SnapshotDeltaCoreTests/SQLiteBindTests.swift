import Foundation
import SQLiteStore
import Testing

@Suite("SQLiteStore: binds are checked")
struct SQLiteBindTests {
    @Test("a bind that SQLite refuses (a parameter that does not exist) makes the step fail; nothing is inserted")
    func refusedBind() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (a INTEGER NOT NULL, b TEXT)")
        let insert = try db.prepare("INSERT INTO t (a, b) VALUES (?, ?)")
        insert.bind(1, Int64(1))
        insert.bind(3, "no such parameter")
        let error = try #require(throws: SQLiteError.self) { try insert.step() }
        #expect(error.context == "bind parameter 3")
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
        // The failure is reported once; a fresh set of binds runs.
        insert.reset()
        insert.bind(1, Int64(2))
        insert.bind(2, "two")
        #expect(try insert.step() == false)
        #expect(try db.scalarText("SELECT a || b FROM t") == "2two")
    }
}

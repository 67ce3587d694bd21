import Foundation
import SQLiteStore
import Testing

@Suite("SQLiteStore: binds by position, checked")
struct SQLiteBindTests {
    @Test("values bind to parameters 1, 2, ... in order, each by its type: integer, double, text, bytes, flag, NULL")
    func byPosition() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (a, b, c, d, e, f, g)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)")
        let bytes: [UInt8] = Array("zürich".utf8)
        let more = try bytes.withUnsafeBufferPointer { raw throws -> Bool in
            insert.bind(Int64(7), 2.5, "text", raw, true, nil as Int64?, 42)
            return try insert.step()
        }
        #expect(more == false)
        let row = try db.prepare("SELECT typeof(a), a, typeof(b), b, c, d, e, typeof(f), g FROM t")
        #expect(try row.step())
        #expect(row.text(0) == "integer" && row.int64(1) == 7)
        #expect(row.text(2) == "real" && row.optionalDouble(3) == 2.5)
        #expect(row.text(4) == "text" && row.text(5) == "zürich")
        #expect(row.int64(6) == 1, "true binds 1")
        #expect(row.text(7) == "null")
        #expect(row.int64(8) == 42)
    }

    @Test("too few or too many values make the step fail, naming both counts; nothing is inserted; a full set then runs")
    func countChecked() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        let insert = try db.prepare("INSERT INTO t (a, b) VALUES (?, ?)")
        insert.bind(Int64(1))
        let few = try #require(throws: SQLiteError.self) { try insert.step() }
        #expect(few.description == "bind: 1 values bound to a statement of 2 parameters")
        insert.reset()
        insert.bind(Int64(1), "one", "three")
        let many = try #require(throws: SQLiteError.self) { try insert.step() }
        #expect(many.context == "bind parameter 3", "SQLite refuses the third value itself")
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
        insert.reset()
        insert.bind(Int64(2), "two")
        #expect(try insert.step() == false)
        #expect(try db.scalarText("SELECT a || b FROM t") == "2two")
    }

    @Test("a list known only when the statement runs (an IN), then the rest, by position")
    func list() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (name TEXT, n INTEGER); INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3), ('d', 4)")
        let names = ["a", "c", "d"]
        let select = try db.prepare(
            "SELECT group_concat(name, '') FROM t WHERE name IN (\(names.map { _ in "?" }.joined(separator: ", "))) AND n < ?")
        select.bind(list: names, 4)
        #expect(try select.step())
        #expect(select.text(0) == "ac")
        select.reset()
        select.bind(list: names)
        #expect(throws: SQLiteError.self) { try select.step() }
    }
}

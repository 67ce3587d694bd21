import SQLiteStore
import VitalsKit

// Unsafe pointers here are C interop (a followed record is SQLite's column text, viewed in place): kept.

/// `follow` on SQLite: samples are numbered in the order their transactions committed, from a
/// number never given twice (`SQLiteSchema.storageOrder`), and each names its transaction's
/// `batch`; a pass reads the samples past the cursor's number in one statement (one snapshot:
/// whole transactions only), so nothing is late and nothing is read twice. A pass is run only
/// when `store_state.generation`, which every write moves, did move.
final class SQLiteFollowFeed: FollowFeed {
    private let store: SQLiteSampleStore
    private(set) var position: FollowPosition
    /// The number of the last sample read, as `position` holds it.
    private var afterID: Int64
    /// The generation the last pass saw (nil before the first).
    private var generation: Int64?

    /// A feed of `store` past `start`, else from its first sample (`fromStart`) or its last one.
    /// A cursor past every number the store ever gave is another store's: said, and the store
    /// is followed from its start.
    init(_ store: SQLiteSampleStore, start: FollowPosition?, fromStart: Bool, diagnostics: Diagnostics) throws {
        self.store = store
        let last = try store.translated {
            try store.db.withCached("SELECT last_sample_id FROM store_state") { try $0.step() ? $0.int64(0) : 0 }
        }
        switch start {
        case .sqlite(let afterID)?:
            if afterID > last {
                diagnostics.warning(
                    "the cursor is past sample \(last), the last this store ever numbered (it was saved for another store?): "
                        + "following \(store.db.path) from its start")
                self.afterID = 0
            } else {
                self.afterID = afterID
            }
        case .clickHouse?:
            throw ToolError("the cursor was saved for a ClickHouse store, not for the SQLite file \(store.db.path)")
        case nil:
            afterID = fromStart ? 0 : last
        }
        position = .sqlite(afterID: afterID)
    }

    func mayHaveNews(now: Int64) throws -> Bool {
        let current = try store.generation()
        defer { generation = current }
        return current == nil || current != generation
    }

    func pass(now: Int64, _ visit: (FollowEvent) throws -> Bool) throws -> Bool {
        let rows = try store.translated {
            try store.db.prepare("SELECT id, batch, monitor_id, record FROM samples WHERE id > ? ORDER BY id")
        }
        rows.bind(afterID)
        defer { rows.reset() }
        var open: (number: Int64, samples: Int, lastID: Int64)?
        var lastID = afterID
        /// Ends the batch under way; false when a stop was asked for.
        func end() throws -> Bool {
            guard let batch = open else { return true }
            open = nil
            afterID = batch.lastID
            position = .sqlite(afterID: afterID)
            return try visit(.batchEnd(number: UInt64(batch.number), samples: batch.samples))
        }
        while try store.translated({ try rows.step() }) {
            let id = rows.int64(0)
            let batch = rows.int64(1)
            lastID = id
            // Held samples and those stored before version 6 have batch 0: never followed.
            guard batch > 0 else { continue }
            if open?.number != batch {
                guard try end(), try visit(.batchStart(number: UInt64(batch))) else { return false }
                open = (batch, 0, id)
            }
            open!.samples += 1
            open!.lastID = id
            guard try visit(.sample(record: LineBytes(unsafeBuffer: rows.textBytes(3)), monitorID: rows.int64(2))) else { return false }
        }
        guard try end() else { return false }
        afterID = lastID
        position = .sqlite(afterID: afterID)
        return true
    }
}

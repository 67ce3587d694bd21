import SQLiteStore
import VitalsKit

// Unsafe pointers here are C interop (an exported record is SQLite's column text, viewed in place): kept.

/// Maintenance: retention at each commit, clearing samples, and exporting them.
extension SQLiteSampleStore {
    /// Keeps each touched monitor within the limits. Counts and oldest times are hints kept
    /// for the unit of work (loaded once per monitor); the deletes themselves are exact.
    /// Samples past the day limit go once they are an hour past it, so a busy monitor is
    /// trimmed about once an hour rather than on every batch.
    func applyRetention(_ touched: Set<Int64>, retention: Retention, now: Int64) throws {
        guard retention.perMonitor != nil || retention.days != nil else { return }
        for id in touched {
            var deletedAny = false
            var hint: (count: Int, oldest: Int64?)
            if let known = caches.retentionHints[id] {
                hint = known
            } else if retention.perMonitor != nil {
                hint = try db.withCached(
                    """
                    SELECT (SELECT count(*) FROM samples WHERE monitor_id = ?1 AND held = 0)
                        + (SELECT count(*) FROM samples INDEXED BY samples_held_by_agent WHERE monitor_id = ?1 AND held = 1)
                    """
                ) { statement in
                    statement.bind(id)
                    try statement.step()
                    return (Int(statement.int64(0)), try oldestAt(id))
                }
            } else {
                // Only the oldest sample matters (one step down the index); counting every sample
                // of the monitor made each API request cost more as its history grew.
                hint = (0, try oldestAt(id))
            }
            if let days = retention.days, let oldest = hint.oldest {
                let cutoff = now - Int64(days) * 86_400_000
                if oldest < cutoff - 3_600_000 {
                    let delete = try db.prepare("DELETE FROM samples WHERE monitor_id = ? AND at < ?")
                    delete.bind(id, cutoff)
                    try delete.step()
                    let deleted = db.changes
                    if deleted > 0 { try countDeletions() }
                    deletedAny = deletedAny || deleted > 0
                    hint.count -= deleted
                    hint.oldest = try oldestAt(id)
                }
            }
            if let keep = retention.perMonitor, hint.count > keep {
                let delete = try db.prepare(
                    """
                    DELETE FROM samples WHERE id IN (
                        SELECT id FROM samples WHERE monitor_id = ? ORDER BY at, id LIMIT ?)
                    """)
                delete.bind(id, hint.count - keep)
                try delete.step()
                let deleted = db.changes
                if deleted > 0 { try countDeletions() }
                deletedAny = deletedAny || deleted > 0
                hint.count -= deleted
                hint.oldest = try oldestAt(id)
            }
            if deletedAny { try forgetEmptyPlaces(monitorID: id) }
            caches.retentionHints[id] = hint
        }
    }

    /// Drops the places (of one monitor, or of all) whose newest sample is gone: samples go oldest
    /// first, so a place whose newest went has none left.
    func forgetEmptyPlaces(monitorID: Int64?) throws {
        let forget = try db.prepare(
            """
            DELETE FROM places WHERE (?1 IS NULL OR monitor_id = ?1) AND NOT EXISTS (
                SELECT 1 FROM samples s WHERE s.at = places.last_at AND s.monitor_id = places.monitor_id AND s.identity_agent = places.agent)
            """)
        forget.bind(monitorID)
        try forget.step()
        forgetKnownPlaces(of: monitorID)
    }

    /// The time of a monitor's oldest sample, counted or held. Asked in two parts, each of an
    /// index that has it: the monitor's index holds the counted samples only (held = 0), and
    /// asked as one, SQLite walked the identity index (time first) up to the monitor's first
    /// sample, every sample of every monitor before it. That was two thirds of the instructions
    /// of a fresh process storing a batch of 1,000 monitors into a store of 2,000 samples, and
    /// grew with the store.
    private func oldestAt(_ id: Int64) throws -> Int64? {
        try db.withCached(
            """
            SELECT min(at) FROM (
                SELECT min(at) AS at FROM samples WHERE monitor_id = ?1 AND held = 0
                UNION ALL SELECT min(at) FROM samples INDEXED BY samples_held_by_agent WHERE monitor_id = ?1 AND held = 1)
            """
        ) { statement in
            statement.bind(id)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
    }

    func clear(monitorID: Int64?, before: Int64?) throws -> Int {
        var deleted = 0
        do {
            try db.writeTransaction {
                let statement = try db.prepare("DELETE FROM samples WHERE (?1 IS NULL OR monitor_id = ?1) AND at < ?2")
                statement.bind(monitorID, before ?? Int64.max)
                try statement.step()
                deleted = db.changes
                if deleted > 0 {
                    try countDeletions()
                    try forgetEmptyPlaces(monitorID: monitorID)
                }
                try bumpGeneration()
            }
        } catch {
            throw translate(error)
        }
        caches.retentionHints.removeAll()
        return deleted
    }

    func export(from: Int64, until: Int64, monitorID: Int64?, _ visit: (LineBytes) throws -> Void) throws {
        let statement: SQLiteStatement
        if let monitorID {
            statement = try db.prepare(
                """
                SELECT record FROM samples INDEXED BY samples_by_monitor_time
                WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ? ORDER BY at, id
                """)
            statement.bind(monitorID, from, until)
        } else {
            statement = try db.prepare(
                """
                SELECT record FROM samples INDEXED BY samples_identity WHERE at >= ? AND at < ? AND held = 0 ORDER BY at, id
                """)
            statement.bind(from, until)
        }
        while try statement.step() { try visit(LineBytes(unsafeBuffer: statement.textBytes(0))) }
    }
}

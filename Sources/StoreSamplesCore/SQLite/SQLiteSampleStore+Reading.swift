import SQLiteStore
import VitalsKit

/// Reading: the monitors, agents and samples the views ask for, each from an index (no
/// answer is kept between calls: SQLite is asked every time).
extension SQLiteSampleStore {
    /// The columns of a monitor row (`monitorRecord` reads them).
    private static let monitorColumns = """
        SELECT m.id, m.monitor, m.first_seen, m.name, m.kind, m.target, m.agent, m.description, m.check_interval, m.config, m.enabled
        FROM monitors m
        """

    func monitors() throws -> [MonitorRecord] {
        let statement = try db.prepare(SQLiteSampleStore.monitorColumns + " ORDER BY m.id")
        var result: [MonitorRecord] = []
        while try statement.step() { result.append(monitorRecord(statement)) }
        return result
    }

    func monitor(matching key: String) throws -> MonitorRecord? {
        // A monitor id first, then an integer id: two lookups by index (one query with OR
        // scanned every monitor: 1 ms a request at 10,000 monitors).
        let byName = try db.withCached(SQLiteSampleStore.monitorColumns + " WHERE m.monitor = ?") { statement in
            statement.bind(key)
            return try statement.step() ? monitorRecord(statement) : nil
        }
        if let byName { return byName }
        guard !key.isEmpty, key.utf8.count <= 18, key.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let id = Int64(key),
            String(id) == key
        else { return nil }
        return try db.withCached(SQLiteSampleStore.monitorColumns + " WHERE m.id = ?") { statement in
            statement.bind(id)
            return try statement.step() ? monitorRecord(statement) : nil
        }
    }

    private func monitorRecord(_ row: SQLiteStatement) -> MonitorRecord {
        MonitorRecord(
            id: row.int64(0), monitor: row.text(1) ?? "", metadata: SQLiteSampleStore.metadata(row, from: 3), firstSeen: row.int64(2))
    }

    func places(monitorID: Int64) throws -> [StoredSample] {
        try db.withCached(
            """
            SELECT s.id, s.at, s.status, s.latency_ms, s.message, s.tls_expiry_days, s.identity_agent, s.reason
            FROM places p JOIN samples s INDEXED BY samples_identity ON s.at = p.last_at AND s.monitor_id = p.monitor_id AND s.identity_agent = p.agent
            WHERE p.monitor_id = ? AND s.held = 0 ORDER BY p.agent
            """
        ) { statement in
            statement.bind(monitorID)
            var result: [StoredSample] = []
            while try statement.step() { result.append(try storedSample(statement)) }
            return result
        }
    }

    /// A sample from the columns id, at, status, latency_ms, message, tls_expiry_days, identity_agent, reason.
    private func storedSample(_ row: SQLiteStatement) throws -> StoredSample {
        StoredSample(
            id: row.int64(0), at: row.int64(1), status: try SampleStatus(storeCode: row.int64(2)),
            latencyMs: row.optionalDouble(3), message: row.text(4), tlsExpiryDays: row.optionalInt64(5), place: row.text(6) ?? "",
            reason: row.text(7))
    }

    /// The status a read counts under `selection` (the consensus stored with a sample, NULL when
    /// it was the sample's own), and the condition that keeps one place's samples (its identity
    /// agent bound last).
    private static func terms(_ selection: SampleSelection) -> (status: String, place: String) {
        switch selection {
        case .consensus: return ("coalesce(consensus, status)", "")
        case .place: return ("status", " AND identity_agent = ?")
        }
    }

    /// Binds a window of a monitor's samples, and the selection's place when it names one.
    private static func bindWindow(
        _ statement: SQLiteStatement, _ monitorID: Int64, _ from: Int64, _ until: Int64, _ selection: SampleSelection
    ) {
        if case .place(let place) = selection {
            statement.bind(monitorID, from, until, place)
        } else {
            statement.bind(monitorID, from, until)
        }
    }

    func forEachSample(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, _ visit: (Int64, SampleStatus, Double?) throws -> Void
    ) throws {
        let terms = Self.terms(selection)
        let statement = try db.prepare(
            """
            SELECT at, \(terms.status), latency_ms FROM samples INDEXED BY samples_by_monitor_time
            WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?\(terms.place) ORDER BY at
            """)
        Self.bindWindow(statement, monitorID, from, until, selection)
        while try statement.step() {
            try visit(statement.int64(0), try SampleStatus(storeCode: statement.int64(1)), statement.optionalDouble(2))
        }
    }

    func page(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, offset: Int, limit: Int) throws -> [StoredSample] {
        let terms = Self.terms(selection)
        let statement = try db.prepare(
            """
            SELECT id, at, status, latency_ms, message, tls_expiry_days, identity_agent, reason FROM samples
            WHERE id IN (SELECT id FROM samples INDEXED BY samples_by_monitor_time
                         WHERE held = 0 AND monitor_id = ?1 AND at >= ?2 AND at < ?3\(terms.place.replacingOccurrences(of: "?", with: "?6"))
                         ORDER BY at DESC, id DESC LIMIT ?4 OFFSET ?5)
            ORDER BY at DESC, id DESC
            """)
        if case .place(let place) = selection {
            statement.bind(monitorID, from, until, limit, offset, place)
        } else {
            statement.bind(monitorID, from, until, limit, offset)
        }
        var result: [StoredSample] = []
        while try statement.step() { result.append(try storedSample(statement)) }
        return result
    }

    func totals(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, withSpeed: Bool) throws -> SampleTotals {
        // Checks, uptime and latency come from the covering index alone; speed needs the rows.
        var totals = SampleTotals()
        let terms = Self.terms(selection)
        try db.withCached(
            """
            SELECT count(*), sum(\(terms.status) = 0), sum(latency_ms), count(latency_ms), max(at)
            FROM samples INDEXED BY samples_by_monitor_time WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?\(terms.place)
            """
        ) { statement in
            Self.bindWindow(statement, monitorID, from, until, selection)
            try statement.step()
            totals.checks = Int(statement.int64(0))
            totals.good = Int(statement.optionalInt64(1) ?? 0)
            totals.latencySum = statement.optionalDouble(2) ?? 0
            totals.latencyCount = Int(statement.int64(3))
            totals.lastAt = statement.optionalInt64(4)
        }
        if withSpeed {
            let speed = try db.prepare(
                """
                SELECT sum(speed_mbps), count(speed_mbps) FROM samples INDEXED BY samples_by_monitor_time
                WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?\(terms.place)
                """)
            Self.bindWindow(speed, monitorID, from, until, selection)
            try speed.step()
            totals.speedSum = speed.optionalDouble(0) ?? 0
            totals.speedCount = Int(speed.int64(1))
        }
        return totals
    }

    func count(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection) throws -> Int {
        let terms = Self.terms(selection)
        let statement = try db.prepare(
            """
            SELECT count(*) FROM samples INDEXED BY samples_by_monitor_time
            WHERE held = 0 AND monitor_id = ? AND at >= ? AND at < ?\(terms.place)
            """)
        Self.bindWindow(statement, monitorID, from, until, selection)
        try statement.step()
        return Int(statement.int64(0))
    }

    func agents() throws -> [AgentRecord] {
        let statement = try db.prepare(
            """
            SELECT a.id, a.status, a.created_at, a.last_seen, (SELECT count(*) FROM places p WHERE p.agent = a.id), a.name
            FROM agents a ORDER BY a.created_at, a.id
            """)
        var result: [AgentRecord] = []
        while try statement.step() {
            result.append(
                AgentRecord(
                    id: statement.text(0) ?? "", status: try AgentStatus(stored: statement.text(1) ?? ""),
                    createdAt: statement.int64(2), lastSeen: statement.int64(3), monitorCount: Int(statement.int64(4)),
                    name: statement.text(5)))
        }
        return result
    }

    func generation() throws -> Int64? {
        try db.withCached("SELECT generation FROM store_state") { try $0.step() ? $0.int64(0) : nil }
    }

    func firstTimes(from: Int64, after: Int64) throws -> (atOrAfterFrom: Int64?, afterNow: Int64?) {
        let first = try db.withCached("SELECT min(at) FROM samples INDEXED BY samples_identity WHERE at >= ?") { statement in
            statement.bind(from)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
        let next = try db.withCached("SELECT min(at) FROM samples INDEXED BY samples_identity WHERE at > ?") { statement in
            statement.bind(after)
            return try statement.step() ? statement.optionalInt64(0) : nil
        }
        return (first, next)
    }

    /// The counts kept in `check_counts`, brought up to date first: the samples numbered past the
    /// last count are added, or, when samples went away or held ones came to count since
    /// (`deletions` moved), every sample is counted again. So a scrape costs the samples stored
    /// since the last one, not the whole store.
    func checkCounts() throws -> [Int64: [Int]] {
        // Samples numbered past the last count, found by number (a few pages of the table); all of
        // them, from the covering index (about a tenth of the bytes of the table, whose rows hold
        // each record whole).
        let count = """
            SELECT monitor_id, status, count(*) FROM samples WHERE id > ? AND id <= ? AND held = 0 GROUP BY monitor_id, status
            """
        let countAll = """
            SELECT monitor_id, status, count(*) FROM samples INDEXED BY samples_by_monitor_time
            WHERE held = 0 AND id > ? AND id <= ? GROUP BY monitor_id, status
            """
        do {
            try db.writeTransaction {
                let deletions = try db.scalarInt("SELECT deletions FROM store_state") ?? 0
                let state = try db.prepare("SELECT through_id, deletions FROM check_counts_state")
                guard try state.step() else { throw ToolError("the store's check_counts_state has no row") }
                var through = state.int64(0)
                if state.int64(1) != deletions {
                    try db.execute("DELETE FROM check_counts")
                    through = 0
                }
                let last = try db.scalarInt("SELECT max(id) FROM samples") ?? 0
                if last > through {
                    let add = try db.prepare(
                        "INSERT INTO check_counts (monitor_id, status, checks) " + (through == 0 ? countAll : count)
                            + " ON CONFLICT (monitor_id, status) DO UPDATE SET checks = checks + excluded.checks")
                    add.bind(through, last)
                    try add.step()
                }
                let save = try db.prepare("UPDATE check_counts_state SET through_id = ?, deletions = ?")
                save.bind(max(through, last), deletions)
                try save.step()
            }
        } catch {
            throw translate(error)
        }
        return try translated {
            try SQLiteSampleStore.countsByMonitor(try db.prepare("SELECT monitor_id, status, checks FROM check_counts"))
        }
    }

    /// Rows of (monitor id, status code, count) as a table by monitor.
    private static func countsByMonitor(_ rows: SQLiteStatement) throws -> [Int64: [Int]] {
        var result: [Int64: [Int]] = [:]
        while try rows.step() {
            let code = Int(rows.int64(1))
            guard (0...4).contains(code) else {
                _ = try SampleStatus(storeCode: Int64(code))
                continue
            }
            result[rows.int64(0), default: [0, 0, 0, 0, 0]][code] += Int(rows.int64(2))
        }
        return result
    }
}

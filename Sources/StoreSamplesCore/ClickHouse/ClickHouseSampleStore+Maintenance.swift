import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Maintenance: retention by whole months, mutations (releasing an approved agent's samples,
/// clear) on every server, and export in pages.
extension ClickHouseSampleStore {
    /// Days of retention drop whole months (a partition) once all of the month is past the
    /// limit: checked on the first commit, then hourly. A per-monitor count is SQLite's only.
    func applyRetention(_ retention: Retention, now: Int64) throws {
        guard let days = retention.days else { return }
        if let checked = retentionCheckedAt, now - checked < 3_600_000, now >= checked { return }
        retentionCheckedAt = now
        let cutoff = now - Int64(days) * 86_400_000
        let cutoffDay = Timestamp.civil(fromDays: cutoff >= 0 ? cutoff / 86_400_000 : (cutoff - 86_399_999) / 86_400_000)
        // A month is wholly before the cutoff when it is before the cutoff's month.
        let cutoffMonth = cutoffDay.year * 100 + cutoffDay.month
        for endpoint in ddlEndpoints {
            var reader = try rows(
                """
                SELECT DISTINCT partition FROM system.parts WHERE database = \(clickHouseLiteral(location.database)) \
                AND table = \(clickHouseLiteral(placement.localName("samples"))) AND active
                """, endpoint: endpoint)
            while !reader.atEnd {
                let partition = try reader.string()
                guard let month = Int(partition), month < cutoffMonth else { continue }
                try client.execute(
                    "ALTER TABLE \(placement.localTable("samples"))\(placement.onCluster) DROP PARTITION \(month)",
                    endpoint: endpoint)
            }
        }
    }

    /// Runs a mutation (ALTER ... UPDATE or DELETE) on every server's samples and waits until it is done.
    private func mutate(_ command: String) throws {
        for endpoint in ddlEndpoints {
            try client.execute("ALTER TABLE \(placement.localTable("samples"))\(placement.onCluster) \(command)", endpoint: endpoint)
        }
        try waitForMutations(on: "samples")
    }

    /// Counts the held samples of an approved agent (each with its own status as the monitor's
    /// consensus, as on SQLite), and makes its places known.
    func release(_ agent: String) throws {
        try mutate("UPDATE held = 0 WHERE agent = \(clickHouseLiteral(agent)) AND held = 1")
        try recountPlaces(where: "agent = \(clickHouseLiteral(agent))")
    }

    /// Adds to `places` the places of the counted samples `condition` selects, on each server.
    func recountPlaces(where condition: String) throws {
        for endpoint in location.shards.isEmpty ? [nil] : location.shards.map({ Optional($0) }) {
            try client.execute(ClickHouseSchema.placesRecount(placement, where: condition), endpoint: endpoint)
        }
    }

    /// Waits until every server finished the mutations of table `name` (5 minutes at most).
    private func waitForMutations(on name: String) throws {
        let deadline = Clock.monotonicMilliseconds() + 300_000
        for endpoint in ddlEndpoints {
            while true {
                var answer = try rows(
                    """
                    SELECT count() FROM system.mutations WHERE database = \(clickHouseLiteral(location.database)) \
                    AND table = \(clickHouseLiteral(placement.localName(name))) AND is_done = 0
                    """, endpoint: endpoint)
                if try answer.uint64() == 0 { break }
                guard Clock.monotonicMilliseconds() < deadline else {
                    throw ToolError(
                        "ClickHouse at \(location.display) did not finish changing \(name) within 5 minutes; "
                            + "it goes on in the background")
                }
                usleep(20_000)
            }
        }
    }

    func clear(monitorID: Int64?, before: Int64?) throws -> Int {
        var conditions: [String] = []
        if let monitorID {
            guard let monitor = try monitorName(monitorID) else { return 0 }
            conditions.append("monitor = \(clickHouseLiteral(monitor))")
        }
        if let before { conditions.append("at < \(before)") }
        let condition = conditions.isEmpty ? "1" : conditions.joined(separator: " AND ")
        var reader = try rows("SELECT toInt64(count()) FROM \(placement.table("samples")) FINAL WHERE \(condition)")
        let deleted = Int(try reader.int64())
        if deleted > 0 { try mutate("DELETE WHERE \(condition)") }
        // As SQLite numbers a new sample one past the largest left, so does the store from now on:
        // the marks are counted again from what is left (samples cleared and sent again are new).
        for endpoint in ddlEndpoints {
            try client.execute("ALTER TABLE \(placement.localTable("marks"))\(placement.onCluster) DELETE WHERE 1", endpoint: endpoint)
        }
        try waitForMutations(on: "marks")
        let recount = "SELECT identity_agent, maxState(at), maxState(id) FROM %@ GROUP BY identity_agent"
        if location.shards.isEmpty {
            try client.execute(
                "INSERT INTO \(placement.table("marks")) (identity_agent, upto, last_id) "
                    + recount.replacingOccurrences(of: "%@", with: placement.table("samples")))
        } else {
            for endpoint in ddlEndpoints {
                try client.execute(
                    "INSERT INTO \(placement.localTable("marks")) (identity_agent, upto, last_id) "
                        + recount.replacingOccurrences(of: "%@", with: placement.localTable("samples")), endpoint: endpoint)
            }
        }
        // So do the places: a place whose samples all went is forgotten, one whose newest went has an older newest.
        for endpoint in ddlEndpoints {
            try client.execute("ALTER TABLE \(placement.localTable("places"))\(placement.onCluster) DELETE WHERE 1", endpoint: endpoint)
        }
        try waitForMutations(on: "places")
        try recountPlaces(where: "1")
        caches.places = nil
        caches.totals.removeAll()
        caches.nextSampleID = nil
        caches.agentTimes = nil
        caches.lastAgent = nil
        return deleted
    }

    func export(from: Int64, until: Int64, monitorID: Int64?, _ visit: (LineBytes) throws -> Void) throws {
        var condition = "held = 0 AND \(timeCondition(from: from, until: until))"
        if let monitorID {
            guard let monitor = try monitorName(monitorID) else { return }
            condition += " AND monitor = \(clickHouseLiteral(monitor))"
        }
        // One query, sorted by the server, read as it comes: paging by time read, for each page,
        // every granule of the days asked (a monitor's samples lie together, not a time's).
        var carry: [UInt8] = []
        try client.stream("SELECT record FROM \(try samplesTable()) WHERE \(condition) ORDER BY at, id FORMAT RowBinary") { piece, last in
            carry += piece
            var reader = RowBinaryReader(carry)
            var kept = 0
            while !reader.atEnd, reader.holdsString() {
                try reader.withStringLine(visit)
                kept = reader.offset
            }
            carry.removeFirst(kept)
            if last, !carry.isEmpty {
                throw ToolError("ClickHouse at \(location.display) sent a damaged answer: \(carry.count) bytes after the last whole record")
            }
        }
    }
}

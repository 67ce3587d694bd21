import VitalsKit

/// Reading: the views ask monitor by monitor, as of SQLite; here a view that lists every
/// monitor is answered from one query per question (latest samples, totals), kept in the
/// unit's caches, and reads of samples dedup with `FINAL` only once a batch was ever resent.
extension ClickHouseSampleStore {
    /// The monitors table as stored, read once a unit of work (a view asks for it several times:
    /// the list, the latest samples, the agents' monitor counts) and again after this unit wrote it.
    func readMonitors() throws -> [MonitorRecord] {
        if let known = caches.monitorTable { return known }
        var reader = try rows("SELECT \(ClickHouseRows.monitorColumns) FROM \(placement.table("monitors")) FINAL ORDER BY id, monitor")
        var result: [MonitorRecord] = []
        while !reader.atEnd { result.append(try ClickHouseRows.monitor(&reader)) }
        caches.monitorTable = result
        return result
    }

    func readAgents() throws -> [AgentRecord] {
        var reader = try rows("SELECT \(ClickHouseRows.agentColumns) FROM \(placement.table("agents")) FINAL ORDER BY created_at, id")
        var result: [AgentRecord] = []
        while !reader.atEnd { result.append(try ClickHouseRows.agent(&reader)) }
        return result
    }

    /// The monitor id of integer id `id`, from the monitors the views read last.
    func monitorName(_ id: Int64) throws -> String? {
        if caches.monitorsByID == nil { _ = try monitors() }
        return caches.monitorsByID?[id]?.monitor
    }

    private func keepByID(_ records: [MonitorRecord]) {
        caches.monitorsByID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func monitors() throws -> [MonitorRecord] {
        caches.listed = true
        let records = try readMonitors()
        keepByID(records)
        return records
    }

    func monitor(matching key: String) throws -> MonitorRecord? {
        let records = try readMonitors()
        keepByID(records)
        return records.first(where: { $0.monitor == key }) ?? records.first(where: { String($0.id) == key })
    }

    /// Every place's newest sample of every monitor, by monitor, each monitor's by place: first
    /// those of the last 25 hours before now (or after it), each place's newest time found from
    /// three columns and then only the rows at those times read (at 50 million samples over 10,000
    /// monitors, 27-32 ms where one `argMax` of every field over the window took 106-114 ms); then
    /// the places `places` knows that were quiet longer, read by their newest times on the days of
    /// them. The inner query reads each server's own table: a monitor's samples are all on one
    /// shard, and a `Distributed` table may not be named there.
    private func placesAll() throws -> [String: [StoredSample]] {
        if let known = caches.places { return known }
        var result: [String: [StoredSample]] = [:]
        let from = try samplesTable()
        let local = try samplesTable(local: true)
        let condition = timeCondition(from: caches.now - 25 * 3_600_000, until: Int64.max / 2)
        var reader = try rows(
            """
            SELECT monitor, \(ClickHouseRows.storedSampleColumns) FROM \(from)
            PREWHERE (monitor, identity_agent, at) IN (
                SELECT monitor, identity_agent, max(at) FROM \(local) WHERE held = 0 AND \(condition) GROUP BY monitor, identity_agent)
            WHERE held = 0 AND \(condition) ORDER BY monitor, identity_agent, id DESC LIMIT 1 BY monitor, identity_agent
            """)
        while !reader.atEnd {
            let monitor = try reader.string()
            result[monitor, default: []].append(try ClickHouseRows.storedSample(&reader))
        }
        var quiet: [(monitor: String, place: String, at: Int64)] = []
        var known = try rows(
            "SELECT monitor, identity_agent, maxMerge(last_at) FROM \(placement.table("places")) GROUP BY monitor, identity_agent")
        while !known.atEnd {
            let (monitor, place, at) = (try known.string(), try known.string(), try known.int64())
            if !(result[monitor]?.contains { $0.place == place } ?? false) { quiet.append((monitor, place, at)) }
        }
        try readNewest(quiet) { monitor, sample in result[monitor, default: []].append(sample) }
        for monitor in result.keys { result[monitor]!.sort { $0.place.utf8.lexicographicallyPrecedes($1.place.utf8) } }
        caches.places = result
        return result
    }

    /// Reads the sample of each (monitor, place) at its newest time, a thousand at a time, on the
    /// days of those times only.
    private func readNewest(_ wanted: [(monitor: String, place: String, at: Int64)], _ visit: (String, StoredSample) throws -> Void) throws
    {
        for start in stride(from: 0, to: wanted.count, by: 1000) {
            let chunk = wanted[start..<min(wanted.count, start + 1000)]
            let days = Set(chunk.map { $0.at >= 0 ? $0.at / 86_400_000 : ($0.at - 86_399_999) / 86_400_000 }).sorted().map(String.init)
                .joined(separator: ", ")
            let tuples = chunk.map { "(\(clickHouseLiteral($0.monitor)), \(clickHouseLiteral($0.place)), \($0.at))" }.joined(
                separator: ", ")
            var reader = try rows(
                """
                SELECT monitor, \(ClickHouseRows.storedSampleColumns) FROM \(try samplesTable())
                WHERE held = 0 AND intDiv(at, 86400000) IN (\(days)) AND (monitor, identity_agent, at) IN (\(tuples))
                ORDER BY monitor, identity_agent, id DESC LIMIT 1 BY monitor, identity_agent
                """)
            while !reader.atEnd {
                let monitor = try reader.string()
                try visit(monitor, try ClickHouseRows.storedSample(&reader))
            }
        }
    }

    func places(monitorID: Int64) throws -> [StoredSample] {
        guard let monitor = try monitorName(monitorID) else { return [] }
        if caches.listed || caches.places != nil { return try placesAll()[monitor] ?? [] }
        var known = try rows(
            "SELECT identity_agent, maxMerge(last_at) FROM \(placement.table("places")) "
                + "WHERE monitor = \(clickHouseLiteral(monitor)) GROUP BY identity_agent")
        var wanted: [(monitor: String, place: String, at: Int64)] = []
        while !known.atEnd { wanted.append((monitor, try known.string(), try known.int64())) }
        var result: [StoredSample] = []
        try readNewest(wanted) { _, sample in result.append(sample) }
        return result.sorted { $0.place.utf8.lexicographicallyPrecedes($1.place.utf8) }
    }

    /// What the reads of samples say: the table, with `FINAL` only when some batch was ever sent
    /// again (a `resends` row is written before the second try). Without a resend no sample has
    /// a copy, and `FINAL` would only cost time: 18.16 merges every part of the range on one
    /// thread (a year of one monitor: 0.25 s instead of 0.13 s). Asked once a unit of work. With
    /// `local`, the table on each server (the same on one server; `samples_local` in a cluster).
    func samplesTable(local: Bool = false) throws -> String {
        if caches.samplesResent == nil {
            var reader = try rows("SELECT toInt64(count()) FROM \(placement.table("resends"))")
            caches.samplesResent = try reader.int64() > 0
        }
        return (local ? placement.localTable("samples") : placement.table("samples")) + (caches.samplesResent! ? " FINAL" : "")
    }

    private func window(_ monitor: String, _ from: Int64, _ until: Int64, _ selection: SampleSelection = .consensus) -> String {
        "held = 0 AND monitor = \(clickHouseLiteral(monitor)) AND \(timeCondition(from: from, until: until))" + placeCondition(selection)
    }

    /// The condition that keeps one place's samples, if the selection names one.
    private func placeCondition(_ selection: SampleSelection) -> String {
        if case .place(let place) = selection { return " AND identity_agent = \(clickHouseLiteral(place))" }
        return ""
    }

    /// The status column a read counts under `selection`: the consensus stored with each sample, or its own.
    private static func statusColumn(_ selection: SampleSelection) -> String { selection == .consensus ? "consensus" : "status" }

    /// The buckets aggregated by the server, with the very figures and arithmetic `HistoryBuckets`
    /// has (the latencies sorted, summed in that order, ranked by ceil(q × n)); only the sum's
    /// average is rounded here. A year of one monitor is 35,040 rows instead of 525,600.
    func forEachBucket(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, _ visit: (HistoryBucket) throws -> Void
    ) throws {
        guard let monitor = try monitorName(monitorID) else { return }
        let width = Views.bucketMs
        let status = Self.statusColumn(selection)
        func rank(_ q: String) -> String { "if(n = 0, 0, l[least(n, greatest(toUInt64(1), toUInt64(ceil(\(q) * n))))])" }
        var reader = try rows(
            """
            SELECT b, c, g, w, n, arraySum(l), \(rank("0.5")), \(rank("0.95")), \(rank("0.99")) FROM (
                SELECT at - ((at % \(width)) + \(width)) % \(width) AS b, toInt64(count()) AS c, toInt64(countIf(\(status) = 0)) AS g,
                       toInt64(max(multiIf(\(status) IN (2, 3), 2, \(status) = 1, 1, \(status) = 0, 0, -1))) AS w,
                       arraySort(groupArray(latency_ms)) AS l, length(l) AS n
                FROM \(try samplesTable()) WHERE \(window(monitor, from, until, selection)) GROUP BY b
            ) ORDER BY b
            """)
        while !reader.atEnd {
            var bucket = HistoryBucket(start: try reader.int64())
            bucket.checks = Int(try reader.int64())
            bucket.good = Int(try reader.int64())
            bucket.worst = Int(try reader.int64())
            bucket.latencyCount = Int(try reader.uint64AsInt64())
            bucket.latencySum = try reader.float64()
            bucket.p50 = try reader.float64()
            bucket.p95 = try reader.float64()
            bucket.p99 = try reader.float64()
            try visit(bucket)
        }
    }

    func forEachSample(
        monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, _ visit: (Int64, SampleStatus, Double?) throws -> Void
    ) throws {
        guard let monitor = try monitorName(monitorID) else { return }
        let status = Self.statusColumn(selection)
        var reader = try rows(
            """
            SELECT at, \(status), latency_ms FROM \(try samplesTable()) WHERE \(window(monitor, from, until, selection))
            ORDER BY at, \(status), latency_ms
            """)
        while !reader.atEnd {
            try visit(try reader.int64(), try SampleStatus(storeCode: Int64(try reader.uint8())), try reader.optionalFloat64())
        }
    }

    func page(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, offset: Int, limit: Int) throws -> [StoredSample] {
        guard let monitor = try monitorName(monitorID) else { return [] }
        var reader = try rows(
            """
            SELECT \(ClickHouseRows.storedSampleColumns) FROM \(try samplesTable()) WHERE \(window(monitor, from, until, selection))
            ORDER BY at DESC, id DESC LIMIT \(max(0, offset)), \(max(0, limit))
            """)
        var result: [StoredSample] = []
        while !reader.atEnd { result.append(try ClickHouseRows.storedSample(&reader)) }
        return result
    }

    /// Totals of every monitor over a window in one query (the views ask monitor by monitor).
    func totals(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection, withSpeed: Bool) throws -> SampleTotals {
        guard let monitor = try monitorName(monitorID) else { return SampleTotals() }
        let key = UnitCaches.TotalsWindow(from: from, until: until, selection: selection)
        if caches.totals[key] == nil {
            var all: [String: SampleTotals] = [:]
            var reader = try rows(
                """
                SELECT monitor, toInt64(count()), toInt64(countIf(\(Self.statusColumn(selection)) = 0)), sum(latency_ms),
                       toInt64(count(latency_ms)), max(at), sum(speed_mbps), toInt64(count(speed_mbps))
                FROM \(try samplesTable()) WHERE held = 0 AND \(timeCondition(from: from, until: until))\(placeCondition(selection))
                GROUP BY monitor
                """)
            while !reader.atEnd {
                let name = try reader.string()
                var totals = SampleTotals()
                totals.checks = Int(try reader.int64())
                totals.good = Int(try reader.int64())
                totals.latencySum = try reader.optionalFloat64() ?? 0
                totals.latencyCount = Int(try reader.int64())
                totals.lastAt = try reader.int64()
                totals.speedSum = try reader.optionalFloat64() ?? 0
                totals.speedCount = Int(try reader.int64())
                all[name] = totals
            }
            caches.totals[key] = all
        }
        var totals = caches.totals[key]?[monitor] ?? SampleTotals()
        if !withSpeed {
            totals.speedSum = 0
            totals.speedCount = 0
        }
        return totals
    }

    func count(monitorID: Int64, from: Int64, until: Int64, selection: SampleSelection) throws -> Int {
        guard let monitor = try monitorName(monitorID) else { return 0 }
        var reader = try rows("SELECT toInt64(count()) FROM \(try samplesTable()) WHERE \(window(monitor, from, until, selection))")
        return Int(try reader.int64())
    }

    /// Every monitor's counts by status in one pass over two columns (monitor, status) of the samples.
    func checkCounts() throws -> [Int64: [Int]] {
        let ids = Dictionary(try readMonitors().map { ($0.monitor, $0.id) }, uniquingKeysWith: { first, _ in first })
        var reader = try rows("SELECT monitor, status, toInt64(count()) FROM \(try samplesTable()) WHERE held = 0 GROUP BY monitor, status")
        var result: [Int64: [Int]] = [:]
        while !reader.atEnd {
            let monitor = try reader.string()
            let status = try SampleStatus(storeCode: Int64(try reader.uint8()))
            let checks = Int(try reader.int64())
            guard let id = ids[monitor] else { continue }
            result[id, default: [0, 0, 0, 0, 0]][Int(status.storeCode)] += checks
        }
        return result
    }

    func agents() throws -> [AgentRecord] {
        // Each agent's monitors: the monitors it is a place of (see `places`).
        var perAgent: [String: Int] = [:]
        var reader = try rows(
            "SELECT identity_agent, toInt64(count()) FROM (SELECT monitor, identity_agent FROM \(placement.table("places")) "
                + "GROUP BY monitor, identity_agent) GROUP BY identity_agent")
        while !reader.atEnd { perAgent[try reader.string()] = Int(try reader.int64()) }
        return try readAgents().map { agent in
            var agent = agent
            agent.monitorCount = perAgent[agent.id] ?? 0
            return agent
        }
    }
}

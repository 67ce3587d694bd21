import VitalsKit

/// The read views, shaped exactly as OnlineTracker's API answers (field names and types),
/// written against `SampleQueries` alone, so any backend serves them.
struct Views {
    let store: SampleQueries
    /// The end of every window (`--now`, or the clock).
    let now: Int64
    /// The order of monitor lists.
    let order: MonitorOrder
    /// How many fresh places must agree (`--quorum`, `?quorum=`: `PlaceRule`).
    let quorum: Quorum
    /// The one place the views are narrowed to (`--agent`, `?agent=`), nil for every place.
    let selection: SampleSelection

    /// How monitor lists (monitors, overview) are ordered.
    enum MonitorOrder: String, Sendable {
        /// The app's grouping: down, then degraded, then up, then unknown; by name within a group, then by id.
        case status
        /// By integer id, the order the monitors were first stored in.
        case id
    }

    /// The overview's window: the last 24 hours.
    static let overviewWindowMs: Int64 = 86_400_000

    /// Creates views over a store.
    init(
        store: SampleQueries, now: Int64, order: MonitorOrder = .status, quorum: Quorum = .majority, selection: SampleSelection = .consensus
    ) {
        self.store = store
        self.now = now
        self.order = order
        self.quorum = quorum
        self.selection = selection
    }

    /// The identity agent `--agent NAME` names: NAME, or '' for the local place ("local").
    static func place(named name: String) -> String { name == PlaceRule.localName ? "" : name }

    /// A monitor as the views show it now: its places' newest samples and what the place rule
    /// makes of them (narrowed to one place, that place's own).
    struct MonitorState {
        /// Each place's newest sample, by place.
        var places: [StoredSample]
        var verdict: PlaceVerdict
        /// The newest sample of any voting place: the check the views date the monitor by.
        var newest: StoredSample?

        /// The client status.
        var status: String { Views.clientStatus(verdict.status) }
    }

    /// The state of `record` now; nil when it has no sample (of the place the views are narrowed to).
    func state(_ record: MonitorRecord) throws -> MonitorState? {
        var places = try store.places(monitorID: record.id)
        if case .place(let place) = selection { places = places.filter { $0.place == place } }
        guard !places.isEmpty else { return nil }
        let interval = PlaceRule.intervalMs(checkIntervalSeconds: record.metadata.checkInterval)
        var verdict = PlaceRule.judge(places.map(\.report), intervalMs: interval, quorum: quorum)
        let voting = places.filter { PlaceRule.severity($0.status) != nil }
        let newest = (voting.isEmpty ? places : voting).max { ($0.at, $1.place) < ($1.at, $0.place) }
        if record.metadata.kind == PlaceRule.heartbeatKind, let lastAt = places.map(\.at).max(),
            PlaceRule.isSilent(lastAt: lastAt, now: now, intervalMs: interval)
        {
            // A heartbeat that stopped: down, whatever its last sample said (notify tells the same).
            verdict.status = .down
            verdict.reason = PlaceRule.silentReason
            verdict.message = PlaceRule.silentWords(lastAt: lastAt, intervalMs: interval)
        }
        return MonitorState(places: places, verdict: verdict, newest: newest)
    }

    /// The first moment after now at which a heartbeat monitor (kind `heartbeat`) goes silent, if
    /// any will: what the views say changes then, though nothing is written.
    func nextSilence() throws -> Int64? {
        var next: Int64?
        for record in try store.monitors() where record.metadata.kind == PlaceRule.heartbeatKind {
            guard let lastAt = try store.places(monitorID: record.id).map(\.at).max() else { continue }
            let interval = PlaceRule.intervalMs(checkIntervalSeconds: record.metadata.checkInterval)
            let silentAt = lastAt &+ PlaceRule.silentIntervals &* interval &+ 1
            if silentAt > now { next = min(next ?? silentAt, silentAt) }
        }
        return next
    }

    /// Where a client status goes in the app's grouped list.
    static func groupRank(_ status: String) -> Int {
        switch status {
        case "down": return 0
        case "degraded": return 1
        case "up": return 2
        default: return 3
        }
    }

    /// Orders `items` (each a monitor with its client status) as `order` says. The keys are
    /// taken once and their positions sorted: sorting the items themselves copied each
    /// (record, status, answer) at every step of the merge, a quarter of an overview of
    /// 10,000 monitors' instructions.
    func ordered<T>(_ items: [(record: MonitorRecord, status: String, item: T)]) -> [T] {
        guard order == .status else { return items.map(\.item) }
        let keys = items.map { (rank: Views.groupRank($0.status), name: $0.record.metadata.name ?? $0.record.monitor, id: $0.record.id) }
        let positions = keys.indices.sorted { a, b in
            let (x, y) = (keys[a], keys[b])
            if x.rank != y.rank { return x.rank < y.rank }
            if x.name != y.name { return x.name.utf8.lexicographicallyPrecedes(y.name.utf8) }
            return x.id != y.id ? x.id < y.id : a < b
        }
        return positions.map { items[$0].item }
    }

    /// The client's status vocabulary: a sample's `error` is `down` there.
    static func clientStatus(_ status: SampleStatus?) -> String {
        switch status {
        case .up?: return "up"
        case .degraded?: return "degraded"
        case .down?, .error?: return "down"
        case .unknown?, nil: return "unknown"
        }
    }

    /// The client's monitor types: `ping`, `http`, `https`, `ssl`; probe-ping's `tcp` is shown
    /// as `ping`, anything else (or nothing) as `http`.
    static func clientType(_ kind: String?) -> String {
        switch kind {
        case "ping"?, "tcp"?: return "ping"
        case "https"?: return "https"
        case "ssl"?: return "ssl"
        default: return "http"
        }
    }

    static func time(_ milliseconds: Int64) -> String { Timestamp.formatSeconds(milliseconds: milliseconds) }

    static func percent(good: Int, of total: Int) -> Double {
        total == 0 ? 0 : (Double(good) * 100 / Double(total) * 100).rounded() / 100
    }

    static func roundedMs(_ value: Double?) -> Int? { value.map { Int($0.rounded()) } }

    // MARK: - GET /api/status/overview

    /// Totals by status, agents, overall 24-hour uptime, and one summary per monitor. The
    /// overall uptime is the mean of the `uptime_24h` of the monitors checked in the last 24
    /// hours (each monitor weighs the same, however often it is checked).
    func overview() throws -> JSONValue {
        let monitors = try store.monitors()
        let agents = try store.agents()
        var counts: [String: Int] = ["up": 0, "down": 0, "degraded": 0, "unknown": 0]
        var summaries: [(record: MonitorRecord, status: String, item: JSONValue)] = []
        var uptimeSum = 0.0
        var uptimeCount = 0
        var listed = 0
        for monitor in monitors {
            let state = try state(monitor)
            if state == nil, selection != .consensus { continue }
            listed += 1
            let status = state?.status ?? "unknown"
            counts[status, default: 0] += 1
            let totals = try store.totals(
                monitorID: monitor.id, from: now - Views.overviewWindowMs, until: now + 1, selection: selection, withSpeed: false)
            let uptime = Views.percent(good: totals.good, of: totals.checks)
            if totals.checks > 0 {
                uptimeSum += uptime
                uptimeCount += 1
            }
            summaries.append(
                (
                    monitor, status,
                    .object(
                        JSONObject([
                            JSONField("id", .integer(Int(monitor.id))),
                            JSONField("name", .string(monitor.metadata.name ?? monitor.monitor)),
                            JSONField("type", .string(Views.clientType(monitor.metadata.kind))),
                            JSONField("status", .string(status)),
                            JSONField("uptime_24h", number(uptime)),
                            JSONField("last_check", state?.newest.map { .string(Views.time($0.at)) } ?? .null),
                        ]))
                ))
        }
        let overall = uptimeCount == 0 ? 0 : (uptimeSum / Double(uptimeCount) * 100).rounded() / 100
        return .object(
            JSONObject([
                JSONField("total_monitors", .integer(listed)),
                JSONField("monitors_up", .integer(counts["up"]!)),
                JSONField("monitors_down", .integer(counts["down"]!)),
                JSONField("monitors_degraded", .integer(counts["degraded"]!)),
                JSONField("monitors_unknown", .integer(counts["unknown"]!)),
                JSONField("agents_total", .integer(agents.count)),
                JSONField("agents_pending", .integer(agents.filter { $0.status == .pending }.count)),
                JSONField("overall_uptime_24h", number(overall)),
                JSONField("monitors", .array(ordered(summaries))),
            ]))
    }

    // MARK: - GET /api/monitors[/{id}]

    /// Every monitor with its latest status, in the list order (narrowed to one place, the
    /// monitors it has samples of).
    func monitors() throws -> [JSONValue] {
        try ordered(
            store.monitors().compactMap { record in
                let state = try state(record)
                if state == nil, selection != .consensus { return nil }
                return (record, state?.status ?? "unknown", monitor(record, state: state, withPlaces: false))
            })
    }

    /// One monitor with its latest status and each place's newest check.
    func monitor(_ record: MonitorRecord) throws -> JSONValue {
        monitor(record, state: try state(record), withPlaces: true)
    }

    /// The seed's check interval, seconds, for a monitor whose samples never stated one.
    static let defaultCheckInterval: Int64 = 60

    /// The monitor's object: OnlineTracker's fields, `latest_status` from the place rule (its status,
    /// reason and words; the time, latency and certificate of the newest check), and with
    /// `withPlaces` each place's newest check.
    private func monitor(_ record: MonitorRecord, state: MonitorState?, withPlaces: Bool) -> JSONValue {
        var latestStatus = JSONValue.null
        if let state, let newest = state.newest {
            latestStatus = .object(
                JSONObject([
                    JSONField("status", .string(state.status)),
                    JSONField("response_time_ms", Views.roundedMs(newest.latencyMs).map(JSONValue.integer) ?? .null),
                    JSONField("checked_at", .string(Views.time(newest.at))),
                    JSONField("details", state.verdict.message.map(JSONValue.string) ?? .null),
                    JSONField("ssl_expiry_days", newest.tlsExpiryDays.map { .integer(Int($0)) } ?? .null),
                    JSONField("reason", state.verdict.reason.map(JSONValue.string) ?? .null),
                ]))
        }
        // The agent a monitor belongs to: its one place's; none when several places see it.
        let agent: String? = state.map { $0.places.count == 1 ? $0.places[0].agent : nil } ?? record.metadata.agent
        var fields = [
            JSONField("id", .integer(Int(record.id))),
            JSONField("agent_id", agent.map(JSONValue.string) ?? .null),
            JSONField("type", .string(Views.clientType(record.metadata.kind))),
            JSONField("name", .string(record.metadata.name ?? record.monitor)),
            JSONField("description", record.metadata.description.map(JSONValue.string) ?? .null),
            JSONField("target", .string(record.metadata.target ?? record.monitor)),
            JSONField("config", AppReadableConfig.value(record.metadata.config)),
            JSONField("check_interval", .integer(Int(record.metadata.checkInterval ?? Views.defaultCheckInterval))),
            JSONField("enabled", .bool(record.metadata.enabled ?? true)),
            JSONField("created_at", .string(Views.time(record.firstSeen))),
            JSONField("latest_status", latestStatus),
            JSONField("monitor", .string(record.monitor)),
        ]
        if withPlaces {
            let fresh = Set(state?.verdict.fresh.map(\.name) ?? [])
            fields.append(
                JSONField(
                    "places",
                    .array(
                        (state?.places ?? []).map { place in
                            .object(
                                JSONObject([
                                    JSONField("agent", place.agent.map(JSONValue.string) ?? .null),
                                    JSONField("status", .string(Views.clientStatus(place.status))),
                                    JSONField("checked_at", .string(Views.time(place.at))),
                                    JSONField("response_time_ms", Views.roundedMs(place.latencyMs).map(JSONValue.integer) ?? .null),
                                    JSONField("details", place.message.map(JSONValue.string) ?? .null),
                                    JSONField("reason", place.reason.map(JSONValue.string) ?? .null),
                                    JSONField("fresh", .bool(fresh.contains(place.report.name))),
                                ]))
                        })))
        }
        return .object(JSONObject(fields))
    }

    // MARK: - GET /api/monitors/{id}/history?hours=H

    /// How far back history looks (OnlineTracker's 72 hours by default, a year at most), for
    /// `history --since` and the API's `hours` alike.
    static let historyLookback = Lookback(defaultHours: 72, maxHours: 8760)

    /// Width of a history bucket: OnlineTracker's 15 minutes.
    static let bucketMs: Int64 = 15 * 60_000

    /// 15-minute buckets, aligned to the clock, over the last `spanMs`, oldest first; only
    /// buckets with checks appear (the app's chart draws a gap where a bucket is missing).
    /// Status is the worst in the bucket (a down or error check makes it down, else a degraded
    /// one degraded, else up); uptime is the share of up checks; percentiles are nearest-rank
    /// over the checks with a latency.
    func history(_ record: MonitorRecord, spanMs: Int64, separator: UInt8, into out: inout [UInt8]) throws {
        let from = now - spanMs
        var written = 0
        try store.forEachBucket(monitorID: record.id, from: from, until: now + 1, selection: selection) { bucket in
            if written > 0 { out.append(separator) }
            written += 1
            bucket.append(to: &out)
        }
    }

    // MARK: - GET /api/monitors/{id}/results

    /// How far back results look (24 hours by default, ten years at most) and how they page (25
    /// checks, at most 100), for `results --since --page --per-page` and the API's `hours`, `page`
    /// and `per_page` alike.
    static let resultsLookback = Lookback(defaultHours: 24, maxHours: 87_600)
    static let resultsPages = PageLimits(defaultPerPage: 25, maxPerPage: 100)

    /// Individual checks over the last `spanMs`, newest first, a page at a time.
    func results(_ record: MonitorRecord, spanMs: Int64, page: Page) throws -> JSONValue {
        let from = now - spanMs
        let perPage = page.size
        let total = try store.count(monitorID: record.id, from: from, until: now + 1, selection: selection)
        let rows = try store.page(
            monitorID: record.id, from: from, until: now + 1, selection: selection, offset: page.offset, limit: perPage)
        let items = rows.map { row -> JSONValue in
            .object(
                JSONObject([
                    JSONField("id", .integer(Int(row.id))),
                    JSONField("checked_at", .string(Views.time(row.at))),
                    JSONField("status", .string(Views.clientStatus(row.status))),
                    JSONField("response_time_ms", Views.roundedMs(row.latencyMs).map(JSONValue.integer) ?? .null),
                    JSONField("details", row.message.map(JSONValue.string) ?? .null),
                    JSONField("ssl_expiry_days", row.tlsExpiryDays.map { .integer(Int($0)) } ?? .null),
                    JSONField("agent", row.agent.map(JSONValue.string) ?? .null),
                ]))
        }
        return .object(
            JSONObject([
                JSONField("items", .array(items)),
                JSONField("total", .integer(total)),
                JSONField("page", .integer(page.number)),
                JSONField("per_page", .integer(perPage)),
                JSONField("total_pages", .integer((total + perPage - 1) / perPage)),
            ]))
    }

    // MARK: - GET /api/agents

    /// Agents seen in samples.
    func agents() throws -> [JSONValue] {
        try store.agents().map { agent in
            .object(
                JSONObject([
                    JSONField("id", .string(agent.id)),
                    JSONField("name", .string(agent.name ?? agent.id)),
                    JSONField("status", .string(agent.status.rawValue)),
                    JSONField("last_seen", .string(Views.time(agent.lastSeen))),
                    JSONField("created_at", .string(Views.time(agent.createdAt))),
                    JSONField("monitor_count", .integer(agent.monitorCount)),
                ]))
        }
    }

    // MARK: - Online Now's statistics

    /// Total checks and average speed, overall and per monitor, over `[from, now]`.
    func stats(from: Int64) throws -> JSONValue {
        var totalChecks = 0
        var speedSum = 0.0
        var speedCount = 0
        var good = 0
        var perMonitor: [JSONValue] = []
        for monitor in try store.monitors() {
            let totals = try store.totals(monitorID: monitor.id, from: from, until: now + 1, selection: selection, withSpeed: true)
            totalChecks += totals.checks
            good += totals.good
            speedSum += totals.speedSum
            speedCount += totals.speedCount
            perMonitor.append(
                .object(
                    JSONObject([
                        JSONField("id", .integer(Int(monitor.id))),
                        JSONField("monitor", .string(monitor.monitor)),
                        JSONField("name", .string(monitor.metadata.name ?? monitor.monitor)),
                        JSONField("checks", .integer(totals.checks)),
                        JSONField("uptime_percent", number(Views.percent(good: totals.good, of: totals.checks))),
                        JSONField(
                            "average_latency_ms", totals.latencyCount > 0 ? number(totals.latencySum / Double(totals.latencyCount)) : .null),
                        JSONField(
                            "average_speed_mbps", totals.speedCount > 0 ? number(totals.speedSum / Double(totals.speedCount)) : .null),
                        JSONField("last_check", totals.lastAt.map { .string(Views.time($0)) } ?? .null),
                    ])))
        }
        return .object(
            JSONObject([
                JSONField("total_checks", .integer(totalChecks)),
                JSONField("uptime_percent", number(Views.percent(good: good, of: totalChecks))),
                JSONField("average_speed_mbps", speedCount > 0 ? number(speedSum / Double(speedCount)) : .null),
                JSONField("monitors", .array(perMonitor)),
            ]))
    }
}

/// A JSON number with at most two decimals, always written with a fraction when not whole
/// (`99.5`, `100.0`), so clients that decode a Double see a Double.
func number(_ value: Double) -> JSONValue {
    var out: [UInt8] = []
    appendTwoDecimals(value, to: &out)
    return .number(String(decoding: out, as: UTF8.self))
}

/// One 15-minute history bucket's figures. Status is the worst in the bucket (a down or error
/// check makes it down, else a degraded one degraded, else up); uptime is the share of up
/// checks; the average and percentiles are over the checks with a latency: the sum taken in
/// ascending order, percentiles by nearest rank (the value at position ceil(q × n), from 1, of the
/// sorted latencies). Both backends compute exactly these (ClickHouse in its own SQL).
struct HistoryBucket: Equatable {
    /// The bucket's start, ms.
    var start: Int64
    var checks = 0
    var good = 0
    /// -1 for no status known, 0 up, 1 degraded, 2 down.
    var worst = -1
    /// Checks with a latency, their sum (ascending order) and percentiles.
    var latencyCount = 0
    var latencySum = 0.0
    var p50 = 0.0
    var p95 = 0.0
    var p99 = 0.0

    /// The bucket of time `at`: clock-aligned 15-minute spans.
    static func start(of at: Int64) -> Int64 { at - ((at % Views.bucketMs) + Views.bucketMs) % Views.bucketMs }

    /// How a status counts toward `worst`.
    static func severity(_ status: SampleStatus) -> Int {
        switch status {
        case .up: return 0
        case .degraded: return 1
        case .down, .error: return 2
        case .unknown: return -1
        }
    }

    /// The 1-based nearest rank of quantile `q` among `count` values: ceil(q × count), at least 1.
    static func rank(_ q: Double, of count: Int) -> Int { max(1, min(count, Int((q * Double(count)).rounded(.up)))) }

    /// The bucket's JSON object, as OnlineTracker's history answer has it.
    func append(to out: inout [UInt8]) {
        JSONText.appendLiteral("{\"timestamp\":\"", to: &out)
        Timestamp.append(milliseconds: start, to: &out, fraction: false)
        switch worst {
        case 2: JSONText.appendLiteral("\",\"status\":\"down\",\"uptime_percent\":", to: &out)
        case 1: JSONText.appendLiteral("\",\"status\":\"degraded\",\"uptime_percent\":", to: &out)
        case 0: JSONText.appendLiteral("\",\"status\":\"up\",\"uptime_percent\":", to: &out)
        default: JSONText.appendLiteral("\",\"status\":\"unknown\",\"uptime_percent\":", to: &out)
        }
        appendTwoDecimals(Views.percent(good: good, of: checks), to: &out)
        JSONText.appendLiteral(",\"response_time_avg_ms\":", to: &out)
        if latencyCount == 0 {
            JSONText.appendLiteral("null,\"p50_ms\":null,\"p95_ms\":null,\"p99_ms\":null", to: &out)
        } else {
            JSONText.appendInt(Int64((latencySum / Double(latencyCount)).rounded()), to: &out)
            JSONText.appendLiteral(",\"p50_ms\":", to: &out)
            JSONText.appendFixed(p50, decimals: 2, to: &out)
            JSONText.appendLiteral(",\"p95_ms\":", to: &out)
            JSONText.appendFixed(p95, decimals: 2, to: &out)
            JSONText.appendLiteral(",\"p99_ms\":", to: &out)
            JSONText.appendFixed(p99, decimals: 2, to: &out)
        }
        JSONText.appendLiteral(",\"checks\":", to: &out)
        JSONText.appendInt(checks, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

/// Folds samples in time order into `HistoryBucket`s, handing each finished one to `visit`; a
/// struct with mutating methods, so the per-sample path has no closures over local state (and no
/// dynamic exclusivity checks) and no allocation per bucket.
struct HistoryBuckets {
    private var bucket = HistoryBucket(start: .min)
    private var latencies: [Double] = []

    init() { latencies.reserveCapacity(1024) }

    /// Adds a sample; a sample in a new bucket first hands over the previous one.
    mutating func add(at: Int64, status: SampleStatus, latency: Double?, _ visit: (HistoryBucket) throws -> Void) rethrows {
        let start = HistoryBucket.start(of: at)
        if start != bucket.start {
            try finish(visit)
            bucket.start = start
        }
        bucket.checks += 1
        if status == .up { bucket.good += 1 }
        bucket.worst = max(bucket.worst, HistoryBucket.severity(status))
        if let latency { latencies.append(latency) }
    }

    /// Hands over the open bucket, if it has checks, and starts afresh.
    mutating func finish(_ visit: (HistoryBucket) throws -> Void) rethrows {
        guard bucket.checks > 0 else { return }
        latencies.sort()
        var sum = 0.0
        for latency in latencies { sum += latency }
        bucket.latencyCount = latencies.count
        bucket.latencySum = sum
        if !latencies.isEmpty {
            bucket.p50 = latencies[HistoryBucket.rank(0.50, of: latencies.count) - 1]
            bucket.p95 = latencies[HistoryBucket.rank(0.95, of: latencies.count) - 1]
            bucket.p99 = latencies[HistoryBucket.rank(0.99, of: latencies.count) - 1]
        }
        try visit(bucket)
        latencies.removeAll(keepingCapacity: true)
        bucket = HistoryBucket(start: bucket.start)
    }
}

/// Appends `value` as the API writes its figures: two decimals at most, always with a
/// fraction (`null` for a value that is not finite).
func appendTwoDecimals(_ value: Double, to out: inout [UInt8]) {
    let start = out.count
    JSONText.appendFixed(value, decimals: 2, to: &out)
    if value.isFinite, !out[start...].contains(UInt8(ascii: ".")) { out.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "0")]) }
}

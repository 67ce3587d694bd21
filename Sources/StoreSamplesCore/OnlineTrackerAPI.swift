import Serving
import Synchronization
import VitalsCrypto
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// OnlineTracker's server API (`store-samples serve`, behind nginx; see vitals-serve(7)): each
/// route answers with the very bytes the matching subcommand prints, from the same `Views`, so
/// the command line and the API never disagree.
///
/// | route | answer |
/// |---|---|
/// | GET /health | `{"status":"healthy","mode":"server"}` |
/// | GET /api/status/overview | `store-samples overview` |
/// | GET /api/monitors | `store-samples monitors` |
/// | GET /api/monitors/{id} | `store-samples monitor ID` |
/// | GET /api/monitors/{id}/history?hours= | `store-samples history ID --since Hh` |
/// | GET /api/monitors/{id}/results?hours=&page=&per_page= | `store-samples results ID ...` |
/// | GET /api/agents | `store-samples agents` |
/// | GET /metrics | `store-samples metrics` (Prometheus' text format) |
/// | POST /api/samples | `store-samples ingest --remote` of the body, for the agent its bearer token names |
///
/// One instance serves every worker thread of a responder; each thread answers through its own
/// `OnlineTrackerWorker`, which holds that thread's store connection.
final class OnlineTrackerAPI: Sendable {
    /// How the API opens its store: `create` for a write, with the ingest policy of received samples.
    typealias StoreOpener = @Sendable (_ create: Bool, _ policy: IngestPolicy) throws -> SampleStore

    /// The store, as --db named it (a file, or a clickhouse:// URL), for messages.
    let database: String
    /// The agents' token file (`AGENT SHA256HEX` a line), or nil when none is set.
    let tokens: String?
    /// Whether an agent seen for the first time is approved at once (--auto-approve).
    let autoApprove: Bool
    /// How many fresh places must agree on a monitor's status (--quorum): the views', and the
    /// consensus stored with each sample received.
    let quorum: Quorum
    let openStore: StoreOpener
    /// The clock (`--now` fixes it).
    let clock: @Sendable () -> Int64
    /// Answers kept while they hold (a store with a generation: SQLite).
    let kept = ViewCache()
    /// Held by the worker thread that is storing a POST's samples: SQLite takes one writer at a
    /// time, and writers that meet its lock back off by sleeping (up to 100 ms a try), so ten
    /// agents posting at once stored 1,274 samples a second until the threads took turns here.
    let writing = Mutex(())
    /// The routes.
    let router: Router<OnlineTrackerWorker>

    /// The limits of every request: 1 MiB bodies (an agent's batch of about 3,000 samples), 10 s.
    static let limits = RequestLimits(maxBody: 1 << 20, deadlineMs: 10_000)

    init(
        database: String, tokens: String?, autoApprove: Bool, quorum: Quorum, clock: @escaping @Sendable () -> Int64,
        openStore: @escaping StoreOpener
    ) {
        self.database = database
        self.tokens = tokens
        self.autoApprove = autoApprove
        self.quorum = quorum
        self.clock = clock
        self.openStore = openStore
        var router = Router<OnlineTrackerWorker>(notFound: "no such path: see vitals-serve(7) for the API's routes")
        router.add(["GET"], "/health") { _, _, _ in
            .json(.object(JSONObject([JSONField("status", .string("healthy")), JSONField("mode", .string("server"))])))
        }
        router.add(["GET"], "/api/status/overview") { _, _, worker in try worker.overview() }
        router.add(["GET"], "/api/monitors") { _, _, worker in try worker.monitors() }
        router.add(["GET"], "/api/monitors/{id}") { _, values, worker in try worker.monitor(values[0]) }
        router.add(["GET"], "/api/monitors/{id}/history") { request, values, worker in
            let lookback = Views.historyLookback
            return try worker.history(values[0], hours: try request.integer("hours", default: lookback.defaultHours, in: lookback.hours))
        }
        router.add(["GET"], "/api/monitors/{id}/results") { request, values, worker in
            let (lookback, limits) = (Views.resultsLookback, Views.resultsPages)
            return try worker.results(
                values[0], hours: try request.integer("hours", default: lookback.defaultHours, in: lookback.hours),
                page: Page(
                    number: try request.integer("page", default: 1, in: PageLimits.pages),
                    size: try request.integer("per_page", default: limits.defaultPerPage, in: limits.perPage)))
        }
        router.add(["GET"], "/api/agents") { _, _, worker in try worker.agents() }
        router.add(["GET"], "/metrics") { _, _, worker in try worker.metrics() }
        router.add(["POST"], "/api/samples") { request, _, worker in try worker.receiveSamples(request) }
        self.router = router
    }
}

/// One worker thread's side of the API: its own store connection, opened on first need and kept
/// (the ingest policy of received samples: from elsewhere, approved on sight with --auto-approve).
final class OnlineTrackerWorker: RequestAnswerer {
    let api: OnlineTrackerAPI
    let log: (String) -> Void
    /// The connection reads and writes go through (a SQLite connection in WAL mode, or a ClickHouse client).
    private var store: SampleStore?
    /// The time of the request being answered.
    private var now: Int64 = 0
    /// The place the request narrows the views to (`?agent=NAME`), else every place.
    private var selection = SampleSelection.consensus

    init(api: OnlineTrackerAPI, log: @escaping (String) -> Void) {
        self.api = api
        self.log = log
    }

    func answer(_ request: APIRequest) -> APIResponse {
        now = api.clock()
        store?.startRequest(now: now)
        selection = .consensus
        if let agent = request.parameter("agent") {
            guard !agent.isEmpty, agent.utf8.count <= 200, !agent.utf8.contains(0) else {
                return APIError(status: 400, reason: "bad_parameter", message: "agent names a place: an agent's id, or local").response
            }
            selection = .place(Views.place(named: agent))
        }
        return api.router.answer(request, self, log: log)
    }

    /// The worker's store, opened now if it is not yet; made when missing (a new server has
    /// stored nothing yet: its views are empty, as the app's empty states expect, not a 503).
    /// Only a store that can be neither opened nor made (unreachable, not writable) is a 503.
    private func openedStore() throws -> SampleStore {
        if let store { return store }
        do {
            let policy = IngestPolicy(remote: true, autoApprove: api.autoApprove, approvedAgents: [], quorum: api.quorum)
            let opened = try (try? api.openStore(false, policy)) ?? api.openStore(true, policy)
            opened.startRequest(now: now)
            store = opened
            return opened
        } catch let error where error is ToolError || error is StoreMissing {
            throw APIError(
                status: 503, reason: "no_store", message: "the store cannot be opened or created: it is unreachable, or not writable",
                headers: [("Retry-After", "10")])
        }
    }

    // MARK: - Reading

    /// The views over the store.
    private func views() throws -> Views {
        Views(store: try openedStore(), now: now, quorum: api.quorum, selection: selection)
    }

    /// The answer `key`, kept between requests while it holds, else computed. `window` is the
    /// time window the answer reads (`[now - window, now]`), nil for none.
    private func kept(_ key: String, _ views: Views, window: Int64?, _ compute: () throws -> [UInt8]) throws -> APIResponse {
        guard let generation = try views.store.generation() else { return APIResponse(status: 200, body: try compute()) }
        var key = key
        if case .place(let place) = views.selection { key += " agent=" + place }
        let now = self.now
        let body = try api.kept.answer(key, generation: generation, now: now) {
            let body = try compute()
            // A heartbeat going silent changes the answer with nothing written.
            let silence = try views.nextSilence() ?? Int64.max
            guard let window else { return ViewCache.Computed(body: body, validUntil: silence) }
            // The window [now - window, now] holds the same samples until its oldest one leaves
            // it or a sample from the future enters it (judged over the whole store: never later).
            let (oldest, next) = try views.store.firstTimes(from: now - window, after: now)
            var until = silence
            if let oldest, oldest < Int64.max - window - 1 { until = min(until, oldest + window + 1) }
            if let next { until = min(until, next) }
            return ViewCache.Computed(body: body, validUntil: until)
        }
        return APIResponse(status: 200, body: body)
    }

    func overview() throws -> APIResponse {
        let views = try views()
        return try kept("overview", views, window: Views.overviewWindowMs) { try views.overview().encoded() + [0x0A] }
    }

    func monitors() throws -> APIResponse {
        let views = try views()
        return try kept("monitors", views, window: nil) { JSONValue.array(try views.monitors()).encoded() + [0x0A] }
    }

    func monitor(_ key: String) throws -> APIResponse {
        let (views, record) = try monitorRecord(key)
        return try kept("monitor \(record.id)", views, window: nil) { try views.monitor(record).encoded() + [0x0A] }
    }

    func history(_ key: String, hours: Int) throws -> APIResponse {
        let (views, record) = try monitorRecord(key)
        return try kept("history \(record.id) \(hours)", views, window: Int64(hours) * 3_600_000) {
            var out: [UInt8] = [UInt8(ascii: "[")]
            try views.history(record, spanMs: Int64(hours) * 3_600_000, separator: UInt8(ascii: ","), into: &out)
            out.append(contentsOf: [UInt8(ascii: "]"), 0x0A])
            return out
        }
    }

    func results(_ key: String, hours: Int, page: Page) throws -> APIResponse {
        let (views, record) = try monitorRecord(key)
        return try kept("results \(record.id) \(hours) \(page.number) \(page.size)", views, window: Int64(hours) * 3_600_000) {
            try views.results(record, spanMs: Int64(hours) * 3_600_000, page: page).encoded() + [0x0A]
        }
    }

    func agents() throws -> APIResponse {
        let views = try views()
        return try kept("agents", views, window: nil) { JSONValue.array(try views.agents()).encoded() + [0x0A] }
    }

    /// The exposition for Prometheus: no time window (it holds latest states and counts), so it
    /// is kept until the store changes.
    func metrics() throws -> APIResponse {
        let views = try views()
        var response = try kept("metrics", views, window: nil) { try views.metrics() }
        response.contentType = MetricsExposition.contentType
        return response
    }

    /// The views and the monitor an `{id}` names (its integer id, or its monitor id); 404 if none.
    private func monitorRecord(_ key: String) throws -> (Views, MonitorRecord) {
        let views = try views()
        guard key.utf8.count <= 512, !key.utf8.contains(0), let record = try views.store.monitor(matching: key) else {
            throw APIError(status: 404, reason: "unknown_monitor", message: "no such monitor")
        }
        return (views, record)
    }

    // MARK: - POST /api/samples

    /// Stores an agent's samples: the body is NDJSON as `store-samples ingest` reads it, the agent
    /// the one whose token the `Authorization: Bearer` header carries, stamped on each record by
    /// the store's own reader (`AgentStamp`). The samples count once the agent is approved
    /// (`store-samples agents approve AGENT`), as with `ingest --remote`.
    func receiveSamples(_ request: APIRequest) throws -> APIResponse {
        let agent = try authenticate(request)
        // The worker's own store: startRequest has made it forget what it knew of the agents'
        // statuses, so an agent approved from the command line a moment ago counts at once.
        let store = try openedStore()
        let diagnostics = Diagnostics(tool: "store-samples", capture: true)
        let reader = LineReader(bytes: request.body, source: "body")
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        let now = self.now
        let ingester = Ingester(
            store: store, retention: Retention(perMonitor: nil, days: Retention.defaultDays),
            output: RecordWriter(fd: devNull), passThrough: false, diagnostics: diagnostics, now: { now })
        ingester.agent = agent
        ingester.reportEachConflict = true
        api.writing.withLock { _ in _ = ingester.ingest(reader) }
        if let failure = ingester.failure {
            log("POST /api/samples from agent \(agent): \(failure)")
            throw APIError.internalError
        }
        // The agent's own row (cached by the ingest), not every agent with its monitors counted.
        let status = try store.status(ofAgent: agent)
        let refused = diagnostics.lineErrors
        let answer = JSONValue.object(
            JSONObject([
                JSONField("agent", .string(agent)),
                JSONField("agent_status", .string(status.rawValue)),
                JSONField("stored", .integer(ingester.stored)),
                JSONField("duplicates", .integer(ingester.duplicates)),
                JSONField(
                    "refused",
                    .array(
                        refused.map {
                            .object(JSONObject([JSONField("line", .integer($0.line)), JSONField("error", .string($0.message))]))
                        })),
            ]))
        return .json(status: refused.isEmpty ? 200 : ingester.stored > 0 ? 207 : 400, answer)
    }

    /// The agent whose token the request carries; 401 without one or with a wrong one.
    private func authenticate(_ request: APIRequest) throws -> String {
        let refusal = APIError(
            status: 401, reason: "unauthorized", message: "an agent's bearer token is needed (Authorization: Bearer TOKEN)",
            headers: [("WWW-Authenticate", "Bearer realm=\"vitals\"")])
        guard let token = request.bearerToken, let tokens = api.tokens,
            let agent = AgentTokens(path: tokens).agent(presenting: token)
        else { throw refusal }
        return agent
    }
}

/// The agents' token file: a line per agent, `AGENT SHA256HEX` (the SHA-256 of its token in
/// hex), `#` comments; `store-samples agents token AGENT` adds one and prints the token once.
/// Only hashes are kept, so the file gives no token away.
struct AgentTokens {
    let path: String
    /// Each agent and its token's SHA-256 as lowercase hex digits.
    var entries: [(agent: String, hash: [UInt8])] = []

    init(path: String) {
        self.path = path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count == 2, !words[0].hasPrefix("#"), words[1].utf8.count == 64, words[1].allSatisfy(\.isHexDigit) else { continue }
            entries.append((String(words[0]), Array(words[1].lowercased().utf8)))
        }
    }

    /// The agent whose token hashes to an entry, comparing every entry in full (no early exit on a byte).
    func agent(presenting token: String) -> String? {
        let hash = Array(SHA256.hexDigest(Array(token.utf8)).utf8)
        var found: String?
        for entry in entries where entry.hash.count == hash.count {
            var difference: UInt8 = 0
            for index in hash.indices { difference |= hash[index] ^ entry.hash[index] }
            if difference == 0 { found = entry.agent }
        }
        return found
    }

    /// Makes a new random token for `agent` (24 bytes from the system's generator), replacing its
    /// old one, and returns it.
    static func issue(agent: String, path: String) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let token = "vt_" + SHA256.hex((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let hash = SHA256.hexDigest(Array(token.utf8))
        let old =
            (try? String(contentsOfFile: path, encoding: .utf8))
            ?? "# vitals agent tokens: AGENT SHA256(token), made by store-samples agents token\n"
        let kept = old.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !($0.split(separator: " ").first.map(String.init) == agent) && !$0.isEmpty }
        try AtomicFile.write(Array((kept + [Substring("\(agent) \(hash)")]).joined(separator: "\n").utf8) + [0x0A], to: path, mode: 0o600)
        return token
    }
}

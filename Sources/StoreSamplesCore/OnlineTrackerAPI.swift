import Foundation
import VitalsCrypto
import VitalsKit

/// OnlineTracker's server API as a CGI program (`store-samples cgi`, run by fcgiwrap behind
/// nginx): each route answers with the very bytes the matching subcommand prints, from the same
/// `Views`, so the command line and the API never disagree. See vitals-serve(7).
///
/// | route | answer |
/// |---|---|
/// | GET /health | `{"status":"healthy","mode":"server"}` |
/// | GET /api/status/overview | `store-samples overview` |
/// | GET /api/monitors | `store-samples monitors` |
/// | GET /api/monitors/{id} | `store-samples monitor ID` |
/// | GET /api/monitors/{id}/history?hours= | `store-samples history ID --hours H` |
/// | GET /api/monitors/{id}/results?hours=&page=&per_page= | `store-samples results ID ...` |
/// | GET /api/agents | `store-samples agents` |
/// | POST /api/samples | `store-samples ingest --remote` of the body, for the agent its bearer token names |
struct OnlineTrackerAPI {
    /// The store's location as --db gave it (a file, or a clickhouse:// URL).
    let database: String
    /// The agents' token file (`AGENT SHA256HEX` a line), or nil when none is set.
    let tokens: String?
    /// Opens the store.
    let openStore: (_ create: Bool, _ policy: IngestPolicy) throws -> SampleStore
    /// The time taken as now.
    let now: Int64
    /// Whether an agent seen for the first time is approved at once (VITALS_APPROVE_AGENTS=1).
    let autoApprove: Bool

    /// Answers one request.
    func answer(_ request: CGIRequest) throws -> CGIResponse {
        let path = request.segments
        if path == ["health"] {
            try only(request, ["GET", "HEAD"])
            return .json(.object(JSONObject([JSONField("status", .string("healthy")), JSONField("mode", .string("server"))])))
        }
        guard path.first == "api", path.count >= 2 else { throw CGIError.notFound("no such path: see vitals-serve(7) for the API's routes") }
        switch (path[1], path.count) {
        case ("status", 3) where path[2] == "overview":
            try only(request, ["GET", "HEAD"])
            let views = try views()
            return CGIResponse(status: 200, body: try kept("overview", views) {
                let body = try views.overview().encoded() + [0x0A]
                // The 24-hour window [now - 24 h, now] holds the same samples until its oldest
                // one leaves it or a sample from the future enters it.
                let window: Int64 = 86_400_000
                let (oldest, next) = try views.store.firstTimes(from: now - window, after: now)
                var until = Int64.max
                if let oldest, oldest < Int64.max - window - 1 { until = min(until, oldest + window + 1) }
                if let next { until = min(until, next) }
                return ViewCache.Computed(body: body, validUntil: until)
            })
        case ("monitors", 2):
            try only(request, ["GET", "HEAD"])
            let views = try views()
            return CGIResponse(status: 200, body: try kept("monitors", views) {
                // The list has no time window: it holds until the store changes.
                ViewCache.Computed(body: JSONValue.array(try views.monitors()).encoded() + [0x0A], validUntil: Int64.max)
            })
        case ("monitors", 3):
            try only(request, ["GET", "HEAD"])
            let (views, record) = try monitor(path[2])
            return .json(try views.monitor(record))
        case ("monitors", 4) where path[3] == "history":
            try only(request, ["GET", "HEAD"])
            let hours = try integer(request, "hours", default: 72, in: 1...8760)
            let (views, record) = try monitor(path[2])
            var out: [UInt8] = [UInt8(ascii: "[")]
            try views.history(record, hours: hours, separator: UInt8(ascii: ","), into: &out)
            out.append(contentsOf: [UInt8(ascii: "]"), 0x0A])
            return CGIResponse(status: 200, body: out)
        case ("monitors", 4) where path[3] == "results":
            try only(request, ["GET", "HEAD"])
            let hours = try integer(request, "hours", default: 24, in: 1...87_600)
            let page = try integer(request, "page", default: 1, in: 1...Int(Int32.max))
            let perPage = try integer(request, "per_page", default: 25, in: 1...100)
            let (views, record) = try monitor(path[2])
            return .json(try views.results(record, hours: hours, page: page, perPage: perPage))
        case ("agents", 2):
            try only(request, ["GET", "HEAD"])
            return .json(.array(try views().agents()))
        case ("samples", 2):
            try only(request, ["POST"])
            return try receiveSamples(request)
        default:
            throw CGIError.notFound("no such path: see vitals-serve(7) for the API's routes")
        }
    }

    /// The answer `key`, kept between requests while it holds (a SQLite store; see `ViewCache`),
    /// else computed afresh.
    private func kept(_ key: String, _ views: Views, _ compute: () throws -> ViewCache.Computed) throws -> [UInt8] {
        guard !database.hasPrefix(ClickHouseLocation.prefix), let generation = try views.store.generation() else { return try compute().body }
        return try ViewCache(database: database).answer(key, generation: generation, now: now, compute: compute)
    }

    /// Refuses a method the route does not take (405, with Allow).
    private func only(_ request: CGIRequest, _ methods: [String]) throws {
        guard methods.contains(request.method) else { throw CGIError.method(request.method, allowed: methods) }
    }

    /// A whole-number query parameter in `range`, or its default; anything else is a 400.
    private func integer(_ request: CGIRequest, _ name: String, default value: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = request.parameter(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw CGIError(status: 400, reason: "bad_parameter",
                           message: "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)",
                           fields: [JSONField("parameter", .string(name))])
        }
        return number
    }

    /// The views over the store; a store that does not exist yet is a 503 (nothing was ever stored).
    private func views() throws -> Views {
        let store: SampleStore
        do {
            store = try openStore(false, IngestPolicy())
        } catch is ToolError {
            throw CGIError(status: 503, reason: "no_store", message: "the store cannot be opened: no samples were stored yet, or it is unreachable",
                           headers: [("Retry-After", "10")])
        }
        return Views(store: store, now: now)
    }

    /// The views and the monitor an `{id}` names (its integer id, or its monitor id); 404 if none.
    private func monitor(_ key: String) throws -> (Views, MonitorRecord) {
        let views = try views()
        guard key.utf8.count <= 512, !key.utf8.contains(0), let record = try views.store.monitor(matching: key) else {
            throw CGIError(status: 404, reason: "unknown_monitor", message: "no such monitor")
        }
        return (views, record)
    }

    // MARK: - POST /api/samples

    /// Stores an agent's samples: the body is NDJSON as `store-samples ingest` reads it, the agent
    /// the one whose token the `Authorization: Bearer` header carries. A sample without `agent`
    /// gets the token's agent; one naming another agent is refused. The samples count once the
    /// agent is approved (`store-samples agents approve AGENT`), as with `ingest --remote`.
    private func receiveSamples(_ request: CGIRequest) throws -> CGIResponse {
        let agent = try authenticate(request)
        // Lines naming another agent become blank (so line numbers stay), the rest get the agent.
        var refused: [(line: Int, message: String)] = []
        var body: [UInt8] = []
        body.reserveCapacity(request.body.count + request.body.count / 8)
        var lineNumber = 0
        for line in request.body.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            defer { body.append(0x0A) }
            guard let object = try? JSONParser.parse(Array(line)).objectValue, object["type"]?.stringValue == "sample" else {
                body.append(contentsOf: line)  // blank, or not a sample: ingest says what is wrong
                continue
            }
            switch object["agent"] {
            case nil, .null?:
                var fields = object
                fields["agent"] = .string(agent)
                body.append(contentsOf: JSONValue.object(fields).encoded())
            case .string(let named)? where named == agent:
                body.append(contentsOf: line)
            default:
                refused.append((lineNumber, "the sample names agent \(object["agent"]!.jsonText); this token is agent \"\(agent)\""))
            }
        }
        let diagnostics = Diagnostics(tool: "store-samples", capture: true)
        let (stored, status) = try ingest(body, agent: agent, diagnostics: diagnostics)
        refused += diagnostics.lineErrors
        refused.sort { $0.line < $1.line }
        let answer = JSONValue.object(JSONObject([
            JSONField("agent", .string(agent)),
            JSONField("agent_status", .string(status)),
            JSONField("stored", .integer(stored)),
            JSONField("refused", .array(refused.map { .object(JSONObject([JSONField("line", .integer($0.line)), JSONField("error", .string($0.message))])) })),
        ]))
        return .json(status: refused.isEmpty ? 200 : stored > 0 ? 207 : 400, answer)
    }

    /// Stores `body` as `ingest --remote` would, passing nothing on; the number stored and the agent's status.
    private func ingest(_ body: [UInt8], agent: String, diagnostics: Diagnostics) throws -> (Int, String) {
        let policy = IngestPolicy(remote: true, autoApprove: autoApprove, approvedAgents: [])
        let store: SampleStore
        do {
            store = try openStore(true, policy)
        } catch is ToolError {
            throw CGIError(status: 503, reason: "no_store", message: "the store cannot be opened or created",
                           headers: [("Retry-After", "10")])
        }
        let fd = try CGIBody.descriptor(body)
        let reader = LineReader(fd: fd, source: "body", ownsDescriptor: true)
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devNull) }
        let ingester = Ingester(store: store, retention: Retention(perMonitor: nil, days: 400), output: RecordWriter(fd: devNull),
                                passThrough: false, diagnostics: diagnostics, now: { now })
        ingester.maxRows = store.batchRows
        _ = ingester.ingest(reader)
        if let failure = ingester.failure { throw failure }
        let status = try store.agents().first { $0.id == agent }?.status ?? (autoApprove ? "approved" : "pending")
        return (ingester.stored, status)
    }

    /// The agent whose token the request carries; 401 without one or with a wrong one.
    private func authenticate(_ request: CGIRequest) throws -> String {
        let refusal = CGIError(status: 401, reason: "unauthorized", message: "an agent's bearer token is needed (Authorization: Bearer TOKEN)",
                               headers: [("WWW-Authenticate", "Bearer realm=\"vitals\"")])
        guard let header = request.header("Authorization"), header.lowercased().hasPrefix("bearer "), let tokens else { throw refusal }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, let agent = AgentTokens(path: tokens).agent(presenting: token) else { throw refusal }
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
        let old = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# vitals agent tokens: AGENT SHA256(token), made by store-samples agents token\n"
        let kept = old.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !($0.split(separator: " ").first.map(String.init) == agent) && !$0.isEmpty }
        try AtomicFile.write(Array((kept + [Substring("\(agent) \(hash)")]).joined(separator: "\n").utf8) + [0x0A], to: path, mode: 0o600)
        return token
    }
}

/// A request body as a descriptor the line reader can read: an unlinked temporary file.
enum CGIBody {
    static func descriptor(_ bytes: [UInt8]) throws -> Int32 {
        var template = Array((NSTemporaryDirectory() + "/vitals-body-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw ToolError("cannot make a temporary file for the request body") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        let written = bytes.withUnsafeBytes { Streams.writeAll(fd, $0) }
        guard written, lseek(fd, 0, SEEK_SET) == 0 else {
            close(fd)
            throw ToolError("cannot write the request body to a temporary file")
        }
        return fd
    }
}

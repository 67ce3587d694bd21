import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a monitor's samples say of it besides its id: each field the latest sample (or
/// `monitor` record) that stated it gave. Both stores keep this one model, and update it
/// with `take`, so they agree on what a sample changes.
struct MonitorMetadata: Equatable, Sendable {
    var name: String?
    var kind: String?
    var target: String?
    var agent: String?
    var description: String?
    /// Seconds between checks.
    var checkInterval: Int64?
    /// OnlineTracker's config object, as JSON text.
    var config: String?
    var enabled: Bool?

    /// Takes every field `sample` states (a field it leaves out, or gives as null, keeps its
    /// value); true when one changed. Text is compared as bytes, first as written (no escapes:
    /// the common case, no decoding), so a sample that changes nothing allocates nothing.
    mutating func take(_ sample: StorableSample) -> Bool {
        var changed = false
        if Self.take(sample, sample.nameRange, into: &name) { changed = true }
        if Self.take(sample, sample.kindRange, into: &kind) { changed = true }
        if Self.take(sample, sample.targetRange, into: &target) { changed = true }
        // The first agent a monitor's samples name stays: with several places reporting it, taking
        // each sample's would rewrite the monitor at every sample (the views tell its places apart
        // from the samples themselves).
        if agent == nil, Self.take(sample, sample.agentRange, into: &agent) { changed = true }
        if Self.take(sample, sample.descriptionRange, into: &description) { changed = true }
        if let raw = sample.raw(sample.configRange), !Self.same(config, raw) {
            config = String(decoding: raw, as: UTF8.self)
            changed = true
        }
        if let interval = sample.checkInterval, interval != checkInterval {
            checkInterval = interval
            changed = true
        }
        if let flag = sample.enabled, flag != enabled {
            enabled = flag
            changed = true
        }
        return changed
    }

    // Raw pointers here and in `same` (memcmp(3) and memchr(3) over the line's bytes): the safe
    // form, `elementsEqual` over the text's UTF-8 view and `contains` over a slice of the line,
    // costs 4.7% more of a SQLite ingest's instructions on 100,000 bench lines (4,866.1 M against
    // 4,648.0 M, callgrind).
    private static func take(_ sample: StorableSample, _ range: FieldRange?, into field: inout String?) -> Bool {
        // The value between its quotes, as written: equal to the field and free of escapes, it is the field.
        if let range, range.valueEnd - range.valueStart >= 2 {
            let written = UnsafeBufferPointer(rebasing: sample.line[(range.valueStart + 1)..<(range.valueEnd - 1)])
            if same(field, written), written.isEmpty || memchr(written.baseAddress!, 0x5C, written.count) == nil { return false }
        }
        return sample.withText(range) { bytes in
            guard let bytes, !same(field, bytes) else { return false }
            field = String(decoding: bytes, as: UTF8.self)
            return true
        }
    }

    private static func same(_ text: String?, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let text, text.utf8.count == bytes.count else { return false }
        if bytes.isEmpty { return true }
        return text.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            ?? text.utf8.elementsEqual(bytes)
    }
}

/// A monitor as the store knows it, registered from its samples.
struct MonitorRecord: Sendable {
    /// The stable integer id of the API views.
    var id: Int64
    /// The monitor id of the samples.
    var monitor: String
    var metadata = MonitorMetadata()
    /// The time of its first sample, ms since the epoch (no view shows when its last was: the
    /// views that do ask for its latest sample).
    var firstSeen: Int64
}

/// One stored sample's columns.
struct StoredSample: Sendable, Equatable {
    var id: Int64
    var at: Int64
    var status: SampleStatus
    var latencyMs: Double? = nil
    var message: String? = nil
    var tlsExpiryDays: Int64? = nil
    /// The place it was taken from: its own `agent` ('' when it names none, the local place).
    var place = ""
    var reason: String? = nil

    /// The place's agent, nil for the local place.
    var agent: String? { place.isEmpty ? nil : place }

    /// The sample as the place rule reads it.
    var report: PlaceReport {
        PlaceReport(agent: agent, at: at, status: status, reason: reason, message: message, latencyMs: latencyMs)
    }
}

/// Which samples of a monitor a read takes, and which status it counts: every place's, each with
/// the monitor's consensus when it was stored (the views' default: the place rule's status), or
/// one place's own, with its own status (`--agent`, `?agent=`).
enum SampleSelection: Hashable, Sendable {
    /// Every place's samples; a sample's status is the consensus stored with it.
    case consensus
    /// The samples of one place (its identity agent: '' for samples that name none), their own status.
    case place(String)

    /// The selection `--agent NAME` or `?agent=NAME` asks for (nil: every place).
    init(agent: String?) { self = agent.map { .place($0) } ?? .consensus }
}

/// An agent's standing (OnlineTracker's agent model): a pending agent's samples are stored and
/// not counted, an approved one's count, a rejected one's are refused. Stored as its raw value.
enum AgentStatus: String, Sendable, CaseIterable {
    case pending
    case approved
    case rejected

    /// The status a store holds as `text`; anything else is not one store-samples writes.
    init(stored text: String) throws {
        guard let status = AgentStatus(rawValue: text) else {
            throw ToolError("the store holds an agent status '\(text)' that store-samples never writes (pending, approved, rejected)")
        }
        self = status
    }
}

/// An agent seen in samples, with its approval status.
struct AgentRecord: Sendable, Equatable {
    var id: String
    var status: AgentStatus
    var createdAt: Int64
    var lastSeen: Int64
    var monitorCount: Int
    /// The name its samples gave it (`agent_name`), apart from its id.
    var name: String?
}

/// Where ingested samples come from. The user's own command line (the default) counts at
/// once whatever a sample's `agent` says; samples from elsewhere (`--remote`, for the API
/// that receives them) count only once their agent is approved.
struct IngestPolicy: Sendable {
    /// The samples came from elsewhere.
    var remote = false
    /// A new agent is approved on sight instead of pending.
    var autoApprove = false
    /// Agents approved before ingesting.
    var approvedAgents: [String] = []
    /// The quorum the consensus stored with each sample is judged with (`--quorum`).
    var quorum = Quorum.majority
    /// The user's own samples.
    init(remote: Bool = false, autoApprove: Bool = false, approvedAgents: [String] = [], quorum: Quorum = .majority) {
        self.remote = remote
        self.autoApprove = autoApprove
        self.approvedAgents = approvedAgents
        self.quorum = quorum
    }

    /// The status an agent the store has never seen gets: approved when its samples are the
    /// user's own, or when the policy approves it, else pending.
    func statusOfNewAgent(_ agent: String) -> AgentStatus {
        !remote || autoApprove || approvedAgents.contains(agent) ? .approved : .pending
    }

    /// Under `--remote`, the agent a record (a `sample` or a `monitor` record, as `record` says)
    /// names and whether its samples are held (pending), given the agent's `status`; a record
    /// without an agent, or from a rejected one, is refused (a line error, the batch goes on).
    /// (nil, false) for the user's own records.
    func admit(_ sample: StorableSample, record: String, status: (String) throws -> AgentStatus) throws -> (agent: String?, held: Bool) {
        guard remote else { return (nil, false) }
        guard let agent = sample.agent, !agent.isEmpty else {
            throw StoreRefusal("a \(record) from elsewhere (--remote) must name its 'agent'")
        }
        switch try status(agent) {
        case .rejected:
            throw StoreRefusal(
                "agent '\(agent)' is rejected: its \(record)s are refused "
                    + "(store-samples agents approve \(agent) lets them in)")
        case .pending: return (agent, true)
        case .approved: return (agent, false)
        }
    }
}

/// Totals over a window for one monitor.
struct SampleTotals: Sendable {
    /// Checks in the window.
    var checks = 0
    /// Checks that were up (a degraded check is not uptime, as OnlineTracker counts it).
    var good = 0
    /// Sum and count of latencies present.
    var latencySum = 0.0
    var latencyCount = 0
    /// Sum and count of speeds present.
    var speedSum = 0.0
    var speedCount = 0
    /// The newest check time.
    var lastAt: Int64?
}

/// How much history to keep.
struct Retention: Sendable, Equatable {
    /// Days of samples kept unless --keep says otherwise (the API's ingest keeps as many).
    static let defaultDays = 400
    /// Samples kept per monitor at most (nil: no limit).
    var perMonitor: Int?
    /// Days of samples kept (nil: no limit).
    var days: Int?
    /// Creates a policy.
    init(perMonitor: Int? = nil, days: Int? = Retention.defaultDays) {
        self.perMonitor = perMonitor
        self.days = days
    }
}

/// The earliest and latest sample time of an agent: its `created_at` and `last_seen` are
/// these, whatever batches its samples came in.
struct AgentSpan: Equatable {
    var first: Int64
    var last: Int64

    init(_ first: Int64, _ last: Int64? = nil) {
        self.first = first
        self.last = last ?? first
    }

    mutating func widen(_ at: Int64) {
        first = min(first, at)
        last = max(last, at)
    }

    mutating func widen(_ other: AgentSpan) {
        first = min(first, other.first)
        last = max(last, other.last)
    }

    /// Whether `other` lies within this span.
    func holds(_ other: AgentSpan) -> Bool { first <= other.first && other.last <= last }
}

/// The agents a batch's samples named: each one's span of sample times and the name it gave
/// (`agent_name`), kept for the agents table, written when the batch commits.
struct AgentSightings {
    private(set) var spans: [String: AgentSpan] = [:]
    private(set) var names: [String: String] = [:]

    var isEmpty: Bool { spans.isEmpty }

    /// Notes the agent a sample names, if any.
    mutating func note(_ sample: StorableSample) {
        guard sample.agentRange != nil, let agent = sample.agent else { return }
        spans[agent, default: AgentSpan(sample.at)].widen(sample.at)
        if let name = sample.agentName { names[agent] = name }
    }

    /// The agents whose row must be written: seen beyond the span `written` says was already
    /// stored for them, or giving a name.
    func toWrite(beyond written: [String: AgentSpan]) -> [(agent: String, span: AgentSpan, name: String?)] {
        spans.compactMap { agent, span in
            (written[agent]?.holds(span) ?? false) && names[agent] == nil ? nil : (agent, span, names[agent])
        }
    }

    mutating func removeAll() {
        spans.removeAll(keepingCapacity: true)
        names.removeAll(keepingCapacity: true)
    }
}

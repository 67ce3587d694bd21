/// A monitor seen from several places: the one rule that turns the places' latest samples into
/// the monitor's status. Every consumer applies it, and only it: store-samples' views, metrics and
/// stored consensus, digest and notify (vitals(7), PLACES).
///
/// A place is where a sample was taken: its `agent` (an agent of OnlineTracker's server), or the
/// machine that stored it when it names none (called "local"). The rule:
///
/// - Each place votes with its latest sample. A place whose latest sample is `unknown` does not
///   vote (it says nothing).
/// - A place is fresh when its latest sample lies within `freshIntervals` check intervals of the
///   newest vote of any place. Only fresh places vote; a place that stopped reporting drops out
///   (and is told as silent elsewhere).
/// - With one fresh place, the monitor is what that place says, reason and words included: a
///   monitor probed from one machine is exactly what it was before places existed.
/// - Otherwise the status is the worst that a quorum of the fresh places report (each reports
///   its status or better: up < degraded < down, `error` counting as `down`). The quorum is a
///   majority of the fresh places unless the tool is told otherwise (`Quorum`).
/// - When fewer than a quorum of fresh places fail (`down` or `error`) but some do, the monitor is
///   `degraded` with reason `partial`, and its words name the places: "down from tokyo; up from
///   nyc, paris".
public enum PlaceRule {
    /// A place whose latest sample is older than this many check intervals (before the newest
    /// vote) no longer votes.
    public static let freshIntervals: Int64 = 2
    /// The check interval of a monitor whose samples state none: OnlineTracker's 60 seconds.
    public static let defaultIntervalMs: Int64 = 60_000
    /// The name of the place of samples that name no agent, in words.
    public static let localName = "local"

    /// The words for a place: its agent, or "local".
    public static func name(_ agent: String?) -> String { agent ?? localName }

    /// 0 up, 1 degraded, 2 failing (down or error); nil for unknown, which does not vote.
    public static func severity(_ status: SampleStatus) -> Int? {
        switch status {
        case .up: return 0
        case .degraded: return 1
        case .down, .error: return 2
        case .unknown: return nil
        }
    }

    /// The check interval in milliseconds for a stated `check_interval` in seconds (nil, zero or
    /// less: the default).
    public static func intervalMs(checkIntervalSeconds: Int64?) -> Int64 {
        guard let seconds = checkIntervalSeconds, seconds > 0, seconds < Int64.max / 1000 else { return defaultIntervalMs }
        return seconds * 1000
    }

    /// Whether a place whose latest vote is at `at` is fresh when the newest vote is at `newest`.
    public static func isFresh(_ at: Int64, newest: Int64, intervalMs: Int64) -> Bool {
        newest &- at <= freshIntervals &* intervalMs
    }

    /// The verdict on a monitor from each place's latest report (one report a place).
    public static func judge(_ reports: [PlaceReport], intervalMs: Int64, quorum: Quorum) -> PlaceVerdict {
        let voting = reports.filter { severity($0.status) != nil }
        guard let newest = voting.map(\.at).max() else {
            // Nobody votes: the newest report says what there is to say (unknown), or nothing is known.
            let latest = reports.max { $0.at < $1.at }
            return PlaceVerdict(
                status: .unknown, reason: latest?.reason, message: latest?.message, fresh: [], failing: [], quorumNeeded: 0)
        }
        let fresh = voting.filter { isFresh($0.at, newest: newest, intervalMs: intervalMs) }.sorted(by: PlaceReport.byName)
        if fresh.count == 1 {
            let only = fresh[0]
            return PlaceVerdict(
                status: only.status, reason: only.reason, message: only.message, fresh: fresh,
                failing: only.status.isFailure ? [name(only.agent)] : [], quorumNeeded: 1)
        }
        let needed = quorum.needed(of: fresh.count)
        let descending = fresh.map { severity($0.status)! }.sorted(by: >)
        let agreed = descending[needed - 1]
        let failing = fresh.filter { $0.status.isFailure }
        let failingNames = failing.map { name($0.agent) }
        if agreed < 2, !failing.isEmpty {
            return PlaceVerdict(
                status: .degraded, reason: partialReason, message: words(fresh), fresh: fresh, failing: failingNames,
                quorumNeeded: needed)
        }
        // The newest fresh report at the agreed severity speaks for the monitor; a failure agreed on
        // is an error only when every failing place could not complete its probe.
        // (`fresh` is by name, and `max` keeps the last of equals: the newest, the first by name on a tie.)
        let speaker = fresh.filter { severity($0.status) == agreed }.reversed().max { $0.at < $1.at }!
        var status = speaker.status
        if agreed == 2 { status = failing.allSatisfy { $0.status == .error } ? .error : .down }
        return PlaceVerdict(
            status: status, reason: speaker.reason, message: speaker.message, fresh: fresh, failing: failingNames,
            quorumNeeded: needed)
    }

    /// A sample of one of a monitor's places, as judging at a moment reads it.
    public struct Vote: Equatable, Sendable {
        /// The place: its agent, '' for samples that name none (local).
        public var place: String
        public var at: Int64
        public var status: SampleStatus

        /// A vote.
        public init(place: String, at: Int64, status: SampleStatus) {
            self.place = place
            self.at = at
            self.status = status
        }
    }

    /// The oldest time a vote may have to count beside a sample at `at`.
    public static func windowStart(_ at: Int64, intervalMs: Int64) -> Int64 { at &- freshIntervals &* intervalMs }

    /// The monitor's status at the moment of one sample (`at`, `status`, from `place`): the rule
    /// applied to that sample and each other place's latest vote among `others` at or before `at`
    /// and from `windowStart` on (any order; votes of `place` itself, or outside the window, are
    /// ignored). store-samples stores it with each sample; digest counts time by it.
    ///
    /// The status alone, counted without the words `judge` writes, places found by a look through a
    /// short list rather than hashed: store-samples judges every sample of a monitor several places
    /// check, and 100,000 samples of 1,000 monitors from ten agents took 8.1 G instructions through
    /// `verdict` (words, a dictionary and a sort for each); a test holds this to `verdict` on
    /// random votes.
    public static func status(
        place: String, at: Int64, status: SampleStatus, others: [Vote], intervalMs: Int64, quorum: Quorum
    ) -> SampleStatus {
        let start = windowStart(at, intervalMs: intervalMs)
        var latest: [Vote] = []
        for vote in others where vote.place != place && vote.at <= at && vote.at >= start && severity(vote.status) != nil {
            if let index = latest.firstIndex(where: { $0.place == vote.place }) {
                if latest[index].at < vote.at { latest[index] = vote }
            } else {
                latest.append(vote)
            }
        }
        if latest.isEmpty { return status }
        let own = severity(status)
        var newest = own != nil ? at : Int64.min
        for vote in latest { newest = max(newest, vote.at) }
        // The fresh votes by severity (0 up, 1 degraded, 2 failing), and whether every failing one errs.
        var counts = (0, 0, 0)
        var fresh = 0
        var onlyVote = status
        var allErrors = true
        func count(_ vote: SampleStatus, _ voteAt: Int64) {
            guard let level = severity(vote), isFresh(voteAt, newest: newest, intervalMs: intervalMs) else { return }
            fresh += 1
            onlyVote = vote
            switch level {
            case 0: counts.0 += 1
            case 1: counts.1 += 1
            default:
                counts.2 += 1
                if vote != .error { allErrors = false }
            }
        }
        count(status, at)
        for vote in latest { count(vote.status, vote.at) }
        if fresh == 1 { return onlyVote }
        let needed = quorum.needed(of: fresh)
        let agreed = counts.2 >= needed ? 2 : counts.2 + counts.1 >= needed ? 1 : 0
        if agreed == 2 { return allErrors ? .error : .down }
        if counts.2 > 0 { return .degraded }
        return agreed == 1 ? .degraded : .up
    }

    /// The whole verdict behind `status(place:at:status:others:intervalMs:quorum:)` (whether it is
    /// partial, and the places' words); nil when the sample's own status is the monitor's because
    /// no other place votes beside it, or every vote beside it says the same (however many agree,
    /// the worst a quorum reports is then that status, and nobody fails alone).
    public static func verdict(
        place: String, at: Int64, status: SampleStatus, others: [Vote], intervalMs: Int64, quorum: Quorum
    ) -> PlaceVerdict? {
        let start = windowStart(at, intervalMs: intervalMs)
        // Agreement, the usual case, needs no judging (and nothing allocated).
        if severity(status) != nil,
            !others.contains(where: {
                $0.place != place && $0.at <= at && $0.at >= start && $0.status != status && severity($0.status) != nil
            })
        {
            return nil
        }
        var latest: [String: Vote] = [:]
        for vote in others where vote.place != place && vote.at <= at && vote.at >= start && severity(vote.status) != nil {
            if let known = latest[vote.place], known.at >= vote.at { continue }
            latest[vote.place] = vote
        }
        if latest.isEmpty { return nil }
        var reports = [PlaceReport(agent: place.isEmpty ? nil : place, at: at, status: status)]
        for vote in latest.values {
            reports.append(PlaceReport(agent: vote.place.isEmpty ? nil : vote.place, at: vote.at, status: vote.status))
        }
        return judge(reports, intervalMs: intervalMs, quorum: quorum)
    }

    /// The reason of a monitor that fewer than a quorum of its places see failing.
    public static let partialReason = "partial"

    /// The kind of a monitor expected to send a sample every check interval (a job that reports
    /// when it runs): its absence is news.
    public static let heartbeatKind = "heartbeat"
    /// An agent, or a heartbeat monitor, is silent after this many of its intervals without a sample.
    public static let silentIntervals: Int64 = 3
    /// The reason of a heartbeat monitor that is silent.
    public static let silentReason = "silent"

    /// Whether a heartbeat monitor whose newest sample is at `lastAt` is silent at `now`.
    public static func isSilent(lastAt: Int64, now: Int64, intervalMs: Int64) -> Bool { now &- lastAt > silentIntervals &* intervalMs }

    /// When a silent heartbeat monitor's outage began: one interval after its newest sample.
    public static func silentSince(lastAt: Int64, intervalMs: Int64) -> Int64 { lastAt &+ intervalMs }

    /// The words of a silent heartbeat monitor.
    public static func silentWords(lastAt: Int64, intervalMs: Int64) -> String {
        "no sample since \(Timestamp.formatSeconds(milliseconds: lastAt)) (one is expected every \(DurationText.describe(milliseconds: intervalMs)))"
    }

    /// The places' words, by status from the worst, each status's places by name: "down from tokyo;
    /// up from nyc, paris".
    public static func words(_ reports: [PlaceReport]) -> String {
        let order: [SampleStatus] = [.error, .down, .degraded, .up]
        var parts: [String] = []
        for status in order {
            let names = reports.filter { $0.status == status }.map(\.name).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if !names.isEmpty { parts.append("\(status.rawValue) from \(names.joined(separator: ", "))") }
        }
        return parts.joined(separator: "; ")
    }
}

/// One place's latest word on a monitor.
public struct PlaceReport: Sendable, Equatable {
    /// The agent that took the sample; nil for the machine that stored it ("local").
    public var agent: String?
    /// When the sample was taken, ms since the epoch.
    public var at: Int64
    public var status: SampleStatus
    public var reason: String?
    public var message: String?
    public var latencyMs: Double?

    /// A place's report.
    public init(agent: String?, at: Int64, status: SampleStatus, reason: String? = nil, message: String? = nil, latencyMs: Double? = nil) {
        self.agent = agent
        self.at = at
        self.status = status
        self.reason = reason
        self.message = message
        self.latencyMs = latencyMs
    }

    /// The place in words.
    public var name: String { PlaceRule.name(agent) }

    /// By place name, bytewise (the order places are listed in).
    public static func byName(_ a: PlaceReport, _ b: PlaceReport) -> Bool { a.name.utf8.lexicographicallyPrecedes(b.name.utf8) }
}

/// What the rule says of a monitor.
public struct PlaceVerdict: Sendable, Equatable {
    public var status: SampleStatus
    /// The reason: `partial` when fewer than a quorum fail, else the speaking place's.
    public var reason: String?
    /// The words: the places' for a partial outage, else the speaking place's message.
    public var message: String?
    /// The places that voted, by name.
    public var fresh: [PlaceReport]
    /// The fresh places that see the monitor failing, by name.
    public var failing: [String]
    /// How many fresh places had to agree.
    public var quorumNeeded: Int

    /// Whether fewer than a quorum fail, but some do.
    public var isPartial: Bool { reason == PlaceRule.partialReason && status == .degraded && !failing.isEmpty }
}

/// How many fresh places must agree on a status for the monitor to have it (`--quorum`).
public enum Quorum: Sendable, Equatable, CustomStringConvertible {
    /// More than half of the fresh places (the default).
    case majority
    /// Every fresh place.
    case all
    /// Any one place: the worst any place sees.
    case any
    /// At least this many (all of them when fewer are fresh).
    case count(Int)

    /// The words `--quorum` takes: `majority`, `all`, `any`, or a number from 1.
    public init?(_ text: String) {
        switch text {
        case "majority": self = .majority
        case "all": self = .all
        case "any": self = .any
        default:
            guard let number = Int(text), number >= 1, number <= 10_000 else { return nil }
            self = .count(number)
        }
    }

    /// The places that must agree among `places` fresh ones (at least one).
    public func needed(of places: Int) -> Int {
        let count = max(1, places)
        switch self {
        case .majority: return count / 2 + 1
        case .all: return count
        case .any: return 1
        case .count(let number): return min(number, count)
        }
    }

    /// The word `--quorum` takes for it.
    public var description: String {
        switch self {
        case .majority: return "majority"
        case .all: return "all"
        case .any: return "any"
        case .count(let number): return String(number)
        }
    }
}

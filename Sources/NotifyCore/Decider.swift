import VitalsKit

/// A monitor's condition as the decider tracks it: the confirmed status, the streaks that
/// confirm the next one, and the words of its latest sample. Kept in the state file.
struct MonitorTrack: Codable, Equatable {
    var name: String
    /// The confirmed status (`up`, `degraded`, `down`, `error`; `new` until a first status is
    /// confirmed, isitup's `unknown`: a monitor first seen down is news, unless --baseline).
    var confirmed: String
    /// The `at` of the latest sample taken.
    var lastAt: Int64
    /// Consecutive failing samples (down, error).
    var failStreak = 0
    /// Consecutive samples degraded or worse.
    var badStreak = 0
    /// Consecutive up samples.
    var upStreak = 0
    /// Consecutive samples that are not failing.
    var notFailingStreak = 0
    var failStart: Int64?
    var badStart: Int64?
    /// When the current episode (confirmed not up) began.
    var since: Int64?
    /// When the last finished episode began (for "up again after ...").
    var endedSince: Int64?
    var message: String?
    var reason: String?
    var target: String?
    /// The integer id store-samples gave the monitor, from its latest sample that had one.
    var monitorID: Int?
    /// A monitor seen from places (samples naming an `agent`): each place's own track, by place
    /// ('' for samples that name none), whose confirmed statuses the place rule (`PlaceRule`)
    /// turns into this track's. Nil for a monitor only ever seen from the local place, whose track
    /// is its place's.
    var places: [String: MonitorTrack]? = nil
    /// A monitor first seen from an agent is told once its places had a check interval to report
    /// (or a second place reported, or the input ended): nothing before this event time.
    var settleUntil: Int64? = nil
    /// The check interval its samples stated, ms (nil: the default).
    var intervalMs: Int64? = nil
    /// The monitor's kind as its samples stated it (`heartbeat`: expected every interval).
    var kind: String? = nil
    /// The monitors it depends on (`depends_on` of its latest sample; nil: none): while one of them
    /// is down or error, its own failures are held back (notify(1), Dependencies).
    var dependsOn: [String]? = nil
    /// The open episode's checks: samples down or error, and samples not up, since it began (nil
    /// while none is open, and for a monitor judged from several places, whose checks are not one count).
    var checks: EpisodeChecks? = nil
    /// The same for the episode that ended last (for the recovery's words).
    var endedChecks: EpisodeChecks? = nil
}

/// How many checks of an episode failed: what reminders and recoveries state ("14 failed checks").
struct EpisodeChecks: Codable, Equatable, Sendable {
    /// Samples down or error.
    var failed = 0
    /// Samples not up (degraded, down, error).
    var notUp = 0

    /// "14 failed checks", or "3 degraded checks" for an episode that never failed.
    var words: String {
        if failed > 0 { return failed == 1 ? "1 failed check" : "\(failed) failed checks" }
        return notUp == 1 ? "1 degraded check" : "\(notUp) degraded checks"
    }
}

/// What notify knows of an agent (a named place) across its monitors: when it last reported, how
/// often it does, and whether it was told silent or cut off. Kept in the state file.
struct PlaceClock: Codable, Equatable {
    /// The newest sample time from it.
    var lastAt: Int64
    /// How often it reports: its monitors' stated check interval, or the last gap seen between two
    /// of one monitor's samples from it, whichever is longer (ms).
    var intervalMs: Int64
    /// Whether that is known (stated by its samples, or seen as a gap): silence is judged only then,
    /// so an agent run every few minutes by cron is not told silent before its cadence is learnt.
    var intervalKnown = false
    /// Told silent: the time of its last sample before it went quiet (nil: it is not silent).
    var silentSince: Int64? = nil
    /// When it was told cut off (nil: it is not).
    var cutOffSince: Int64? = nil
    /// The clock when it was last heard from (nil: at `lastAt`). Silence is counted from the later
    /// of the two, so a place whose clock runs ahead (another agent's, by minutes) makes the others
    /// look silent once, not again after each of their reports; and an agent whose clock went back
    /// (its samples older than its last, skipped) is still heard.
    var heardAt: Int64? = nil

    /// Since when silence is counted.
    var quietSince: Int64 { max(lastAt, heardAt ?? lastAt) }
}

/// What one channel has been told about each monitor, and its cooldowns.
struct ChannelView: Codable, Equatable {
    /// Per monitor: the status last told and when (event time).
    var told: [String: Told] = [:]
    /// Per cooldown key: the event time of the last notification the channel accepted.
    var cooldowns: [String: Int64] = [:]
}

/// A status told to a channel, and when.
struct Told: Codable, Equatable {
    var status: String
    var at: Int64
    /// Reminders ("still down") told of this status (nil: none).
    var reminders: Int? = nil
}

/// A decided notification and the channels it goes to.
struct Decision {
    var notification: Notification
    var channels: [String]
}

/// Turns samples into notifications: transitions per monitor (with thresholds), then, once
/// per round, per channel: mutes, cooldowns per key, grouping and repeats. Where a round ends
/// is the caller's to say (`closeRound`), from the input's round marks; `add` closes one by the
/// samples' times only when asked to (input without marks).
///
/// Everything runs on event time, so a replay, one long stream and many short runs decide
/// the same notifications. A channel is told what changed since it was last told: a change
/// held back by a maintenance window is told when it ends, if it still holds; a change a
/// cooldown blocks is dropped (isitup's rule), or with `deferHeldBack` told when the
/// cooldown ends, if it still holds.
final class Decider {
    let policy: Policy
    /// The channels, `stdout` first.
    let channels: [String]
    /// The channels that are told of each monitor on its own, never in groups (Apple push,
    /// whose app opens the one monitor a notification names).
    let ungrouped: Set<String>
    private(set) var monitors: [String: MonitorTrack]
    private(set) var views: [String: ChannelView]
    /// Samples skipped because their monitor already had a sample as late (replays overlap).
    private(set) var staleSamples = 0

    /// Each agent (a named place): when it last reported, how often it does, and whether it was
    /// told silent or cut off.
    private(set) var agents: [String: PlaceClock]
    /// The newest event time seen: a sample's `at`, or a `tick` record's (time passing with no samples).
    private(set) var clock = Int64.min

    private var roundStart: Int64?
    private var roundOrder: [String] = []
    /// The confirmed status of each monitor of the round before the round (nil: first seen).
    private var roundBefore: [String: String?] = [:]
    private var roundLastAt: [String: Int64] = [:]
    /// The agents that sent samples in the open round, each with the monitors it reported, in order.
    private var roundAgents: [String: [String]] = [:]
    private var roundAgentOrder: [String] = []
    /// What the open round found of places (cut off, silent, back), told to every channel.
    private var placeNews: [Notification] = []
    /// The monitors waiting to be told until their places reported (`MonitorTrack.settleUntil`), and
    /// those expected every interval (`heartbeat`): the few each round's end looks at.
    private var settling: Set<String> = []
    private var heartbeats: Set<String> = []

    /// The channels reserved for escalation (`after=`), each with the age (ms) an outage or episode
    /// must reach before it is told there.
    let escalations: [String: Int64]
    /// Maintenance windows added from a script (`notify mute add`), set afresh by the run.
    var storedMutes: [MuteWindow] = []
    /// Monitors whose failure was held back because a parent was down: looked at again each round.
    private var heldByParent: Set<String> = []
    /// Failures held back behind a failing parent in this run (for --summary).
    private(set) var heldFailures = 0
    /// Cycles met in samples' `depends_on`, not yet reported (each the path, back to its start).
    var cycles: [[String]] = []
    /// Monitors whose cycle was reported in this run (reported once each).
    private var cycleReported: Set<String> = []
    /// Whether any monitor names parents (dependencies are looked at only then).
    private var anyDependencies = false

    init(
        policy: Policy, channels: [String], ungrouped: Set<String> = [], monitors: [String: MonitorTrack], views: [String: ChannelView],
        agents: [String: PlaceClock] = [:], escalations: [String: Int64] = [:]
    ) {
        self.policy = policy
        self.channels = channels
        self.ungrouped = ungrouped
        self.monitors = monitors
        self.views = views
        self.agents = agents
        self.escalations = escalations
        for channel in channels where self.views[channel] == nil { self.views[channel] = ChannelView() }
        for (monitor, track) in monitors {
            if track.settleUntil != nil { settling.insert(monitor) }
            if track.kind == Decider.heartbeatKind { heartbeats.insert(monitor) }
            if track.dependsOn != nil { anyDependencies = true }
            clock = max(clock, track.lastAt)
        }
        for agent in agents.values { clock = max(clock, agent.quietSince) }
    }

    /// The kind of a monitor that is expected to send a sample every check interval.
    static let heartbeatKind = PlaceRule.heartbeatKind
    /// An agent, or a heartbeat monitor, is silent after this many of its intervals without a sample.
    static let silentIntervals = PlaceRule.silentIntervals

    /// Whether a round is open.
    var roundOpen: Bool { roundStart != nil }

    /// Takes one sample; returns the notifications of the round it closed, if it closed one. With
    /// `roundByTime` (input without round marks), a sample whose `at` lies --group-wait or more
    /// from the open round's first closes that round first; otherwise only `closeRound` does.
    func add(_ sample: SampleEvent, roundByTime: Bool = true) -> [Decision] {
        if isStale(sample) {
            // Already seen (an overlapping replay, or an agent whose clock went back): it neither
            // counts nor moves the rounds; its agent was heard all the same.
            staleSamples += 1
            if let agent = sample.agent, agents[agent] != nil { agents[agent]!.heardAt = clock }
            return []
        }
        var decided: [Decision] = []
        if roundByTime, let start = roundStart, sample.at >= start + policy.groupWaitMs || sample.at < start - policy.groupWaitMs {
            decided = closeRound()
        }
        if sample.status == .unknown {
            // No information: neither confirms nor breaks a streak.
            return decided
        }
        if roundStart == nil { roundStart = sample.at }
        clock = max(clock, sample.at)
        if roundBefore[sample.monitor] == nil {
            roundOrder.append(sample.monitor)
            // A monitor still waiting for its places was never told anything: first seen, as far as channels know.
            let track = monitors[sample.monitor]
            roundBefore[sample.monitor] = .some(track?.settleUntil != nil ? nil : track?.confirmed)
        }
        roundLastAt[sample.monitor] = sample.at
        if let agent = sample.agent {
            if roundAgents[agent] == nil { roundAgentOrder.append(agent) }
            roundAgents[agent, default: []].append(sample.monitor)
        }
        take(sample)
        return decided
    }

    /// Whether a sample is no newer than its place's latest (an overlapping replay).
    private func isStale(_ sample: SampleEvent) -> Bool {
        guard let track = monitors[sample.monitor] else { return false }
        if let places = track.places { return places[sample.agent ?? ""].map { sample.at <= $0.lastAt } ?? false }
        return sample.agent == nil && sample.at <= track.lastAt
    }

    /// A track for a monitor or place first seen with `sample`.
    private func newTrack(_ sample: SampleEvent) -> MonitorTrack {
        MonitorTrack(name: sample.name, confirmed: policy.firstSampleIsBaseline ? sample.status.rawValue : "new", lastAt: sample.at)
    }

    /// Takes a sample: a monitor only ever seen from the local place is its place's track, exactly
    /// as before places existed; a sample from an agent (or of a monitor agents report) moves its
    /// place's track, and the monitor's is what the place rule says of them (`judge`).
    private func take(_ sample: SampleEvent) {
        if sample.agent == nil, monitors[sample.monitor]?.places == nil {
            let existing = monitors[sample.monitor]
            var track = existing ?? newTrack(sample)
            advance(&track, sample, isNew: existing == nil)
            note(sample, in: &track)
            monitors[sample.monitor] = track
            return
        }
        let place = sample.agent ?? ""
        let existing = monitors[sample.monitor]
        var track = existing ?? newTrack(sample)
        var places = track.places ?? [:]
        if let existing, existing.places == nil {
            // Seen from the local place alone until now: that history is the local place's.
            places[""] = existing
        }
        let known = places[place]
        var own = known ?? newTrack(sample)
        let previousAt = known?.lastAt
        advance(&own, sample, isNew: known == nil)
        places[place] = own
        track.places = places
        note(sample, in: &track)
        track.lastAt = max(track.lastAt, sample.at)
        if existing == nil, sample.agent != nil, !policy.firstSampleIsBaseline {
            track.settleUntil = sample.at &+ (track.intervalMs ?? PlaceRule.defaultIntervalMs)
            settling.insert(sample.monitor)
        }
        monitors[sample.monitor] = track
        if let agent = sample.agent {
            noteAgent(
                agent, at: sample.at, previousAt: previousAt,
                stated: sample.checkIntervalSeconds.map { PlaceRule.intervalMs(checkIntervalSeconds: $0) })
        }
        judge(sample.monitor)
    }

    /// What a sample says of its monitor beyond its status: its stated interval and kind.
    private func note(_ sample: SampleEvent, in track: inout MonitorTrack) {
        track.name = sample.name
        if let id = sample.monitorID { track.monitorID = id }
        if let target = sample.target { track.target = target }
        if let seconds = sample.checkIntervalSeconds { track.intervalMs = PlaceRule.intervalMs(checkIntervalSeconds: seconds) }
        if let kind = sample.kind {
            track.kind = kind
            if kind == Decider.heartbeatKind { heartbeats.insert(sample.monitor) } else { heartbeats.remove(sample.monitor) }
        }
        track.dependsOn = parents(sample)
        if track.dependsOn != nil { anyDependencies = true }
    }

    /// The parents a sample names (`depends_on`), or nil: none. A parent through which the monitor
    /// would be its own ancestor closes a cycle: the cycle is kept to report (`cycles`) and its links
    /// are set aside (that parent, and each link of the path back), so that a cycle holds no failure back.
    private func parents(_ sample: SampleEvent) -> [String]? {
        guard let named = sample.dependsOn else { return nil }
        // Depth first from each parent through the parents known: reaching the sample's monitor is a cycle.
        var path: [String] = []
        var seen: Set<String> = []
        func reaches(_ monitor: String) -> Bool {
            if monitor == sample.monitor { return true }
            guard seen.insert(monitor).inserted else { return false }
            path.append(monitor)
            for parent in monitors[monitor]?.dependsOn ?? [] where reaches(parent) { return true }
            path.removeLast()
            return false
        }
        var kept: [String] = []
        for parent in named {
            path.removeAll()
            guard reaches(parent) else {
                kept.append(parent)
                continue
            }
            for (index, child) in path.enumerated() {
                let link = index + 1 < path.count ? path[index + 1] : sample.monitor
                monitors[child]?.dependsOn?.removeAll { $0 == link }
                if monitors[child]?.dependsOn?.isEmpty == true { monitors[child]?.dependsOn = nil }
            }
            reportCycle([sample.monitor] + path + [sample.monitor])
        }
        return kept.isEmpty ? nil : kept
    }

    /// Keeps a cycle to report, once per monitor that met it.
    private func reportCycle(_ path: [String]) {
        guard cycleReported.insert(path[0]).inserted else { return }
        cycles.append(path)
    }

    /// The first parent of `monitor` that is down or error now (its real state, told or not), if any.
    func failingParent(_ monitor: String) -> String? {
        guard anyDependencies else { return nil }
        return monitors[monitor]?.dependsOn?.first { parent in
            guard let track = monitors[parent] else { return false }
            return track.settleUntil == nil && Decider.severity(track.confirmed) == 2
        }
    }

    /// How many monitors are failing (degraded or worse) behind `monitor`: its children that are, and
    /// theirs behind each child that is down or error, transitively, each counted once.
    func dependantsFailing(_ monitor: String) -> Int {
        guard anyDependencies else { return 0 }
        var children: [String: [String]] = [:]
        for (child, track) in monitors {
            for parent in track.dependsOn ?? [] { children[parent, default: []].append(child) }
        }
        var counted: Set<String> = [monitor]
        var queue = [monitor]
        while let next = queue.popLast() {
            for child in children[next] ?? [] where !counted.contains(child) {
                let severity = Decider.severity(monitors[child]?.confirmed)
                guard severity > 0 else { continue }
                counted.insert(child)
                if severity == 2 { queue.append(child) }
            }
        }
        return counted.count - 1
    }

    /// An agent reported: its clock moves on, and its cadence is learnt from the gap since its last
    /// sample of the same monitor (unless it was silent meanwhile).
    private func noteAgent(_ agent: String, at: Int64, previousAt: Int64?, stated: Int64?) {
        var known = agents[agent] ?? PlaceClock(lastAt: at, intervalMs: stated ?? PlaceRule.defaultIntervalMs)
        if let stated {
            known.intervalMs = max(known.intervalKnown ? known.intervalMs : 0, stated)
            known.intervalKnown = true
        }
        if let previousAt, known.silentSince == nil, at > previousAt,
            !known.intervalKnown || at - previousAt <= Decider.silentIntervals * known.intervalMs
        {
            known.intervalMs = max(stated ?? 0, at - previousAt)
            known.intervalKnown = true
        }
        known.lastAt = max(known.lastAt, at)
        known.heardAt = clock > known.lastAt ? clock : nil
        agents[agent] = known
    }

    /// Whether an agent is told cut off (its votes do not count until it is back).
    private func isCutOff(_ place: String) -> Bool { !place.isEmpty && agents[place]?.cutOffSince != nil }

    /// Makes a monitor seen from places what the place rule (`PlaceRule.judge`, with --quorum) says
    /// of its places' confirmed statuses; places told cut off do not vote. With one voting place the
    /// monitor is that place's track: its status, words, and when its episode began.
    private func judge(_ monitor: String) {
        guard var track = monitors[monitor], let places = track.places else { return }
        var reports: [PlaceReport] = []
        for (place, own) in places where own.confirmed != "new" && !isCutOff(place) {
            reports.append(
                PlaceReport(
                    agent: place.isEmpty ? nil : place, at: own.lastAt, status: SampleStatus(rawValue: own.confirmed) ?? .unknown,
                    reason: own.reason, message: own.message))
        }
        if track.settleUntil != nil, places.count > 1 {
            track.settleUntil = nil
            settling.remove(monitor)
        }
        defer { monitors[monitor] = track }
        guard !reports.isEmpty else { return }
        let verdict = PlaceRule.judge(reports, intervalMs: track.intervalMs ?? PlaceRule.defaultIntervalMs, quorum: policy.quorum)
        if verdict.fresh.count == 1, let only = places[verdict.fresh[0].agent ?? ""] {
            track.confirmed = only.confirmed
            track.since = only.since
            track.endedSince = only.endedSince
            track.message = only.message
            track.reason = only.reason
            track.checks = only.checks
            track.endedChecks = only.endedChecks
            if let target = only.target { track.target = target }
            return
        }
        let status = verdict.status.rawValue
        let before = Decider.severity(track.confirmed)
        let after = Decider.severity(status)
        if after > 0, before == 0 {
            // The episode began when the earliest of the places now not up began theirs.
            let starts = verdict.fresh.filter { $0.status != .up }.compactMap { places[$0.agent ?? ""]?.since }
            track.since = starts.min() ?? verdict.fresh.map(\.at).max()
            track.checks = nil
        } else if after == 0, before > 0 {
            track.endedSince = track.since
            track.since = nil
            track.endedChecks = nil
        }
        track.confirmed = status
        track.message = verdict.message
        track.reason = verdict.reason
    }

    /// Moves a track with one of its samples: streaks, thresholds, episodes (a monitor's, or one
    /// place's of it). `isNew`: the track was made for this sample.
    private func advance(_ track: inout MonitorTrack, _ sample: SampleEvent, isNew: Bool) {
        let wasOpen = !isNew && Decider.severity(track.confirmed) > 0
        defer { Decider.count(sample, in: &track, wasOpen: wasOpen) }
        let status = sample.status.rawValue
        track.name = sample.name
        track.lastAt = sample.at
        track.message = sample.message
        track.reason = sample.reason
        track.target = sample.target
        if let id = sample.monitorID { track.monitorID = id }
        switch sample.status {
        case .down, .error:
            if track.failStreak == 0 { track.failStart = sample.at }
            if track.badStreak == 0 { track.badStart = sample.at }
            track.failStreak += 1
            track.badStreak += 1
            track.upStreak = 0
            track.notFailingStreak = 0
        case .degraded:
            if track.badStreak == 0 { track.badStart = sample.at }
            track.failStreak = 0
            track.badStreak += 1
            track.upStreak = 0
            track.notFailingStreak += 1
        case .up:
            track.failStreak = 0
            track.badStreak = 0
            track.upStreak += 1
            track.notFailingStreak += 1
        case .unknown:
            return
        }
        if isNew && policy.firstSampleIsBaseline {
            // --baseline: the first sample is what the monitor is, not a change.
            if sample.status != .up { track.since = sample.at }
            return
        }
        let current = Decider.severity(track.confirmed)
        switch sample.status {
        case .down, .error:
            if current == 2 {
                track.confirmed = status  // down and error are one condition
            } else if track.failStreak >= policy.failureThreshold {
                if current == 0 { track.since = track.failStart }
                track.confirmed = status
            } else if current == 0, sample.episode != .ongoing, track.badStreak >= policy.failureThreshold {
                // Not yet down, but as many samples degraded or worse: degraded (notify(1), Thresholds).
                track.since = track.badStart
                track.confirmed = "degraded"
            }
        case .degraded:
            // An anomaly episode (detect-anomaly's) is one degradation: told at its onset, which the
            // detector has judged (no threshold), and not again for the samples inside it.
            if current == 0, sample.episode == .onset || (sample.episode != .ongoing && track.badStreak >= policy.failureThreshold) {
                track.since = track.badStart
                track.confirmed = status
            } else if current == 2, track.notFailingStreak >= policy.successThreshold {
                track.confirmed = status
            }
        case .up:
            // The sample that ends an episode ends the degradation it began: the detector has
            // already waited for quiet samples.
            if current > 0, track.upStreak >= policy.successThreshold || (current == 1 && sample.episode == .end) {
                track.endedSince = track.since
                track.since = nil
                track.confirmed = status
            } else if track.confirmed == "new" {
                track.confirmed = status
            }
        case .unknown:
            break
        }
    }

    /// Counts a sample in its track's open episode (`EpisodeChecks`): an episode that opens counts the
    /// streak that confirmed it; one that closes is kept for the recovery's words.
    private static func count(_ sample: SampleEvent, in track: inout MonitorTrack, wasOpen: Bool) {
        guard sample.status != .unknown else { return }
        let severity = Decider.severity(track.confirmed)
        if severity > 0, !wasOpen {
            let streak = severity == 2 ? track.failStreak : track.badStreak
            track.checks = EpisodeChecks(failed: min(track.failStreak, streak), notUp: max(streak, 1))
        } else if severity > 0 {
            if sample.status != .up { track.checks?.notUp += 1 }
            if sample.status == .down || sample.status == .error { track.checks?.failed += 1 }
        } else if wasOpen {
            track.endedChecks = track.checks
            track.checks = nil
        }
    }

    /// 0 up (or not yet seen), 1 degraded, 2 down or error.
    static func severity(_ status: String?) -> Int {
        switch status {
        case "degraded": return 1
        case "down", "error": return 2
        default: return 0
        }
    }

    /// Closes the open round and decides its notifications.
    func closeRound() -> [Decision] {
        defer {
            roundStart = nil
            roundOrder.removeAll()
            roundBefore.removeAll()
            roundLastAt.removeAll()
            roundAgents.removeAll()
            roundAgentOrder.removeAll()
            placeNews.removeAll()
        }
        guard roundStart != nil else { return [] }
        judgePlaces()
        // A failure held back behind its parent is told once no parent is down, if it still holds.
        for monitor in heldByParent.sorted() where failingParent(monitor) == nil {
            heldByParent.remove(monitor)
            if monitors[monitor] != nil { joinRound(monitor, before: nil) }
        }
        var merged: [Decision] = []
        for channel in channels {
            for notification in decide(for: channel) + placeNews {
                if let index = merged.firstIndex(where: { $0.notification == notification }) {
                    merged[index].channels.append(channel)
                } else {
                    merged.append(Decision(notification: notification, channels: [channel]))
                }
            }
        }
        return merged
    }

    /// Time passed with no sample (a `tick` record's `at`, or the end of the input's clock): agents
    /// and heartbeat monitors that went silent, and monitors whose places had their interval to
    /// report, are decided in a round of their own. Returns its notifications.
    func advanceClock(to at: Int64) -> [Decision] {
        var decided: [Decision] = []
        if roundOpen, !roundAgents.isEmpty || !roundOrder.isEmpty { decided = closeRound() }
        clock = max(clock, at)
        roundStart = clock
        return decided + closeRound()
    }

    /// The input ended: every monitor still waiting for its places is told now, as it stands.
    func endOfInput() {
        for monitor in settling.sorted() {
            guard var track = monitors[monitor] else { continue }
            track.settleUntil = nil
            monitors[monitor] = track
            joinRound(monitor, before: nil)
        }
        settling.removeAll()
    }

    /// Adds a monitor to the open round (opening one at the clock), as a sample of it would.
    private func joinRound(_ monitor: String, before: String?) {
        if roundStart == nil { roundStart = clock }
        if roundBefore[monitor] == nil {
            roundOrder.append(monitor)
            roundBefore[monitor] = .some(before)
        }
        roundLastAt[monitor] = max(roundLastAt[monitor] ?? Int64.min, monitors[monitor]?.lastAt ?? clock)
    }

    /// What the round's end finds of places, in this order: agents cut off or back (their monitors
    /// judged again without or with their votes), agents silent or reporting again, heartbeat
    /// monitors silent, monitors whose places had their interval to report.
    private func judgePlaces() {
        for agent in roundAgentOrder { judgeCutOff(agent) }
        for agent in agents.keys.sorted() { judgeSilence(agent) }
        for monitor in heartbeats.sorted() { judgeHeartbeat(monitor) }
        for monitor in settling.sorted() {
            guard var track = monitors[monitor], let until = track.settleUntil, clock >= until else { continue }
            track.settleUntil = nil
            monitors[monitor] = track
            settling.remove(monitor)
            joinRound(monitor, before: nil)
        }
    }

    /// An agent whose round shows at least two monitors, and more than half of those another fresh
    /// place also checks, failing from it while every other fresh place sees them not failing, is
    /// cut off (notify(1), PLACES); one told cut off whose round no longer shows that is back.
    private func judgeCutOff(_ agent: String) {
        guard var known = agents[agent], let reported = roundAgents[agent] else { return }
        var seen = 0
        var failing: [String] = []
        for monitor in Set(reported).sorted() {
            guard let track = monitors[monitor], let places = track.places, let own = places[agent], own.confirmed != "new" else {
                continue
            }
            let interval = track.intervalMs ?? PlaceRule.defaultIntervalMs
            let others = places.filter { place, other in
                place != agent && other.confirmed != "new" && !isCutOff(place)
                    && PlaceRule.isFresh(other.lastAt, newest: own.lastAt, intervalMs: interval)
            }
            guard !others.isEmpty else { continue }
            seen += 1
            if Decider.severity(own.confirmed) == 2, others.values.allSatisfy({ Decider.severity($0.confirmed) < 2 }) {
                failing.append(monitor)
            }
        }
        let cut = failing.count >= 2 && failing.count * 2 > seen
        let at = reported.compactMap { monitors[$0]?.places?[agent]?.lastAt }.max() ?? clock
        if cut, known.cutOffSince == nil {
            known.cutOffSince = at
            agents[agent] = known
            let changes = failing.map { monitor -> MonitorChange in
                let own = monitors[monitor]!.places![agent]!
                return MonitorChange(
                    monitor: monitor, name: monitors[monitor]!.name, status: own.confirmed, previousStatus: nil, since: own.since,
                    message: own.message, reason: own.reason, target: monitors[monitor]!.target, monitorID: monitors[monitor]!.monitorID)
            }
            placeNews.append(
                Notification(
                    place: agent, event: .placeCutOff, key: "place.\(agent).cut_off", at: at, monitors: changes, title: "Agent CUT OFF",
                    body: "\(agent) is cut off: \(failing.count) of \(seen) monitors fail from there and not from other places"))
        } else if !cut, seen > 0, let since = known.cutOffSince {
            known.cutOffSince = nil
            agents[agent] = known
            placeNews.append(
                Notification(
                    place: agent, event: .placeBack, key: "place.\(agent).cut_off", at: at, monitors: [], title: "Agent BACK",
                    body: "\(agent) reaches its monitors again after \(DurationText.describe(milliseconds: max(0, at - since)))"))
        } else {
            return
        }
        // Its votes count again, or no longer: its monitors judged anew.
        for monitor in Set(reported).sorted() {
            judge(monitor)
            joinRound(monitor, before: roundBefore[monitor] ?? nil)
        }
    }

    /// An agent that sent nothing for three of its intervals (by the clock) is told silent, once;
    /// one told silent that reported in this round is told back.
    private func judgeSilence(_ agent: String) {
        guard var known = agents[agent] else { return }
        if let since = known.silentSince {
            guard roundAgents[agent] != nil else { return }
            known.silentSince = nil
            agents[agent] = known
            placeNews.append(
                Notification(
                    place: agent, event: .placeBack, key: "place.\(agent).silent", at: known.lastAt, monitors: [], title: "Agent BACK",
                    body: "\(agent) reports again after \(DurationText.describe(milliseconds: max(0, known.lastAt - since)))"))
            return
        }
        guard known.intervalKnown, clock - known.quietSince > Decider.silentIntervals * known.intervalMs else { return }
        known.silentSince = known.lastAt
        agents[agent] = known
        placeNews.append(
            Notification(
                place: agent, event: .placeSilent, key: "place.\(agent).silent", at: clock, monitors: [], title: "Agent SILENT",
                body: "\(agent) has sent nothing for \(DurationText.describe(milliseconds: clock - known.quietSince)) "
                    + "(it reports every \(DurationText.describe(milliseconds: known.intervalMs)))", since: known.lastAt))
    }

    /// A heartbeat monitor (kind `heartbeat`) with no sample for three of its intervals is down,
    /// reason `silent`, from one interval after its last sample; its next sample decides it again.
    private func judgeHeartbeat(_ monitor: String) {
        guard var track = monitors[monitor], track.kind == Decider.heartbeatKind, Decider.severity(track.confirmed) < 2 else { return }
        let interval = track.intervalMs ?? PlaceRule.defaultIntervalMs
        guard PlaceRule.isSilent(lastAt: track.lastAt, now: clock, intervalMs: interval) else { return }
        let before = track.settleUntil != nil ? nil : track.confirmed
        track.settleUntil = nil
        settling.remove(monitor)
        if Decider.severity(track.confirmed) == 0 { track.since = PlaceRule.silentSince(lastAt: track.lastAt, intervalMs: interval) }
        track.confirmed = "down"
        track.reason = PlaceRule.silentReason
        track.message = PlaceRule.silentWords(lastAt: track.lastAt, intervalMs: interval)
        monitors[monitor] = track
        joinRound(monitor, before: before)
        roundLastAt[monitor] = clock
    }

    /// Records that `channel` accepted `notification`: its cooldown key starts now (event time).
    func accepted(_ notification: Notification, by channel: String) {
        guard views[channel] != nil else { return }
        let previous = views[channel]!.cooldowns[notification.key] ?? Int64.min
        views[channel]!.cooldowns[notification.key] = max(previous, notification.at)
    }

    private func change(_ monitor: String, told: Told?) -> MonitorChange {
        let track = monitors[monitor]!
        let previous = told.flatMap { $0.status == "new" ? nil : $0.status }
        var change = MonitorChange(
            monitor: monitor, name: track.name, status: track.confirmed, previousStatus: previous,
            since: track.confirmed == "up" ? track.endedSince : track.since,
            message: track.message, reason: track.reason, target: track.target, monitorID: track.monitorID)
        change.checks = track.confirmed == "up" ? track.endedChecks : track.checks
        if Decider.severity(track.confirmed) == 2 {
            let dependants = dependantsFailing(monitor)
            if dependants > 0 { change.dependants = dependants }
        }
        return change
    }

    /// The maintenance window muting `monitor` at `at`: one of --mute's, or one added from a script.
    private func mute(for monitor: String, at: Int64) -> MuteWindow? {
        policy.mute(for: monitor, at: at) ?? storedMutes.first { $0.covers(monitor, at: at) }
    }

    private func coolingDown(_ view: ChannelView, _ key: String, at: Int64) -> Bool {
        guard let last = view.cooldowns[key] else { return false }
        return at - last < policy.cooldownMs
    }

    private func decide(for channel: String) -> [Notification] {
        var view = views[channel]!
        defer { views[channel] = view }
        let afterMs = escalations[channel]
        var failing: [String] = []
        var degraded: [String] = []
        var recovered: [String] = []
        var stillDown: [String] = []
        var stillDegraded: [String] = []
        var told: [String: Told] = [:]
        for monitor in roundOrder {
            guard let track = monitors[monitor], track.confirmed != "new", track.settleUntil == nil else { continue }
            let at = roundLastAt[monitor] ?? track.lastAt
            let before = roundBefore[monitor] ?? nil
            // A channel that has not been told about the monitor knows what it was before this
            // round; a monitor first seen now was nothing yet ("new", isitup's unknown), or with
            // --baseline what its first sample said.
            let known = view.told[monitor] ?? Told(status: before ?? (policy.firstSampleIsBaseline ? track.confirmed : "new"), at: at)
            view.told[monitor] = known
            told[monitor] = known
            if mute(for: monitor, at: at) != nil { continue }
            let now = Decider.severity(track.confirmed)
            let then = Decider.severity(known.status)
            if now == then, known.status == "new" {
                // First seen up: nothing to tell, but from now on the channel knows it was up.
                view.told[monitor] = Told(status: track.confirmed, at: at)
                told[monitor] = view.told[monitor]
            }
            if now > 0, failingParent(monitor) != nil {
                // A parent is down: this failure is the parent's, held back (and no reminder of it)
                // until no parent is down; a recovery is never held.
                if now != then, heldByParent.insert(monitor).inserted { heldFailures += 1 }
                continue
            }
            if let afterMs, now > 0, then == 0, at - (track.since ?? at) < afterMs {
                // A channel reserved for escalation hears of an outage once it is old enough.
                continue
            }
            if now != then {
                switch now {
                case 2: failing.append(monitor)
                case 1: degraded.append(monitor)
                default: recovered.append(monitor)
                }
            } else if now > 0, afterMs == nil, let repeatMs = policy.repeatIntervalMs, at - known.at >= repeatMs,
                (known.reminders ?? 0) < (policy.repeatMax ?? Int.max)
            {
                if now == 2 { stillDown.append(monitor) } else { stillDegraded.append(monitor) }
            }
        }
        var out: [Notification] = []
        func lastAt(_ monitors: [String]) -> Int64 { monitors.map { roundLastAt[$0] ?? 0 }.max() ?? 0 }
        func tell(_ notification: Notification) {
            let reminder = notification.event == .stillDown || notification.event == .stillDegraded
            for change in notification.monitors {
                let reminders = reminder ? (view.told[change.monitor]?.reminders ?? 0) + 1 : nil
                view.told[change.monitor] = Told(status: change.status, at: notification.at, reminders: reminders)
            }
            out.append(notification)
        }
        // isitup's grouping, per round: two or more monitors newly into down (or degraded) make
        // one notification under the group's key; one alone is told on its own, under its own key
        // and cooldown, whatever was told before. A channel that never groups (Apple push) is
        // told of each monitor on its own.
        let groupMin = ungrouped.contains(channel) ? Int.max : policy.groupMin
        // Into down or error, then into degraded.
        for (list, groupKey, suffix, event) in [
            (failing, "groupedOutage", "", NotificationEvent.down),
            (degraded, "groupedDegrading", ".degrading", .degraded),
        ] {
            let (notifications, blocked) = decideImpact(
                newly: list, groupMin: groupMin, groupKey: groupKey, keySuffix: suffix,
                event: event, view: view, told: told, lastAt: lastAt, escalation: afterMs)
            notifications.forEach(tell)
            if !policy.deferHeldBack {
                // isitup: a notification the cooldown blocks is dropped; the change counts as told.
                for monitor in blocked { view.told[monitor] = Told(status: monitors[monitor]!.confirmed, at: lastAt([monitor])) }
            }
        }
        // Back to up: no cooldown (a recovery is never held back behind its outage). With
        // --no-recoveries (isitup's rule) nothing is said, but the channel knows it is up.
        if !policy.tellsRecoveries {
            for monitor in recovered { view.told[monitor] = Told(status: monitors[monitor]!.confirmed, at: lastAt([monitor])) }
        } else if !recovered.isEmpty {
            if recovered.count >= groupMin {
                tell(
                    Notification(
                        event: .recovered, grouped: true, key: "groupedRecovery", at: lastAt(recovered),
                        monitors: recovered.map { change($0, told: told[$0]) }))
            } else {
                for monitor in recovered {
                    tell(
                        Notification(
                            event: .recovered, grouped: false, key: monitor + ".recovered", at: lastAt([monitor]),
                            monitors: [change(monitor, told: told[monitor])]))
                }
            }
        }
        // Still down after the repeat interval.
        for (list, event, groupKey, suffix) in [
            (stillDown, NotificationEvent.stillDown, "groupedOutage", ""),
            (stillDegraded, .stillDegraded, "groupedDegrading", ".degrading"),
        ] where !list.isEmpty {
            if list.count >= groupMin {
                tell(
                    Notification(
                        event: event, grouped: true, key: groupKey, at: lastAt(list),
                        monitors: list.map { change($0, told: told[$0]) }))
            } else {
                for monitor in list {
                    tell(
                        Notification(
                            event: event, grouped: false, key: monitor + suffix, at: lastAt([monitor]),
                            monitors: [change(monitor, told: told[monitor])]))
                }
            }
        }
        return out
    }

    /// Into down (or degraded), isitup's `NotificationGrouper.decide`: `groupMin` or more newly
    /// impacted monitors make one grouped notification under the group key; fewer go one by one,
    /// each under its own key. A key cooling down blocks its news. Returns the notifications and
    /// the monitors whose news was blocked.
    private func decideImpact(
        newly: [String], groupMin: Int, groupKey: String, keySuffix: String, event: NotificationEvent,
        view: ChannelView, told: [String: Told], lastAt: ([String]) -> Int64, escalation: Int64?
    ) -> ([Notification], [String]) {
        guard !newly.isEmpty else { return ([], []) }
        if newly.count >= groupMin {
            let at = lastAt(newly)
            if coolingDown(view, groupKey, at: at) { return ([], newly) }
            return (
                [
                    Notification(
                        event: event, grouped: true, key: groupKey, at: at, monitors: newly.map { change($0, told: told[$0]) },
                        escalation: escalation)
                ], []
            )
        }
        var out: [Notification] = []
        var blocked: [String] = []
        for monitor in newly {
            let at = lastAt([monitor])
            if coolingDown(view, monitor + keySuffix, at: at) {
                blocked.append(monitor)
                continue
            }
            out.append(
                Notification(
                    event: event, grouped: false, key: monitor + keySuffix, at: at, monitors: [change(monitor, told: told[monitor])],
                    escalation: escalation))
        }
        return (out, blocked)
    }
}

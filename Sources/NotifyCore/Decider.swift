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

    private var roundStart: Int64?
    private var roundOrder: [String] = []
    /// The confirmed status of each monitor of the round before the round (nil: first seen).
    private var roundBefore: [String: String?] = [:]
    private var roundLastAt: [String: Int64] = [:]

    init(policy: Policy, channels: [String], ungrouped: Set<String> = [], monitors: [String: MonitorTrack], views: [String: ChannelView]) {
        self.policy = policy
        self.channels = channels
        self.ungrouped = ungrouped
        self.monitors = monitors
        self.views = views
        for channel in channels where self.views[channel] == nil { self.views[channel] = ChannelView() }
    }

    /// Whether a round is open.
    var roundOpen: Bool { roundStart != nil }

    /// Takes one sample; returns the notifications of the round it closed, if it closed one. With
    /// `roundByTime` (input without round marks), a sample whose `at` lies --group-wait or more
    /// from the open round's first closes that round first; otherwise only `closeRound` does.
    func add(_ sample: SampleEvent, roundByTime: Bool = true) -> [Decision] {
        if let track = monitors[sample.monitor], sample.at <= track.lastAt {
            // Already seen (an overlapping replay): it neither counts nor moves the rounds.
            staleSamples += 1
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
        if roundBefore[sample.monitor] == nil {
            roundOrder.append(sample.monitor)
            roundBefore[sample.monitor] = .some(monitors[sample.monitor]?.confirmed)
        }
        roundLastAt[sample.monitor] = sample.at
        take(sample)
        return decided
    }

    private func take(_ sample: SampleEvent) {
        let status = sample.status.rawValue
        var track =
            monitors[sample.monitor]
            ?? MonitorTrack(
                name: sample.name, confirmed: policy.firstSampleIsBaseline ? status : "new",
                lastAt: sample.at)
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
        let isNew = monitors[sample.monitor] == nil
        defer { monitors[sample.monitor] = track }
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
        }
        guard roundStart != nil else { return [] }
        var merged: [Decision] = []
        for channel in channels {
            for notification in decide(for: channel) {
                if let index = merged.firstIndex(where: { $0.notification == notification }) {
                    merged[index].channels.append(channel)
                } else {
                    merged.append(Decision(notification: notification, channels: [channel]))
                }
            }
        }
        return merged
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
        return MonitorChange(
            monitor: monitor, name: track.name, status: track.confirmed, previousStatus: previous,
            since: track.confirmed == "up" ? track.endedSince : track.since,
            message: track.message, reason: track.reason, target: track.target, monitorID: track.monitorID)
    }

    private func coolingDown(_ view: ChannelView, _ key: String, at: Int64) -> Bool {
        guard let last = view.cooldowns[key] else { return false }
        return at - last < policy.cooldownMs
    }

    private func decide(for channel: String) -> [Notification] {
        var view = views[channel]!
        defer { views[channel] = view }
        var failing: [String] = []
        var degraded: [String] = []
        var recovered: [String] = []
        var stillDown: [String] = []
        var stillDegraded: [String] = []
        var told: [String: Told] = [:]
        for monitor in roundOrder {
            guard let track = monitors[monitor], track.confirmed != "new" else { continue }
            let at = roundLastAt[monitor] ?? track.lastAt
            let before = roundBefore[monitor] ?? nil
            // A channel that has not been told about the monitor knows what it was before this
            // round; a monitor first seen now was nothing yet ("new", isitup's unknown), or with
            // --baseline what its first sample said.
            let known = view.told[monitor] ?? Told(status: before ?? (policy.firstSampleIsBaseline ? track.confirmed : "new"), at: at)
            view.told[monitor] = known
            told[monitor] = known
            if policy.mute(for: monitor, at: at) != nil { continue }
            let now = Decider.severity(track.confirmed)
            let then = Decider.severity(known.status)
            if now == then, known.status == "new" {
                // First seen up: nothing to tell, but from now on the channel knows it was up.
                view.told[monitor] = Told(status: track.confirmed, at: at)
                told[monitor] = view.told[monitor]
            }
            if now != then {
                switch now {
                case 2: failing.append(monitor)
                case 1: degraded.append(monitor)
                default: recovered.append(monitor)
                }
            } else if now > 0, let repeatMs = policy.repeatIntervalMs, at - known.at >= repeatMs {
                if now == 2 { stillDown.append(monitor) } else { stillDegraded.append(monitor) }
            }
        }
        var out: [Notification] = []
        func lastAt(_ monitors: [String]) -> Int64 { monitors.map { roundLastAt[$0] ?? 0 }.max() ?? 0 }
        func tell(_ notification: Notification) {
            for change in notification.monitors {
                view.told[change.monitor] = Told(status: change.status, at: notification.at)
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
                event: event, view: view, told: told, lastAt: lastAt)
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
        view: ChannelView, told: [String: Told], lastAt: ([String]) -> Int64
    ) -> ([Notification], [String]) {
        guard !newly.isEmpty else { return ([], []) }
        if newly.count >= groupMin {
            let at = lastAt(newly)
            if coolingDown(view, groupKey, at: at) { return ([], newly) }
            return (
                [Notification(event: event, grouped: true, key: groupKey, at: at, monitors: newly.map { change($0, told: told[$0]) })], []
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
                    event: event, grouped: false, key: monitor + keySuffix, at: at, monitors: [change(monitor, told: told[monitor])]))
        }
        return (out, blocked)
    }
}

import VitalsCrypto
import VitalsKit

/// What a notification says happened.
enum NotificationEvent: String, Codable, Sendable {
    /// Into down or error (isitup's down/error; OnlineTracker's "Monitor DOWN").
    case down
    /// Into degraded (isitup's degrading).
    case degraded
    /// Back to up (OnlineTracker's recovery).
    case recovered
    /// Still down after the repeat interval.
    case stillDown = "still_down"
    /// Still degraded after the repeat interval.
    case stillDegraded = "still_degraded"
    /// An agent sees most of its monitors fail while other places see them up: it is cut off, and
    /// its votes do not count until it is back.
    case placeCutOff = "place_cut_off"
    /// An agent sent nothing for three of its intervals.
    case placeSilent = "place_silent"
    /// An agent told cut off or silent reaches its monitors, or reports, again.
    case placeBack = "place_back"

    /// Whether the event is about a place (an agent), not about monitors.
    var isPlace: Bool { self == .placeCutOff || self == .placeSilent || self == .placeBack }
}

/// One monitor's part in a notification.
struct MonitorChange: Codable, Equatable, Sendable {
    var monitor: String
    var name: String
    /// The status now.
    var status: String
    /// The status the channel knew before (nil for a monitor first seen not up: it was unknown).
    var previousStatus: String?
    /// When the episode (the outage, the degradation) began; for a recovery, when the one that ended began.
    var since: Int64?
    /// The sample's words (OnlineTracker's `details`).
    var message: String?
    var reason: String?
    var target: String?
    /// The integer id of store-samples' views, when the samples came through store-samples.
    var monitorID: Int? = nil
    /// How many checks of the episode failed (nil where they are not one count: several places).
    var checks: EpisodeChecks? = nil
    /// Monitors failing behind this one (its dependants, transitively), when it is down.
    var dependants: Int? = nil
}

/// One notification: decided once, delivered to one or more channels.
struct Notification: Codable, Equatable, Sendable {
    /// Stable across runs and retries: the same decision always gets the same id.
    var id: String
    /// The event time: the `at` of the sample that decided it.
    var at: Int64
    var event: NotificationEvent
    /// Several monitors in one notification (isitup's grouped outage or degradation).
    var grouped: Bool
    /// The cooldown key: the monitor, `MONITOR.degrading`, `groupedOutage`, `groupedDegrading`;
    /// `MONITOR.recovered`, `groupedRecovery` for recoveries (which have no cooldown).
    var key: String
    var monitors: [MonitorChange]
    /// OnlineTracker's alert title: "Monitor DOWN", "3 services down".
    var title: String
    /// OnlineTracker's alert body: "Google DNS is not responding".
    var body: String
    /// The agent a place event is about (nil for a monitor's notification).
    var place: String? = nil
    /// For a channel reserved for escalation (`after=`): the age (ms) the outage had to reach.
    var escalation: Int64? = nil

    /// Builds a notification, its words and its id; `escalation` for one told to a channel
    /// reserved for outages older than that (ms).
    init(event: NotificationEvent, grouped: Bool, key: String, at: Int64, monitors: [MonitorChange], escalation: Int64? = nil) {
        self.event = event
        self.grouped = grouped
        self.key = key
        self.at = at
        self.monitors = monitors
        self.escalation = escalation
        (title, body) = Notification.words(event: event, grouped: grouped, monitors: monitors, at: at, escalated: escalation != nil)
        var identity = "\(event.rawValue)|\(key)|\(at)"
        for change in monitors { identity += "|" + change.monitor }
        // Where earlier versions listed the monitors that joined an open group: kept, so that the
        // same decision keeps its id.
        identity += "|+"
        if let escalation { identity += "|after \(escalation)" }
        id = "n_" + String(SHA256.hexDigest(Array(identity.utf8)).prefix(20))
    }

    /// A notification about a place (`NotificationEvent.isPlace`): grouped, under the key
    /// `place.AGENT.cut_off` or `place.AGENT.silent` (a `place_back` has the key of what ended), with
    /// the monitors it concerns (those a cut-off place sees failing; none for silence) and words given.
    /// `since`, for silence: the agent's last sample, part of the id, since the clock that judges
    /// silence can stand still (another place's samples ahead of it) while one agent goes silent,
    /// reports and goes silent again: two decisions at one `at`, which must not share an id.
    init(
        place: String, event: NotificationEvent, key: String, at: Int64, monitors: [MonitorChange], title: String, body: String,
        since: Int64? = nil
    ) {
        self.event = event
        grouped = true
        self.key = key
        self.at = at
        self.monitors = monitors
        self.title = title
        self.body = body
        self.place = place
        var identity = "\(event.rawValue)|\(key)|\(at)|\(place)"
        for change in monitors { identity += "|" + change.monitor }
        if let since { identity += "|since \(since)" }
        id = "n_" + String(SHA256.hexDigest(Array(identity.utf8)).prefix(20))
    }

    /// The status the notification reports: down, error, degraded or up.
    var status: String {
        switch event {
        case .placeCutOff, .placeSilent: return "down"
        case .recovered, .placeBack: return "up"
        case .degraded, .stillDegraded: return "degraded"
        case .down, .stillDown:
            return monitors.count == 1 ? monitors[0].status : "down"
        }
    }

    /// The single monitor, when there is one.
    var single: MonitorChange? { grouped ? nil : monitors.first }

    /// The text most channels show: the body and, for one monitor, the sample's words.
    var text: String {
        if let single, let message = single.message, !message.isEmpty { return body + ": " + message }
        return body
    }

    /// Whether its words state the episode's checks: reminders, recoveries and escalations.
    var statesChecks: Bool {
        event == .recovered || event == .stillDown || event == .stillDegraded || escalation != nil
    }

    /// Severity for channels that rank messages.
    var isBad: Bool { event != .recovered && event != .placeBack }

    private static func words(event: NotificationEvent, grouped: Bool, monitors: [MonitorChange], at: Int64, escalated: Bool)
        -> (String, String)
    {
        if grouped {
            let count = monitors.count
            let title: String
            switch event {
            case .down: title = "\(count) services down"
            case .degraded: title = "\(count) services degraded"
            case .recovered: title = "\(count) services recovered"
            case .stillDown: title = "\(count) services still down"
            case .stillDegraded: title = "\(count) services still degraded"
            case .placeCutOff, .placeSilent, .placeBack: title = ""
            }
            return (title, nameList(monitors.map(\.name)))
        }
        let change = monitors[0]
        let name = change.name
        // "for 42m, 14 failed checks": how long the episode has lasted, and how many checks failed in it.
        let length = change.since.map { " for " + DurationText.describe(milliseconds: max(0, at - $0)) } ?? ""
        let checks = change.checks.map { ", " + $0.words } ?? ""
        switch event {
        case .down where escalated: return ("Monitor DOWN", "\(name) has been down\(length)\(checks)")
        case .degraded where escalated: return ("Monitor DEGRADED", "\(name) has been degraded\(length)\(checks)")
        case .down:
            let dependants = change.dependants.map { "; \($0) \($0 == 1 ? "dependant" : "dependants") affected" } ?? ""
            return ("Monitor DOWN", "\(name) is not responding\(dependants)")
        case .degraded:
            let better = change.previousStatus == "down" || change.previousStatus == "error"
            return ("Monitor DEGRADED", better ? "\(name) answers again, but degraded" : "\(name) is degraded")
        case .recovered:
            if let since = change.since, at > since {
                return ("Monitor RECOVERED", "\(name) is up again after \(DurationText.describe(milliseconds: at - since))\(checks)")
            }
            return ("Monitor RECOVERED", "\(name) is up again")
        case .stillDown:
            return ("Monitor still DOWN", "\(name) has been down\(length)\(checks)")
        case .stillDegraded:
            return ("Monitor still DEGRADED", "\(name) has been degraded\(length)\(checks)")
        case .placeCutOff, .placeSilent, .placeBack:
            return ("", "")  // a place's words are given with it (`init(place:...)`)
        }
    }

    /// `a, b, c`; past twenty names, `a, b, ... and 12 more`.
    static func nameList(_ names: [String]) -> String {
        let shown = 20
        if names.count > shown {
            return names.prefix(shown).joined(separator: ", ") + " and \(names.count - shown) more"
        }
        return names.joined(separator: ", ")
    }
}

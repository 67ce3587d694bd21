import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// When and how notifications are decided: isitup's cooldown and grouping, Gatus's thresholds,
/// a repeat interval and maintenance windows. Times are event times (the samples' `at`).
struct Policy {
    /// isitup's cooldown per key and channel: 60 s.
    var cooldownMs: Int64 = 60_000
    /// isitup drops a notification its cooldown blocks (the default); with `deferHeldBack`, the
    /// change is told when the cooldown ends, if it still holds (`--cooldown-mode defer`).
    var deferHeldBack = false
    /// isitup's grouping: two or more monitors newly impacted in one round make one notification.
    var groupMin = 2
    /// The length of a round of input without round marks, from its first sample's `at`.
    var groupWaitMs: Int64 = 2_000
    /// Consecutive failing samples before a monitor is down.
    var failureThreshold = 1
    /// Consecutive better samples before a monitor is recovered (or improved to degraded).
    var successThreshold = 1
    /// Re-send a still-open outage this often (nil: never).
    var repeatIntervalMs: Int64?
    /// At most this many reminders of one outage per channel (nil: no limit).
    var repeatMax: Int?
    /// Take a monitor's first sample as its baseline, not as news (`--baseline`). By default a
    /// monitor starts unknown, as isitup's services do, and a first sample that is not up is news.
    var firstSampleIsBaseline = false
    /// Maintenance windows.
    var mutes: [MuteWindow] = []
    /// Tell recoveries, as OnlineTracker does (the default); isitup told failures and
    /// degradations only (`--no-recoveries`).
    var tellsRecoveries = true
    /// How many of a monitor's fresh places must agree on its status (`PlaceRule`, --quorum).
    var quorum = Quorum.majority

    /// The window muting `monitor` at `at`, if any.
    func mute(for monitor: String, at: Int64) -> MuteWindow? {
        mutes.first { $0.covers(monitor, at: at) }
    }
}

/// A maintenance window: `MONITOR[,MONITOR...]@START/DURATION`; monitors may be shell patterns (`db-*`, `*`).
struct MuteWindow: Equatable {
    /// Monitor ids or patterns.
    var monitors: [String]
    /// Start, milliseconds since the epoch.
    var start: Int64
    /// End (exclusive).
    var end: Int64
    /// The text as given, for messages.
    var text: String
    /// Why (a window added from a script may say).
    var reason: String? = nil

    /// Whether the window mutes `monitor` at `at`.
    func covers(_ monitor: String, at: Int64) -> Bool {
        guard at >= start, at < end else { return false }
        return monitors.contains { pattern in
            pattern == monitor || (pattern.contains(where: { "*?[".contains($0) }) && fnmatch(pattern, monitor, 0) == 0)
        }
    }

    /// Parses `MONITOR[,...]@START/DURATION` (START in RFC 3339, DURATION as `2h`, `90m`);
    /// `START/END` with an RFC 3339 end is accepted too.
    static func parse(_ text: String) -> Result<MuteWindow, UsageError> {
        let trimmed = text.trimmingSpaces
        guard let at = trimmed.lastIndex(of: "@") else {
            return .failure(
                UsageError("a mute is MONITOR[,MONITOR...]@START/DURATION (e.g. db,api@2026-01-27T22:00:00Z/2h), not '\(text)'"))
        }
        let monitors = trimmed[..<at].split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
        guard !monitors.isEmpty else { return .failure(UsageError("the mute '\(text)' names no monitor before '@'")) }
        let window = trimmed[trimmed.index(after: at)...]
        guard let slash = window.lastIndex(of: "/") else {
            return .failure(UsageError("the mute '\(text)' needs START/DURATION after '@'"))
        }
        let startText = String(window[..<slash])
        let lengthText = String(window[window.index(after: slash)...])
        guard let start = Timestamp.parse(startText) else {
            return .failure(UsageError("the mute '\(text)' starts at '\(startText)', which is not an RFC 3339 time"))
        }
        let end: Int64
        if let duration = DurationText.parseMilliseconds(lengthText), duration > 0 {
            end = start + duration
        } else if let until = Timestamp.parse(lengthText), until > start {
            end = until
        } else {
            return .failure(UsageError("the mute '\(text)' lasts '\(lengthText)', which is not a duration (2h, 90m) or a later time"))
        }
        return .success(MuteWindow(monitors: monitors, start: start, end: end, text: trimmed))
    }
}

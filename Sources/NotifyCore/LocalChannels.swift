import VitalsKit

/// `desktop://`: a desktop notification, through notify-send on Linux and osascript on
/// macOS; the words go as arguments, never into a script.
final class DesktopChannel: Channel {
    let id: String
    let tags: [String]
    private let urgency: String?
    private let command: String?

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        if let urgency = parsed.parameter("urgency"), !["low", "normal", "critical"].contains(urgency) {
            throw UsageError("'\(parsed.display)': urgency is low, normal or critical, not '\(urgency)'")
        }
        urgency = parsed.parameter("urgency")
        command = parsed.parameter("command")
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        #if os(macOS)
        // The title and text are osascript's arguments (argv), read by the script: never spliced into it.
        let script = ["on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run"]
        return .process(ProcessRequest(executable: command ?? "/usr/bin/osascript",
                                       arguments: script.flatMap { ["-e", $0] } + [notification.title, notification.text], input: []))
        #else
        let level = urgency ?? (notification.status == "up" ? "normal" : (notification.status == "degraded" ? "normal" : "critical"))
        return .process(ProcessRequest(executable: command ?? "notify-send",
                                       arguments: ["--app-name=vitals", "--urgency=\(level)", "--category=vitals.\(notification.event.rawValue)",
                                                   "--", notification.title, notification.text], input: []))
        #endif
    }

    func judge(_ outcome: ProcessOutcome) -> Verdict {
        guard let status = outcome.exitStatus else { return .failed(code: nil, error: outcome.error ?? "did not finish") }
        if status == 0 { return .accepted(code: 0) }
        return .failed(code: status, error: "exit status \(status)" + (outcome.error.map { ": " + $0 } ?? ""))
    }
}

/// `exec://COMMAND` (a name looked up in PATH) or `exec:///PATH/TO/COMMAND`, with `?arg=`
/// for each argument: run with no shell, the notification JSON on standard input and its
/// main fields in VITALS_* variables. Exit 0 accepted, 75 (EX_TEMPFAIL) retried, else refused.
final class ExecChannel: Channel {
    let id: String
    let tags: [String]
    private let executable: String
    private let arguments: [String]

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        if parsed.host.isEmpty {
            guard parsed.path.count > 1 else { throw UsageError("'\(parsed.display)': name the command: exec://NAME or exec:///PATH") }
            executable = parsed.path
        } else {
            executable = parsed.host + parsed.path
        }
        arguments = parsed.parameters("arg")
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        var environment = ["VITALS_NOTIFICATION_ID": notification.id, "VITALS_EVENT": notification.event.rawValue,
                           "VITALS_STATUS": notification.status, "VITALS_TITLE": notification.title, "VITALS_BODY": notification.body,
                           "VITALS_KEY": notification.key, "VITALS_MONITORS": notification.monitors.map(\.monitor).joined(separator: " ")]
        if let single = notification.single { environment["VITALS_MONITOR"] = single.monitor }
        return .process(ProcessRequest(executable: executable, arguments: arguments,
                                       input: NotificationRecord.payload(notification) + [0x0A], environment: environment))
    }
}

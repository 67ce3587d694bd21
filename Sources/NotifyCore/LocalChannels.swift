import Synchronization
import VitalsKit

/// `desktop://`: a desktop notification, through notify-send on Linux and osascript on
/// macOS; the words go as arguments, never into a script.
///
/// Each notification has isitup's category (`SERVICE_DOWN` for one monitor, `GROUP_OUTAGE` for a
/// group; recoveries, which isitup never tells, `SERVICE_RECOVERED` and `GROUP_RECOVERED`). With
/// `open=COMMAND` (and `open_arg=` words) every notification carries isitup's `OPEN_APP` action,
/// Open; with `check=COMMAND` (and `check_arg=`) a `GROUP_OUTAGE` one carries `CHECK_NOW`, Check
/// now, as isitup's grouped category does, where notify-send can offer them (`--action`):
/// notify-send waits in the background for the user's choice, and the chosen action's command
/// runs then, with `{monitor}` and `{target}` in its words replaced.
final class DesktopChannel: Channel {
    let id: String
    let tags: [String]
    private let urgency: String?
    private let command: String?
    /// The Check now and Open commands, as words (empty: no such action).
    private let check: [String]
    private let open: [String]

    init(_ parsed: ChannelURL) throws(UsageError) {
        id = parsed.display
        tags = parsed.tags
        if let urgency = parsed.parameter("urgency"), !["low", "normal", "critical"].contains(urgency) {
            throw UsageError("'\(parsed.display)': urgency is low, normal or critical, not '\(urgency)'")
        }
        urgency = parsed.parameter("urgency")
        command = parsed.parameter("command")
        check = parsed.parameter("check").map { [$0] + parsed.parameters("check_arg") } ?? []
        open = parsed.parameter("open").map { [$0] + parsed.parameters("open_arg") } ?? []
        if check.isEmpty && !parsed.parameters("check_arg").isEmpty || open.isEmpty && !parsed.parameters("open_arg").isEmpty {
            throw UsageError("'\(parsed.display)': check_arg and open_arg need check=COMMAND and open=COMMAND")
        }
    }

    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest {
        #if os(macOS)
            // The title and text are osascript's arguments (argv), read by the script: never spliced into it.
            let script = ["on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run"]
            return .process(
                ProcessRequest(
                    executable: command ?? "/usr/bin/osascript",
                    arguments: script.flatMap { ["-e", $0] } + [notification.title, notification.text], input: []))
        #else
            let level = urgency ?? (notification.status == "up" ? "normal" : (notification.status == "degraded" ? "normal" : "critical"))
            let category = DesktopChannel.category(notification)
            let send = ["--app-name=vitals", "--urgency=\(level)", "--category=\(category)"]
            let words = ["--", notification.title, notification.text]
            let executable = command ?? "notify-send"
            let check = category == "GROUP_OUTAGE" ? self.check : []
            guard !check.isEmpty || !open.isEmpty, DesktopChannel.offersActions(executable) else {
                return .process(ProcessRequest(executable: executable, arguments: send + words, input: []))
            }
            var actions: [String] = []
            if !check.isEmpty { actions.append("--action=CHECK_NOW=Check now") }
            if !open.isEmpty { actions.append("--action=OPEN_APP=Open") }
            let notifySend = [executable] + send + ["--print-id"] + actions + words
            let checkWords = DesktopChannel.fill(check, notification)
            let openWords = DesktopChannel.fill(open, notification)
            return .process(
                ProcessRequest(
                    executable: "/bin/sh",
                    arguments: [
                        "-c", DesktopChannel.actionScript, "sh", String(notifySend.count), String(checkWords.count),
                        String(openWords.count),
                    ] + notifySend + checkWords + openWords,
                    input: []))
        #endif
    }

    func judge(_ outcome: ProcessOutcome) -> DeliveryVerdict {
        guard let status = outcome.exitStatus else { return .failed(code: nil, error: outcome.error ?? "did not finish") }
        if status == 0 { return .accepted(code: 0) }
        return .failed(code: status, error: "exit status \(status)" + (outcome.error.map { ": " + $0 } ?? ""))
    }

    /// isitup's notification category: `SERVICE_DOWN` for one monitor down, in error or degraded
    /// (or still so), `GROUP_OUTAGE` for several; for what isitup never tells, in its style, a
    /// recovery `SERVICE_RECOVERED` or `GROUP_RECOVERED`, and an agent's news `PLACE_CUT_OFF`,
    /// `PLACE_SILENT` or `PLACE_BACK`.
    static func category(_ notification: Notification) -> String {
        switch notification.event {
        case .recovered: return notification.grouped ? "GROUP_RECOVERED" : "SERVICE_RECOVERED"
        case .placeCutOff, .placeSilent, .placeBack: return notification.event.rawValue.uppercased()
        case .down, .degraded, .stillDown, .stillDegraded: return notification.grouped ? "GROUP_OUTAGE" : "SERVICE_DOWN"
        }
    }

    /// An action's words with `{monitor}` and `{target}` replaced; in a grouped notification a
    /// word that holds one of them becomes one word per monitor (`--only={monitor}` gives
    /// `--only=a --only=b`, and `{monitor}` alone `a b`), in the notification's order.
    static func fill(_ words: [String], _ notification: Notification) -> [String] {
        var out: [String] = []
        for word in words {
            guard word.contains("{monitor}") || word.contains("{target}") else {
                out.append(word)
                continue
            }
            for change in notification.monitors {
                // A monitor without a target gives no word where the word is the target alone.
                if word == "{target}", change.target == nil { continue }
                out.append(
                    word.replacingOccurrences(of: "{monitor}", with: change.monitor)
                        .replacingOccurrences(of: "{target}", with: change.target ?? ""))
            }
        }
        return out
    }

    /// Whether `executable`'s notify-send offers `--action` and `--print-id` (libnotify 0.7.10 and later).
    static func offersActions(_ executable: String) -> Bool {
        actionSupport.withLock { known in
            if let answer = known[executable] { return answer }
            let result = try? ChildProcess.run([executable, "--help"], timeoutMs: 5000)
            let help = result.map { String(decoding: $0.output + $0.error, as: UTF8.self) } ?? ""
            let answer = help.contains("--action") && help.contains("--print-id")
            known[executable] = answer
            return answer
        }
    }

    private static let actionSupport = Mutex<[String: Bool]>([:])

    /// Shows the notification with notify-send (the first N words) in the background and
    /// exits once notify-send has printed the notification's id (0) or failed (1). In the
    /// background notify-send waits for the user's choice and prints it: `CHECK_NOW` runs the next
    /// C words, `OPEN_APP` the O words after them. Every word is an argument; none is read as shell.
    static let actionScript = #"""
        range_exec() {
            from=$1 count=$2
            shift 2
            total=$#
            i=0
            for word do
                if [ "$i" -ge "$from" ] && [ "$i" -lt $((from + count)) ]; then set -- "$@" "$word"; fi
                i=$((i + 1))
            done
            shift "$total"
            exec ${prefix:-} "$@"
        }
        sends=$1 checks=$2 opens=$3
        shift 3
        shown=$(mktemp "${TMPDIR:-/tmp}/vitals-desktop.XXXXXX") || exit 1
        # notify-send prints the id at once only with its output line-buffered; without stdbuf,
        # a notify-send still waiting after a second has shown its notification.
        lined=
        patience=600
        if command -v stdbuf >/dev/null 2>&1; then lined="stdbuf -oL"; else patience=20; fi
        {
            action=$( (prefix=$lined; range_exec 0 "$sends" "$@") 2>/dev/null | {
                IFS= read -r id || id=
                printf '%s\n' "$id" >"$shown"
                IFS= read -r chosen || chosen=
                printf '%s' "$chosen"
                cat >/dev/null
            })
            case $action in
                CHECK_NOW) [ "$checks" -gt 0 ] && (range_exec "$sends" "$checks" "$@") ;;
                OPEN_APP) [ "$opens" -gt 0 ] && (range_exec $((sends + checks)) "$opens" "$@") ;;
            esac
        } </dev/null >/dev/null 2>&1 &
        waiting=$!
        tries=0
        while [ ! -s "$shown" ]; do
            kill -0 "$waiting" 2>/dev/null || break
            tries=$((tries + 1))
            if [ "$tries" -ge "$patience" ]; then
                [ -z "$lined" ] && { rm -f "$shown"; exit 0; }
                break
            fi
            sleep 0.05
        done
        id=$(cat "$shown" 2>/dev/null)
        rm -f "$shown"
        [ -n "$id" ]
        """#
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
        var environment = [
            "VITALS_NOTIFICATION_ID": notification.id, "VITALS_EVENT": notification.event.rawValue,
            "VITALS_STATUS": notification.status, "VITALS_TITLE": notification.title, "VITALS_BODY": notification.body,
            "VITALS_KEY": notification.key, "VITALS_MONITORS": notification.monitors.map(\.monitor).joined(separator: " "),
        ]
        if let single = notification.single { environment["VITALS_MONITOR"] = single.monitor }
        return .process(
            ProcessRequest(
                executable: executable, arguments: arguments,
                input: NotificationRecord.payload(notification) + [0x0A], environment: environment))
    }
}

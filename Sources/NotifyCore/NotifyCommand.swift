import Foundation
import Serving
import VitalsKit

/// `notify`: turn state changes in sample records into notifications that arrive once,
/// grouped, on real channels.
public enum NotifyCommand: VitalsCommand {
    /// The option table.
    public static let spec = CommandSpec(
        name: "notify",
        summary: "Turn monitors' state changes into notifications: cooldowns, grouping, thresholds, channels.",
        usage: [
            "[OPTIONS] [--to URL]... [deliver] [FILE...]", "[OPTIONS] devices add TOKEN | remove TOKEN | count | list",
            "--state FILE mute add MONITOR... --for DURATION [--reason TEXT] | list [--all] | remove ID|MONITOR...",
            "[OPTIONS] serve --socket PATH | cgi",
        ],
        description: """
            Sample records are read from the FILEs (or standard input; - is standard input). A monitor going down \
            (or error), degraded, or back up is a notification, decided on the samples' own times with isitup's \
            60-second cooldown per key and channel (a change it blocks is dropped) and its grouping (two or more monitors impacted in one round make \
            one notification). One notification record per notification is written to standard output, with the \
            result of each channel named by --to or --config. With --state, what was decided and delivered is kept, \
            so runs from cron behave like one long stream and undelivered notifications are retried by the next run. \
            See notify(1) for the channel URLs and vitals-records(7) for the record. \
            serve answers OnlineTracker's /api/devices/ endpoints behind nginx (cgi: one request, for web servers that run a program per request); see vitals-serve(7).
            """,
        options: [
            OptionSpec(
                "to", value: "URL", repeatable: true,
                help:
                    "deliver to this channel (json://, jsons://, ntfy://, slack://, discord://, teams://, mailto://, sendmail://, apns://, desktop://, exec://), as [TAG,...=]URL; repeatable"
            ),
            OptionSpec("config", value: "FILE", repeatable: true, help: "read channels from FILE, one [TAG,...=]URL a line"),
            OptionSpec("tag", value: "TAG", repeatable: true, help: "use only the configured channels with this tag; repeatable"),
            OptionSpec(
                "state", value: "FILE",
                help:
                    "keep monitors, cooldowns, pending deliveries, push tokens and devices in FILE (JSON, mode 0600; default: none, every run starts afresh)"
            ),
            .duration("cooldown", default: "60s", range: 0...Int64.max / 4, help: "quiet time per key and channel after a notification"),
            OptionSpec(
                "cooldown-mode", value: "MODE", default: "drop", choices: ["drop", "defer"],
                help:
                    "drop: a change the cooldown blocks is not told (isitup's rule); defer: it is told when the cooldown ends, if it still holds"
            ),
            OptionSpec(
                "group-min", value: "N", default: "2",
                help: "monitors newly impacted in one round that make one grouped notification (0 never groups)"),
            .duration(
                "group-wait", default: "2s", range: 1...86_400_000,
                help: "for input without round marks: the length of a round, by the samples' times, and the pause in input that ends one"),
            OptionSpec("failure-threshold", value: "N", default: "1", help: "consecutive failing samples before a monitor is down"),
            OptionSpec("success-threshold", value: "N", default: "1", help: "consecutive better samples before a monitor is recovered"),
            OptionSpec(
                "quorum", value: "N", default: "majority",
                help: "how many of a monitor's fresh places (agents) must agree on its status: majority, all, any, or a number"),
            .duration("repeat-interval", help: "re-send a still-open outage this often (default: never)"),
            OptionSpec("repeat-max", value: "N", help: "send at most N reminders of one outage to each channel (default: no limit)"),
            OptionSpec(
                "no-recoveries",
                help: "do not tell a monitor back up (isitup's rule; by default recoveries are told, as OnlineTracker does)"),
            OptionSpec(
                "baseline",
                help:
                    "take each monitor's first sample as its baseline, not news (default: a monitor first seen down, error or degraded is notified)"
            ),
            OptionSpec(
                "mute", value: "SPEC", repeatable: true, help: "mute MONITOR[,MONITOR...]@START/DURATION (a maintenance window); repeatable"
            ),
            OptionSpec("mute-file", value: "FILE", help: "read mutes from FILE, one SPEC a line"),
            OptionSpec(
                "db", value: "PATH|URL",
                help:
                    "store-samples' store, asked for the integer monitor ids Apple pushes carry when the samples came without them (notify before store-samples, or without it)"
            ),
            OptionSpec("dry-run", help: "decide and print notifications; deliver nothing and change no state"),
            .duration(
                "deliver-timeout", default: "30s",
                help: "time for deliveries and their retries in a run (or a burst of input); the rest stays pending"),
            .duration(
                "give-up-after", default: "24h", range: 0...Int64.max / 4,
                help: "a delivery still refused this long after its first attempt fails for good"),
            .now(
                "the wall-clock time taken as now for backoff, give-up, push-token ages and mute add, RFC 3339 or 'now' (default: the clock)"
            ),
            .duration("for", help: "mute add: how long the maintenance lasts"),
            OptionSpec("from", value: "TIME", help: "mute add: when it starts, RFC 3339 (default: now)"),
            OptionSpec("reason", value: "TEXT", help: "mute add: why, kept with the window and shown by mute list"),
            OptionSpec("all", help: "mute list: the windows that ended too (kept 400 days)"),
            OptionSpec("platform", value: "NAME", default: "ios", help: "devices add: the device's platform"),
            OptionSpec("app-version", value: "VERSION", help: "devices add: the app version the device runs"),
            OptionSpec("exit-status", short: "e", help: "exit 1 when something was notified"),
            OptionSpec("summary", short: "s", help: "write a one-line summary to standard error at the end"),
        ] + Serve.options,
        subcommands: [
            SubcommandSpec(
                "deliver", operands: 0...Int.max, "[FILE...]",
                options: [
                    "to", "config", "tag", "cooldown", "cooldown-mode", "group-min", "group-wait", "failure-threshold", "success-threshold",
                    "quorum", "repeat-interval", "repeat-max", "no-recoveries", "baseline", "mute", "mute-file", "db", "dry-run",
                    "deliver-timeout", "give-up-after",
                    "exit-status", "summary",
                ],
                summary: "decide and deliver the notifications of the samples in the FILEs or standard input (the default)"),
            SubcommandSpec(
                "devices",
                actions: [
                    SubcommandAction(
                        DeviceAction.add.rawValue, operands: 1...1, "TOKEN", aliases: ["register"], options: ["platform", "app-version"],
                        summary: "register a device's push token (OnlineTracker's POST /api/devices/register)"),
                    SubcommandAction(
                        DeviceAction.remove.rawValue, operands: 1...1, "TOKEN", aliases: ["unregister"],
                        summary: "unregister a device's push token (DELETE /api/devices/TOKEN)"),
                    SubcommandAction(DeviceAction.count.rawValue, summary: "how many devices are registered (GET /api/devices/count)"),
                    SubcommandAction(DeviceAction.list.rawValue, summary: "the registered devices, one record a line"),
                ], requiresAction: true,
                summary: "keep the devices Apple push goes to, beside the --state file (FILE.devices)"),
            SubcommandSpec(
                "mute",
                actions: [
                    SubcommandAction(
                        MuteAction.add.rawValue, operands: 1...Int.max, "MONITOR...", options: ["for", "from", "reason"],
                        summary: "mute the monitors (ids or shell patterns) for --for from now (or --from), as a maintenance window"),
                    SubcommandAction(
                        MuteAction.list.rawValue, options: ["all"], summary: "the open and coming windows, one maintenance record a line"),
                    SubcommandAction(
                        MuteAction.remove.rawValue, operands: 1...Int.max, "ID|MONITOR...",
                        summary: "remove a window by its id, or end every open or coming window of a monitor now"),
                ], requiresAction: true,
                summary: "maintenance windows from a script, kept beside the --state file (FILE.mutes), safe while a pipeline runs"),
            SubcommandSpec(
                "serve", options: Serve.optionNames,
                summary: "answer OnlineTracker's device endpoints behind nginx as a FastCGI responder, until stopped (see vitals-serve(7))"),
            SubcommandSpec("cgi", summary: "answer one request of OnlineTracker's device endpoints as a CGI program (see vitals-serve(7))"),
        ],
        defaultSubcommand: "deliver",
        examples: [
            "probe-http targets.ndjson | notify --state notify.json",
            "probe-http targets.ndjson | notify --to 'exec://cat' | jq -r 'select(.type == \"notification\") | .title'",
            "probe-http targets.ndjson | notify --dry-run --to 'jsons://hooks.example.com/vitals?format=alertmanager'",
            "notify --state notify.json devices add 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad",
            "notify --state notify.json mute add api worker --for 30m --reason 'deploy 4.2'",
        ],
        exitStatuses: [
            (.success, "every delivery that was due was accepted (or nothing was due)"),
            (.verdict, "with --exit-status, something was notified (and delivered)"),
            (
                .failure,
                "a delivery failed for good or is still pending at the end, bad input lines, or a state file that cannot be read or written"
            ),
            (.usage, "the command line was wrong (an unknown channel, a secret that cannot be read)"),
            (.interrupted, "stopped by SIGINT (what was decided is kept as pending)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: [
            "vitals(7)", "vitals-records(7)", "vitals-serve(7)", "probe-http(1)", "store-samples(1)", "notify-send(1)", "sendmail(8)",
        ]
    )

    /// Runs notify.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        let now = try options.now()
        let started = Clock.monotonicMilliseconds()
        let fixedNow = now
        let wallClock: () -> Int64 =
            fixedNow.map { base in { base + Clock.monotonicMilliseconds() - started } } ?? { Clock.wallMilliseconds() }

        let subcommand = options.subcommand(as: Subcommand.self)
        switch subcommand {
        case .serve, .cgi:
            let statePath = options.value("state") ?? context.environment["VITALS_NOTIFY_STATE"].flatMap { $0.isEmpty ? nil : $0 }
            let clock: @Sendable () -> Int64 =
                fixedNow.map { base in { @Sendable in base + Clock.monotonicMilliseconds() - started } }
                ?? { Clock.wallMilliseconds() }
            let api = DevicesAPI(statePath: statePath, clock: clock)
            if subcommand == .cgi {
                return CGIAdapter.serve(
                    environment: context.environment, input: context.streams.input, output: context.streams.output,
                    maxBody: DevicesAPI.limits.maxBody, api.answer)
            }
            guard statePath != nil else { throw UsageError("serve keeps the device list beside the state file: name it with --state FILE") }
            return try Serve.run(options, context, what: "OnlineTracker's device endpoints (\(statePath!))", limits: DevicesAPI.limits) {
                api
            }
        case .devices:
            return try DevicesCommand.run(
                options.requiredAction(as: DeviceAction.self), options.operands, options, context, wallClock: wallClock)
        case .mute:
            return try MuteCommand.run(
                options.requiredAction(as: MuteAction.self), options.operands, options, context, wallClock: wallClock)
        case .deliver:
            return try deliver(options, context, wallClock: wallClock)
        }
    }

    /// The subcommands, as the table names them (a test holds the two to the same words).
    enum Subcommand: String, CaseIterable {
        case deliver, devices, mute, serve, cgi
    }

    /// What `mute ACTION` does.
    enum MuteAction: String, CaseIterable {
        case add, list, remove
    }

    /// What `devices ACTION` does.
    enum DeviceAction: String, CaseIterable {
        case add, remove, count, list
    }

    /// `deliver`: decides and delivers the notifications of the samples read.
    static func deliver(_ options: ParsedOptions, _ context: ToolContext, wallClock: @escaping () -> Int64) throws -> VitalsKit.ExitStatus {
        let policy = try readPolicy(options)
        let dryRun = options.has("dry-run")
        let (channels, routes) = try readChannels(options, context)
        let ids = MonitorIDs(database: options.value("db"), environment: context.environment, diagnostics: context.diagnostics)
        for case let push as APNsChannel in channels { push.monitorIDs = ids }
        let budget = try options.duration("deliver-timeout")!
        let giveUp = try options.duration("give-up-after")!

        let stateFile = try options.value("state").map { path in
            try NotifyStateFile(path: path, lock: !dryRun) {
                context.diagnostics.note("another notify run holds the state \(path) (its lock, \(path).lock); waiting for it to end")
            }
        }
        let loaded = try stateFile?.load() ?? NotifyState()
        let box = StateBox(loaded)
        if let stateFile, stateFile.persistent {
            // Devices live in a file of their own; a state file that still holds them hands them over.
            let registry = DeviceRegistry(statePath: stateFile.path)
            if !loaded.devices.isEmpty, !dryRun {
                try registry.update { _ in }
                box.state.devices = []
            }
            box.devices = registry
        }
        let channelByID = Dictionary(channels.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let decider = Decider(
            policy: policy, channels: [Self.stdoutChannel] + channels.map(\.id).filter { !routes.fallbackOnly.contains($0) },
            ungrouped: Set(channels.filter { !$0.groupsMonitors }.map(\.id)),
            monitors: loaded.monitors, views: loaded.channels, agents: loaded.agents ?? [:], escalations: routes.escalations)
        let dispatcher = Dispatcher(
            channels: channelByID, state: box, environment: context.environment,
            budgetMs: budget, giveUpMs: giveUp, wallClock: wallClock)
        let run = NotifyRun(
            decider: decider, dispatcher: dispatcher, box: box, stateFile: dryRun ? nil : stateFile,
            output: context.output, diagnostics: context.diagnostics, dryRun: dryRun)
        run.routes = routes
        if let stateFile, stateFile.persistent { run.muteStore = MuteStore(statePath: stateFile.path) }
        if !dryRun {
            for pending in loaded.pending {
                if channelByID[pending.channel] != nil {
                    run.resume(pending)
                } else {
                    run.orphans.append(pending)
                }
            }
            if !run.orphans.isEmpty {
                context.diagnostics.warning("\(run.orphans.count) pending deliveries are for channels not configured now; they are kept")
            }
            box.state.pending = run.orphans
        }
        try run.deliverAndWrite()

        Inputs(options.operands, stdin: context.streams.input).forEach(diagnostics: context.diagnostics) { reader in
            reader.idleAfterMs = Int32(clamping: policy.groupWaitMs)
            reader.onIdle = { run.idle() }
            run.read(reader)
            run.inputEnded()
        }
        try run.finish()
        if let problem = run.writeProblem { throw problem }
        if options.has("summary") { context.diagnostics.note(run.summary) }

        var status = VitalsKit.ExitStatus.success
        if options.has("exit-status"), run.notifications > 0 { status = .verdict }
        if run.failedDeliveries > 0 || run.pendingAtEnd > 0 || context.diagnostics.errorCount > 0 { status = status.worst(.failure) }
        if run.pendingAtEnd > 0 {
            context.diagnostics.note(
                "\(run.pendingAtEnd) \(run.pendingAtEnd == 1 ? "delivery is" : "deliveries are") still pending"
                    + (stateFile?.persistent == true && !dryRun ? "; the next run retries" : " and will be lost without --state"))
        }
        return status
    }

    /// The channel every notification goes to: the records on standard output.
    static let stdoutChannel = "stdout"

    static func readPolicy(_ options: ParsedOptions) throws -> Policy {
        var policy = Policy()
        policy.cooldownMs = try options.duration("cooldown")!
        policy.deferHeldBack = try options.choice("cooldown-mode") == "defer"
        policy.groupMin = try options.integer("group-min", in: 0...1_000_000)
        if policy.groupMin == 0 { policy.groupMin = Int.max }
        policy.groupWaitMs = try options.duration("group-wait")!
        policy.failureThreshold = try options.integer("failure-threshold", in: 1...100_000)
        policy.successThreshold = try options.integer("success-threshold", in: 1...100_000)
        let quorum = options.value("quorum") ?? "majority"
        guard let parsed = Quorum(quorum) else {
            throw UsageError("--quorum takes majority, all, any or a number of places from 1, not '\(quorum)'")
        }
        policy.quorum = parsed
        if let repeatMs = try options.duration("repeat-interval") { policy.repeatIntervalMs = repeatMs }
        if options.has("repeat-max") {
            guard policy.repeatIntervalMs != nil else { throw UsageError("--repeat-max limits --repeat-interval's reminders: give both") }
            policy.repeatMax = try options.integer("repeat-max", default: 0, in: 0...1_000_000)
        }
        policy.firstSampleIsBaseline = options.has("baseline")
        policy.tellsRecoveries = !options.has("no-recoveries")
        var specs = options.all("mute").map { ($0, "--mute") }
        if let path = options.value("mute-file") {
            guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read the mute file \(path)") }
            for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            {
                let text = String(line).trimmingSpaces
                if text.isEmpty || text.hasPrefix("#") { continue }
                specs.append((text, "\(path):\(index + 1)"))
            }
        }
        for (spec, origin) in specs {
            switch MuteWindow.parse(spec) {
            case .success(let window): policy.mutes.append(window)
            case .failure(let error): throw UsageError(origin == "--mute" ? error.message : "\(origin): \(error.message)")
            }
        }
        return policy
    }

    /// The channels of --to and --config (those --tag selects, and those a chosen one names as its
    /// fallback), and their routes (`after=`, `fallback=`).
    static func readChannels(_ options: ParsedOptions, _ context: ToolContext) throws -> ([Channel], ChannelRoutes) {
        var channels: [Channel] = []
        var seen: Set<String> = []
        let urls = try channelURLs(options, context)
        for parsed in urls {
            let channel = try ChannelFactory.make(parsed, environment: context.environment)
            guard seen.insert(channel.id).inserted else {
                throw UsageError("the channel \(channel.id) is given twice")
            }
            channels.append(channel)
        }
        return (channels, try ChannelRoutes(urls))
    }

    /// The channel URLs of --to and --config.
    static func channelURLs(_ options: ParsedOptions, _ context: ToolContext) throws -> [ChannelURL] {
        var urls: [ChannelURL] = []
        for written in options.all("to") {
            // `TAG,...=URL`, as in --config: tags name a channel for another's fallback=TAG.
            var text = written
            var tags: [String] = []
            if let scheme = written.range(of: "://"), let equals = written[..<scheme.lowerBound].firstIndex(of: "=") {
                tags = written[..<equals].split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
                text = String(written[written.index(after: equals)...]).trimmingSpaces
            }
            let parsed = try ChannelURL(text, tags: tags, environment: context.environment)
            if parsed.hasLiteralSecret {
                context.diagnostics.warning(
                    "--to \(parsed.display) carries a secret on the command line, where other users can see it; write ${NAME} (from the environment) or ${file:PATH}, or use --config"
                )
            }
            urls.append(parsed)
        }
        var configured: [ChannelURL] = []
        for path in options.all("config") {
            configured += try ChannelFactory.readConfig(path, environment: context.environment, diagnostics: context.diagnostics)
        }
        var wanted = Set(options.all("tag"))
        if !wanted.isEmpty {
            // A channel chosen names its fallback's tag: that channel comes too.
            wanted.formUnion((urls + configured).filter { !wanted.isDisjoint(with: $0.tags) }.compactMap { $0.parameter("fallback") })
            configured = configured.filter { !wanted.isDisjoint(with: $0.tags) }
        }
        return urls + configured
    }
}

import Foundation
import Serving
import VitalsKit

/// `store-samples`: keep samples in SQLite and answer OnlineTracker's views of them.
public enum StoreSamplesCommand: VitalsCommand {
    /// The option table.
    public static let spec = CommandSpec(
        name: "store-samples",
        summary: "Keep sample records in SQLite and answer OnlineTracker's views of their history.",
        usage: [
            "[OPTIONS] [ingest] [FILE...]", "--db https://HOST[:PORT]/?token_file=FILE [--spool DIR] [ingest] [FILE...]",
            "[OPTIONS] overview | monitors | monitor ID | history ID | results ID",
            "[OPTIONS] agents [approve|reject|token ID] | stats | export | metrics [--output FILE]",
            "[OPTIONS] follow [--cursor FILE] [--once] [--from start|now] [--tick DURATION]",
            "[OPTIONS] serve --socket PATH | cgi",
            "[OPTIONS] clear --all | --monitor ID | --until WHEN",
        ],
        description: """
            Without a subcommand (or with ingest), samples are read from the FILEs or standard input and stored; \
            each record is written to standard output once the transaction holding it has committed. The other \
            subcommands print JSON shaped as OnlineTracker's API (overview, monitors, monitor, history, results, \
            agents), Online Now's statistics (stats), or the stored samples (export); metrics prints every monitor's latest \
            state and counts in Prometheus' text exposition format. follow writes the samples the store receives, \
            whoever stored them, batch by batch between round marks, from a cursor kept in a file, until stopped (or \
            once). With --db https://..., an agent's samples go to a server's POST /api/samples through a spool on \
            disk, where they wait while the server cannot be reached. serve answers OnlineTracker's \
            API behind nginx as a FastCGI responder on a private Unix socket, until stopped; cgi answers one request \
            of it under a web server that runs a program per request. See store-samples(1) and vitals-serve(7).
            """,
        options: [
            OptionSpec(
                "db", short: "d", value: "PATH|URL",
                help:
                    "the database file, a ClickHouse store: clickhouse://[user[:password]@]host[:port]/database[?options], or an agent's "
                    + "remote store: https://host[:port][/path]?token_file=FILE[&cacert=FILE] (default $VITALS_DB, else vitals.db)"
            ),
            .duration(
                "wait",
                help:
                    "ClickHouse: keep retrying a server that is down or unreachable for this long before giving up (default: three tries "
                    + "within a second); https: at the end of the input, keep sending what waits in the spool while failures last "
                    + "this long (default \(DefaultText.duration(milliseconds: RemoteSampleWriter.defaultWaitMs)))"
            ),
            OptionSpec("quiet", short: "q", help: "ingest: store, but pass nothing on"),
            OptionSpec(
                "keep-per-monitor", value: "N",
                help: "ingest: keep at most N samples per monitor (isitup keeps 200, Online Now 1000; default no limit)"),
            .duration(
                "keep", default: "\(Retention.defaultDays)d", range: 0...Int64.max / 4,
                help: "ingest: keep samples this long, in whole days (30d, 2w); 0 keeps them forever"),
            OptionSpec(
                "remote",
                help:
                    "ingest: the samples came from elsewhere (the API that receives agents' samples): each must name its agent, counted only once the agent is approved"
            ),
            OptionSpec(
                "auto-approve", help: "ingest --remote, serve, cgi: approve an agent seen for the first time instead of leaving it pending"),
            OptionSpec(
                "approve-agents", value: "LIST",
                help: "ingest: approve these agents (comma-separated ids) before storing, counting what they had held"),
            OptionSpec(
                "spool", value: "DIR",
                help:
                    "ingest, https: keep the batches not yet delivered under DIR, a folder per server "
                    + "(default $XDG_STATE_HOME/vitals/spool, else ~/.local/state/vitals/spool)"),
            OptionSpec(
                "spool-size", value: "SIZE", default: Spool.sizeText(Int64(RemoteSampleWriter.defaultSpoolBytes)),
                help: "ingest, https: the most the batches waiting may take (1M or more); past it the oldest are dropped, and said so"),
            .duration(
                "spool-age", default: "7d", range: 60_000...3_650 * 86_400_000,
                help: "ingest, https: drop a batch waiting longer than this (said so on standard error)"),
        ] + OptionSpec.progress("ingest") + [
            .now(
                "the time taken as now: the end of every window, the clock of retention and of --since, RFC 3339 or 'now' (default: the clock)"
            )
        ] + OptionSpec.paging("results", items: "checks", Views.resultsPages) + [
            .when(
                "since",
                help: "export, stats: from this time (RFC 3339) or this long ago (24h, 7d); "
                    + "history: the buckets since then (default \(Views.historyLookback.limitsText)); "
                    + "results: the checks since then (default \(Views.resultsLookback.limitsText))"),
            .when("until", help: "export: before this time or this long ago (default: no end); clear: the samples before this time"),
            OptionSpec("monitor", short: "m", value: "ID", help: "export, clear: only this monitor (integer or monitor id)"),
            OptionSpec(
                "output", value: "FILE",
                help:
                    "metrics: write the exposition to FILE, replaced whole (a temporary file renamed over it), for node_exporter's textfile collector"
            ),
            OptionSpec("all", help: "clear: every sample of every monitor (without --monitor or --until, clear wants it)"),
            OptionSpec(
                "cursor", value: "FILE",
                help:
                    "follow: keep where it stands in FILE (mode 0600, replaced whole once what it covers was written), and go on from there"
            ),
            OptionSpec(
                "from", value: "WHERE", default: "now", choices: ["now", "start"],
                help: "follow: without a cursor file, begin with what is stored from now on (now) or with the store's first batch (start)"),
            OptionSpec("once", help: "follow: write what is new, save the cursor and end (for cron)"),
            .duration(
                "tick", default: "30s", range: 0...Int64.max / 4,
                help: "follow: after this long without writing anything, write a tick record; 0 never"),
            .duration(
                "lag", default: "2s", range: 0...3_600_000,
                help: "follow: on ClickHouse, read a batch once it is this old by its writer's clock (every shard has it by then)"),
            OptionSpec(
                "sort", value: "ORDER", default: "status", choices: ["status", "id"],
                help:
                    "monitors, overview: status (down, then degraded, then up, then unknown, each by name: the app's grouping) or id (the order first stored)"
            ),
            OptionSpec(
                "quorum", value: "N", default: "majority",
                help:
                    "how many of a monitor's fresh places must agree on its status (majority, all, any, or a number): the views, metrics, and the consensus ingest stores with each sample"
            ),
            OptionSpec(
                "agent", value: "NAME",
                help:
                    "overview, monitors, monitor, history, results, stats: only the samples of this place (an agent, or local for samples that name none), with their own statuses"
            ),
            OptionSpec(
                "tokens", value: "FILE",
                help:
                    "agents token, serve, cgi: the agents' token file (default $VITALS_AGENT_TOKENS, else the database file's path + .tokens)"
            ),
            OptionSpec(
                "format", short: "f", value: "FORMAT", aliases: [OptionAlias("ndjson", meaning: "ndjson")],
                choices: ["json", "ndjson", "csv"],
                help:
                    "monitors, history, agents: json (one array, default) or ndjson (one object a line); export: ndjson (the samples as stored, default) or csv"
            ),
        ] + Serve.options,
        subcommands: [
            SubcommandSpec(
                "ingest", operands: 0...Int.max, "[FILE...]",
                options: [
                    "quiet", "keep-per-monitor", "keep", "remote", "auto-approve", "approve-agents", "quorum", "spool", "spool-size",
                    "spool-age", "progress", "no-progress",
                ],
                summary: "store the samples of the FILEs (or standard input) and pass each on once committed (the default)"),
            SubcommandSpec(
                "overview", options: ["sort", "quorum", "agent"],
                summary: "every monitor's status, uptime and latency now (OnlineTracker's overview)"),
            SubcommandSpec(
                "monitors", options: ["format", "sort", "quorum", "agent"], choices: ["format": listFormats], summary: "the monitors stored"
            ),
            SubcommandSpec(
                "monitor", operands: 1...1, "ID", options: ["quorum", "agent"], summary: "one monitor, with each place's latest check"),
            SubcommandSpec(
                "history", operands: 1...1, "ID", options: ["since", "format", "agent"], choices: ["format": listFormats],
                summary: "one monitor's 15-minute buckets"),
            SubcommandSpec(
                "results", operands: 1...1, "ID", options: ["since", "page", "per-page", "agent"],
                summary: "one monitor's checks, a page at a time"),
            SubcommandSpec(
                "agents",
                actions: [
                    SubcommandAction(
                        AgentAction.approve.rawValue, operands: 1...1, "ID", options: ["format"], choices: ["format": listFormats],
                        summary: "set an agent's status to approved and print it: the samples it sent while pending count"),
                    SubcommandAction(
                        AgentAction.reject.rawValue, operands: 1...1, "ID", options: ["format"], choices: ["format": listFormats],
                        summary: "set an agent's status to rejected and print it: its samples are refused from then on"),
                    SubcommandAction(
                        AgentAction.token.rawValue, operands: 1...1, "ID", options: ["tokens"],
                        summary: "make the agent's bearer token for the API, shown once (only its hash is kept)"),
                ], requiresAction: false, options: ["format"], choices: ["format": listFormats],
                summary: "the agents that sent samples; approve or reject one, or make an agent's token for the API"),
            SubcommandSpec(
                "follow", options: ["cursor", "from", "once", "tick", "lag"],
                summary:
                    "write the samples the store receives, in the order stored, each batch between round marks, from a cursor (see FOLLOW)"
            ),
            SubcommandSpec(
                "serve", options: Serve.optionNames.union(["tokens", "auto-approve", "quorum"]),
                summary: "answer OnlineTracker's API behind nginx as a FastCGI responder, until stopped (see vitals-serve(7))"),
            SubcommandSpec(
                "cgi", options: ["tokens", "auto-approve", "quorum"],
                summary: "answer one request of OnlineTracker's API as a CGI program (see vitals-serve(7))"),
            SubcommandSpec("stats", options: ["since", "agent"], summary: "Online Now's statistics"),
            SubcommandSpec(
                "export", options: ["since", "until", "monitor", "format"], choices: ["format": ["ndjson", "csv"]],
                summary: "the stored samples, as NDJSON or CSV"),
            SubcommandSpec(
                "metrics", options: ["output", "quorum"],
                summary: "every monitor's latest state and checks counted, in Prometheus' text exposition format"),
            SubcommandSpec(
                "clear", options: ["all", "monitor", "until"],
                summary: "delete samples: all, one monitor's, or those before a time (isitup's and Online Now's clear history)"),
        ],
        defaultSubcommand: "ingest",
        examples: [
            "probe-http targets.ndjson | store-samples --db vitals.db | jq -c 'select(.type == \"sample\" and .status != \"up\")'",
            "store-samples --db vitals.db overview",
            "store-samples --db vitals.db history api --since 24h --ndjson",
            "store-samples --db vitals.db export --since 24h > last-day.ndjson",
            "store-samples --db vitals.db clear --until 30d",
            "store-samples --db vitals.db metrics --output vitals.prom",
            "store-samples --db vitals.db follow --cursor follow.cursor --once",
        ],
        exitStatuses: [
            (.success, "done (a query that matches nothing prints an empty list; https: every sample delivered)"),
            (
                .failure,
                "bad input lines (the rest was stored), an unknown monitor or agent, or a database that cannot be opened or written; "
                    + "https: samples lost (dropped by the spool's limits) or refused, or sending stopped (a token refused, a redirect)"
            ),
            (.usage, "the command line was wrong"),
            (.deferred, "https: every sample is safely spooled, but some are not delivered yet; the next run sends them first"),
            (.interrupted, "stopped by SIGINT (what was read is committed first)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "vitals-serve(7)", "probe-http(1)"]
    )

    /// Runs store-samples.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        let operands = options.operands
        let subcommand = options.subcommand(as: Subcommand.self)
        let database = options.value("db") ?? context.environment["VITALS_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "vitals.db"
        let fixedNow = try options.now()
        let now = fixedNow ?? Clock.wallMilliseconds()
        let clock: () -> Int64 = fixedNow.map { fixed in { fixed } } ?? { Clock.wallMilliseconds() }
        // A remote store only takes samples: every other subcommand, and every option that belongs to the
        // server's store, is a usage error before anything is read.
        let isRemote = RemoteLocation.isRemote(database)
        if isRemote, subcommand != .ingest {
            throw UsageError(
                "--db \(Redaction.url(database)): a remote store only takes samples (ingest); \(subcommand.rawValue) asks the "
                    + "server's own store: run it on the server, with its SQLite file or ClickHouse URL")
        }
        for option in isRemote
            ? ["keep-per-monitor", "keep", "remote", "auto-approve", "approve-agents", "quorum"] : ["spool", "spool-size", "spool-age"]
        where options.has(option) {
            throw UsageError(
                isRemote
                    ? "--\(option) is the server's to apply: a remote store (--db https://...) only sends samples"
                    : "--\(option) applies to a remote store (--db https://...)")
        }
        let remote = isRemote ? try RemoteLocation(database, environment: context.environment) : nil
        let clickHouse =
            database.hasPrefix(ClickHouseLocation.prefix)
            ? try ClickHouseLocation(
                database, environment: context.environment, readFile: { try String(contentsOfFile: $0, encoding: .utf8) })
            : nil
        // What messages call the store: the file, or the URL with its password masked.
        let path = clickHouse?.display ?? remote?.display ?? database
        let waitMs = try options.duration("wait") ?? 0
        if clickHouse == nil, remote == nil, options.has("wait") {
            throw UsageError("--wait applies to a ClickHouse store (--db clickhouse://...) or a remote store (--db https://...)")
        }
        /// Opens the store the --db value names.
        @Sendable func openStore(create: Bool, policy: IngestPolicy = IngestPolicy()) throws -> SampleStore {
            if let clickHouse {
                return try ClickHouseSampleStore(location: clickHouse, waitMs: waitMs, create: create, now: now, policy: policy)
            }
            return try SQLiteSampleStore(path: database, create: create, policy: policy)
        }

        /// The agents' token file: --tokens, $VITALS_AGENT_TOKENS, or beside a database file.
        func tokensFile() -> String? {
            if let file = options.value("tokens") ?? context.environment["VITALS_AGENT_TOKENS"].flatMap({ $0.isEmpty ? nil : $0 }) {
                return file
            }
            return clickHouse == nil ? database + ".tokens" : nil
        }

        // Every option is checked before the database is opened: a usage error is 64 whatever the database
        // (--format's word the parser checked, against the subcommand's choices in the table).
        /// Whether --format (default: the subcommand's first choice) asks for ndjson.
        func ndjsonFormat() throws -> Bool { try options.choice("format") == "ndjson" }
        let since = try options.time("since", now: now) ?? Int64.min / 2
        let until = try options.time("until", now: now) ?? Int64.max / 2
        let order = Views.MonitorOrder(rawValue: try options.choice("sort"))!
        let quorumText = options.value("quorum") ?? "majority"
        guard let quorum = Quorum(quorumText) else {
            throw UsageError("--quorum takes majority, all, any or a number of places from 1, not '\(quorumText)'")
        }
        let selection = SampleSelection(agent: options.value("agent").map(Views.place(named:)))
        let agentAction = options.action(as: AgentAction.self)
        /// Opens the store for a query (the store and its views).
        func openViews() throws -> (SampleStore, Views) {
            let store = try openStore(create: false)
            return (store, Views(store: store, now: now, order: order, quorum: quorum, selection: selection))
        }
        func findMonitor(_ store: SampleStore, _ key: String) throws -> MonitorRecord {
            guard let record = try store.monitor(matching: key) else { throw ToolError("no monitor '\(key)' in \(path)") }
            return record
        }
        let writer = context.output
        func emitList(_ items: [JSONValue]) throws {
            if try ndjsonFormat() {
                for item in items { try writer.write(item.encoded()) }
            } else {
                try writer.write(JSONValue.array(items).encoded())
            }
        }

        switch subcommand {
        case .serve, .cgi:
            let fixed = fixedNow
            let api = OnlineTrackerAPI(
                database: path, tokens: tokensFile(), autoApprove: options.has("auto-approve"), quorum: quorum,
                clock: { fixed ?? Clock.wallMilliseconds() },
                openStore: { create, policy in try openStore(create: create, policy: policy) })
            if subcommand == .cgi {
                let worker = OnlineTrackerWorker(api: api, log: { context.diagnostics.error($0) })
                return CGIAdapter.serve(
                    environment: context.environment, input: context.streams.input, output: context.streams.output,
                    maxBody: OnlineTrackerAPI.limits.maxBody, worker.answer)
            }
            let errorFD = context.streams.error
            return try Serve.run(options, context, what: "OnlineTracker's API (\(path))", limits: OnlineTrackerAPI.limits) {
                OnlineTrackerWorker(api: api, log: { Streams.writeAll(errorFD, "store-samples: \($0)\n") })
            }
        case .follow:
            let tickMs = try options.duration("tick")!
            let fromStart = try options.choice("from") == "start"
            let lagMs = try options.duration("lag")!
            if clickHouse == nil, options.has("lag") { throw UsageError("--lag applies to a ClickHouse store (--db clickhouse://...)") }
            let cursor = options.value("cursor").map(FollowCursor.init(path:))
            try cursor?.checkPlace()
            let diagnostics = context.diagnostics
            let settings = Follower.Settings(
                openFeed: { start, appeared in
                    if let clickHouse {
                        let store = try ClickHouseSampleStore(location: clickHouse, waitMs: waitMs, create: false, now: clock())
                        return try ClickHouseFollowFeed(store, start: start, fromStart: fromStart || appeared, lagMs: lagMs, now: clock())
                    }
                    let store = try SQLiteSampleStore(path: database, create: false)
                    return try SQLiteFollowFeed(store, start: start, fromStart: fromStart || appeared, diagnostics: diagnostics)
                },
                cursor: cursor, once: options.has("once"), tickMs: tickMs,
                pollMs: clickHouse == nil ? Follower.sqlitePollMs : Follower.clickHousePollMs, clock: clock)
            try Follower(settings, output: context.output, outputFD: context.streams.output, diagnostics: diagnostics).run()
        case .ingest:
            /// Reads every input into `ingester`, with progress on a terminal for files (a stream from a
            /// probe is a pipe: its own tool shows how it goes), until a commit fails or a stop arrives.
            func feed(_ ingester: Ingester) {
                var keepGoing = true
                let inputs = Inputs(operands, stdin: context.streams.input)
                let total = inputs.totalBytes
                let progress = context.progressLine(options, auto: total != nil)
                var bytesBefore: Int64 = 0
                func progressText(_ bytes: Int64) -> String {
                    "store-samples: "
                        + ProgressText.reading(
                            bytes: bytes, of: total, items: ingester.stored, noun: "samples",
                            seconds: progress?.elapsedSeconds ?? 0)
                }
                inputs.forEach(diagnostics: context.diagnostics) { reader in
                    if let progress {
                        reader.onRead = { [unowned reader] in progress.update { progressText(bytesBefore + reader.bytesRead) } }
                    }
                    if keepGoing { keepGoing = ingester.ingest(reader) }
                    bytesBefore += reader.bytesRead
                }
                progress?.finish(progressText(bytesBefore))
                if let failure = ingester.failure { context.diagnostics.error("\(failure)") }
            }
            if let remote {
                // The spool's age goes by the clock: --now moves the views' windows, not the files' age.
                let spoolBytes = try options.size("spool-size", default: RemoteSampleWriter.defaultSpoolBytes)
                guard spoolBytes >= 1 << 20 else { throw UsageError("--spool-size wants 1M or more (a batch is up to 512K)") }
                let writer = try RemoteSampleWriter(
                    location: remote, spoolFolder: try options.value("spool") ?? defaultSpoolFolder(context.environment),
                    maxBytes: Int64(spoolBytes), maxAgeMs: try options.duration("spool-age")!, now: Clock.wallMilliseconds(),
                    diagnostics: context.diagnostics)
                feed(
                    Ingester(
                        store: writer, retention: Retention(perMonitor: nil, days: nil), output: context.output,
                        passThrough: !options.has("quiet"), diagnostics: context.diagnostics, now: clock))
                let status = writer.finish(waitMs: options.has("wait") ? waitMs : RemoteSampleWriter.defaultWaitMs)
                return context.diagnostics.errorCount > 0 ? status.worst(.failure) : status
            }
            let keepPerMonitor =
                options.has("keep-per-monitor") ? try options.integer("keep-per-monitor", default: 0, in: 1...100_000_000) : nil
            let keepMs = try options.duration("keep")!
            guard keepMs % 86_400_000 == 0, keepMs / 86_400_000 <= 100_000 else {
                throw UsageError("--keep wants whole days up to 100000d (30d, 2w, 400d), or 0 for forever, not '\(options.value("keep")!)'")
            }
            let keepDays = Int(keepMs / 86_400_000)
            if options.has("auto-approve"), !options.has("remote") {
                throw UsageError("--auto-approve applies to samples from elsewhere: add --remote (your own samples count at once)")
            }
            let approved =
                options.value("approve-agents").map {
                    $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                } ?? []
            let policy = IngestPolicy(
                remote: options.has("remote"), autoApprove: options.has("auto-approve"), approvedAgents: approved, quorum: quorum)
            if clickHouse != nil, keepPerMonitor != nil {
                throw UsageError("--keep-per-monitor is for a SQLite file; a ClickHouse store keeps whole months (--keep)")
            }
            let store = try openStore(create: true, policy: policy)
            try store.approveListedAgents(now: now)
            let ingester = Ingester(
                store: store, retention: Retention(perMonitor: keepPerMonitor, days: keepDays == 0 ? nil : keepDays),
                output: context.output, passThrough: !options.has("quiet"),
                diagnostics: context.diagnostics, now: clock)
            feed(ingester)
            return context.diagnostics.errorCount > 0 ? .failure : .success
        case .overview:
            try writer.write(try openViews().1.overview().encoded())
        case .monitors:
            try emitList(try openViews().1.monitors())
        case .monitor:
            let (store, views) = try openViews()
            try writer.write(try views.monitor(try findMonitor(store, operands[0])).encoded())
        case .history:
            let span = try options.lookback("since", now: now, Views.historyLookback)
            let ndjson = try ndjsonFormat()
            let (store, views) = try openViews()
            let record = try findMonitor(store, operands[0])
            var out: [UInt8] = ndjson ? [] : [UInt8(ascii: "[")]
            out.reserveCapacity(1 << 16)
            try views.history(record, spanMs: span, separator: ndjson ? 0x0A : UInt8(ascii: ","), into: &out)
            if !ndjson { out.append(UInt8(ascii: "]")) }
            if !(ndjson && out.isEmpty) { try writer.write(out) }
        case .results:
            let span = try options.lookback("since", now: now, Views.resultsLookback)
            let page = try options.page(Views.resultsPages)
            let (store, views) = try openViews()
            let record = try findMonitor(store, operands[0])
            try writer.write(try views.results(record, spanMs: span, page: page).encoded())
        case .agents:
            switch agentAction {
            case nil:
                try emitList(try openViews().1.agents())
            case .approve?, .reject?:
                let status: AgentStatus = agentAction == .approve ? .approved : .rejected
                let (store, views) = try openViews()
                guard try store.setAgentStatus(operands[0], to: status) else { throw ToolError("no agent '\(operands[0])' in \(path)") }
                try emitList(try views.agents().filter { $0.objectValue?["id"] == .string(operands[0]) })
            case .token?:
                guard let file = tokensFile() else {
                    throw UsageError("agents token on a ClickHouse store wants --tokens FILE (or $VITALS_AGENT_TOKENS)")
                }
                let agent = operands[0]
                guard !agent.isEmpty, agent.utf8.count <= 200, !agent.contains(where: { $0 == " " || $0 == "\n" || $0 == "\t" }) else {
                    throw UsageError("an agent id has no spaces and at most 200 bytes")
                }
                let token = try AgentTokens.issue(agent: agent, path: file)
                try context.output.write(Array(token.utf8))
                context.diagnostics.note("the token of agent \(agent) is above; it is shown once (only its hash is kept in \(file))")
            }
        case .stats:
            try writer.write(try openViews().1.stats(from: since).encoded())
        case .clear:
            let all = options.has("all")
            guard all != (options.has("monitor") || options.has("until")) else {
                throw UsageError(
                    all
                        ? "clear --all clears everything; leave out --monitor and --until, or --all"
                        : "clear wants --all, --monitor ID or --until WHEN (or both of the last two)")
            }
            let store = try openViews().0
            let monitorID = try options.value("monitor").map { try findMonitor(store, $0).id }
            let before = options.has("until") ? until : nil
            let deleted = try store.clear(monitorID: monitorID, before: before)
            try writer.write(
                JSONValue.object(
                    JSONObject([
                        JSONField("type", .string("cleared")),
                        JSONField("monitor", options.value("monitor").map(JSONValue.string) ?? .null),
                        JSONField("before", before.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null),
                        JSONField("samples", .integer(deleted)),
                    ])
                ).encoded())
        case .metrics:
            let exposition = try openViews().1.metrics()
            if let file = options.value("output") {
                // Readable by node_exporter, which runs as another user, and writable by no one else
                // even under umask 000: a file others can write is theirs to fill with metrics.
                let mask = umask(0o022)
                umask(mask)
                try AtomicFile.write(exposition, to: file, mode: 0o644 & ~mask)
            } else {
                try writer.write(exposition.dropLast())  // the writer ends the last line
            }
        case .export:
            let ndjson = try ndjsonFormat()
            let store = try openViews().0
            let monitorID = try options.value("monitor").map { try findMonitor(store, $0).id }
            if !ndjson {
                try writer.write(CSVExport.header)
                try store.export(from: since, until: until, monitorID: monitorID) { record in
                    try writer.write(CSVExport.row(record))
                }
            } else {
                try store.export(from: since, until: until, monitorID: monitorID) { try writer.write(UnsafeRawBufferPointer($0)) }
            }
        }
        return .success
    }

    /// The spool folder when --spool names none: `$XDG_STATE_HOME/vitals/spool`, else
    /// `$HOME/.local/state/vitals/spool` (the XDG base directories' place for state; a relative
    /// `XDG_STATE_HOME` is ignored, as the specification asks).
    static func defaultSpoolFolder(_ environment: [String: String]) throws -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/vitals/spool" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/state/vitals/spool" }
        throw UsageError("no folder for the spool: name one with --spool DIR (neither $XDG_STATE_HOME nor $HOME is set)")
    }

    /// What the lists print: one JSON array (the API's answer), or one object a line.
    static let listFormats = ["json", "ndjson"]

    /// The subcommands, as the table names them (a test holds the two to the same words).
    enum Subcommand: String, CaseIterable {
        case ingest, overview, monitors, monitor, history, results, agents, follow, serve, cgi, stats, export, metrics, clear
    }

    /// What `agents ACTION` does.
    enum AgentAction: String, CaseIterable {
        case approve, reject, token
    }
}

/// CSV export: one row per sample, RFC 4180 quoting, the columns most spreadsheets want.
enum CSVExport {
    static let columns = ["monitor", "name", "at", "status", "reason", "code", "latency_ms", "message", "tls_expiry_days", "speed_mbps"]
    static let header = columns.joined(separator: ",")

    static func row(_ record: UnsafeBufferPointer<UInt8>) -> String {
        guard case .object(let object)? = try? JSONParser.parse(record) else { return "" }
        return columns.map { key -> String in
            switch object[key] {
            case .string(let text)?: return quote(text)
            case .number(let text)?: return text
            case .bool(let flag)?: return flag ? "true" : "false"
            default: return ""
            }
        }.joined(separator: ",")
    }

    static func quote(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

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

    /// Runs store-samples: the options every subcommand shares are checked first (a usage error is
    /// 64 whatever the database), then the subcommand runs (`Subcommands/`).
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        let subcommand = options.subcommand(as: Subcommand.self)
        let run = try StoreRun(options, context, subcommand: subcommand)
        switch subcommand {
        case .ingest: return try run.ingest()
        case .follow: return try run.follow()
        case .serve: return try run.serve()
        case .cgi: return run.cgi()
        case .overview: return try run.overview()
        case .monitors: return try run.monitors()
        case .monitor: return try run.monitor(options.operands[0])
        case .history: return try run.history(options.operands[0])
        case .results: return try run.results(options.operands[0])
        case .stats: return try run.stats()
        case .agents:
            switch options.action(as: AgentAction.self) {
            case nil: return try run.agents()
            case .approve?: return try run.setAgentStatus(options.operands[0], to: .approved)
            case .reject?: return try run.setAgentStatus(options.operands[0], to: .rejected)
            case .token?: return try run.agentToken(options.operands[0])
            }
        case .clear: return try run.clear()
        case .metrics: return try run.metrics()
        case .export: return try run.export()
        }
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

    static func row(_ record: LineBytes) -> String {
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

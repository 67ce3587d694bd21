import Foundation
import Serving
import VitalsKit

/// `snapshot-delta`: HealthProbe's integrity chain for health records, on the command line.
public enum SnapshotDeltaCommand: VitalsCommand {
    /// The option table.
    public static let spec = CommandSpec(
        name: "snapshot-delta",
        summary:
            "Integrity snapshots of health records: a hash chain of per-type counts, deltas, anomaly rules and the samples themselves.",
        usage: [
            "[OPTIONS] take [FILE...]", "[OPTIONS] list | show ID | diff A B | compare OTHER | verify | log",
            "[OPTIONS] delete ID [--preview]", "[OPTIONS] anomalies [--unresolved | --counts] | anomalies resolve ID",
            "[OPTIONS] samples --type TYPE | disappeared A B",
            "[OPTIONS] pair --server-cert FILE | paired | unpair FINGERPRINT",
            "[OPTIONS] share TYPE... | unshare TYPE... | shared", "[OPTIONS] cert server|client --out DIR",
            "[OPTIONS] serve --socket PATH | cgi",
        ],
        description: """
            take reads an Apple Health export.xml (streamed with libxml2, its DTD ignored) or NDJSON health_record \
            and type_status lines, counts the records per type, and adds a snapshot to the chain in the archive: \
            type hashes, a checksum over the complete types, the delta from the previous snapshot with a reason per \
            type, and HealthProbe's anomaly rules. Any error in the input means no snapshot. The other subcommands \
            read and check the chain, delete a snapshot from any position, and query the archived samples. \
            pair, paired, unpair and cert manage Health Sync's clients, share, unshare and shared the types it \
            serves (every type until a choice is made); serve answers Health Sync's POST /api/v1/pair \
            and POST /api/v1/health/data behind nginx as a FastCGI responder (cgi: one request, for web servers that \
            run a program per request; vitals-serve(7)). \
            See snapshot-delta(1) for every rule, vitals-records(7) for the records.
            """,
        options: [
            OptionSpec("db", short: "d", value: "PATH", help: "the archive (default $VITALS_HEALTH_DB, else health.db)"),
            OptionSpec(
                "format", short: "f", value: "FORMAT", choices: ["auto", "apple-health", "ndjson", "text", "csv"],
                help:
                    "take: auto (default), apple-health or ndjson; list, show, diff, compare, anomalies, paired, shared, share, unshare: ndjson (default) or text; samples, disappeared: ndjson (default) or csv; pair, cert: text (default) or ndjson"
            ),
            OptionSpec(
                "registry", short: "r", value: "FILE",
                help: "take: the monitored types, one identifier a line (default: every type in the input)"),
            OptionSpec(
                "device-id-file", value: "FILE",
                help: "take: the stable device id, kept outside the archive (default $XDG_CONFIG_HOME/vitals/device-id)"),
            OptionSpec(
                "tz", value: "ZONE", aliases: ["timezone"],
                help: "take: the time zone of the yearly counts (default $TZ, else the system's)"),
            OptionSpec("trigger", value: "WORD", default: "manual", help: "take: what asked for the snapshot, recorded with it"),
            .duration(
                "debounce", range: 1...Int64.max / 4,
                help:
                    "take: skip a take whose --trigger is not manual while the latest snapshot is younger than this (HealthProbe's observer waits 10m); a manual take is never skipped"
            ),
            OptionSpec("post-restore", help: "take: mark the snapshot as a baseline after a restore"),
            OptionSpec("no-samples", help: "take: count and chain only; do not archive the samples themselves"),
            OptionSpec("exit-status", short: "e", help: "take, diff: exit 1 when an anomaly is found; compare: when the archives differ"),
        ] + OptionSpec.progress("take") + [
            .now(),
            OptionSpec("unresolved", help: "anomalies: only those not resolved yet"),
            OptionSpec(
                "counts",
                help: "anomalies: the seed's dashboard instead: how many are unresolved, by severity (critical, warning, info)"),
            OptionSpec("preview", help: "delete: say what deleting would do, change nothing"),
            OptionSpec("force", help: "delete: delete even when the chain will not verify afterwards; cert: replace existing files"),
            OptionSpec("type", value: "TYPE", help: "samples: the type identifier (required)"),
            .when("since", aliases: ["from"], help: "samples: from this time (RFC 3339) or this long ago (7d); default the beginning"),
            .when("until", aliases: ["to"], help: "samples: before this time or this long ago; default no end"),
        ] + OptionSpec.paging("samples", items: "samples", SampleQuery.pages) + [
            OptionSpec(
                "server-cert", value: "FILE",
                help: "pair: the server's certificate (PEM), whose fingerprints the client pins (default $VITALS_SERVER_CERT)"),
            .duration("ttl", default: "10m", range: 1000...Int64.max / 4, help: "pair: how long the pairing token stays valid"),
            OptionSpec(
                "url", value: "URL", default: "https://localhost:8443",
                help: "pair: the server's address as clients reach it, for the printed command and the QR code"),
            OptionSpec(
                "all", help: "paired: the unpaired clients too; share: every type, including those later takes bring; unshare: every type"),
            OptionSpec("out", value: "DIR", help: "cert: the folder for KIND.crt and KIND.key (required)"),
            OptionSpec(
                "name", value: "NAME", repeatable: true,
                help:
                    "cert: a host name or address for the certificate, the first also its common name (default: localhost, 127.0.0.1 and ::1 for server, vitals-client for client)"
            ),
            OptionSpec("days", value: "N", default: "825", help: "cert: how many days the certificate is valid"),
            OptionSpec(
                "sync-types", value: "N", default: String(seedRules.syncMinTypes), help: "a sync anomaly needs N types changing at once"),
            OptionSpec(
                "sync-change", value: "PCT", default: DefaultText.number(seedRules.syncChangePercent),
                help: "the change of a type that counts towards a sync anomaly, percent"),
            OptionSpec(
                "duplication-change", value: "PCT", default: DefaultText.number(seedRules.duplicationChangePercent),
                help: "growth above which a type with unchanged dates is a duplication, percent"),
            .duration(
                "duplication-window", default: DefaultText.duration(milliseconds: seedRules.duplicationWindowMs), range: 0...Int64.max / 4,
                help: "how far the date range may move for a duplication"),
            OptionSpec(
                "deletion-warning", value: "PCT", default: DefaultText.number(seedRules.deletionWarningPercent),
                help: "share lost from which a deletion is a warning, percent"),
            OptionSpec(
                "deletion-critical", value: "PCT", default: DefaultText.number(seedRules.deletionCriticalPercent),
                help: "share lost from which a deletion is critical, percent"),
            OptionSpec(
                "restore-records", value: "N", default: "1000", help: "take: a chain start with more records is a post-restore baseline"),
            OptionSpec(
                "refusal-log", value: "PATH",
                help:
                    "serve: also read nginx's access log of the requests it refused itself from a FIFO made at PATH, written to the operation log (network_refusal)"
            ),
        ] + Serve.options,
        subcommands: [
            SubcommandSpec(
                "take", operands: 0...Int.max, "[FILE...]",
                options: ruleOptions.union([
                    "format", "registry", "device-id-file", "tz", "trigger", "debounce", "post-restore", "no-samples",
                    "exit-status", "restore-records", "progress", "no-progress",
                ]),
                choices: ["format": ["auto", "apple-health", "ndjson"]],
                summary: "count an Apple Health export or NDJSON health records and add a snapshot to the chain"),
            SubcommandSpec("list", options: ["format"], choices: ["format": recordsOrText], summary: "the snapshots in the chain"),
            SubcommandSpec(
                "show", operands: 1...1, "ID", options: ["format"], choices: ["format": recordsOrText],
                summary: "one snapshot, its delta and anomalies"),
            SubcommandSpec(
                "diff", operands: 2...2, "A B", options: ruleOptions.union(["format", "exit-status"]),
                choices: ["format": recordsOrText], summary: "the delta and anomalies between two snapshots, computed now and not stored"),
            SubcommandSpec(
                "compare", operands: 1...1, "OTHER", options: ["format", "exit-status"], choices: ["format": recordsOrText],
                summary: "the latest snapshot of another device's archive against this one's, type by type, computed now and not stored"),
            SubcommandSpec("verify", summary: "check the chain; exit 1 when it does not verify"),
            SubcommandSpec(
                "delete", operands: 1...1, "ID", options: ruleOptions.union(["preview", "force"]),
                summary: "delete a snapshot from any position, merging the deltas around it"),
            SubcommandSpec("log", summary: "the audit log of every change and access"),
            SubcommandSpec(
                "anomalies",
                actions: [
                    SubcommandAction(
                        AnomalyAction.resolve.rawValue, operands: 1...1, "ID",
                        summary: "mark one anomaly resolved (the seed's dashboard button)")
                ], requiresAction: false, options: ["unresolved", "counts", "format"], choices: ["format": recordsOrText],
                summary: "the anomalies found, critical first, or the dashboard's counts of unresolved ones; resolve one"),
            SubcommandSpec(
                "samples", options: ["type", "since", "until", "page", "per-page", "format"], choices: ["format": recordsOrCSV],
                summary: "the archived samples of one type"),
            SubcommandSpec(
                "disappeared", operands: 2...2, "A B", options: ["format"], choices: ["format": recordsOrCSV],
                summary: "the samples archived with snapshot A that snapshot B no longer has"),
            SubcommandSpec(
                "pair", options: ["server-cert", "ttl", "url", "format"], choices: ["format": textOrRecords],
                summary: "print a one-time pairing token and the server certificate's fingerprints, with a QR code"),
            SubcommandSpec(
                "paired", options: ["all", "format"], choices: ["format": recordsOrText], summary: "the paired client certificates"),
            SubcommandSpec("unpair", operands: 1...1, "FINGERPRINT", summary: "unpair a client certificate by its SHA-256 fingerprint"),
            SubcommandSpec(
                "share", operands: 0...Int.max, "TYPE...", options: ["all", "format"], choices: ["format": recordsOrText],
                summary: "let Health Sync's clients fetch these types (--all: every type, as before any choice)"),
            SubcommandSpec(
                "unshare", operands: 0...Int.max, "TYPE...", options: ["all", "format"], choices: ["format": recordsOrText],
                summary: "stop serving these types to Health Sync's clients (--all: every type)"),
            SubcommandSpec(
                "shared", options: ["format"], choices: ["format": recordsOrText],
                summary: "the types Health Sync serves, and those it does not"),
            SubcommandSpec(
                "cert",
                actions: [
                    SubcommandAction(
                        CertKind.server.rawValue, options: certOptions, choices: ["format": textOrRecords],
                        summary: "make server.crt and server.key in --out DIR, for nginx"),
                    SubcommandAction(
                        CertKind.client.rawValue, options: certOptions, choices: ["format": textOrRecords],
                        summary: "make client.crt and client.key in --out DIR, for a client to present"),
                ], requiresAction: true,
                summary: "make a self-signed server or client certificate and key with openssl"),
            SubcommandSpec(
                "serve", options: Serve.optionNames.union(["refusal-log"]),
                summary: "answer Health Sync's endpoints behind nginx as a FastCGI responder, until stopped (see vitals-serve(7))"),
            SubcommandSpec("cgi", summary: "answer one Health Sync request as a CGI program (see vitals-serve(7))"),
        ],
        examples: [
            "snapshot-delta take export.xml",
            "unzip -p export.zip apple_health_export/export.xml | snapshot-delta take -",
            "snapshot-delta list --format text",
            "snapshot-delta verify || echo 'the chain is broken'",
            "snapshot-delta disappeared 1 3 --format csv",
        ],
        exitStatuses: [
            (.success, "done (verify: the chain is intact)"),
            (.verdict, "verify found a fault; take or diff with --exit-status found an anomaly, compare a difference"),
            (
                .failure,
                "an error: the input had errors (no snapshot was taken), an unknown snapshot, an archive that cannot be read or written, an unknown fingerprint to unpair, openssl failing"
            ),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT (no snapshot was taken)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "store-samples(1)", "xmllint(1)"]
    )

    /// HealthProbe's anomaly rules, whose numbers are the defaults of the rule options.
    static let seedRules = AnomalyRules()
    /// What --format takes where it prints records or text (the default first), records or CSV, text or records.
    static let recordsOrText = ["ndjson", "text"]
    static let recordsOrCSV = ["ndjson", "csv"]
    static let textOrRecords = ["text", "ndjson"]
    /// The options of `cert server` and `cert client`.
    static let certOptions: Set<String> = ["out", "name", "days", "force", "format"]
    /// The options that tune the anomaly rules (take, diff, delete).
    static let ruleOptions: Set<String> = [
        "sync-types", "sync-change", "duplication-change", "duplication-window",
        "deletion-warning", "deletion-critical",
    ]

    /// Runs snapshot-delta: the framework has already taken the subcommand and checked its options and operands.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        let operands = options.operands
        let path = options.value("db") ?? context.environment["VITALS_HEALTH_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "health.db"
        let fixedNow = try options.now()
        let now: @Sendable () -> Int64 = { fixedNow ?? Clock.wallMilliseconds() }
        let rules = try anomalyRules(options)
        let run = Run(options: options, context: context, path: path, now: now, rules: rules)
        switch options.subcommand(as: Subcommand.self) {
        case .take: return try run.take(operands)
        case .list: return try run.list()
        case .show: return try run.show(operands[0])
        case .diff: return try run.diff(operands[0], operands[1])
        case .compare: return try run.compare(operands[0])
        case .verify: return try run.verify()
        case .delete: return try run.delete(operands[0])
        case .log: return try run.log()
        case .anomalies:
            switch options.action(as: AnomalyAction.self) {
            case nil: return try run.anomalies()
            case .resolve?: return try run.resolveAnomaly(operands[0])
            }
        case .samples: return try run.samples()
        case .disappeared: return try run.disappeared(operands[0], operands[1])
        case .pair: return try run.pair()
        case .paired: return try run.paired()
        case .unpair: return try run.unpair(operands[0])
        case .share: return try run.share(operands, share: true)
        case .unshare: return try run.share(operands, share: false)
        case .shared: return try run.shared()
        case .cert: return try run.cert(options.requiredAction(as: CertKind.self))
        case .serve: return try run.serve()
        case .cgi: return try run.cgi()
        }
    }

    /// The subcommands, as the table names them (a test holds the two to the same words).
    enum Subcommand: String, CaseIterable {
        case take, list, show, diff, compare, verify, delete, log, anomalies, samples, disappeared, pair, paired, unpair, share, unshare,
            shared, cert, serve, cgi
    }

    /// What `anomalies ACTION` does.
    enum AnomalyAction: String, CaseIterable {
        case resolve
    }

    /// The certificate `cert` makes.
    enum CertKind: String, CaseIterable {
        case server, client
    }

    static func anomalyRules(_ options: ParsedOptions) throws -> AnomalyRules {
        var rules = AnomalyRules()
        rules.syncMinTypes = try options.integer("sync-types", in: 1...100_000)
        rules.syncChangePercent = try options.number("sync-change", in: 0...1_000_000)
        rules.duplicationChangePercent = try options.number("duplication-change", in: 0...1_000_000)
        rules.duplicationWindowMs = try options.duration("duplication-window") ?? rules.duplicationWindowMs
        rules.deletionWarningPercent = try options.number("deletion-warning", in: 0...100)
        rules.deletionCriticalPercent = try options.number("deletion-critical", in: 0...100)
        if rules.deletionCriticalPercent < rules.deletionWarningPercent {
            throw UsageError("--deletion-critical must not be below --deletion-warning")
        }
        return rules
    }
}

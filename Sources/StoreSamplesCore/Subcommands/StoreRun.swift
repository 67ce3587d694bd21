import Foundation
import VitalsKit

/// One invocation of store-samples: the options every subcommand shares, checked before the
/// store is opened (a usage error is 64 whatever the database), and the store the `--db` value
/// names. Each subcommand is a method in this folder.
struct StoreRun {
    typealias Subcommand = StoreSamplesCommand.Subcommand

    let options: ParsedOptions
    let context: ToolContext
    let subcommand: Subcommand
    /// The `--db` value (or `$VITALS_DB`, or vitals.db).
    let database: String
    /// Set when `--db` names an agent's remote store (https://...).
    let remote: RemoteLocation?
    /// Set when `--db` names a ClickHouse store.
    let clickHouse: ClickHouseLocation?
    /// What messages call the store: the file, or the URL with its password masked.
    let path: String
    /// `--now`, when given.
    let fixedNow: Int64?
    /// The end of every window: `--now`, or the clock at the start.
    let now: Int64
    /// `--wait`, in ms (0 when absent).
    let waitMs: Int64
    /// `--since` and `--until` (no bound when absent).
    let since: Int64
    let until: Int64
    /// `--sort`, `--quorum` and `--agent`, for the views.
    let order: Views.MonitorOrder
    let quorum: Quorum
    let selection: SampleSelection

    var writer: RecordWriter { context.output }

    /// The clock: `--now` fixed, or the wall clock read each time.
    var clock: @Sendable () -> Int64 {
        let fixed = fixedNow
        return { fixed ?? Clock.wallMilliseconds() }
    }

    init(_ options: ParsedOptions, _ context: ToolContext, subcommand: Subcommand) throws {
        self.options = options
        self.context = context
        self.subcommand = subcommand
        let database = options.value("db") ?? context.environment["VITALS_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "vitals.db"
        self.database = database
        fixedNow = try options.now()
        now = fixedNow ?? Clock.wallMilliseconds()
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
        remote = isRemote ? try RemoteLocation(database, environment: context.environment) : nil
        clickHouse =
            database.hasPrefix(ClickHouseLocation.prefix)
            ? try ClickHouseLocation(
                database, environment: context.environment, readFile: { try String(contentsOfFile: $0, encoding: .utf8) })
            : nil
        path = clickHouse?.display ?? remote?.display ?? database
        waitMs = try options.duration("wait") ?? 0
        if clickHouse == nil, remote == nil, options.has("wait") {
            throw UsageError("--wait applies to a ClickHouse store (--db clickhouse://...) or a remote store (--db https://...)")
        }
        since = try options.time("since", now: now) ?? Int64.min / 2
        until = try options.time("until", now: now) ?? Int64.max / 2
        order = try options.choice("sort", as: Views.MonitorOrder.self)
        let quorumText = options.value("quorum") ?? "majority"
        guard let quorum = Quorum(quorumText) else {
            throw UsageError("--quorum takes majority, all, any or a number of places from 1, not '\(quorumText)'")
        }
        self.quorum = quorum
        selection = SampleSelection(agent: options.value("agent").map(Views.place(named:)))
    }

    /// The store the `--db` value names.
    func openStore(create: Bool, policy: IngestPolicy = IngestPolicy()) throws -> SampleStore {
        try Self.opener(database: database, clickHouse: clickHouse, waitMs: waitMs, now: now)(create, policy)
    }

    /// Opens the store `database` names, as the API's responder does for each of its stores.
    static func opener(database: String, clickHouse: ClickHouseLocation?, waitMs: Int64, now: Int64) -> OnlineTrackerAPI.StoreOpener {
        { create, policy in
            if let clickHouse {
                return try ClickHouseSampleStore(location: clickHouse, waitMs: waitMs, create: create, now: now, policy: policy)
            }
            return try SQLiteSampleStore(path: database, create: create, policy: policy)
        }
    }

    /// The store opened for a query, and its views.
    func openViews() throws -> (SampleStore, Views) {
        let store = try openStore(create: false)
        return (store, Views(store: store, now: now, order: order, quorum: quorum, selection: selection))
    }

    /// The monitor an operand or `--monitor` names, by integer id or monitor id.
    func findMonitor(_ store: SampleQueries, _ key: String) throws -> MonitorRecord {
        guard let record = try store.monitor(matching: key) else { throw ToolError("no monitor '\(key)' in \(path)") }
        return record
    }

    /// The agents' token file: --tokens, $VITALS_AGENT_TOKENS, or beside a database file.
    func tokensFile() -> String? {
        if let file = options.value("tokens") ?? context.environment["VITALS_AGENT_TOKENS"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return file
        }
        return clickHouse == nil ? database + ".tokens" : nil
    }

    /// Whether --format (default: the subcommand's first choice) asks for ndjson.
    func ndjsonFormat() throws -> Bool { try options.choice("format") == "ndjson" }

    /// A list as one JSON array (the API's answer), or one object a line with --format ndjson.
    func emitList(_ items: [JSONValue]) throws {
        if try ndjsonFormat() {
            for item in items { try writer.write(item.encoded()) }
        } else {
            try writer.write(JSONValue.array(items).encoded())
        }
    }
}

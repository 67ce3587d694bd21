import Foundation
import VitalsKit

/// `store-samples`: keep samples in SQLite and answer OnlineTracker's views of them.
public enum StoreSamplesCommand: VitalsCommand {
    /// The subcommands, with the options each accepts (beyond --db, --help, --version).
    static let subcommands: [(name: String, operands: String, options: Set<String>)] = [
        ("ingest", "[FILE...]", ["quiet", "keep-per-monitor", "keep-days", "now"]),
        ("overview", "", ["now"]),
        ("monitors", "", ["ndjson"]),
        ("monitor", "ID", []),
        ("history", "ID", ["hours", "now", "ndjson"]),
        ("results", "ID", ["hours", "page", "per-page", "now"]),
        ("agents", "[approve|reject ID]", ["ndjson"]),
        ("stats", "", ["since", "now"]),
        ("export", "", ["since", "until", "monitor", "format", "now"]),
    ]

    /// The option table.
    public static let spec = CommandSpec(
        name: "store-samples",
        summary: "Keep sample records in SQLite and answer OnlineTracker's views of their history.",
        usage: ["[OPTIONS] [ingest] [FILE...]", "[OPTIONS] overview | monitors | monitor ID | history ID | results ID",
                "[OPTIONS] agents [approve|reject ID] | stats | export"],
        description: """
        Without a subcommand (or with ingest), samples are read from the FILEs or standard input and stored; \
        each record is written to standard output once the transaction holding it has committed. The other \
        subcommands print JSON shaped as OnlineTracker's API (overview, monitors, monitor, history, results, \
        agents), Online Now's statistics (stats), or the stored samples (export). See store-samples(1).
        """,
        options: [
            OptionSpec("db", short: "d", value: "PATH", help: "the database file (default $VITALS_DB, else vitals.db)"),
            OptionSpec("quiet", short: "q", help: "ingest: store, but pass nothing on"),
            OptionSpec("keep-per-monitor", value: "N", help: "ingest: keep at most N samples per monitor (isitup keeps 200, Online Now 1000; default no limit)"),
            OptionSpec("keep-days", value: "DAYS", help: "ingest: keep samples for DAYS days; 0 keeps them forever (default 400)"),
            OptionSpec("now", value: "TIME", help: "the time taken as now: the end of every window, the clock of retention and of --since, RFC 3339 (default: the clock)"),
            OptionSpec("hours", value: "H", help: "history: hours of buckets (default 72, at most 8760); results: hours of checks (default 24)"),
            OptionSpec("page", value: "P", help: "results: the page, from 1 (default 1)"),
            OptionSpec("per-page", value: "N", help: "results: checks per page, at most 100 (default 25)"),
            OptionSpec("ndjson", help: "monitors, history, agents: one JSON object per line instead of one array"),
            OptionSpec("since", value: "WHEN", help: "export, stats: from this time (RFC 3339) or this long ago (24h, 7d)"),
            OptionSpec("until", value: "WHEN", help: "export: before this time or this long ago (default: no end)"),
            OptionSpec("monitor", short: "m", value: "ID", help: "export: only this monitor (integer or monitor id)"),
            OptionSpec("format", short: "f", value: "FORMAT", help: "export: ndjson (the samples as stored, default) or csv"),
        ],
        examples: [
            "probe-http targets.ndjson | store-samples --db vitals.db | jq -c 'select(.status != \"up\")'",
            "store-samples --db vitals.db overview",
            "store-samples --db vitals.db history api --hours 24 --ndjson",
            "store-samples --db vitals.db export --since 24h > last-day.ndjson",
        ],
        exitStatuses: [
            (.success, "done (a query that matches nothing prints an empty list)"),
            (.failure, "bad input lines (the rest was stored), an unknown monitor or agent, or a database that cannot be opened or written"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT (what was read is committed first)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "probe-http(1)"]
    )

    /// Runs store-samples.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        var operands = options.operands
        var subcommand = "ingest"
        if let first = operands.first, subcommands.contains(where: { $0.name == first }) {
            subcommand = first
            operands.removeFirst()
        }
        let allowed = subcommands.first { $0.name == subcommand }!.options
        for option in spec.options.map(\.long) where option != "db" && option != "now" && options.has(option) && !allowed.contains(option) {
            throw UsageError("--\(option) does not apply to \(subcommand)")
        }
        let path = options.value("db") ?? context.environment["VITALS_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "vitals.db"
        var now = Clock.wallMilliseconds()
        if let text = options.value("now") {
            guard let parsed = Timestamp.parse(text) else { throw UsageError("--now wants an RFC 3339 time such as 2026-01-27T10:30:00Z, not '\(text)'") }
            now = parsed
        }
        let fixedNow = now
        let clock: () -> Int64 = options.has("now") ? { fixedNow } : { Clock.wallMilliseconds() }

        if subcommand == "ingest" {
            let keepPerMonitor = options.has("keep-per-monitor") ? try options.integer("keep-per-monitor", default: 0, in: 1...100_000_000) : nil
            let keepDays = try options.integer("keep-days", default: 400, in: 0...100_000)
            let store = try SQLiteSampleStore(path: path, create: true)
            let ingester = Ingester(store: store, retention: Retention(perMonitor: keepPerMonitor, days: keepDays == 0 ? nil : keepDays),
                                    output: context.output, passThrough: !options.has("quiet"),
                                    diagnostics: context.diagnostics, now: clock)
            var keepGoing = true
            Inputs(operands, stdin: context.streams.input).forEach(diagnostics: context.diagnostics) { reader in
                if keepGoing { keepGoing = ingester.ingest(reader) }
            }
            if let failure = ingester.failure {
                context.diagnostics.error("\(failure)")
                return .failure
            }
            return context.diagnostics.errorCount > 0 ? .failure : .success
        }

        func oneOperand(_ what: String) throws -> String {
            guard operands.count == 1 else { throw UsageError("\(subcommand) wants one \(what)") }
            return operands[0]
        }
        func noOperands() throws {
            if !operands.isEmpty { throw UsageError("\(subcommand) takes no operands, not '\(operands[0])'") }
        }
        let store = try SQLiteSampleStore(path: path, create: false)
        let views = Views(store: store, now: now)
        func findMonitor(_ key: String) throws -> MonitorRecord {
            guard let record = try store.monitor(matching: key) else { throw ToolError("no monitor '\(key)' in \(path)") }
            return record
        }
        let writer = context.output
        func emitList(_ items: [JSONValue]) throws {
            if options.has("ndjson") {
                for item in items { try writer.write(item.encoded()) }
            } else {
                try writer.write(JSONValue.array(items).encoded())
            }
        }

        switch subcommand {
        case "overview":
            try noOperands()
            try writer.write(try views.overview().encoded())
        case "monitors":
            try noOperands()
            try emitList(try views.monitors())
        case "monitor":
            try writer.write(try views.monitor(try findMonitor(try oneOperand("monitor ID"))).encoded())
        case "history":
            let record = try findMonitor(try oneOperand("monitor ID"))
            let hours = try options.integer("hours", default: 72, in: 1...8760)
            let ndjson = options.has("ndjson")
            var out: [UInt8] = ndjson ? [] : [UInt8(ascii: "[")]
            out.reserveCapacity(1 << 16)
            try views.history(record, hours: hours, separator: ndjson ? 0x0A : UInt8(ascii: ","), into: &out)
            if !ndjson { out.append(UInt8(ascii: "]")) }
            if !(ndjson && out.isEmpty) { try writer.write(out) }
        case "results":
            let record = try findMonitor(try oneOperand("monitor ID"))
            let hours = try options.integer("hours", default: 24, in: 1...8760 * 10)
            let page = try options.integer("page", default: 1, in: 1...Int(Int32.max))
            let perPage = try options.integer("per-page", default: 25, in: 1...100)
            try writer.write(try views.results(record, hours: hours, page: page, perPage: perPage).encoded())
        case "agents":
            if operands.isEmpty {
                try emitList(try views.agents())
            } else {
                guard operands.count == 2, ["approve", "reject"].contains(operands[0]) else {
                    throw UsageError("agents takes no operands, or 'approve ID' or 'reject ID'")
                }
                let status = operands[0] == "approve" ? "approved" : "rejected"
                guard try store.setAgentStatus(operands[1], to: status) else { throw ToolError("no agent '\(operands[1])' in \(path)") }
                try emitList(try views.agents().filter { $0.objectValue?["id"] == .string(operands[1]) })
            }
        case "stats":
            try noOperands()
            try writer.write(try views.stats(from: try when("since", now: now) ?? Int64.min / 2).encoded())
        case "export":
            try noOperands()
            let from = try when("since", now: now) ?? Int64.min / 2
            let until = try when("until", now: now) ?? Int64.max / 2
            let format = try options.choice("format", of: ["ndjson", "csv"], default: "ndjson")
            let monitorID = try options.value("monitor").map { try findMonitor($0).id }
            if format == "csv" {
                try writer.write(CSVExport.header)
                try store.export(from: from, until: until, monitorID: monitorID) { record in
                    try writer.write(CSVExport.row(record))
                }
            } else {
                try store.export(from: from, until: until, monitorID: monitorID) { try writer.write(UnsafeRawBufferPointer($0)) }
            }
        default:
            throw UsageError("unknown subcommand \(subcommand)")
        }
        return .success

        func when(_ option: String, now: Int64) throws -> Int64? {
            guard let text = options.value(option) else { return nil }
            if let time = Timestamp.parse(text) { return time }
            if let ago = DurationText.parseMilliseconds(text) { return now - ago }
            throw UsageError("--\(option) wants an RFC 3339 time or a duration such as 24h, not '\(text)'")
        }
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

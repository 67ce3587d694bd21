import Foundation
import Testing

@testable import VitalsKit

let testSpec = CommandSpec(
    name: "tool", summary: "A tool.", usage: ["[OPTIONS] [FILE...]"], description: "",
    options: [
        OptionSpec("concurrency", short: "c", value: "N", help: "how many"),
        OptionSpec("watch", short: "w", help: "forever"),
        OptionSpec("summary", short: "s", help: "sum up"),
        OptionSpec("to", value: "URL", repeatable: true, help: "where"),
        OptionSpec("timeout", value: "DURATION", help: "how long"),
    ],
    exitStatuses: [(.success, "fine")])

@Suite("options, help and exit statuses")
struct CommandLineTests {
    @Test("long, short, combined and attached forms")
    func forms() throws {
        let parsed = try ArgumentParser.parse(["-ws", "-c8", "--to", "a", "--to=b", "file", "-", "--", "--watch"], spec: testSpec)
        #expect(parsed.has("watch") && parsed.has("summary"))
        #expect(parsed.value("concurrency") == "8")
        #expect(parsed.all("to") == ["a", "b"])
        #expect(parsed.operands == ["file", "-", "--watch"])
        #expect(try ArgumentParser.parse(["--conc", "3"], spec: testSpec).value("concurrency") == "3", "unique prefixes work")
    }

    @Test(
        "mistakes are usage errors with actionable words",
        arguments: [
            (["--watsh"], "unknown option '--watsh' (did you mean '--watch'?)"),
            (["--t", "1"], "option '--t' is ambiguous: --to, --timeout"),
            (["-c"], "option '-c' needs a value (N)"),
            (["--timeout"], "option '--timeout' needs a value (DURATION)"),
            (["--watch=yes"], "option '--watch' takes no value"),
            (["-x"], "unknown option '-x'"),
        ])
    func mistakes(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { _ = try ArgumentParser.parse(arguments, spec: testSpec) }
    }

    @Test("typed values are validated with ranges")
    func typed() throws {
        let parsed = try ArgumentParser.parse(["-c", "0", "--timeout", "1h30m"], spec: testSpec)
        #expect(throws: UsageError("--concurrency wants a whole number from 1 to 10, not '0'")) {
            _ = try parsed.integer("concurrency", default: 1, in: 1...10)
        }
        #expect(try parsed.duration("timeout", default: nil) == 5_400_000)
    }

    @Test("help lists every option, the examples and the exit statuses")
    func help() {
        let text = Help.render(testSpec)
        for option in testSpec.allOptions { #expect(text.contains("--\(option.long)")) }
        #expect(text.hasPrefix("Usage: tool [OPTIONS] [FILE...]\n"))
        #expect(text.contains("Exit status:\n  0     fine"))
    }

    @Test("the worse of two exit statuses wins")
    func worst() {
        #expect(VitalsKit.ExitStatus.success.worst(.verdict) == .verdict)
        #expect(VitalsKit.ExitStatus.failure.worst(.verdict) == .failure)
        #expect(VitalsKit.ExitStatus.failure.worst(.interrupted) == .interrupted)
    }

    @Test("an in-process run: usage errors are 64 with a hint on stderr")
    func execute() throws {
        enum Echo: VitalsCommand {
            static let spec = testSpec
            static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
                try context.output.write("{\"ok\":true}")
                return .success
            }
        }
        var out: [Int32] = [0, 0]
        var err: [Int32] = [0, 0]
        pipe(&out)
        pipe(&err)
        let status = Echo.execute(["--nope"], streams: Streams(input: 0, output: out[1], error: err[1]), environment: [:])
        close(err[1])
        var buffer = [UInt8](repeating: 0, count: 200)
        let count = read(err[0], &buffer, 200)
        #expect(status == .usage)
        #expect(
            String(decoding: buffer[0..<count], as: UTF8.self) == "tool: unknown option '--nope'\nTry 'tool --help' for more information.\n"
        )
        #expect(Echo.execute([], streams: Streams(input: 0, output: out[1], error: err[1]), environment: [:]) == .success)
        close(out[1])
        let outCount = read(out[0], &buffer, 200)
        #expect(String(decoding: buffer[0..<outCount], as: UTF8.self) == "{\"ok\":true}\n")
    }
}

/// A tool with subcommands, defaults, ranges and aliases, for the framework's tests.
let subcommandSpec = CommandSpec(
    name: "store", summary: "Keeps things.", usage: ["[OPTIONS] SUBCOMMAND"], description: "",
    options: [
        OptionSpec("db", short: "d", value: "PATH", help: "the database"),
        .now(),
        OptionSpec("hours", value: "H", default: "72", help: "hours of history"),
        .when("since", aliases: ["from"], help: "from this time or this long ago"),
        .when("until", aliases: ["to"], help: "until this time or this long ago"),
        OptionSpec("format", value: "FORMAT", default: "json", aliases: [OptionAlias("ndjson", meaning: "ndjson")], help: "json or ndjson"),
        .duration("timeout", short: "t", default: "5s", range: 1...3_600_000, help: "how long to wait"),
        OptionSpec("tz", value: "ZONE", default: "local", aliases: ["timezone"], help: "the time zone"),
        OptionSpec("quiet", short: "q", help: "say nothing"),
    ],
    subcommands: [
        SubcommandSpec("ingest", operands: 0...Int.max, "[FILE...]", options: ["quiet"], summary: "store samples"),
        SubcommandSpec("history", operands: 1...1, "ID", options: ["hours", "format"], summary: "one monitor's history"),
        SubcommandSpec("diff", operands: 2...2, "A B", options: ["format"], summary: "compare two"),
        SubcommandSpec("export", options: ["since", "until", "format"], summary: "every sample"),
    ],
    defaultSubcommand: "ingest",
    exitStatuses: [(.success, "fine")])

@Suite("subcommands, --now, WHEN, durations, defaults and aliases")
struct CommandSpecTests {
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedOptions {
        try ArgumentParser.parse(arguments, spec: subcommandSpec)
    }

    @Test("the first operand names the subcommand, or the default runs")
    func subcommands() throws {
        let history = try parse(["history", "api", "--hours", "3"])
        #expect(history.subcommand == "history" && history.operands == ["api"])
        let ingest = try parse(["a.ndjson", "b.ndjson"])
        #expect(ingest.subcommand == "ingest" && ingest.operands == ["a.ndjson", "b.ndjson"])
        #expect(try parse(["-d", "x.db", "export"]).subcommand == "export", "global options may come first")
    }

    @Test(
        "too few or too many operands, and options that do not apply, are usage errors naming both",
        arguments: [
            (["history"], "history wants ID, not none"),
            (["history", "a", "b"], "history wants ID, not 'b'"),
            (["diff", "a"], "diff wants A B, not only 1"),
            (["export", "x"], "export wants no operands, not 'x'"),
            (["export", "--hours", "3"], "--hours does not apply to export; it applies to history"),
            (["history", "api", "--quiet"], "--quiet does not apply to history; it applies to ingest"),
            (["history", "api", "--since", "2h"], "--since does not apply to history; it applies to export"),
            (["history", "api", "--from", "2h"], "--since does not apply to history; it applies to export"),
        ])
    func wrongUse(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { _ = try parse(arguments) }
    }

    @Test("a tool with no default subcommand asks for one, and suggests a near name")
    func noDefault() {
        let spec = CommandSpec(
            name: "chain", summary: "", usage: [], description: "", options: [],
            subcommands: [SubcommandSpec("verify", summary: "check"), SubcommandSpec("list", summary: "list")],
            exitStatuses: [])
        #expect(throws: UsageError("name a subcommand: verify, list")) { _ = try ArgumentParser.parse([], spec: spec) }
        #expect(throws: UsageError("unknown subcommand 'verfy' (did you mean 'verify'?)")) {
            _ = try ArgumentParser.parse(["verfy"], spec: spec)
        }
    }

    @Test("help per subcommand: its usage, its options and the global ones, not the others")
    func subcommandHelp() throws {
        let parsed = try parse(["history", "--help"])
        #expect(parsed.subcommand == "history", "--help skips the operand checks")
        let text = Help.render(subcommandSpec, subcommand: parsed.subcommand)
        #expect(text.hasPrefix("Usage: store [OPTIONS] history ID\n\none monitor's history\n"))
        #expect(text.contains("--hours H") && text.contains("--db PATH") && text.contains("--now TIME") && text.contains("--help"))
        #expect(!text.contains("--quiet") && !text.contains("--since"))
        let full = Help.render(subcommandSpec)
        #expect(full.contains("  history ID") && full.contains("  diff A B") && full.contains("--quiet"))
    }

    @Test("--now 2026-01-27T10:00:00Z --since 90m is 08:30:00Z; a time is taken as it is")
    func when() throws {
        let parsed = try parse(["export", "--now", "2026-01-27T10:00:00Z", "--since", "90m", "--until", "2026-01-27T09:45:00Z"])
        // 2026-01-27T10:00:00Z is 1_769_508_000_000 ms (date -u -d 2026-01-27T10:00:00Z +%s = 1769508000); less 90 × 60 000.
        let now = try #require(try parsed.now())
        #expect(now == 1_769_508_000_000)
        #expect(try parsed.time("since", now: now) == 1_769_502_600_000)
        #expect(Timestamp.format(milliseconds: try parsed.time("since", now: now)!) == "2026-01-27T08:30:00.000Z")
        #expect(Timestamp.format(milliseconds: try parsed.time("until", now: now)!) == "2026-01-27T09:45:00.000Z")
        #expect(try parse(["export"]).now() == nil)
        #expect(throws: UsageError("--now wants an RFC 3339 time such as 2026-01-27T10:30:00Z, or 'now', not 'today'")) {
            _ = try parse(["export", "--now", "today"]).now()
        }
        #expect(
            throws: UsageError("--since wants an RFC 3339 time such as 2026-01-27T10:30:00Z or a duration ago such as 24h, not 'yesterday'")
        ) {
            _ = try parse(["export", "--since", "yesterday"]).time("since", now: now)
        }
    }

    @Test(
        "a duration option has its default and its range",
        arguments: [
            ([String](), Int64?(5000), String?.none),
            (["-t", "250ms"], 250, nil),
            (["--timeout", "1h"], 3_600_000, nil),
            (["--timeout", "0s"], nil, "--timeout wants a duration from 1ms to 1h, not '0s'"),
            (["--timeout", "2h"], nil, "--timeout wants a duration from 1ms to 1h, not '2h'"),
            (["--timeout", "soon"], nil, "--timeout wants a duration such as 500ms, 30s, 5m, 24h or 7d, not 'soon'"),
        ])
    func durations(arguments: [String], milliseconds: Int64?, message: String?) throws {
        let parsed = try parse(["export"] + arguments)
        if let message {
            #expect(throws: UsageError(message)) { _ = try parsed.duration("timeout") }
        } else {
            #expect(try parsed.duration("timeout") == milliseconds)
        }
    }

    @Test("defaults come from the table, and help prints them from the same value")
    func defaults() throws {
        #expect(try parse(["history", "api"]).integer("hours", in: 1...8760) == 72)
        #expect(try parse(["history", "api", "--hours", "5"]).integer("hours", in: 1...8760) == 5)
        #expect(try parse(["history", "api"]).choice("format", of: ["json", "ndjson"]) == "json")
        #expect(try parse([]).valueOrDefault("tz") == "local")
        let help = Help.render(subcommandSpec, width: 1000)
        #expect(help.contains("  -t, --timeout DURATION  how long to wait (default 5s)\n"))
        #expect(help.contains("hours of history (default 72)\n"))
    }

    @Test("aliases are parsed as their option, shown in help as 'also', and an alias may stand for a value")
    func aliases() throws {
        let parsed = try parse(["export", "--from", "2h", "--to=1h", "--timezone", "UTC", "--ndjson"])
        #expect(parsed.value("since") == "2h" && parsed.value("until") == "1h" && parsed.value("tz") == "UTC")
        #expect(parsed.value("format") == "ndjson")
        #expect(try parse(["export", "--timez", "UTC"]).value("tz") == "UTC", "an alias's unique prefix works")
        #expect(throws: UsageError("option '--ndjson' takes no value")) { _ = try parse(["export", "--ndjson=x"]) }
        let help = Help.render(subcommandSpec, width: 1000)
        #expect(help.contains("the time zone (default local); also --timezone\n"))
        #expect(help.contains("json or ndjson (default json); also --ndjson for --format ndjson\n"))
        #expect(help.contains("from this time or this long ago; also --from\n"))
    }

    @Test("the suite's defaults as typed")
    func defaultText() {
        #expect(DefaultText.duration(milliseconds: 86_400_000) == "1d")
        #expect(DefaultText.duration(milliseconds: 5000) == "5s")
        #expect(DefaultText.duration(milliseconds: 1500) == "1500ms")
        #expect(DefaultText.number(10) == "10" && DefaultText.number(2.5) == "2.5")
    }
}

@Suite("time and sizes")
struct TimeTests {
    // Expected values computed independently: `date -u -d @SECONDS +%FT%TZ`.
    @Test(
        "RFC 3339 formatting",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (1_769_509_800_000, "2026-01-27T10:30:00.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (4_102_444_799_000, "2099-12-31T23:59:59.000Z"),
        ])
    func format(milliseconds: Int64, text: String) {
        #expect(Timestamp.format(milliseconds: milliseconds) == text)
        #expect(Timestamp.parse(text) == milliseconds)
    }

    @Test(
        "parsing offsets, fractions and Apple Health's format",
        arguments: [
            ("2026-01-27T10:30:00Z", Int64(1_769_509_800_000)),
            ("2026-01-27T12:30:00+02:00", 1_769_509_800_000),
            ("2026-01-27 03:30:00 -0700", 1_769_509_800_000),
            ("2026-01-27T10:30:00.5Z", 1_769_509_800_500),
            ("2026-01-27T10:30:00.123456789Z", 1_769_509_800_123),
            ("2026-01-27t10:30:00z", 1_769_509_800_000),
        ])
    func parse(text: String, milliseconds: Int64) {
        #expect(Timestamp.parse(text) == milliseconds)
    }

    @Test(
        "malformed timestamps are nil",
        arguments: [
            "", "2026-01-27", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
            "2026-01-27T10:30:00", "2026-01-27T25:00:00Z", "2026-01-27T10:30:00Zjunk",
        ])
    func malformed(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test(
        "durations",
        arguments: [
            ("30s", Int64?(30_000)), ("5m", 300_000), ("24h", 86_400_000), ("7d", 604_800_000), ("250ms", 250),
            ("1h30m", 5_400_000), ("1.5s", 1500), ("45", 45_000), ("2w", 1_209_600_000), ("", nil), ("5x", nil), ("s", nil), ("-5s", nil),
        ])
    func durations(text: String, milliseconds: Int64?) {
        #expect(DurationText.parseMilliseconds(text) == milliseconds)
    }

    @Test(
        "sizes",
        arguments: [
            ("65536", Int?(65536)), ("512K", 524_288), ("1M", 1_048_576), ("1MiB", 1_048_576),
            ("2g", 2_147_483_648), ("1.5K", 1536), ("x", nil), ("-1", nil),
        ])
    func sizes(text: String, bytes: Int?) {
        #expect(SizeText.parseBytes(text) == bytes)
    }
}

@Suite("redaction")
struct RedactionTests {
    @Test(
        "URL passwords and secret query values become ***",
        arguments: [
            ("https://user:pw@host/x?token=abc&page=2", "https://user:***@host/x?token=***&page=2"),
            ("https://host/x?API_KEY=1&Signature=2#frag", "https://host/x?API_KEY=***&Signature=***#frag"),
            ("https://user@host/", "https://user@host/"),
            ("https://host/hook?sign=github&sig=abc", "https://host/hook?sign=github&sig=***"),
            ("http://host:8080/plain", "http://host:8080/plain"),
            ("not a url", "not a url"),
        ])
    func redact(url: String, expected: String) {
        #expect(Redaction.url(url) == expected)
    }
}

/// A tool whose subcommands take actions: one that also runs alone, one that needs one.
let actionSpec = CommandSpec(
    name: "keeper", summary: "Keeps agents and devices.", usage: ["[OPTIONS] agents [approve ID] | devices add TOKEN | count"],
    description: "",
    options: [
        OptionSpec("db", short: "d", value: "PATH", help: "the database"),
        OptionSpec("format", value: "FORMAT", help: "agents, agents approve: json or ndjson"),
        OptionSpec("platform", value: "NAME", default: "ios", help: "devices add: the platform"),
    ],
    subcommands: [
        SubcommandSpec(
            "agents", actions: [SubcommandAction("approve", operands: 1...1, "ID", options: ["format"], summary: "approve one")],
            requiresAction: false, options: ["format"], summary: "the agents"),
        SubcommandSpec(
            "devices",
            actions: [
                SubcommandAction("add", operands: 1...1, "TOKEN", aliases: ["register"], options: ["platform"], summary: "add one"),
                SubcommandAction("count", summary: "how many"),
            ], requiresAction: true, summary: "the devices"),
    ],
    exitStatuses: [(.success, "fine")])

@Suite("actions: a subcommand's first operand chosen from the table")
struct ActionTests {
    enum Device: String, CaseIterable { case add, count }

    @Test("the action is taken from the operands, by its name or another word, with its operands after it")
    func taken() throws {
        let approve = try ArgumentParser.parse(["agents", "approve", "office"], spec: actionSpec)
        #expect(approve.subcommand == "agents" && approve.action == "approve" && approve.operands == ["office"])
        let bare = try ArgumentParser.parse(["agents", "--format", "ndjson"], spec: actionSpec)
        #expect(bare.action == nil && bare.operands.isEmpty, "agents also runs alone")
        let register = try ArgumentParser.parse(["-d", "x", "devices", "register", "ab12", "--platform", "android"], spec: actionSpec)
        #expect(register.action == "add" && register.requiredAction(as: Device.self) == .add && register.operands == ["ab12"])
        #expect(try ArgumentParser.parse(["devices", "count"], spec: actionSpec).action(as: Device.self) == .count)
    }

    @Test(
        "an unknown, missing or misused action is a usage error saying what the subcommand takes",
        arguments: [
            (["agents", "aprove", "x"], "unknown agents action 'aprove' (did you mean 'approve'?); agents takes [approve ID]"),
            (["agents", "office"], "unknown agents action 'office'; agents takes [approve ID]"),
            (["devices"], "devices wants an action: add TOKEN | count"),
            (["devices", "ad", "x"], "unknown devices action 'ad' (did you mean 'add'?); devices takes add TOKEN | count"),
            (["devices", "add"], "devices add wants TOKEN, not none"),
            (["devices", "count", "x"], "devices count wants no operands, not 'x'"),
            (["devices", "count", "--platform", "x"], "--platform does not apply to devices count; it applies to devices add"),
            (["agents", "--platform", "x"], "--platform does not apply to agents; it applies to devices add"),
            (["devices", "add", "x", "--format", "json"], "--format does not apply to devices add; it applies to agents, agents approve"),
        ])
    func mistakes(arguments: [String], message: String) {
        #expect(throws: UsageError(message)) { _ = try ArgumentParser.parse(arguments, spec: actionSpec) }
    }

    @Test("--help after an action is the action's help; after the subcommand, the subcommand's with its actions")
    func help() throws {
        let parsed = try ArgumentParser.parse(["devices", "register", "--help"], spec: actionSpec)
        #expect(parsed.subcommand == "devices" && parsed.action == "add", "--help skips the operand checks")
        let action = Help.render(actionSpec, subcommand: parsed.subcommand, action: parsed.action)
        #expect(action.hasPrefix("Usage: keeper [OPTIONS] devices add TOKEN\n\nadd one\n\nAlso spelt register.\n"))
        #expect(action.contains("--platform NAME") && action.contains("--db PATH") && !action.contains("--format"))
        let count = Help.render(actionSpec, subcommand: "devices", action: "count")
        #expect(!count.contains("--platform"))
        let devices = Help.render(actionSpec, subcommand: "devices")
        #expect(devices.hasPrefix("Usage: keeper [OPTIONS] devices add TOKEN | count\n"))
        #expect(
            devices.contains(
                "Actions (keeper devices ACTION --help for each):\n  add TOKEN  add one (also register)\n  count      how many\n"))
        #expect(devices.contains("--platform NAME"), "an action's option may follow the subcommand, so its help lists it")
        #expect(Help.render(actionSpec).contains("  agents [approve ID]"))
    }
}

/// A tool with a view that looks back from now and pages.
let viewSpec = CommandSpec(
    name: "viewer", summary: "Views.", usage: ["[OPTIONS] results"], description: "",
    options: [.now(), .when("since", help: "from this time or this long ago")]
        + OptionSpec.paging("results", items: "checks", PageLimits(defaultPerPage: 25, maxPerPage: 100)),
    exitStatuses: [(.success, "fine")])

@Suite("query types: pages and look-backs, shared with the APIs")
struct QueryTests {
    let limits = PageLimits(defaultPerPage: 25, maxPerPage: 100)
    let lookback = Lookback(defaultHours: 72, maxHours: 8760)
    let now = Timestamp.parse("2026-01-27T12:00:00Z")!

    func parse(_ arguments: [String]) throws(UsageError) -> ParsedOptions { try ArgumentParser.parse(arguments, spec: viewSpec) }

    @Test("--page and --per-page: a page's number, size and offset; absent, the first page of the default size")
    func pages() throws {
        #expect(try parse([]).page(limits) == Page(number: 1, size: 25))
        let third = try parse(["--page", "3", "--per-page", "7"]).page(limits)
        #expect(third == Page(number: 3, size: 7) && third.offset == 14)
        #expect(throws: UsageError("--per-page wants a whole number from 1 to 100, not '101'")) {
            _ = try parse(["--per-page", "101"]).page(limits)
        }
        #expect(throws: UsageError("--page wants a whole number from 1 to 2147483647, not '0'")) {
            _ = try parse(["--page", "0"]).page(limits)
        }
        #expect(PageLimits.pages == 1...2_147_483_647)
    }

    @Test("the table's --per-page default and its help come from the limits")
    func pagingOptions() {
        let perPage = viewSpec.options.first { $0.long == "per-page" }
        #expect(perPage?.defaultValue == "25")
        #expect(Help.render(viewSpec, width: 1000).contains("results: checks a page, at most 100 (default 25)"))
    }

    @Test("--since as a look-back: a duration or a time, the default when absent, within the longest span")
    func lookbacks() throws {
        #expect(try parse([]).lookback("since", now: now, lookback) == 72 * 3_600_000)
        #expect(try parse(["--since", "90m"]).lookback("since", now: now, lookback) == 90 * 60_000)
        #expect(try parse(["--since", "2026-01-27T10:30:00Z"]).lookback("since", now: now, lookback) == 90 * 60_000)
        #expect(try parse(["--since", "8760h"]).lookback("since", now: now, lookback) == 8760 * 3_600_000)
        #expect(throws: UsageError("--since looks back at most 365d here, not '8761h'")) {
            _ = try parse(["--since", "8761h"]).lookback("since", now: now, lookback)
        }
        #expect(throws: UsageError("--since wants a time before now (or a duration ago such as 24h), not '2026-01-27T12:00:00Z'")) {
            _ = try parse(["--since", "2026-01-27T12:00:00Z"]).lookback("since", now: now, lookback)
        }
        #expect(lookback.hours == 1...8760 && lookback.defaultHours == 72)
        #expect(
            lookback.limitsText == "72h, at most 365d" && Lookback(defaultHours: 24, maxHours: 87_600).limitsText == "24h, at most 3650d")
    }
}

import Foundation
import Testing
import VitalsKit

/// The suite's one vocabulary: canonical spellings and their aliases reach the same option,
/// subcommand tables refuse what does not apply, and short options mean one thing.
@Suite("one command-line vocabulary across the tools", .hangGuard(minutes: 2))
struct CommandLineVocabularyTests {
    /// A spelling, what the tool should do with it, and words its stderr must contain.
    struct Spelling: CustomTestStringConvertible, Sendable {
        var tool: String
        var arguments: [String]
        var status: Int32
        var stderr: String
        var testDescription: String { "\(tool) \(arguments.joined(separator: " "))" }
    }

    // A bad value makes the tool name the option it reached: the alias and the canonical
    // spelling must both land on the canonical option.
    static let spellings: [Spelling] = [
        Spelling(tool: "digest", arguments: ["--tz", "UTC"], status: 0, stderr: ""),
        Spelling(tool: "digest", arguments: ["--timezone", "UTC"], status: 0, stderr: ""),
        Spelling(tool: "digest", arguments: ["--timezone", "Mars/Olympus"], status: 64, stderr: "--tz wants local, UTC"),
        Spelling(tool: "snapshot-delta", arguments: ["take", "--tz", "Mars/Olympus"], status: 64, stderr: "--tz wants a time zone name"),
        Spelling(
            tool: "snapshot-delta", arguments: ["take", "--timezone", "Mars/Olympus"], status: 64, stderr: "--tz wants a time zone name"),
        Spelling(
            tool: "snapshot-delta", arguments: ["samples", "--type", "X", "--since", "yesterday"], status: 64,
            stderr: "--since wants an RFC 3339 time"),
        Spelling(
            tool: "snapshot-delta", arguments: ["samples", "--type", "X", "--from", "yesterday"], status: 64,
            stderr: "--since wants an RFC 3339 time"),
        Spelling(
            tool: "snapshot-delta", arguments: ["samples", "--type", "X", "--until", "later"], status: 64,
            stderr: "--until wants an RFC 3339 time"),
        Spelling(
            tool: "snapshot-delta", arguments: ["samples", "--type", "X", "--to", "later"], status: 64,
            stderr: "--until wants an RFC 3339 time"),
        Spelling(
            tool: "store-samples", arguments: ["export", "--since", "yesterday"], status: 64, stderr: "--since wants an RFC 3339 time"),
        Spelling(
            tool: "store-samples", arguments: ["monitors", "--format", "xml"], status: 64, stderr: "--format wants one of json, ndjson"),
        Spelling(tool: "notify", arguments: ["--now", "today"], status: 64, stderr: "--now wants an RFC 3339 time"),
        Spelling(
            tool: "probe-http", arguments: ["--timeout", "2h"], status: 64, stderr: "--timeout wants a duration from 1ms to 1h, not '2h'"),
        Spelling(tool: "probe-http", arguments: ["-t", "0s"], status: 64, stderr: "--timeout wants a duration from 1ms to 1h, not '0s'"),
        Spelling(
            tool: "probe-ping", arguments: ["--period", "5ms"], status: 64, stderr: "--period wants a duration from 10ms to 1h, not '5ms'"),
        // Short options that now mean one thing: these letters left the tools that used them otherwise.
        Spelling(tool: "notify", arguments: ["-n"], status: 64, stderr: "unknown option '-n'"),
        Spelling(tool: "notify", arguments: ["-t", "json://127.0.0.1:9/x"], status: 64, stderr: "unknown option '-t'"),
        Spelling(tool: "detect-anomaly", arguments: ["-t", "3"], status: 64, stderr: "unknown option '-t'"),
        Spelling(tool: "detect-anomaly", arguments: ["-d", "seed"], status: 64, stderr: "unknown option '-d'"),
        Spelling(tool: "digest", arguments: ["-w", "1h"], status: 64, stderr: "unknown option '-w'"),
        Spelling(tool: "snapshot-delta", arguments: ["samples", "-t", "X"], status: 64, stderr: "unknown option '-t'"),
    ]

    @Test("each alias and each canonical spelling reaches its option", arguments: spellings)
    func spelling(_ case: Spelling) throws {
        let scratch = try ScratchDirectory()
        let result = try run(
            `case`.tool, `case`.arguments,
            environment: [
                "VITALS_DB": scratch.path("vitals.db"), "VITALS_HEALTH_DB": scratch.path("health.db"), "HOME": scratch.path("."),
            ])
        #expect(result.status == `case`.status, "\(result.stderr)")
        #expect(`case`.stderr.isEmpty || result.stderr.contains(`case`.stderr), "\(result.stderr)")
        #expect(!result.stderr.contains("unknown option") || `case`.stderr.hasPrefix("unknown option"), "\(result.stderr)")
    }

    @Test("store-samples: --ndjson is --format ndjson, one object a line; --format json is one array")
    func ndjsonAlias() throws {
        let scratch = try ScratchDirectory()
        let db = scratch.path("vitals.db")
        let input = [sampleLine("api", 0, "up"), sampleLine("web", 0, "up")].joined(separator: "\n") + "\n"
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: input).status == 0)
        let alias = try run("store-samples", ["--db", db, "monitors", "--ndjson"])
        let canonical = try run("store-samples", ["--db", db, "monitors", "--format", "ndjson"])
        let array = try run("store-samples", ["--db", db, "monitors", "--format", "json"])
        #expect(alias.status == 0 && canonical.status == 0 && array.status == 0, "\(alias.stderr)\(canonical.stderr)\(array.stderr)")
        #expect(alias.stdout == canonical.stdout)
        #expect(alias.lines.count == 2 && alias.lines.allSatisfy { $0.hasPrefix("{") })
        #expect(array.lines.count == 1 && array.stdout.hasPrefix("["))
        #expect(try run("store-samples", ["--db", db, "monitors"]).stdout == array.stdout, "json is the default")
    }

    @Test(
        "an option given to a subcommand it does not apply to, or a wrong operand count, exits 64 naming both",
        arguments: [
            (
                "store-samples", ["overview", "--since", "3h"],
                "store-samples: --since does not apply to overview; it applies to history, results, stats, export\n"
            ),
            (
                "store-samples", ["overview", "--per-page", "3"],
                "store-samples: --per-page does not apply to overview; it applies to results\n"
            ),
            (
                "store-samples", ["export", "--ndjson", "--keep", "3d"],
                "store-samples: --keep does not apply to export; it applies to ingest\n"
            ),
            ("store-samples", ["history"], "store-samples: history wants ID, not none\n"),
            ("snapshot-delta", ["list", "--type", "X"], "snapshot-delta: --type does not apply to list; it applies to samples\n"),
            ("snapshot-delta", ["verify", "--from", "1d"], "snapshot-delta: --since does not apply to verify; it applies to samples\n"),
            ("snapshot-delta", ["diff", "1"], "snapshot-delta: diff wants A B, not only 1\n"),
            ("snapshot-delta", ["show", "1", "2"], "snapshot-delta: show wants ID, not '2'\n"),
            ("snapshot-delta", ["lst"], "snapshot-delta: unknown subcommand 'lst' (did you mean 'list'?)\n"),
            // Actions are the table's too: an unknown one, a missing one, one with an option of another.
            (
                "store-samples", ["agents", "aprove", "office"],
                "store-samples: unknown agents action 'aprove' (did you mean 'approve'?); agents takes [approve ID | reject ID | token ID]\n"
            ),
            (
                "store-samples", ["agents", "office"],
                "store-samples: unknown agents action 'office'; agents takes [approve ID | reject ID | token ID]\n"
            ),
            (
                "store-samples", ["agents", "token", "office", "--format", "json"],
                "store-samples: --format does not apply to agents token; it applies to monitors, history, agents, agents approve, agents reject, export\n"
            ),
            (
                "store-samples", ["agents", "--tokens", "t", "approve", "office"],
                "store-samples: --tokens does not apply to agents approve; it applies to agents token, serve, cgi\n"
            ),
            ("store-samples", ["agents", "approve"], "store-samples: agents approve wants ID, not none\n"),
            ("snapshot-delta", ["cert", "--out", "x"], "snapshot-delta: cert wants an action: server | client\n"),
            (
                "snapshot-delta", ["cert", "sever", "--out", "x"],
                "snapshot-delta: unknown cert action 'sever' (did you mean 'server'?); cert takes server | client\n"
            ),
            (
                "snapshot-delta", ["anomalies", "resolve", "abcd", "--unresolved"],
                "snapshot-delta: --unresolved does not apply to anomalies resolve; it applies to anomalies\n"
            ),
            ("snapshot-delta", ["anomalies", "resolve"], "snapshot-delta: anomalies resolve wants ID, not none\n"),
            // A subcommand's own formats, checked before anything is opened.
            ("store-samples", ["export", "--format", "json"], "store-samples: --format wants one of ndjson, csv, not 'json'\n"),
            (
                "store-samples", ["agents", "approve", "office", "--format", "csv"],
                "store-samples: --format wants one of json, ndjson, not 'csv'\n"
            ),
            ("snapshot-delta", ["list", "--format", "csv"], "snapshot-delta: --format wants one of ndjson, text, not 'csv'\n"),
            (
                "snapshot-delta", ["cert", "client", "--out", "x", "-f", "csv"],
                "snapshot-delta: --format wants one of text, ndjson, not 'csv'\n"
            ),
        ])
    func wrongSubcommand(tool: String, arguments: [String], message: String) throws {
        let scratch = try ScratchDirectory()
        let result = try run(tool, ["--db", scratch.path("x.db")] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr == message + "Try '\(tool) --help' for more information.\n")
    }

    @Test("SUBCOMMAND --help lists that subcommand's options and the global ones")
    func subcommandHelp() throws {
        let history = try run("store-samples", ["history", "--help"])
        #expect(history.status == 0)
        #expect(history.stdout.hasPrefix("Usage: store-samples [OPTIONS] history ID\n"))
        #expect(
            history.stdout.contains("--since WHEN") && history.stdout.contains("--db PATH") && history.stdout.contains("--format FORMAT"))
        #expect(!history.stdout.contains("--keep "))
        let samples = try run("snapshot-delta", ["samples", "--help"])
        #expect(samples.stdout.contains("--since WHEN") && samples.stdout.contains("also --from"))
        #expect(!samples.stdout.contains("--registry"))
        let full = try run("snapshot-delta", ["--help"])
        #expect(full.status == 0 && full.stdout.contains("  disappeared A B"))
    }

    @Test("SUBCOMMAND ACTION --help is that action's help: its usage, summary and the options that apply to it")
    func actionHelp() throws {
        let token = try run("store-samples", ["agents", "token", "--help"])
        #expect(token.status == 0, "\(token.stderr)")
        #expect(token.stdout.hasPrefix("Usage: store-samples [OPTIONS] agents token ID\n\nmake the agent's bearer token"))
        #expect(token.stdout.contains("--tokens FILE") && token.stdout.contains("--db PATH|URL"))
        #expect(!token.stdout.contains("--format") && !token.stdout.contains("--since WHEN"))
        let agents = try run("store-samples", ["agents", "--help"])
        #expect(agents.stdout.contains("Actions (store-samples agents ACTION --help for each):\n  approve ID"))
        let add = try run("notify", ["devices", "register", "--help"])
        #expect(
            add.status == 0 && add.stdout.hasPrefix("Usage: notify [OPTIONS] devices add TOKEN\n"),
            "an alias reaches its action: \(add.stdout)")
        #expect(add.stdout.contains("--platform NAME") && add.stdout.contains("Also spelt register."))
        let remove = try run("notify", ["devices", "remove", "--help"])
        #expect(!remove.stdout.contains("--platform") && remove.stdout.contains("--state FILE"))
    }

    @Test("an action's other word does what the action does: notify devices register and unregister")
    func actionAlias() throws {
        let scratch = try ScratchDirectory()
        let token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
        let state = ["--state", scratch.path("n.json")]
        let register = try run("notify", state + ["devices", "register", token, "--platform", "android"])
        #expect(
            register.status == 0 && register.stdout == #"{"success":true,"device_id":1,"message":"Device registered successfully"}"# + "\n",
            "\(register.stderr)")
        let list = try run("notify", state + ["devices", "list"])
        #expect(try list.records().map { $0.string("platform") } == ["android"])
        let unregister = try run("notify", state + ["devices", "unregister", token])
        #expect(unregister.status == 0 && unregister.stdout.contains("Device unregistered successfully"), "\(unregister.stderr)")
        #expect(try run("notify", state + ["devices", "count"]).stdout == "{\"count\":0}\n")
    }
}

@Suite("notify's subcommands from the framework's table", .hangGuard(minutes: 5))
struct NotifySubcommandTests {
    @Test(
        "deliver is the default; devices takes its own options; each refuses the other's",
        arguments: [
            (
                ["devices", "count", "--to", "json://127.0.0.1:9/x"],
                "notify: --to does not apply to devices count; it applies to deliver\n"
            ),
            (["--platform", "android"], "notify: --platform does not apply to deliver; it applies to devices add\n"),
            (["deliver", "--app-version", "2"], "notify: --app-version does not apply to deliver; it applies to devices add\n"),
            (
                ["devices", "remove", "--platform", "android", "00112233445566778899aabbccddeeff"],
                "notify: --platform does not apply to devices remove; it applies to devices add\n"
            ),
            (["devices"], "notify: devices wants an action: add TOKEN | remove TOKEN | count | list\n"),
            (
                ["devices", "ad", "00112233445566778899aabbccddeeff"],
                "notify: unknown devices action 'ad' (did you mean 'add'?); devices takes add TOKEN | remove TOKEN | count | list\n"
            ),
            (["devices", "add", "a", "b"], "notify: devices add wants TOKEN, not 'b'\n"),
            (["devices", "count", "x"], "notify: devices count wants no operands, not 'x'\n"),
        ])
    func wrongUse(arguments: [String], message: String) throws {
        let scratch = try ScratchDirectory()
        let result = try run("notify", ["--state", scratch.path("n.json")] + arguments)
        #expect(result.status == 64)
        #expect(result.stderr == message + "Try 'notify --help' for more information.\n")
    }

    @Test("notify deliver FILE is notify FILE")
    func deliver() throws {
        let scratch = try ScratchDirectory()
        let trace = try scratch.write(
            "trace.ndjson", [sampleLine("api", 0, "up"), sampleLine("api", 10, "down")].joined(separator: "\n") + "\n")
        let named = try run("notify", ["--dry-run", "deliver", trace])
        let plain = try run("notify", ["--dry-run", trace])
        #expect(named.status == 0 && plain.status == 0, "\(named.stderr)\(plain.stderr)")
        #expect(try named.records().count == 1)
        #expect(try named.records().map { $0.string("event") } == plain.records().map { $0.string("event") })
        let count = try run("notify", ["--state", scratch.path("n.json"), "devices", "count"])
        #expect(count.status == 0 && count.stdout == "{\"count\":0}\n", "\(count.stderr)")
    }
}

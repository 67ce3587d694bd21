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

    @Test("mistakes are usage errors with actionable words", arguments: [
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
        #expect(String(decoding: buffer[0..<count], as: UTF8.self) == "tool: unknown option '--nope'\nTry 'tool --help' for more information.\n")
        #expect(Echo.execute([], streams: Streams(input: 0, output: out[1], error: err[1]), environment: [:]) == .success)
        close(out[1])
        let outCount = read(out[0], &buffer, 200)
        #expect(String(decoding: buffer[0..<outCount], as: UTF8.self) == "{\"ok\":true}\n")
    }
}

@Suite("time and sizes")
struct TimeTests {
    // Expected values computed independently: `date -u -d @SECONDS +%FT%TZ`.
    @Test("RFC 3339 formatting", arguments: [
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

    @Test("parsing offsets, fractions and Apple Health's format", arguments: [
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

    @Test("malformed timestamps are nil", arguments: ["", "2026-01-27", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
                                                      "2026-01-27T10:30:00", "2026-01-27T25:00:00Z", "2026-01-27T10:30:00Zjunk"])
    func malformed(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("durations", arguments: [
        ("30s", Int64?(30_000)), ("5m", 300_000), ("24h", 86_400_000), ("7d", 604_800_000), ("250ms", 250),
        ("1h30m", 5_400_000), ("1.5s", 1500), ("45", 45_000), ("2w", 1_209_600_000), ("", nil), ("5x", nil), ("s", nil), ("-5s", nil),
    ])
    func durations(text: String, milliseconds: Int64?) {
        #expect(DurationText.parseMilliseconds(text) == milliseconds)
    }

    @Test("sizes", arguments: [("65536", Int?(65536)), ("512K", 524_288), ("1M", 1_048_576), ("1MiB", 1_048_576),
                               ("2g", 2_147_483_648), ("1.5K", 1536), ("x", nil), ("-1", nil)])
    func sizes(text: String, bytes: Int?) {
        #expect(SizeText.parseBytes(text) == bytes)
    }
}

@Suite("redaction")
struct RedactionTests {
    @Test("URL passwords and secret query values become ***", arguments: [
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

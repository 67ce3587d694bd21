import Foundation
import Testing
import VitalsKit

/// One mixed, partly broken stream, and what every tool that reads samples must do with it:
/// the contract in vitals-records(7), READING SAMPLES. The expected wordings are written
/// from that page, not copied from the tools' output.
enum SampleContract {
    static let firstAt = "2026-01-27T10:00:00.000Z"
    static let lastAt = "2026-01-27T10:00:10.000Z"
    static let firstSample =
        #"{"type":"sample","monitor":"api","name":"API","at":"\#(firstAt)","status":"up","reason":null,"message":"HTTP 200 in 40ms","latency_ms":40,"team":"core"}"#
    static let lastSample =
        #"{"type":"sample","monitor":"api","name":"API","at":"\#(lastAt)","status":"down","reason":"http_status","message":"HTTP 503, expected 200-399","latency_ms":45,"team":"core"}"#
    /// One line over the 16 MiB limit.
    static let longLineBytes = 17 << 20

    /// The lines, in order; line numbers are 1-based positions in this list.
    static var lines: [String] {
        [
            firstSample,  // 1
            "not json",  // 2
            #"{"monitor":"api","at":"2026-01-27T10:00:01Z","status":"up"}"#,  // 3
            #"{"type":"anomaly","monitor":"api","verdict":"degrading"}"#,  // 4
            #"{"type":"sample","at":"2026-01-27T10:00:02Z","status":"up"}"#,  // 5
            #"{"type":"sample","monitor":"","at":"2026-01-27T10:00:03Z","status":"up"}"#,  // 6
            #"{"type":"sample","monitor":"api","at":"yesterday","status":"up"}"#,  // 7
            #"{"type":"sample","monitor":"api","at":"2026-01-27T10:00:04Z","status":"sideways"}"#,  // 8
            "",  // 9: blank, ignored
            #"{"type":"notification","event":"down","monitors":[]}"#,  // 10
            #"{"type":"digest","services_total":1}"#,  // 11
            String(repeating: "x", count: longLineBytes),  // 12
            lastSample,  // 13
        ]
    }

    /// The diagnostics every tool gives for the stream, after `tool: file:`.
    static let diagnostics = [
        "2: not valid JSON: expected a JSON object at column 1",
        "3: record has no 'type'",
        "5: sample has no 'monitor'",
        #"6: sample 'monitor' is ""; expected a non-empty string"#,
        #"7: sample 'at' is "yesterday"; expected an RFC 3339 time"#,
        #"8: sample 'status' is "sideways"; expected up, degraded, down, error or unknown"#,
        "12: line is \(longLineBytes) bytes, over the 16 MiB limit",
    ]

    /// The lines a filter passes on: every JSON object, in order (the good samples with what
    /// the filter adds); not the line that is not JSON, the blank one or the over-long one.
    static let passedOn = [1, 3, 4, 5, 6, 7, 8, 10, 11, 13]
}

@Suite("the sample contract, tool by tool", .serialized, .hangGuard(minutes: 3))
struct SampleContractTests {
    /// What to run, and how to see that the good samples were processed.
    struct Case: CustomTestStringConvertible, Sendable {
        let tool: String
        let arguments: [String]
        let check: @Sendable (RunResult, ScratchDirectory) throws -> Void
        var testDescription: String { tool }
    }

    static let cases: [Case] = [
        Case(tool: "detect-anomaly", arguments: ["--detector", "seed"]) { result, _ in
            let out = result.lines
            let expected = SampleContract.passedOn.map { SampleContract.lines[$0 - 1] }
            #expect(out.count == expected.count, "every JSON object passes on")
            guard out.count == expected.count else { return }
            for (output, input) in zip(out, expected) {
                if input == SampleContract.firstSample || input == SampleContract.lastSample {
                    #expect(output.hasPrefix(String(input.dropLast()) + #","anomaly":{"#), "a good sample is judged")
                } else {
                    #expect(output == input, "filters keep what they do not know, byte for byte")
                }
            }
        },
        Case(tool: "store-samples", arguments: ["--db", "DB"]) { result, scratch in
            // A stored sample goes on with its monitor_id (the views' integer id) added last.
            let expected = SampleContract.passedOn.map { SampleContract.lines[$0 - 1] }.map { line in
                line == SampleContract.firstSample || line == SampleContract.lastSample
                    ? String(line.dropLast()) + #","monitor_id":1}"# : line
            }
            #expect(result.lines == expected, "every JSON object passes on, in order: unchanged, or a stored sample with its monitor_id")
            let stored = try sqlite(scratch.path("vitals.db"), "SELECT count(*) FROM samples")
            #expect(stored == "2", "both good samples are stored")
        },
        Case(tool: "digest", arguments: ["-f", "json", "--now", "2026-01-27T12:00:00Z"]) { result, _ in
            let record = try #require(result.records().first)
            #expect(record.int("samples_read") == 2, "both good samples are counted")
        },
        Case(tool: "notify", arguments: []) { result, _ in
            let events = try result.events()
            #expect(events == ["down api \(SampleContract.lastAt)"], "the good samples are decided on")
        },
    ]

    @Test(
        "the same stream: one wording per problem, the right lines, exit 2, every good sample processed",
        arguments: cases)
    func contract(_ testCase: Case) throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write("mixed.ndjson", SampleContract.lines.joined(separator: "\n") + "\n")
        let arguments = testCase.arguments.map { $0 == "DB" ? scratch.path("vitals.db") : $0 } + [path]
        let result = try run(testCase.tool, arguments)
        let expected = SampleContract.diagnostics.map { "\(testCase.tool): \(path):\($0)" }
        #expect(result.stderr.split(separator: "\n").map(String.init) == expected)
        #expect(result.status == 2)
        try testCase.check(result, scratch)
    }

    @Test("a pipe of every filter and sink: records of other types flow through without a word")
    func cleanMixedStream() throws {
        let scratch = try ScratchDirectory()
        let lines = [
            SampleContract.firstSample,
            #"{"type":"target","url":"https://example.com/"}"#,
            #"{"type":"anomaly","monitor":"api"}"#,
            #"{"type":"digest","services_total":1}"#,
            SampleContract.lastSample,
        ]
        let path = try scratch.write("clean.ndjson", lines.joined(separator: "\n") + "\n")
        let db = scratch.path("vitals.db")
        let result = try shell(
            "detect-anomaly --detector seed '\(path)' | store-samples --db '\(db)' | tee '\(scratch.path("mid"))' | notify")
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        #expect(result.status == 0)
        let events = try result.events()
        #expect(events == ["down api \(SampleContract.lastAt)"])
        let middle = try String(contentsOfFile: scratch.path("mid"), encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(Array(middle[1...3]) == Array(lines[1...3]), "other records reach the end of the pipe unchanged")
        let digest = try run("digest", ["-f", "json", "--now", "2026-01-27T12:00:00Z", scratch.path("mid")])
        #expect(digest.status == 0 && digest.stderr.isEmpty, "\(digest.stderr)")
    }
}

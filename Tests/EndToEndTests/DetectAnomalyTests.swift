import Foundation
import Testing
import VitalsKit

/// One `sample` line as probe-http writes it (the fields detect-anomaly reads, and a user's own).
func sampleLine(
    _ monitor: String, minute: Int, latency: Double?, status: String = "up", message: String? = nil,
    simulated: Bool = false, extra: String = ",\"team\":\"core\""
) -> String {
    let at = Timestamp.format(milliseconds: 1_767_571_200_000 + Int64(minute) * 60_000)
    let latencyText = latency.map { $0 == $0.rounded() ? String(Int($0)) : String($0) } ?? "null"
    let messageText = message ?? (latency.map { "HTTP 200 in \(Int($0))ms" } ?? "Request timeout after 5s")
    return "{\"type\":\"sample\",\"monitor\":\"\(monitor)\",\"at\":\"\(at)\",\"status\":\"\(status)\","
        + "\"reason\":\(status == "up" ? "null" : "\"timeout\""),\"message\":\"\(messageText)\",\"latency_ms\":\(latencyText)"
        + (simulated ? ",\"simulated\":true" : "") + extra + "}"
}

/// A line with its `,"anomaly":{...}` (the last field) cut out: what came in, for a sample.
func withoutAnomaly(_ line: String) -> String {
    guard let range = line.range(of: ",\"anomaly\":{", options: .backwards) else { return line }
    return String(line[..<range.lowerBound]) + "}"
}

/// Eleven steady samples (50, 51, 52 in turn), the seed's numbers worked by hand: after ten points
/// the mean of 50,51,52,50,51,52,50,51,52,50,51 is 50.909 and the stddev 0.793, so a 400 ms
/// twelfth sample is far above mean + 2.5 sd = 52.89.
func steadyThenSpike(_ monitor: String = "api") -> [String] {
    (0..<11).map { sampleLine(monitor, minute: $0, latency: Double(50 + $0 % 3)) } + [sampleLine(monitor, minute: 11, latency: 400)]
}

@Suite("detect-anomaly end to end", .serialized, .hangGuard(minutes: 3))
struct DetectAnomalyTests {
    @Test("every valid line comes out in order; other records byte for byte; samples gain only the anomaly object")
    func passThrough() throws {
        let lines = [
            "{\"type\":\"target\",\"url\":\"https://example.com/\"}",
            sampleLine("api", minute: 0, latency: 48.25),
            "{ \"type\" : \"sample\" , \"monitor\":\"api\", \"at\":\"2026-01-05T00:01:00.000Z\", \"status\":\"up\", \"latency_ms\": 49.5e0 ,\"note\":\"spaced \\u00e9 \\\"q\\\"\"  }",
            sampleLine("api", minute: 2, latency: nil, status: "error"),
            "{\"type\":\"sample\",\"status\":\"up\",\"latency_ms\":10}",
            "{\"type\":\"sample\",\"monitor\":\"web\",\"at\":\"2026-01-05T00:01:00.000Z\",\"status\":\"up\",\"latency_ms\":\"fast\"}",
            "{\"type\":\"digest\",\"monitor\":\"api\",\"latency_ms\":1}",
            "{\"kind\":\"untyped\",\"latency_ms\":5}",
            "[1,2]",
            "{\"type\":\"sample\",\"monitor\":\"api\",\"at\":\"2026-01-05T00:03:00.000Z\",\"status\":\"up\",\"latency_ms\":50,\"région\":\"eu\"}",
        ]
        let result = try run("detect-anomaly", [], stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 2, "bad samples, an untyped object and a line that is not an object")
        #expect(
            result.stderr == """
                detect-anomaly: <stdin>:5: sample has no 'monitor'
                detect-anomaly: <stdin>:6: sample 'latency_ms' is "fast"; expected a number, 0 or more, or null
                detect-anomaly: <stdin>:8: record has no 'type'
                detect-anomaly: <stdin>:9: not valid JSON: expected a JSON object at column 1

                """, "\(result.stderr)")
        let out = result.lines
        #expect(out.count == lines.count - 1, "every object goes on; only the line that is not one is dropped")
        let expectedIn = lines.filter { $0 != "[1,2]" }
        let judged = [1, 2, 3, 8]
        for (index, (input, output)) in zip(expectedIn, out).enumerated() {
            if judged.contains(index) {
                #expect(withoutAnomaly(output) == input, "line \(index + 1): \(output)")
                #expect(output.hasSuffix("}}"))
            } else {
                #expect(output == input, "line \(index + 1) is not a valid sample and passes untouched")
            }
        }
        let records = try result.records()
        try #require(records.count >= 4)
        // A sample that cannot be judged (an error status, no latency) is unknown.
        let anomaly = records[3]["anomaly"]?.objectValue
        #expect(anomaly?["verdict"]?.stringValue == "unknown")
        #expect(anomaly?["score"] == .number("0"))
        #expect(anomaly?["baseline_n"] == .number("0"))
        #expect(records[1]["anomaly"]?.objectValue?["detector"]?.stringValue == "envelope", "envelope is the default")
    }

    @Test("the seed detector promotes an up sample: status, reason and message rewritten in place")
    func promotion() throws {
        let input =
            steadyThenSpike() + [
                sampleLine("api", minute: 12, latency: 900, status: "degraded"),
                sampleLine("api", minute: 13, latency: nil, status: "down"),
            ]
        let result = try run("detect-anomaly", ["--detector", "seed"], stdin: input.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let out = result.lines
        // Samples 1-9: fewer than 10 points; 10 and 11: stable.
        let records = try result.records()
        try #require(records.count == 14)
        #expect(records[0..<9].allSatisfy { $0["anomaly"]?.objectValue?["verdict"]?.stringValue == "unknown" })
        #expect(records[9..<11].allSatisfy { $0["anomaly"]?.objectValue?["verdict"]?.stringValue == "stable" })
        let spike = try #require(records[11]["anomaly"]?.objectValue)
        #expect(spike["verdict"]?.stringValue == "degrading")
        #expect(spike["baseline_n"] == .number("11"))
        #expect(spike["mean_ms"] == .number("50.909"), "560 / 11")
        #expect(spike["stddev_ms"] == .number("0.793"), "sqrt(6.9091 / 11)")
        #expect(spike["threshold_ms"] == .number("52.89"), "50.909 + 2.5 x 0.7925")
        let expected = input[11]
            .replacingOccurrences(
                of: "\"status\":\"up\",\"reason\":null,\"message\":\"HTTP 200 in 400ms\"",
                with: "\"status\":\"degraded\",\"reason\":\"latency\",\"message\":\"HTTP 200 in 400ms; Latency degrading\"")
        #expect(withoutAnomaly(out[11]) == expected)
        // Already degraded: judged, not rewritten. Down, no latency: not judged, untouched.
        #expect(withoutAnomaly(out[12]) == input[12])
        #expect(records[12]["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading")
        #expect(withoutAnomaly(out[13]) == input[13])

        let kept = try run("detect-anomaly", ["--detector", "seed", "--keep-status"], stdin: input.joined(separator: "\n") + "\n")
        #expect(withoutAnomaly(kept.lines[11]) == input[11], "--keep-status changes nothing but the anomaly object")
        #expect(try kept.records()[11]["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading")
    }

    @Test("missing reason and message are added after status; an anomaly field already there is replaced in place")
    func spliceEdges() throws {
        var input = steadyThenSpike().dropLast().map { $0 }
        input.append(
            "{\"type\":\"sample\",\"monitor\":\"api\",\"at\":\"2026-01-05T00:11:00.000Z\",\"status\":\"up\",\"anomaly\":{\"old\":true},\"latency_ms\":400,\"x\":1}"
        )
        let result = try run("detect-anomaly", ["--detector", "seed"], stdin: input.joined(separator: "\n") + "\n")
        let last = try #require(result.lines.last)
        #expect(
            last.hasPrefix(
                "{\"type\":\"sample\",\"monitor\":\"api\",\"at\":\"2026-01-05T00:11:00.000Z\",\"status\":\"degraded\",\"reason\":\"latency\",\"message\":\"Latency degrading\",\"anomaly\":{\"verdict\":\"degrading\""
            ), "\(last)")
        #expect(last.hasSuffix("},\"latency_ms\":400,\"x\":1}"))
        // Twice through: one anomaly object, still in its place.
        let twice = try shell(
            "detect-anomaly --detector seed | detect-anomaly --detector seed", stdin: input.joined(separator: "\n") + "\n")
        #expect(twice.status == 0)
        for line in twice.lines { #expect(line.components(separatedBy: "\"anomaly\":").count == 2, "\(line)") }
    }

    @Test("a simulated latency with no real baseline: the seed's 1800 ms fallback, from the message or the flag")
    func simulatedFallback() throws {
        let input = [
            sampleLine("sim", minute: 0, latency: 2000, message: "HTTP 200 in 2000ms +1900 ms simulated"),
            sampleLine("flag", minute: 0, latency: 1799, simulated: true),
            sampleLine("flag", minute: 1, latency: 1800, simulated: true),
            sampleLine("real", minute: 0, latency: 5000),
        ]
        let records = try run("detect-anomaly", ["--detector", "seed"], stdin: input.joined(separator: "\n") + "\n").records()
        let verdicts = records.map { $0["anomaly"]?.objectValue?["verdict"]?.stringValue }
        #expect(verdicts == ["degrading", "unknown", "degrading", "unknown"])
        try #require(records.count == 4)
        #expect(records[0]["status"]?.stringValue == "degraded")
        #expect(records[0]["anomaly"]?.objectValue?["threshold_ms"] == .number("1800"))
    }

    // 200 samples alternating 95 and 105, a spike of 400, 4 as before, a spike of 900 inside the
    // episode the 400 began, 34 as before, a spike of 2000 and 10 more. By hand
    // (EnvelopeDetectorTests.point): the 400 is z = 17.55 and its evidence 3.0783, score 0.755.
    @Test(
        "an episode: the onset carries the score; samples inside it, over the limit or not, are degrading with half their score; the 11th quiet one ends it"
    )
    func episodes() throws {
        func calm(_ minutes: Range<Int>) -> [String] {
            minutes.map { sampleLine("api", minute: $0, latency: $0 % 2 == 0 ? 95 : 105) }
        }
        let input =
            calm(0..<200) + [sampleLine("api", minute: 200, latency: 400)] + calm(201..<205)
            + [sampleLine("api", minute: 205, latency: 900)] + calm(206..<240) + [sampleLine("api", minute: 240, latency: 2000)]
            + calm(241..<251)
        let result = try run("detect-anomaly", ["--summary"], stdin: input.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("2 episodes began"), "\(result.stderr)")
        let records = try result.records()
        try #require(records.count == input.count)
        func anomaly(_ index: Int) -> JSONObject? { records[index]["anomaly"]?.objectValue }
        func episode(_ index: Int) -> JSONObject? { anomaly(index)?["episode"]?.objectValue }
        func score(_ index: Int) -> Double { anomaly(index)?["score"]?.doubleValue ?? -1 }
        #expect((0..<200).allSatisfy { anomaly($0)?["episode"] == .null }, "no episode before the spike")
        let onset = try #require(episode(200))
        #expect(onset["state"]?.stringValue == "onset")
        #expect(onset["id"] == .number("1"))
        #expect(onset["started_at"]?.stringValue == "2026-01-05T03:20:00.000Z")
        #expect(onset["samples"] == .number("1") && onset["duration_ms"] == .number("0"))
        #expect(anomaly(200)?["score"] == .number("0.755"))
        #expect(onset["peak"] == .number("0.755"))
        #expect(records[200]["status"]?.stringValue == "degraded")
        // The 900 is over the limit on its own (its own score is the peak), but inside the episode:
        // no new one, and half its score.
        let peak = try #require(episode(205)?["peak"]?.doubleValue)
        #expect(peak > 0.755, "over the limit on its own, and above the onset")
        #expect(abs(score(205) - peak / 2) <= 0.001)
        for index in 201...215 {
            let inside = try #require(episode(index), "sample \(index)")
            #expect(inside["state"]?.stringValue == "ongoing")
            #expect(inside["id"] == .number("1"))
            #expect(inside["samples"] == .number(String(index - 199)))
            #expect(inside["duration_ms"] == .number(String((index - 200) * 60_000)))
            #expect(inside["peak"]?.doubleValue == (index < 205 ? 0.755 : peak))
            #expect(anomaly(index)?["verdict"]?.stringValue == "degrading")
            #expect(records[index]["status"]?.stringValue == "degraded")
            #expect(score(index) < 0.5, "sample \(index): half its own score")
        }
        // The 900 started the quiet count again: the 10 after it stay degrading, the 11th ends it.
        let end = try #require(episode(216))
        #expect(end["state"]?.stringValue == "end")
        #expect(end["samples"] == .number("16"))
        #expect(end["duration_ms"] == .number("960000"))
        #expect(anomaly(216)?["verdict"]?.stringValue == "stable")
        #expect(records[216]["status"]?.stringValue == "up")
        #expect((217..<240).allSatisfy { anomaly($0)?["episode"] == .null })
        #expect(episode(240)?["state"]?.stringValue == "onset")
        #expect(episode(240)?["id"] == .number("2"))
        // Only the onsets score 0.5 or more: a cut-off there gives one detection per episode.
        #expect(records.indices.filter { score($0) >= 0.5 } == [200, 240])
    }

    @Test("--exit-status: 1 when a sample was degrading, 0 when none was; exit 2 wins over 1")
    func exitStatus() throws {
        let spike = steadyThenSpike().joined(separator: "\n") + "\n"
        #expect(try run("detect-anomaly", ["--detector", "seed", "--exit-status"], stdin: spike).status == 1)
        #expect(try run("detect-anomaly", ["--detector", "seed"], stdin: spike).status == 0)
        let calm = steadyThenSpike().dropLast().joined(separator: "\n") + "\n"
        #expect(try run("detect-anomaly", ["--detector", "seed", "-e"], stdin: calm).status == 0)
        #expect(try run("detect-anomaly", ["--detector", "seed", "-e"], stdin: spike + "oops\n").status == 2)
    }

    @Test("--field and --direction: a speed drop, keys in the field's unit, no promotion")
    func otherField() throws {
        let lines = (0..<12).map { index in
            "{\"type\":\"sample\",\"monitor\":\"net\",\"at\":\"2026-01-05T00:00:00.000Z\",\"status\":\"up\",\"speed_mbps\":\(index == 11 ? 20 : 100 + index % 2)}"
        }
        let result = try run(
            "detect-anomaly", ["--detector", "seed", "--field", "speed_mbps", "--direction", "low", "--summary"],
            stdin: lines.joined(separator: "\n") + "\n")
        let records = try result.records()
        let last = try #require(records.last?["anomaly"]?.objectValue)
        #expect(last["verdict"]?.stringValue == "degrading")
        #expect(last.contains("mean_mbps") && last.contains("threshold_mbps") && !last.contains("mean_ms"))
        #expect(records.last?["status"]?.stringValue == "up", "only latency promotes")
        #expect(result.stderr.contains("12 samples of 1 monitor: 1 degrading, 2 stable, 9 unknown"), "\(result.stderr)")
    }

    @Test("malformed lines are reported with file and line, skipped, and the rest is judged; exit 2")
    func badLines() throws {
        let scratch = try ScratchDirectory()
        var lines = steadyThenSpike()
        lines.insert("{\"type\":\"sample\",", at: 3)
        lines.insert("not json at all", at: 7)
        let path = try scratch.write("samples.ndjson", lines.joined(separator: "\n") + "\n")
        let result = try run("detect-anomaly", ["--detector", "seed", path, scratch.path("missing.ndjson")])
        #expect(result.status == 2)
        #expect(
            result.stderr.contains(
                "detect-anomaly: \(path):4: not valid JSON: unexpected end of line; expected a field name in double quotes at column 18\n"))
        #expect(result.stderr.contains("detect-anomaly: \(path):8: not valid JSON: expected a JSON object at column 1\n"))
        #expect(result.stderr.contains("cannot open \(scratch.path("missing.ndjson"))"))
        #expect(result.lines.count == 12)
        #expect(
            try result.records().last?["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading",
            "the good lines still make the baseline")
    }

    @Test("thousands of lines over several inputs: every record in order, every problem with its own file and line, in input order")
    func order() throws {
        // Lines are read and checked on one thread and judged on another, handed over a few
        // thousand at a time: nothing may be reordered or misnumbered across those handovers.
        let scratch = try ScratchDirectory()
        var first = (0..<5000).map { sampleLine("m\($0 % 7)", minute: $0 / 7, latency: Double(50 + $0 % 3)) }
        first[2048] = "not json"  // line 2049
        first[4096] = "{\"type\":\"sample\",\"monitor\":\"m1\"}"  // line 4097: passed on, reported
        first[4502] = sampleLine("m\\u0031", minute: 4502 / 7, latency: 900)  // m1, its id written with an escape
        let second = [sampleLine("m0", minute: 900, latency: 50), "[1]", sampleLine("m0", minute: 901, latency: 51)]
        let one = try scratch.write("one.ndjson", first.joined(separator: "\n") + "\n")
        let two = try scratch.write("two.ndjson", second.joined(separator: "\n") + "\n")
        let missing = scratch.path("missing.ndjson")
        let result = try run("detect-anomaly", ["--keep-status", "--summary", one, missing, two])
        #expect(result.status == 2)
        let expectedErrors = [
            "detect-anomaly: \(one):2049: not valid JSON: expected a JSON object at column 1",
            "detect-anomaly: \(one):4097: sample has no 'at'",
            "detect-anomaly: cannot open \(missing): No such file or directory",
            "detect-anomaly: \(two):2: not valid JSON: expected a JSON object at column 1",
            "detect-anomaly: 5000 samples of 7 monitors: ",
        ]
        let errors = result.stderr.split(separator: "\n").map(String.init)
        #expect(errors.count == expectedErrors.count, "\(result.stderr)")
        for (line, expected) in zip(errors, expectedErrors) {
            #expect(line.hasPrefix(expected), "\(line)")
        }
        #expect(errors.last?.hasSuffix("; 1 other record passed through") == true, "\(result.stderr)")
        // Every line that is a JSON object comes out, in input order, with only the anomaly object added.
        let expectedLines = first.enumerated().filter { $0.offset != 2048 }.map(\.element) + [second[0], second[2]]
        #expect(result.lines.count == expectedLines.count)
        #expect(zip(result.lines, expectedLines).allSatisfy { withoutAnomaly($0) == $1 })
        // The escaped id is the monitor m1: its 900 ms is judged against m1's 642 earlier samples.
        let spike = try JSONParser.parse(result.lines[4501])
        #expect(spike.objectValue?["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading", "\(result.lines[4501])")
    }

    @Test("usage errors exit 64 with a hint")
    func usage() throws {
        for arguments in [
            ["--detector", "magic"], ["--min-samples", "120"], ["--checkpoint", "5m"], ["--field", "status"],
            ["--threshold", "0"], ["--window", "1"], ["--direction", "up"],
        ] {
            let result = try run("detect-anomaly", arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stderr.contains("Try 'detect-anomaly --help'"), "\(arguments): \(result.stderr)")
        }
    }

    @Test("records reach the pipe as they are judged, before the input ends")
    func streaming() throws {
        let tool = try RunningTool("detect-anomaly", [])
        for (index, line) in steadyThenSpike().prefix(3).enumerated() {
            tool.input.write(Data((line + "\n").utf8))
            let out = try #require(tool.readLine(), "line \(index + 1) came out while the input is still open")
            #expect(withoutAnomaly(out) == line)
        }
        let stopped = tool.stop(SIGTERM)
        #expect(stopped.status == 143 || stopped.status == 0)
    }

    @Test("a broken pipe downstream is success")
    func brokenPipe() throws {
        let scratch = try ScratchDirectory()
        let many = (0..<20_000).map { sampleLine("m\($0 % 7)", minute: $0, latency: 50) }.joined(separator: "\n") + "\n"
        let path = try scratch.write("many.ndjson", many)
        // The shell reports detect-anomaly's own status on stderr; the pipe's status would be head's.
        // (The input is a file: a pipe from this process would raise SIGPIPE here.)
        let result = try shell("{ detect-anomaly '\(path)'; echo \"status $?\" >&2; } | head -n 1")
        #expect(result.lines.count == 1)
        #expect(result.stderr == "status 0\n", "\(result.stderr)")
    }
}

@Suite("detect-anomaly state files", .serialized, .hangGuard(minutes: 5))
struct DetectAnomalyStateTests {
    /// Three monitors over 300 minutes each, interleaved: noise, a shift, a drift, an outage, a simulated stretch.
    static let trace: [String] = {
        var lines: [String] = []
        for minute in 0..<300 {
            let wobble = Double((minute * 37) % 11) - 5
            lines.append(sampleLine("api", minute: minute, latency: (minute >= 150 && minute < 170 ? 300 : 80) + wobble))
            lines.append(
                sampleLine(
                    "web", minute: minute, latency: 40 + Double(minute) * 0.2 + wobble,
                    simulated: minute % 50 == 7))
            if minute % 60 < 5 {
                lines.append(sampleLine("db", minute: minute, latency: nil, status: "error"))
            } else {
                lines.append(sampleLine("db", minute: minute, latency: 12 + wobble / 2))
            }
            if minute % 97 == 0 { lines.append("{\"type\":\"note\",\"minute\":\(minute)}") }
        }
        return lines
    }()

    @Test("the trace split into 100 runs gives byte-identical output to one run", arguments: ["envelope", "robust", "seed", "mad"])
    func splitRuns(detector: String) throws {
        let scratch = try ScratchDirectory()
        let whole = try run("detect-anomaly", ["--detector", detector], stdin: Self.trace.joined(separator: "\n") + "\n")
        #expect(whole.status == 0)
        #expect(whole.lines.count == Self.trace.count)
        #expect(whole.stdout.contains("\"verdict\":\"degrading\""), "the trace exercises degrading verdicts")
        var pieces = ""
        var lastPiece: [String] = []
        for piece in 0..<100 {
            let lines = Self.trace[(piece * Self.trace.count / 100)..<((piece + 1) * Self.trace.count / 100)]
            let part = try run(
                "detect-anomaly", ["--detector", detector, "--state", scratch.path("state.json")],
                stdin: lines.joined(separator: "\n") + "\n")
            #expect(part.status == 0, "\(part.stderr)")
            pieces += part.stdout
            lastPiece = Array(lines)
        }
        #expect(pieces == whole.stdout)
        // The state is what made that so: the last piece alone, with no state, is judged otherwise.
        let alone = try run("detect-anomaly", ["--detector", detector], stdin: lastPiece.joined(separator: "\n") + "\n")
        #expect(alone.lines != Array(whole.lines.suffix(lastPiece.count)), "the state carried the baselines over")
        let attributes = try FileManager.default.attributesOfItem(atPath: scratch.path("state.json"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).filter { $0 != "state.json" }
        #expect(leftovers.isEmpty, "no temporary files left: \(leftovers)")
    }

    @Test("a corrupt, foreign, other-version or other-settings state file is an error naming it, and is left alone")
    func badStateFiles() throws {
        let scratch = try ScratchDirectory()
        let good = try run(
            "detect-anomaly", ["--state", scratch.path("good.json")], stdin: Self.trace.prefix(30).joined(separator: "\n") + "\n")
        #expect(good.status == 0)
        let saved = try String(contentsOfFile: scratch.path("good.json"), encoding: .utf8)
        #expect(saved.hasPrefix("{\"format\":\"vitals detect-anomaly state\",\"version\":5,\"detector\":\"envelope\""))
        let cases: [(String, String, [String], String)] = [
            ("truncated.json", String(saved.prefix(saved.count / 2)), [], "not a detect-anomaly state file"),
            ("empty.json", "", [], "not a detect-anomaly state file"),
            ("foreign.json", "{\"monitors\":[]}", [], "not a detect-anomaly state file"),
            (
                "future.json", saved.replacingOccurrences(of: "\"version\":5", with: "\"version\":6"), [],
                "is version 6; this detect-anomaly reads versions 4 and 5"
            ),
            // Version 3 kept the envelope's hold in the detector and had no episodes.
            (
                "old.json", saved.replacingOccurrences(of: "\"version\":5", with: "\"version\":3"), [],
                "is version 3; this detect-anomaly reads versions 4 and 5"
            ),
            ("window.json", saved, ["--window", "20"], "was written with --window 100; this run has --window 20"),
            ("detector.json", saved, ["--detector", "seed"], "was written with --detector envelope; this run has --detector seed"),
            (
                "values.json", saved.replacingOccurrences(of: "\"values\":[", with: "\"values\":[\"x\","), [],
                "'values' holds something other than a number"
            ),
        ]
        for (name, content, options, message) in cases {
            let path = try scratch.write(name, content)
            let result = try run("detect-anomaly", ["--state", path] + options, stdin: Self.trace.prefix(3).joined(separator: "\n") + "\n")
            #expect(result.status == 2, "\(name)")
            #expect(result.stderr.contains(path), "\(name): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(name): \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(name): nothing is judged against a state it cannot read")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == content, "\(name) is left as it was")
        }
    }

    @Test("a state file whose directory does not exist is an error before anything is read")
    func missingDirectory() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.path("no/such/dir/state.json")
        let result = try run("detect-anomaly", ["--state", path], stdin: Self.trace.prefix(3).joined(separator: "\n") + "\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains("state file \(path) cannot be created"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("--checkpoint saves during a long run; SIGINT saves what was written and exits 130")
    func checkpointAndInterrupt() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let tool = try RunningTool("detect-anomaly", ["--state", state, "--checkpoint", "1ms"])
        // Feed one line at a time and read it back; the first line after each millisecond saves the state.
        var fed = 0
        while !FileManager.default.fileExists(atPath: state) && fed < Self.trace.count {
            tool.input.write(Data((Self.trace[fed] + "\n").utf8))
            fed += 1
            _ = try #require(tool.readLine())
        }
        #expect(FileManager.default.fileExists(atPath: state), "a checkpoint was written while the run goes on")
        let stopped = tool.stop(SIGINT)
        #expect(stopped.status == 130)
        let saved = try String(contentsOfFile: state, encoding: .utf8)
        #expect(saved.contains("{\"monitor\":\"api\""))
        // The saved state goes on exactly where the interrupted run stopped.
        let rest = try run("detect-anomaly", ["--state", state], stdin: Self.trace[fed...].joined(separator: "\n") + "\n")
        let whole = try run("detect-anomaly", [], stdin: Self.trace.joined(separator: "\n") + "\n")
        #expect(rest.lines == Array(whole.lines[fed...]))
    }

    @Test("--checkpoint saves when the input pauses after a burst, so kill -9 then loses nothing judged")
    func checkpointAtPause() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let tool = try RunningTool("detect-anomaly", ["--state", state, "--checkpoint", "300ms"])
        // One burst of half the trace, read back whole; then no more input: once the checkpoint
        // is due (300 ms after the start, or after a save mid-burst), the pause saves.
        let half = Self.trace.count / 2
        tool.input.write(Data((Self.trace[..<half].joined(separator: "\n") + "\n").utf8))
        for _ in 0..<half { _ = try #require(tool.readLine()) }
        // The state a run of the burst alone ends with (the file is the same bytes for the same input).
        let reference = scratch.path("reference.json")
        #expect(try run("detect-anomaly", ["--state", reference], stdin: Self.trace[..<half].joined(separator: "\n") + "\n").status == 0)
        let expected = try String(contentsOfFile: reference, encoding: .utf8)
        // A checkpoint may land mid-burst too: wait (5 s at most) for the one of the whole burst.
        var saved: String?
        for _ in 0..<200 where saved != expected {
            saved = try? String(contentsOfFile: state, encoding: .utf8)
            if saved != expected { usleep(25_000) }
        }
        #expect(saved == expected, "saved at the pause, without more input")
        #expect(tool.stop(SIGKILL).status != 0)
        // The state of the whole burst: the rest goes on as one run over everything would.
        let rest = try run("detect-anomaly", ["--state", state], stdin: Self.trace[half...].joined(separator: "\n") + "\n")
        let whole = try run("detect-anomaly", [], stdin: Self.trace.joined(separator: "\n") + "\n")
        #expect(rest.lines == Array(whole.lines[half...]))
    }
}

@Suite("detect-anomaly documentation")
struct DetectAnomalyDocumentationTests {
    @Test("every anomaly field each detector writes is in vitals-records(7) and detect-anomaly(1)")
    func anomalyFields() throws {
        let documented = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "ANOMALY"))
        let page = boldWords(manSection(try readPage("man/man1/detect-anomaly.1"), "OUTPUT"))
        let input = (DetectAnomalyStateTests.trace + steadyThenSpike("spiky")).joined(separator: "\n") + "\n"
        for detector in ["seed", "mad", "robust", "envelope"] {
            var keys = Set<String>()
            var verdicts = Set<String>()
            for record in try run("detect-anomaly", ["--detector", detector], stdin: input).records() {
                guard let anomaly = record["anomaly"]?.objectValue else { continue }
                keys.formUnion(anomaly.fields.map(\.key))
                verdicts.insert(anomaly["verdict"]?.stringValue ?? "")
                if let rule = anomaly["rule"]?.stringValue { verdicts.insert(rule) }
                if let episode = anomaly["episode"]?.objectValue {
                    keys.formUnion(episode.fields.map(\.key))
                    verdicts.insert(episode["state"]?.stringValue ?? "")
                }
            }
            #expect(verdicts.isSuperset(of: ["unknown", "stable", "degrading", "onset", "ongoing", "end"]), "\(detector): \(verdicts)")
            for word in keys.union(verdicts).sorted() {
                #expect(documented.contains(word), "\(detector): \(word) is not in vitals-records(7) ANOMALY")
                #expect(page.contains(word), "\(detector): \(word) is not in detect-anomaly(1) OUTPUT")
            }
        }
    }
}

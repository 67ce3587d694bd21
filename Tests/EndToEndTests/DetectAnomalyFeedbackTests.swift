import Foundation
import Testing
import VitalsKit

@Suite("detect-anomaly --feedback: the user's verdicts from the command line", .serialized, .hangGuard(minutes: 3))
struct DetectAnomalyFeedbackTests {
    /// Samples of `api` alternating 95 and 105 ms over `minutes`, with a spike of `spikes[minute]` ms.
    static func trace(_ minutes: Range<Int>, spikes: [Int: Double] = [:]) -> String {
        minutes.map { sampleLine("api", minute: $0, latency: spikes[$0] ?? ($0 % 2 == 0 ? 95 : 105)) }.joined(separator: "\n") + "\n"
    }

    /// The second part: a spike like the first (420 ms), then one five times its size (2,000 ms).
    static let second = trace(230..<360, spikes: [300: 420, 340: 2000])

    @Test("a spike like one called normal is not raised again; a far larger one is; the verdict is taken from the state by feedback add")
    func normalVerdict() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let feedback = scratch.path("verdicts.ndjson")
        let first = try run("detect-anomaly", ["--state", state], stdin: Self.trace(0..<230, spikes: [200: 400]))
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try first.records()[200]["anomaly"]?.objectValue?["episode"]?.objectValue?["id"] == .number("1"))
        // An episode the state does not remember is refused, and nothing is written.
        let unknown = try run("detect-anomaly", ["feedback", "add", "--feedback", feedback, "--state", state, "api", "2", "normal"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("remembers no episode 2 of 'api' (it remembers 1); nothing was written"), "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: feedback))
        let add = try run("detect-anomaly", ["feedback", "add", "--feedback", feedback, "--state", state, "api", "1", "normal"])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(
            try String(contentsOfFile: feedback, encoding: .utf8)
                == "{\"monitor\":\"api\",\"episode\":1,\"started_at\":\"2026-01-05T03:20:00.000Z\",\"verdict\":\"normal\"}\n")
        let stateAfterFirst = try String(contentsOfFile: state, encoding: .utf8)

        // Without the verdict, the 420 ms spike is an episode of its own.
        let plain = try run("detect-anomaly", ["--state", state], stdin: Self.second)
        #expect(plain.status == 0)
        #expect(try plain.records()[70]["anomaly"]?.objectValue?["episode"]?.objectValue?["state"]?.stringValue == "onset")
        try stateAfterFirst.write(toFile: state, atomically: true, encoding: .utf8)

        let result = try run("detect-anomaly", ["--state", state, "--feedback", feedback, "--summary"], stdin: Self.second)
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.records()
        let muted = try #require(records[70]["anomaly"]?.objectValue)
        #expect(records[70]["latency_ms"] == .number("420"))
        #expect(muted["verdict"]?.stringValue == "stable")
        #expect(muted["episode"] == .null)
        #expect((muted["score"]?.doubleValue ?? 1) < 0.5)
        #expect(records[70]["status"]?.stringValue == "up", "not promoted")
        let raised = try #require(records[110]["anomaly"]?.objectValue?["episode"]?.objectValue)
        #expect(records[110]["latency_ms"] == .number("2000"))
        #expect(raised["state"]?.stringValue == "onset")
        #expect(raised["id"] == .number("2"))
        #expect(result.stderr.contains("1 episode began"), "\(result.stderr)")
    }

    @Test("a verdict the state cannot use is reported with its file and line, exit 2, and the run goes on; split runs match one run")
    func refusedAndSplit() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        _ = try run("detect-anomaly", ["--state", state], stdin: Self.trace(0..<230, spikes: [200: 400]))
        let saved = try String(contentsOfFile: state, encoding: .utf8)
        let feedback = try scratch.write(
            "verdicts.ndjson",
            "{\"monitor\":\"api\",\"episode\":1,\"verdict\":\"normal\"}\n{\"monitor\":\"api\",\"episode\":5,\"verdict\":\"normal\"}\n"
                + "{\"monitor\":\"web\",\"episode\":1,\"verdict\":\"anomaly\"}\n{\"monitor\":\"api\",\"verdict\":\"normal\"}\n")
        let whole = try run("detect-anomaly", ["--state", state, "--feedback", feedback], stdin: Self.second)
        #expect(whole.status == 2)
        #expect(
            whole.stderr.contains("verdicts.ndjson:2: normal verdict on episode 5 of 'api' not used: it has had 1 episode, not 5"),
            "\(whole.stderr)")
        #expect(whole.stderr.contains("verdicts.ndjson:3: anomaly verdict on episode 1 of 'web' not used: the state knows no such monitor"))
        #expect(whole.stderr.contains("verdicts.ndjson:4: not a verdict: no \"episode\""), "\(whole.stderr)")
        #expect(try whole.records().count == 130, "every record judged")
        #expect(try whole.records()[70]["anomaly"]?.objectValue?["episode"] == .null, "the good verdict is used")
        // The memory goes through the state file exactly: two runs give the bytes of one.
        try saved.write(toFile: state, atomically: true, encoding: .utf8)
        let lines = Self.second.split(separator: "\n").map(String.init)
        let head = try run(
            "detect-anomaly", ["--state", state, "--feedback", feedback], stdin: lines[..<75].joined(separator: "\n") + "\n")
        let tail = try run(
            "detect-anomaly", ["--state", state, "--feedback", feedback], stdin: lines[75...].joined(separator: "\n") + "\n")
        #expect(head.stdout + tail.stdout == whole.stdout)
        #expect(try String(contentsOfFile: state, encoding: .utf8).contains("\"feedback\":{\"episodes\":[[1,"))
    }

    @Test("feedback sensitivity: low raises fewer episodes than normal, high more; --feedback needs --state and envelope")
    func sensitivity() throws {
        let scratch = try ScratchDirectory()
        // Spikes of growing size: the smaller ones are over the limit at high sensitivity only.
        var spikes: [Int: Double] = [:]
        for step in 1...12 { spikes[100 + 40 * step] = 105 + 12 * Double(step) }
        let input = Self.trace(0..<600, spikes: spikes)
        var episodes: [String: Int] = [:]
        for level in ["low", "normal", "high"] {
            let feedback = scratch.path("\(level).ndjson")
            let add = try run("detect-anomaly", ["feedback", "sensitivity", "--feedback", feedback, "api", level])
            #expect(add.status == 0, "\(add.stderr)")
            let result = try run(
                "detect-anomaly", ["--state", scratch.path("\(level).json"), "--feedback", feedback, "--summary"], stdin: input)
            #expect(result.status == 0, "\(result.stderr)")
            let onsets = try result.records().filter { record in
                record["anomaly"]?.objectValue?["episode"]?.objectValue?["state"]?.stringValue == "onset"
            }
            episodes[level] = onsets.count
        }
        #expect(episodes["low"]! < episodes["normal"]!, "\(episodes)")
        #expect(episodes["normal"]! < episodes["high"]!, "\(episodes)")
        let noState = try run("detect-anomaly", ["--feedback", scratch.path("low.ndjson")], stdin: "")
        #expect(noState.status == 64)
        #expect(noState.stderr.contains("--feedback only applies with --state"))
        let seed = try run(
            "detect-anomaly", ["--feedback", scratch.path("low.ndjson"), "--state", scratch.path("s.json"), "--detector", "seed"])
        #expect(seed.status == 64)
        let level = try run("detect-anomaly", ["feedback", "sensitivity", "--feedback", scratch.path("x.ndjson"), "api", "max"])
        #expect(level.status == 64)
    }
}

import FixtureServer
import Foundation
import Testing
import VitalsKit

/// One probe run is one round (issue 28, item 2). Seed 000, 6.3 Concurrent batch checks:
/// checkAll "spawns one task per service, collects transition outcomes ... performs grouped
/// notification decision after all checks complete". The probes mark where a run ends
/// (`round_start`, `round_end`), every filter passes the marks on in place, and notify decides a
/// round's notifications at its end mark, however long the slowest probe took.
@Suite("probe runs are rounds: marks through the pipeline", .hangGuard(minutes: 3))
struct RoundTests {
    let server: FixtureServer
    let refused: RefusingPort

    init() throws {
        server = try FixtureServer()
        refused = try RefusingPort()
    }

    /// A healthy target, a refused port and a server that never answers: with a 2 s budget the
    /// hanging one takes HEAD's 2 s and the GET's 2 s, twice --group-wait's 2 s.
    var targets: String {
        """
        {"id":"ok","name":"OK","url":"\(server.baseURL)/ok"}
        {"id":"refused","name":"Refused","url":"http://127.0.0.1:\(refused.port)/"}
        {"id":"hang","name":"Hang","url":"\(server.baseURL)/hang"}
        """
    }

    /// The monitors of each notification record, in order.
    func notified(_ result: RunResult) throws -> [[String]] {
        try result.records().filter { $0.string("type") == "notification" }.map { record in
            record["monitors"]?.arrayValue?.compactMap { $0.objectValue?.string("monitor") }.sorted() ?? []
        }
    }

    @Test("a refused port and a server that never answers, probed in one run: one grouped notification, decided after all checks complete")
    func oneRunOneNotification() throws {
        let scratch = try ScratchDirectory()
        try scratch.write("targets.ndjson", targets)
        let result = try shell("probe-http --timeout 2s targets.ndjson | notify", directory: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try notified(result) == [["hang", "refused"]], "\(result.stdout)")
        let record = try #require(try result.records().first)
        #expect(record.string("title") == "2 services down")
        #expect(record.string("key") == "groupedOutage")
        // notify passes the marks on: the round's start, then its notification, then its end.
        let all = try result.allRecords().map { $0.string("type") ?? "" }
        #expect(all == ["round_start", "notification", "round_end"])
    }

    @Test("every filter passes the marks on in place: probe-http | detect-anomaly | store-samples | notify")
    func marksThroughThePipeline() throws {
        let scratch = try ScratchDirectory()
        try scratch.write("targets.ndjson", targets)
        let result = try shell(
            """
            probe-http --timeout 2s targets.ndjson | tee probed.ndjson | detect-anomaly --state anomaly.json | tee judged.ndjson \
            | store-samples --db vitals.db | tee stored.ndjson | notify --state notify.json
            """, directory: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try notified(result) == [["hang", "refused"]])
        var round: String?
        for stage in ["probed", "judged", "stored"] {
            let lines = try String(contentsOfFile: scratch.path(stage + ".ndjson"), encoding: .utf8).split(separator: "\n")
            let records = try lines.map { try #require(try JSONParser.parse(String($0)).objectValue) }
            #expect(records.map { $0.string("type") ?? "" } == ["round_start", "sample", "sample", "sample", "round_end"], "\(stage)")
            #expect(records.first?.string("round") == records.last?.string("round"), "\(stage): one round")
            round = round ?? records.first?.string("round")
            #expect(records.first?.string("round") == round, "\(stage): the probe's own mark, as it was written")
            #expect(records.last?.int("samples") == 3)
            #expect(records.last?.string("tool") == "probe-http")
        }
        #expect(try result.marks() == ["start \(round ?? "?")", "end \(round ?? "?")"])
    }

    @Test("--watch: one cycle, one round: the cycle's notification comes at its end mark, not at a pause")
    func watchOneCycleOneRound() throws {
        let scratch = try ScratchDirectory()
        try scratch.write("targets.ndjson", targets)
        // probe-http --watch | notify, the two joined by notify's input pipe.
        let notify = try RunningTool("notify", [])
        let probe = try Spawned(
            [Binaries.path("probe-http"), "--watch", "--interval", "1h", "--timeout", "1500ms", scratch.path("targets.ndjson")],
            output: .descriptor(notify.input.fileDescriptor))
        var seen: [JSONObject] = []
        while let line = notify.readLine() {
            let record = try #require(try JSONParser.parse(line).objectValue)
            seen.append(record)
            if record.string("type") == "round_end" { break }
        }
        probe.terminate()
        probe.wait()
        _ = notify.stop(SIGTERM)
        #expect(seen.map { $0.string("type") ?? "" } == ["round_start", "notification", "round_end"])
        let monitors = seen.first { $0.string("type") == "notification" }?["monitors"]?.arrayValue?.compactMap {
            $0.objectValue?.string("monitor")
        }
        #expect(monitors?.sorted() == ["hang", "refused"])
    }

    /// A trace with marks, by hand: t is seconds after 10:00:00Z.
    func mark(_ type: String, _ round: String) -> String { #"{"type":"\#(type)","round":"\#(round)","tool":"probe-http"}"# }

    @Test("marks decide the round, not --group-wait: samples 5 s apart in one marked round are one; unmarked, two")
    func marksOverGroupWait() throws {
        let samples = [sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("a", 60, "down"), sampleLine("b", 65, "down")]
        let marked = [
            mark("round_start", "r1"), samples[0], samples[1], mark("round_end", "r1"),
            mark("round_start", "r2"), samples[2], samples[3], mark("round_end", "r2"),
        ]
        let once = try run("notify", [], stdin: marked.joined(separator: "\n") + "\n")
        #expect(try once.events() == ["down a,b \(traceTime(65))"])
        let unmarked = try run("notify", [], stdin: samples.joined(separator: "\n") + "\n")
        #expect(try unmarked.events() == ["down a \(traceTime(60))", "down b \(traceTime(65))"])
        // An end mark ends the round even when its start was not seen (notify started mid-stream),
        // and even inside --group-wait.
        let split = [samples[0], samples[1], sampleLine("a", 60, "down"), mark("round_end", "r0"), sampleLine("b", 60.5, "down")]
        #expect(
            try run("notify", [], stdin: split.joined(separator: "\n") + "\n").events()
                == ["down a \(traceTime(60))", "down b \(traceTime(60.5))"])
        // Two runs whose rounds overlap in one stream (two probes into one notify) make one round.
        let merged = [
            samples[0], samples[1], mark("round_start", "x"), mark("round_start", "y"), samples[2], mark("round_end", "x"),
            samples[3], mark("round_end", "y"),
        ]
        #expect(try run("notify", [], stdin: merged.joined(separator: "\n") + "\n").events() == ["down a,b \(traceTime(65))"])
    }

    @Test("probe-ping marks its runs too: a one-shot run is one round")
    func probePingMarks() throws {
        let input = "tcp://127.0.0.1:\(server.port)\n{\"id\":\"closed\",\"target\":\"127.0.0.1:\(refused.port)\"}\n"
        let result = try run("probe-ping", ProbePingTests.patient, stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let types = try result.allRecords().map { $0.string("type") ?? "" }
        #expect(types == ["round_start", "sample", "sample", "round_end"])
        let end = try #require(try result.allRecords().last)
        #expect(end.string("tool") == "probe-ping" && end.int("samples") == 2)
        #expect(end.string("started_at") != nil && end.string("at") != nil)
    }
}

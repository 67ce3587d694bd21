import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36, item 2: `store-samples follow` on a SQLite store, run as users run it (real
/// processes, real files): storage order and a round per stored batch, the cursor, --once,
/// retention and clear, held samples, ticks, and a kill -9 in the middle of a stream.
@Suite("store-samples follow on SQLite", .hangGuard(minutes: 4))
struct FollowTests {
    let scratch: ScratchDirectory
    var db: String { scratch.path("vitals.db") }

    init() throws {
        scratch = try ScratchDirectory()
        signal(SIGPIPE, SIG_IGN)
    }

    func store(_ input: String, _ arguments: [String] = []) throws {
        let stored = try run("store-samples", ["--db", db, "-q"] + arguments, stdin: input)
        #expect(stored.status == 0, "\(stored.stderr)")
    }

    func follow(_ arguments: [String]) throws -> RunResult {
        try run("store-samples", ["--db", db, "follow", "--once"] + arguments, directory: scratch.url)
    }

    @Test(
        "the samples come in the order stored, not their times, each stored batch between its own round marks, with monitor_id as ingest passes it on"
    )
    func storageOrderAndRounds() throws {
        let first = [sample("api", minute: 5), sample("web", minute: 5, status: "down")]
        let ingested = try run("store-samples", ["--db", db], stdin: oneRound(first, "r1"))
        let older = sample("api", minute: 1)
        try store(older + "\n")
        let ownID = sample("db", minute: 3, extra: #","monitor_id":77"#)
        try store(ownID + "\n")
        let result = try follow(["--from", "start", "--tick", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let batches = try followedBatches(result.lines)
        #expect(
            batches.map(\.samples) == [
                [followKey("api", minute: 5), followKey("web", minute: 5)], [followKey("api", minute: 1)], [followKey("db", minute: 3)],
            ], "a batch per transaction, in the order stored: api at 10:01 was stored after 10:05")
        #expect(Set(batches.map(\.round)).count == 3 && batches.allSatisfy { $0.ended })
        let samples = result.lines.filter { $0.contains(#""type":"sample""#) }
        let passedOn = ingested.lines.filter { $0.contains(#""type":"sample""#) }
        #expect(Array(samples.prefix(2)) == passedOn, "the very lines an ingest passes on")
        let withID: (String, Int) -> String = { line, id in String(line.dropLast()) + #","monitor_id":\#(id)}"# }
        let expected: [String] = [withID(first[0], 1), withID(first[1], 2), withID(older, 1), ownID]
        #expect(samples == expected, "the line as stored with monitor_id last; one with its own monitor_id as it is")
        // The same batches again, under the same rounds: a round is the batch's, not the run's.
        let again = try followedBatches(try follow(["--from", "start", "--tick", "0"]).lines)
        #expect(again == batches)
    }

    @Test(
        "a cursor file: each --once run writes what was stored since the last and saves where it stands (0600, atomically); from now without one; refused where others could replace it"
    )
    func cursorAndOnce() throws {
        try store(oneRound([sample("api", minute: 1), sample("web", minute: 1)], "a"))
        let cursor = scratch.path("follow.cursor")
        let first = try follow(["--cursor", cursor, "--tick", "0"])
        #expect(first.status == 0 && first.stdout.isEmpty, "from now: nothing stored before: \(first.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: cursor)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let saved = try #require(try JSONParser.parse(String(contentsOfFile: cursor, encoding: .utf8)).objectValue)
        #expect(saved.fields.map(\.key) == ["type", "store", "after_id", "saved_at"])
        #expect(saved.string("type") == "follow_cursor" && saved.string("store") == "sqlite" && saved.int("after_id") == 2)
        try store(sample("api", minute: 2) + "\n")
        let second = try follow(["--cursor", cursor])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(try followedBatches(second.lines).map(\.samples) == [[followKey("api", minute: 2)]])
        #expect(second.lines.last?.hasPrefix(#"{"type":"tick","at":""#) == true, "--once ends with a tick: \(second.stdout)")
        #expect(try follow(["--cursor", cursor, "--tick", "0"]).stdout.isEmpty, "nothing new")
        let everything = try followedBatches(try follow(["--from", "start", "--tick", "0"]).lines)
        #expect(everything.map(\.samples.count) == [2, 1], "without a cursor, --from start: every batch")
        // A folder others can write to, a cursor that is a link: refused, nothing written.
        let shared = scratch.path("shared")
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        chmod(shared, 0o777)
        let refused = try follow(["--cursor", shared + "/follow.cursor"])
        #expect(refused.status == 2 && refused.stderr.contains("is writable by others, who could replace the cursor"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: shared + "/follow.cursor"))
        // A folder of another user's, closed to others (only root can stage it: chown).
        if geteuid() == 0 {
            let theirs = scratch.path("theirs")
            try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: false)
            chmod(theirs, 0o755)
            #expect(chown(theirs, 65534, 65534) == 0)
            let foreign = try follow(["--cursor", theirs + "/follow.cursor"])
            #expect(foreign.status == 2 && foreign.stderr.contains("its folder \(theirs) is another user's"), "\(foreign.stderr)")
            #expect(!FileManager.default.fileExists(atPath: theirs + "/follow.cursor"))
        }
        try FileManager.default.createSymbolicLink(atPath: scratch.path("link.cursor"), withDestinationPath: cursor)
        let linked = try follow(["--cursor", scratch.path("link.cursor")])
        #expect(linked.status == 2 && linked.stderr.contains("it is not a plain file of your own"), "\(linked.stderr)")
        // What does not apply.
        #expect(try follow(["--lag", "1s"]).status == 64)
        let missing = try run("store-samples", ["--db", scratch.path("none.db"), "follow", "--once"])
        #expect(missing.status == 2 && missing.stderr.contains("no database at"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("none.db")), "follow never creates a store")
    }

    @Test("retention and clear never make follow skip or repeat: a cleared store's new samples get new numbers")
    func retentionAndClear() throws {
        let cursor = scratch.path("follow.cursor")
        try store(oneRound((1...3).map { sample("api", minute: $0) }, "a"))
        var written = try followedBatches(try follow(["--cursor", cursor, "--from", "start", "--tick", "0"]).lines).flatMap(\.samples)
        #expect(try run("store-samples", ["--db", db, "clear", "--all"]).status == 0)
        // Without the high-water mark SQLite numbers these 1 and 2 again, at or below the cursor's 3.
        try store(oneRound([sample("api", minute: 4), sample("web", minute: 4)], "b"))
        let afterClear = try followedBatches(try follow(["--cursor", cursor, "--tick", "0"]).lines).flatMap(\.samples)
        #expect(afterClear == [followKey("api", minute: 4), followKey("web", minute: 4)])
        written += afterClear
        // Retention in the batch's own transaction: api at 10:06 is gone before anyone reads it.
        try store(oneRound((6...8).map { sample("api", minute: $0) }, "c"), ["--keep-per-monitor", "2"])
        let pruned = try followedBatches(try follow(["--cursor", cursor, "--tick", "0"]).lines).flatMap(\.samples)
        #expect(pruned == [followKey("api", minute: 7), followKey("api", minute: 8)])
        written += pruned
        #expect(try run("store-samples", ["--db", db, "clear", "--monitor", "api", "--until", "2026-01-27T10:08:00Z"]).status == 0)
        try store(sample("api", minute: 9) + "\n", ["--keep-per-monitor", "2"])
        let last = try followedBatches(try follow(["--cursor", cursor, "--tick", "0"]).lines).flatMap(\.samples)
        #expect(last == [followKey("api", minute: 9)])
        written += last
        #expect(written.count == Set(written).count, "nothing written twice: \(written)")
        #expect(try sqlite(db, "SELECT group_concat(id, ',') FROM samples") == "5,8,9", "numbers never given twice")
    }

    @Test(
        "a pending agent's samples are not followed, not even once it is approved; what it stores from then on is, and so is a store made after follow began"
    )
    func heldSamples() throws {
        let cursor = scratch.path("follow.cursor")
        try store(sample("edge", minute: 1, extra: #","agent":"tokyo""#) + "\n", ["--remote"])
        #expect(try sqlite(db, "SELECT held FROM samples") == "1")
        #expect(try follow(["--cursor", cursor, "--from", "start", "--tick", "0"]).stdout.isEmpty, "held: not followed")
        #expect(try run("store-samples", ["--db", db, "agents", "approve", "tokyo"]).status == 0)
        #expect(try follow(["--cursor", cursor, "--tick", "0"]).stdout.isEmpty, "approved: its held samples count, but are not followed")
        try store(sample("edge", minute: 2, extra: #","agent":"tokyo""#) + "\n", ["--remote"])
        let approved = try follow(["--cursor", cursor, "--tick", "0"])
        #expect(try followedBatches(approved.lines).map(\.samples) == [[followKey("edge", minute: 2)]])
        #expect(
            try followedBatches(try follow(["--from", "start", "--tick", "0"]).lines).map(\.samples) == [[followKey("edge", minute: 2)]],
            "from the start too: the held one never")
        // A follower started before there is any store waits for one, then follows all of it (all of it is new).
        let later = scratch.path("later.db")
        let waiting = try StreamingTool("store-samples", ["--db", later, "follow", "--tick", "0"], errorFile: scratch.path("later.err"))
        let deadline = Date().addingTimeInterval(20)
        while !waiting.stderr.contains("waiting for it"), Date() < deadline { usleep(20_000) }
        #expect(waiting.stderr.contains("no database at \(later)"), "\(waiting.stderr)")
        #expect(try run("store-samples", ["--db", later, "-q"], stdin: sample("first", minute: 1) + "\n").status == 0)
        let lines = waiting.lines(within: 20) { $0.contains { $0.hasPrefix(#"{"type":"round_end""#) } }
        #expect(try followedBatches(lines).map(\.samples) == [[followKey("first", minute: 1)]])
        #expect(waiting.stop(SIGTERM) == 143)
    }

    @Test("idle, follow writes a tick every --tick, and a batch as soon as it is stored; the tick passes through detect-anomaly")
    func ticksWhenIdle() throws {
        try store(sample("api", minute: 1) + "\n")
        let tool = try StreamingTool("store-samples", ["--db", db, "follow", "--tick", "300ms"], errorFile: scratch.path("follow.err"))
        let started = Date()
        let ticks = tool.lines(within: 20) { $0.count == 2 }
        #expect(ticks.count == 2 && ticks.allSatisfy { $0.hasPrefix(#"{"type":"tick","at":""#) }, "\(ticks)")
        #expect(Date().timeIntervalSince(started) >= 0.6, "one tick each 300 ms of silence")
        try store(sample("api", minute: 2) + "\n")
        let batch = tool.lines(within: 20) { $0.last?.hasPrefix(#"{"type":"round_end""#) == true }
        #expect(try followedBatches(batch).map(\.samples) == [[followKey("api", minute: 2)]], "\(batch)")
        let next = try #require(tool.line(before: Date().addingTimeInterval(20)))
        let ended = try #require(Timestamp.parse(try JSONParser.parse(batch.last ?? "").objectValue?.string("at") ?? ""))
        let ticked = try #require(Timestamp.parse(try JSONParser.parse(next).objectValue?.string("at") ?? ""))
        #expect(next.hasPrefix(#"{"type":"tick""#) && ticked - ended >= 300, "the silence counts from the batch: \(next)")
        #expect(tool.stop(SIGTERM) == 143, "\(tool.stderr)")
        // Filters keep records they do not know: the tick and the marks go through detect-anomaly unchanged.
        let piped = try shell("store-samples --db '\(db)' follow --from start --once | detect-anomaly")
        #expect(piped.status == 0, "\(piped.stderr)")
        let lines = piped.lines
        #expect(lines.count == 7 && lines.last?.hasPrefix(#"{"type":"tick","at":""#) == true, "\(piped.stdout)")
        #expect(lines.last?.hasSuffix(#","tool":"store-samples"}"#) == true)
        #expect(try followedBatches(lines).map(\.samples) == [[followKey("api", minute: 1)], [followKey("api", minute: 2)]])
        #expect(lines.filter { $0.contains(#""type":"sample""#) }.allSatisfy { $0.contains(#""anomaly":"#) })
    }

    @Test("kill -9 in the middle of a stream, then a new run from the cursor: every sample written at least once, whole batches again")
    func killAndResume() throws {
        let cursor = scratch.path("follow.cursor")
        // A backlog of 30 batches of 1,000 samples, and a writer that goes on storing meanwhile.
        var backlog = ""
        for round in 0..<30 {
            backlog += oneRound((0..<1_000).map { sample("m\($0 % 50)", minute: round, second: $0 / 50) }, "b\(round)")
        }
        try store(backlog)
        var expected = Set((0..<30).flatMap { round in (0..<1_000).map { followKey("m\($0 % 50)", minute: round, second: $0 / 50) } })
        let writer = try RunningTool("store-samples", ["--db", db, "-q"])
        func write(_ round: Int) throws {
            let lines = (0..<50).map { sample("w\($0)", minute: 100 + round) }
            try writer.input.write(contentsOf: Data(oneRound(lines, "w\(round)").utf8))
            for index in 0..<50 { expected.insert(followKey("w\(index)", minute: 100 + round)) }
        }
        let first = try StreamingTool(
            "store-samples", ["--db", db, "follow", "--cursor", cursor, "--from", "start", "--tick", "500ms"],
            errorFile: scratch.path("first.err"))
        for round in 0..<10 { try write(round) }
        // Read part of the stream; follow blocks on the full pipe, mid-batch, and is killed there.
        let before = first.lines(within: 60) { $0.count >= 15_000 }
        #expect(before.count == 15_000)
        #expect(first.stop(SIGKILL) == 128 + SIGKILL)
        let saved = try JSONParser.parse(String(contentsOfFile: cursor, encoding: .utf8)).objectValue?.int("after_id") ?? 0
        for round in 10..<20 { try write(round) }
        try writer.input.close()
        writer.process.wait()
        #expect(writer.process.terminationStatus == 0)
        let second = try StreamingTool(
            "store-samples", ["--db", db, "follow", "--cursor", cursor, "--tick", "500ms"], errorFile: scratch.path("second.err"))
        var seen = Set<String>()
        let firstBatches = try followedBatches(before)
        for batch in firstBatches { seen.formUnion(batch.samples) }
        let after = try linesUntilSeen(second, expected, seen: &seen, within: 90)
        #expect(second.stop(SIGTERM) == 143, "\(second.stderr)")
        #expect(expected.subtracting(seen).isEmpty, "every sample at least once: \(expected.subtracting(seen).count) missing")
        let secondBatches = try followedBatches(after)
        let again = Set(firstBatches.flatMap(\.samples)).intersection(secondBatches.flatMap(\.samples))
        let secondSamples = secondBatches.flatMap(\.samples)
        #expect(secondSamples.count == Set(secondSamples).count, "one run writes a sample once")
        #expect(secondBatches.dropLast().allSatisfy { $0.ended })
        // The first run saved its cursor every 10,000 lines: at most that much, and the batch cut short, comes again.
        #expect(saved > 0 && again.count < before.count && again.count <= 11_000, "\(again.count) written again, cursor at \(saved)")
        FileHandle.standardError.write(
            Data(
                "◇ follow killed with -9 after \(firstBatches.flatMap(\.samples).count) samples: \(again.count) of \(expected.count) written again by the next run\n"
                    .utf8))
    }

    @Test("a batch follow writes again after a kill -9 changes nothing in notify's state: no second notification")
    func replayToNotify() throws {
        try store(oneRound([sample("api", minute: 1, status: "down"), sample("api", minute: 2, status: "down")], "a"))
        try store(oneRound([sample("api", minute: 3), sample("api", minute: 4)], "b"))
        let state = scratch.path("notify.json")
        let pipe = "store-samples --db '\(db)' follow --from start --once | notify --state '\(state)'"
        let first = try shell(pipe)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try first.records().filter { $0.string("type") == "notification" }.map { $0.string("event") } == ["down", "recovered"])
        let replay = try shell(pipe)
        #expect(replay.status == 0 && !replay.stdout.contains(#""type":"notification""#), "\(replay.stdout)")
    }
}

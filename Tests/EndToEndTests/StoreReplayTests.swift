import Foundation
import Testing

/// Replays: the same input stored again, twice in one run, or after `kill -9` at any point, leaves
/// every view as one ingest of it does, on SQLite and on ClickHouse; a replayed line is passed on
/// again as it was the first time; a sample of a stored identity with other content is reported.
@Suite("store-samples replays: identical views after any replay, on SQLite and ClickHouse", .serialized, .timeLimit(.minutes(10)))
struct StoreReplayTests {
    let scratch: ScratchDirectory
    let corpus: String
    let lines: [String]

    init() throws {
        scratch = try ScratchDirectory()
        signal(SIGPIPE, SIG_IGN)
        lines = BackendCorpus.lines()
        corpus = try scratch.write("corpus.ndjson", lines.joined(separator: "\n") + "\n")
    }

    /// Every view of the store `db`, each as its status and output.
    func views(_ db: String) throws -> [String] {
        let monitors = BackendCorpus.monitors + ["old"]
        return try ClickHouseBackendTests.views(monitors: monitors).map { view in
            let result = try run("store-samples", ["--db", db, "--now", BackendCorpus.now] + view)
            return "\(view.joined(separator: " ")) \(result.status)\n\(result.stdout)\(result.stderr)"
        }
    }

    func ingest(_ db: String, _ file: String) throws -> RunResult {
        try shell("store-samples --db \"$DB\" --now \(BackendCorpus.now) < \"$IN\"", environment: ["DB": db, "IN": file])
    }

    /// Starts an ingest of the corpus fed through a pipe in chunks of `chunk` lines with a pause
    /// between (so a store commits many batches), and kills it with SIGKILL after `passed` lines were
    /// passed on, or `afterMs` after it started, whichever comes first.
    func killedIngest(_ db: String, passed: Int, afterMs: Int, chunk: Int = 400) throws {
        let tool = try RunningTool("store-samples", ["--db", db, "--now", BackendCorpus.now])
        let writer = tool.input
        let input = lines
        let feeding = Thread {
            for start in stride(from: 0, to: input.count, by: chunk) {
                let text = input[start..<min(input.count, start + chunk)].joined(separator: "\n") + "\n"
                guard (try? writer.write(contentsOf: Data(text.utf8))) != nil else { return }
                usleep(30_000)
            }
            try? writer.close()
        }
        feeding.start()
        let started = Date()
        let pid = tool.process.pid
        let killer = Thread {
            usleep(useconds_t(afterMs * 1000))
            kill(pid, SIGKILL)
        }
        killer.start()
        var count = 0
        while count < passed, Date().timeIntervalSince(started) * 1000 < Double(afterMs), tool.readLine() != nil { count += 1 }
        kill(tool.process.pid, SIGKILL)
        tool.process.wait()
    }

    /// Checks replays against one ingest into `reference`, for stores made by `fresh`.
    func replays(reference: String, fresh: () throws -> String) throws {
        let once = try ingest(reference, corpus)
        #expect(once.status == 2 && once.stderr.split(separator: "\n").count == 2, "the corpus's two bad lines: \(once.stderr)")
        let expected = try views(reference)

        // The same file again: the same lines passed on, the same words, the same views.
        let again = try ingest(reference, corpus)
        #expect(again.stdout == once.stdout, "a replayed line is passed on again, monitor_id and all")
        #expect(again.stderr == once.stderr && again.status == once.status)
        #expect(try views(reference) == expected, "replayed once")

        // Twice in one run.
        let doubled = try scratch.write("doubled.ndjson", (lines + lines).joined(separator: "\n") + "\n")
        let twice = try fresh()
        #expect(try ingest(twice, doubled).status == 2)
        #expect(try views(twice) == expected, "the file twice in one run")

        // Killed with SIGKILL after so many lines passed on, or so long after starting; then the whole file again.
        for (passed, afterMs) in [
            (0, 0), (1, 5_000), (999, 5_000), (1_000, 5_000), (2_500, 5_000), (6_000, 5_000),
            (Int.max, 40), (Int.max, 150), (Int.max, 400), (Int.max, 900),
        ] {
            let store = try fresh()
            try killedIngest(store, passed: passed, afterMs: afterMs)
            let replayed = try ingest(store, corpus)
            #expect(replayed.status == 2 && replayed.stderr == once.stderr, "killed at \(passed) lines / \(afterMs) ms: \(replayed.stderr)")
            #expect(replayed.stdout == once.stdout, "killed at \(passed) lines / \(afterMs) ms: the replay passes every line on")
            #expect(try views(store) == expected, "killed at \(passed) lines / \(afterMs) ms, then replayed")
        }

        // Killed twice in a row, then replayed.
        let store = try fresh()
        try killedIngest(store, passed: 1_500, afterMs: 5_000)
        try killedIngest(store, passed: 3_000, afterMs: 5_000)
        #expect(try ingest(store, corpus).status == 2)
        #expect(try views(store) == expected, "killed twice, then replayed")

        // The same identity with other content: the first stored is kept, the input says so.
        var changed = lines
        var altered: [Int] = []
        for index in [40, 41, 5_000] {
            changed[index] = changed[index].replacingOccurrences(of: #""status":""#, with: #""team":"ops","status":""#)
            altered.append(index + 1)
        }
        let conflicting = try scratch.write("conflicting.ndjson", changed.joined(separator: "\n") + "\n")
        let refused = try ingest(reference, conflicting)
        #expect(refused.status == 2)
        let conflictLine =
            "store-samples: <stdin>:\(altered[0]): 3 samples conflict with stored ones "
            + "(the same monitor, agent and time, other content): the stored ones are kept; this line is the first"
        #expect(refused.stderr.split(separator: "\n").map(String.init).last == conflictLine, "\(refused.stderr)")
        let elsewhere = try ingest(try fresh(), conflicting)
        #expect(refused.stdout == elsewhere.stdout, "a conflicting line is passed on as any other")
        #expect(try views(reference) == expected, "the conflicting samples changed nothing")
    }

    @Test("SQLite: replayed, doubled, killed at any point and replayed, or conflicting: every view as one ingest")
    func sqlite() throws {
        var count = 0
        try replays(reference: scratch.path("reference.db")) {
            count += 1
            return scratch.path("store\(count).db")
        }
    }

    @Test("ClickHouse: replayed, doubled, killed at any point and replayed, or conflicting: every view as one ingest")
    func clickHouse() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        var count = 0
        try replays(reference: "clickhouse://127.0.0.1:\(server.httpPort)/reference") {
            count += 1
            return "clickhouse://127.0.0.1:\(server.httpPort)/store\(count)"
        }
    }
}

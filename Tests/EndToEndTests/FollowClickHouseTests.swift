import Foundation
import Testing
import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 36, item 2: `store-samples follow` on ClickHouse, one server and two shards, started as
/// ordinary processes: batches by their number and time, the cursor's window for batches that show
/// late or in part, clear, held samples, and a version-3 store upgraded on every shard.
@Suite("store-samples follow on ClickHouse", .serialized, .hangGuard(minutes: 10))
struct FollowClickHouseTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory()
        signal(SIGPIPE, SIG_IGN)
    }

    /// 2026-01-27T10:00:00Z, the time of `sample(_, minute: 0)`.
    static let base: Int64 = 1_769_508_000_000

    func store(_ url: String, _ input: String, _ arguments: [String] = []) throws {
        let stored = try run("store-samples", ["--db", url, "-q"] + arguments, stdin: input)
        #expect(stored.status == 0, "\(stored.stderr)")
    }

    func follow(_ url: String, _ arguments: [String]) throws -> [FollowedBatch] {
        let result = try run("store-samples", ["--db", url, "follow", "--once", "--tick", "0"] + arguments, directory: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        return try followedBatches(result.lines)
    }

    /// Inserts samples of `monitor`s at `minute` as one writer's INSERT would: batch `number`,
    /// received at `received` by its writer's clock, numbered from `firstID`.
    func insert(_ server: ClickHouseServer, _ monitors: [String], minute: Int, number: UInt64, received: Int64, firstID: Int) throws {
        let rows = monitors.enumerated().map { index, monitor in
            let line = sample(monitor, minute: minute)
            return "('\(monitor)', \(FollowClickHouseTests.base + Int64(minute) * 60_000), '', \(firstID + index), 0, 0, 0, '\(line)', "
                + "\(number), \(received))"
        }
        try server.query(
            "INSERT INTO vitals.samples (monitor, at, identity_agent, id, status, origin, held, record, batch, received_ms) VALUES "
                + rows.joined(separator: ", "))
    }

    @Test(
        "one server: a round per INSERT in the order received, held samples never; the cursor's window writes a batch that shows late, or in part then whole, once each; clear skips nothing"
    )
    func oneServer() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        try store(url, oneRound([sample("api", minute: 5), sample("web", minute: 5)], "r1"))
        try store(url, sample("api", minute: 1) + "\n")
        try store(url, sample("edge", minute: 1, extra: #","agent":"tokyo""#) + "\n", ["--remote"])
        let all = try follow(url, ["--from", "start", "--lag", "0s"])
        #expect(all.map(\.samples) == [[followKey("api", minute: 5), followKey("web", minute: 5)], [followKey("api", minute: 1)]])
        #expect(Set(all.map(\.round)).count == 2, "a round per INSERT")
        let cursor = scratch.path("follow.cursor")
        #expect(try follow(url, ["--cursor", cursor, "--from", "start", "--lag", "0s"]) == all)
        let saved = try #require(try JSONParser.parse(String(contentsOfFile: cursor, encoding: .utf8)).objectValue)
        #expect(saved.fields.map(\.key) == ["type", "store", "through_ms", "seen", "saved_at"])
        #expect(saved.string("store") == "clickhouse" && saved["seen"]?.arrayValue?.count == 2, "\(saved)")
        try store(url, sample("db", minute: 6) + "\n")
        #expect(try follow(url, ["--cursor", cursor, "--lag", "0s"]).map(\.samples) == [[followKey("db", minute: 6)]])
        // Clear: what comes after is written, nothing again.
        #expect(try run("store-samples", ["--db", url, "clear", "--all"]).status == 0)
        try store(url, oneRound([sample("api", minute: 7), sample("web", minute: 7)], "r2"))
        #expect(
            try follow(url, ["--cursor", cursor, "--lag", "0s"]).map(\.samples) == [
                [followKey("api", minute: 7), followKey("web", minute: 7)]
            ])
        // A writer whose clock is a minute behind: its batch shows with a time the cursor passed, and is written.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try insert(server, ["api"], minute: 8, number: 0xA1, received: now - 60_000, firstID: 1_001)
        let late = try follow(url, ["--cursor", cursor])
        #expect(late.map(\.samples) == [[followKey("api", minute: 8)]] && late.first?.round == "00000000000000a1", "\(late)")
        // A batch that shows in part (one shard before the other), then whole: written twice, the second time whole.
        try insert(server, ["web", "db"], minute: 9, number: 0xB2, received: now - 10_000, firstID: 1_002)
        #expect(try follow(url, ["--cursor", cursor]).map(\.samples) == [[followKey("web", minute: 9), followKey("db", minute: 9)]])
        try insert(server, ["api", "edge"], minute: 9, number: 0xB2, received: now - 10_000, firstID: 1_004)
        let whole = try follow(url, ["--cursor", cursor])
        #expect(
            whole.map(\.samples) == [
                [followKey("web", minute: 9), followKey("db", minute: 9), followKey("api", minute: 9), followKey("edge", minute: 9)]
            ], "the rest showed: the batch again, whole, in its numbers' order")
        #expect(try follow(url, ["--cursor", cursor]).isEmpty, "once whole, never again")
        // Later than the window (5 minutes past the lag) is past waiting for.
        try insert(server, ["api"], minute: 10, number: 0xC3, received: now - 6 * 60_000, firstID: 1_006)
        #expect(try follow(url, ["--cursor", cursor]).isEmpty)
        // Long-lived: a batch stored while it runs is written once it is --lag old.
        let tool = try StreamingTool(
            "store-samples", ["--db", url, "follow", "--cursor", cursor, "--lag", "500ms", "--tick", "0"],
            errorFile: scratch.path("follow.err"))
        try store(url, oneRound([sample("api", minute: 11), sample("web", minute: 11)], "r3"))
        let lines = tool.lines(within: 30) { $0.last?.hasPrefix(#"{"type":"round_end""#) == true }
        #expect(try followedBatches(lines).map(\.samples) == [[followKey("api", minute: 11), followKey("web", minute: 11)]], "\(lines)")
        #expect(tool.stop(SIGTERM) == 143, "\(tool.stderr)")
        // A cursor of this store read against a SQLite file: refused, not misread.
        #expect(try run("store-samples", ["--db", scratch.path("v.db"), "-q"], stdin: sample("x") + "\n").status == 0)
        let crossed = try run("store-samples", ["--db", scratch.path("v.db"), "follow", "--cursor", cursor, "--once"])
        #expect(crossed.status == 2 && crossed.stderr.contains("the cursor was saved for a ClickHouse store"), "\(crossed.stderr)")
    }

    @Test("kill -9 in the middle of a stream from ClickHouse, then a new run from the cursor: every sample at least once")
    func killAndResume() throws {
        guard let (server, url) = try startedClickHouse() else { return }
        defer { withExtendedLifetime(server) {} }  // it runs until the test ends (deinit stops it)
        var backlog = ""
        for round in 0..<20 {
            backlog += oneRound((0..<1_000).map { sample("m\($0 % 50)", minute: round, second: $0 / 50) }, "b\(round)")
        }
        try store(url, backlog)
        let expected = Set((0..<20).flatMap { round in (0..<1_000).map { followKey("m\($0 % 50)", minute: round, second: $0 / 50) } })
        let cursor = scratch.path("follow.cursor")
        let first = try StreamingTool(
            "store-samples", ["--db", url, "follow", "--cursor", cursor, "--from", "start", "--lag", "0s", "--tick", "500ms"],
            errorFile: scratch.path("first.err"))
        // Read part of the stream; follow blocks on the full pipe, mid-batch, and is killed there.
        let before = first.lines(within: 60) { $0.count >= 12_000 }
        #expect(before.count == 12_000, "\(first.stderr)")
        #expect(first.stop(SIGKILL) == 128 + SIGKILL)
        let firstSamples = try followedBatches(before).flatMap(\.samples)
        let second = try StreamingTool(
            "store-samples", ["--db", url, "follow", "--cursor", cursor, "--lag", "0s", "--tick", "500ms"],
            errorFile: scratch.path("second.err"))
        var seen = Set(firstSamples)
        let after = try linesUntilSeen(second, expected, seen: &seen, within: 90)
        #expect(second.stop(SIGTERM) == 143, "\(second.stderr)")
        #expect(expected.subtracting(seen).isEmpty, "every sample at least once: \(expected.subtracting(seen).count) missing")
        let secondSamples = try followedBatches(after).flatMap(\.samples)
        #expect(secondSamples.count == Set(secondSamples).count, "one run writes a sample once")
        let again = Set(firstSamples).intersection(secondSamples)
        #expect(again.count < firstSamples.count, "the cursor was saved during the first run: \(again.count) written again")
        FileHandle.standardError.write(
            Data(
                "◇ follow of ClickHouse killed with -9 after \(firstSamples.count) samples: \(again.count) of \(expected.count) written again by the next run\n"
                    .utf8))
    }

    @Test(
        "two shards: a batch split across them is one round; a version-4 store gains batch and received_ms on every shard when an ingest opens it"
    )
    func twoShards() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let ports = try (0..<4).map { _ in try unusedPort() }
        let cluster = """
            <remote_servers><vitals_pair>
              <shard><replica><host>127.0.0.1</host><port>\(ports[1])</port></replica></shard>
              <shard><replica><host>127.0.0.1</host><port>\(ports[3])</port></replica></shard>
            </vitals_pair></remote_servers>
            """
        let servers = [
            try ClickHouseServer(httpPort: ports[0], tcpPort: ports[1], clusterXML: cluster),
            try ClickHouseServer(httpPort: ports[2], tcpPort: ports[3], clusterXML: cluster),
        ]
        for server in servers { try server.start() }
        let url = "clickhouse://127.0.0.1:\(ports[0])/vitals?cluster=vitals_pair&shards=127.0.0.1:\(ports[0]),127.0.0.1:\(ports[2])"
        let monitors = (0..<8).map { "m\($0)" }
        for minute in 1...2 { try store(url, oneRound(monitors.map { sample($0, minute: minute) }, "r\(minute)")) }
        let counts = try servers.map { try $0.query("SELECT count() FROM vitals.samples_local") }
        #expect(counts.allSatisfy { $0 != "0" && $0 != "16" }, "the batches are split across the shards: \(counts)")
        let cursor = scratch.path("follow.cursor")
        let both = try follow(url, ["--cursor", cursor, "--from", "start", "--lag", "0s"])
        #expect(both.map(\.samples) == (1...2).map { minute in monitors.map { followKey($0, minute: minute) } })
        // Back to version 4: the two columns taken away on each shard, the version said again.
        for server in servers {
            for table in ["samples_local", "samples"] {
                for column in ["batch", "received_ms"] { try server.query("ALTER TABLE vitals.\(table) DROP COLUMN \(column)") }
            }
            try server.query("DROP TABLE vitals.store_samples_schema")
            try server.query(
                "CREATE TABLE vitals.store_samples_schema (version UInt32, applied_at Int64) ENGINE = MergeTree() ORDER BY version")
            try server.query("INSERT INTO vitals.store_samples_schema VALUES (4, 0)")
        }
        let old = try run("store-samples", ["--db", url, "follow", "--once"])
        #expect(
            old.status == 2
                && old.stderr.contains("holds store-samples schema version 4, older than this build's 5: storing samples in it upgrades it"),
            "\(old.stderr)")
        try store(url, oneRound(monitors.map { sample($0, minute: 3) }, "r3"))
        for server in servers {
            #expect(try server.query("SELECT max(version) FROM vitals.store_samples_schema") == "5")
            #expect(
                try server.query(
                    "SELECT count() FROM system.columns WHERE database = 'vitals' AND name IN ('batch', 'received_ms') "
                        + "AND table IN ('samples_local', 'samples')") == "4", "both columns, local and Distributed, on each shard")
        }
        #expect(
            try follow(url, ["--cursor", cursor, "--lag", "0s"]).map(\.samples) == [monitors.map { followKey($0, minute: 3) }],
            "what was stored before the columns were there is not followed; what comes after is")
        // An ingest into the upgraded store runs the upgrade's statements no more.
        try store(url, oneRound(monitors.map { sample($0, minute: 4) }, "r4"))
        #expect(try follow(url, ["--cursor", cursor, "--lag", "0s"]).map(\.samples) == [monitors.map { followKey($0, minute: 4) }])
    }
}

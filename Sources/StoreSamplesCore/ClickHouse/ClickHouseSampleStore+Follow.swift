import VitalsKit

/// `follow` on ClickHouse. There is no rowid, several writers insert at once, and a batch in a
/// cluster is stored on two shards that each show their rows when they have them; so each
/// INSERT carries a random `batch` number and its writer's clock (`received_ms`,
/// `ClickHouseSchema.followColumns`), and a batch is read once it is `lagMs` old by the
/// follower's clock: by then its INSERT was answered (every shard had its rows). A batch that
/// shows later than that (a slow insert, a writer's clock behind, a shard behind) is still read
/// while it is within `windowMs` past the lag: the batches of that window already written are kept
/// in the cursor (`seen`), with their counts, so none is written twice, and one that showed in
/// part is written again whole once the rest shows.
///
/// Reading only what changed: the rows of recent batches are in recent parts (an INSERT makes a
/// part; a merge or mutation makes a new one), so a pass reads only the parts made since its
/// window began (less `partSlackMs` for the writers' clocks), named in `_part IN (...)`, which
/// 18.16 prunes by (it does not with a subquery); and a poll whose list of parts is the last
/// pass's, with no batch come due, reads nothing more.
final class ClickHouseFollowFeed: FollowFeed {
    private let store: ClickHouseSampleStore
    /// How long after its writer sent it a batch is first read.
    let lagMs: Int64
    /// How long past the lag a batch that showed late is still looked for.
    static let windowMs: Int64 = 5 * 60_000
    /// How far a writer's clock may be ahead of a server's: a part made at server time t holds rows
    /// received up to this much after t.
    static let partSlackMs: Int64 = 10 * 60_000
    /// More recent parts than this and a pass reads the table without naming them (a follower far behind).
    static let maxNamedParts = 1_000
    /// The most samples read in one query.
    static let chunkSamples = 20_000

    private var throughMs: Int64
    private var seen: [UInt64: SeenBatch] = [:]
    private(set) var position: FollowPosition
    /// The parts the last whole pass read (nil: read again), and the earliest time a batch it saw
    /// but left for later (not yet `lagMs` old) comes due.
    private var lastParts: [String]?
    private var nextDueMs: Int64?
    /// The parts listed by the last poll, for the pass that follows it.
    private var listed: [String] = []
    /// Monitors' integer ids by monitor id, read again when a sample names one not in it.
    private var monitorIDs: [String: Int64] = [:]

    /// A feed of `store` past `start`, else from its first batch (`fromStart`) or from now.
    init(_ store: ClickHouseSampleStore, start: FollowPosition?, fromStart: Bool, lagMs: Int64, now: Int64) throws {
        self.store = store
        self.lagMs = lagMs
        switch start {
        case .clickHouse(let through, let seenBatches)?:
            throughMs = through
            for batch in seenBatches { seen[batch.number] = batch }
        case .sqlite?:
            throw ToolError("the cursor was saved for a SQLite file, not for the ClickHouse store \(store.location.display)")
        case nil:
            throughMs = fromStart ? 0 : now - lagMs
        }
        position = .clickHouse(throughMs: throughMs, seen: [])
        updatePosition()
    }

    private var placement: ClickHouseSchema.Placement { store.placement }

    private func updatePosition() {
        position = .clickHouse(
            throughMs: throughMs,
            seen: seen.values.sorted { ($0.receivedMs, $0.number) < ($1.receivedMs, $1.number) })
    }

    /// The names of the active parts of the samples tables made since `throughMs` less the slack
    /// (on every shard of a cluster), sorted.
    private func recentParts() throws -> [String] {
        let since = max(0, (throughMs - ClickHouseFollowFeed.partSlackMs) / 1000)
        let source = placement.cluster.map { "cluster(\(clickHouseLiteral($0)), system, parts)" } ?? "system.parts"
        var reader = try store.rows(
            """
            SELECT DISTINCT name FROM \(source) WHERE database = \(clickHouseLiteral(placement.database)) \
            AND table = \(clickHouseLiteral(placement.localName("samples"))) AND active AND modification_time >= toDateTime(\(since)) \
            ORDER BY name
            """)
        var names: [String] = []
        while !reader.atEnd { names.append(try reader.string()) }
        return names
    }

    func mayHaveNews(now: Int64) throws -> Bool {
        listed = try recentParts()
        if listed != lastParts { return true }
        if let due = nextDueMs, due <= now - lagMs { return true }
        // Nothing stored since the last pass, and nothing it left has come due: the window moves on.
        advance(horizon: now - lagMs)
        return false
    }

    /// Moves `throughMs` to the start of the window ending at `horizon`, forgetting the batches before it.
    private func advance(horizon: Int64) {
        let through = max(throughMs, horizon - ClickHouseFollowFeed.windowMs)
        guard through != throughMs else { return }
        throughMs = through
        seen = seen.filter { $0.value.receivedMs > through }
        updatePosition()
    }

    /// The condition naming `parts` (none when there are too many to name).
    private func partCondition(_ parts: [String]) -> String {
        guard parts.count <= ClickHouseFollowFeed.maxNamedParts else { return "1" }
        return "_part IN (\(parts.map(clickHouseLiteral).joined(separator: ", ")))"
    }

    /// Reads what came due. A merge that replaced a listed part while the pass read (a busy server
    /// merges its new parts within seconds) may have hidden rows from it: the pass is made again
    /// over the parts now listed (batches already written are not written again), three more
    /// times at most, so `--once` misses nothing a merge moved.
    func pass(now: Int64, _ visit: (FollowEvent) throws -> Bool) throws -> Bool {
        for _ in 0..<4 {
            guard let merged = try passOverListed(now: now, visit) else { return false }
            guard merged else { return true }
        }
        return true
    }

    /// One pass over the parts `listed`; nil on a stop, else whether a merge replaced a part meanwhile
    /// (`listed` is then the parts listed after it).
    private func passOverListed(now: Int64, _ visit: (FollowEvent) throws -> Bool) throws -> Bool? {
        let horizon = now - lagMs
        let parts = listed
        let table = placement.table("samples")
        var due: [(number: UInt64, receivedMs: Int64, samples: Int)] = []
        var later: Int64?
        if !parts.isEmpty {
            // Every batch received since the window's start, with its samples counted once (a batch
            // sent again after a lost answer is stored twice until ClickHouse merges the copies).
            var summary = try store.rows(
                """
                SELECT batch, received_ms, toInt64(uniqExact(id)) FROM \(table) WHERE \(partCondition(parts)) \
                AND received_ms > \(throughMs) AND batch != 0 GROUP BY batch, received_ms ORDER BY received_ms, batch
                """)
            while !summary.atEnd {
                let number = try summary.uint64()
                let received = try summary.int64()
                let samples = Int(try summary.int64())
                if received > horizon {
                    later = min(later ?? received, received)
                } else if (seen[number]?.samples ?? 0) < samples {
                    due.append((number, received, samples))
                }
            }
        }
        var start = 0
        while start < due.count {
            var end = start + 1
            var samples = due[start].samples
            while end < due.count, samples + due[end].samples <= ClickHouseFollowFeed.chunkSamples {
                samples += due[end].samples
                end += 1
            }
            guard try read(Array(due[start..<end]), parts: parts, visit) else { return nil }
            start = end
        }
        // A part read above that a merge replaced meanwhile may have held rows the queries missed:
        // the window stays where it is, and the pass is made again over the new parts.
        let after = try recentParts()
        if parts.allSatisfy(Set(after).contains) {
            lastParts = parts
            nextDueMs = later
            advance(horizon: horizon)
            return false
        }
        lastParts = nil
        listed = after
        return true
    }

    /// Reads and visits the batches `batches` (in received order), each whole; false on a stop.
    private func read(
        _ batches: [(number: UInt64, receivedMs: Int64, samples: Int)], parts: [String], _ visit: (FollowEvent) throws -> Bool
    )
        throws -> Bool
    {
        let numbers = batches.map { String($0.number) }.joined(separator: ", ")
        var reader = try store.rows(
            """
            SELECT batch, received_ms, monitor, record FROM \(placement.table("samples")) WHERE \(partCondition(parts)) \
            AND received_ms >= \(batches.first!.receivedMs) AND received_ms <= \(batches.last!.receivedMs) AND batch IN (\(numbers)) \
            ORDER BY received_ms, batch, id LIMIT 1 BY batch, id
            """)
        var open: (number: UInt64, receivedMs: Int64, samples: Int)?
        /// Ends the batch under way; false on a stop.
        func end() throws -> Bool {
            guard let batch = open else { return true }
            open = nil
            seen[batch.number] = SeenBatch(number: batch.number, receivedMs: batch.receivedMs, samples: batch.samples)
            updatePosition()
            return try visit(.batchEnd(number: batch.number, samples: batch.samples))
        }
        var refreshed = false
        while !reader.atEnd {
            let number = try reader.uint64()
            let received = try reader.int64()
            let monitor = try reader.string()
            if open?.number != number {
                guard try end(), try visit(.batchStart(number: number)) else { return false }
                open = (number, received, 0)
            }
            if monitorIDs[monitor] == nil, !refreshed {
                // Monitors are stored before their samples: one not known yet is read now.
                store.caches.monitorTable = nil
                for record in try store.readMonitors() { monitorIDs[record.monitor] = record.id }
                refreshed = true
            }
            let monitorID = monitorIDs[monitor]
            open!.samples += 1
            guard try reader.withStringLine({ try visit(.sample(record: $0, monitorID: monitorID)) }) else { return false }
        }
        return try end()
    }
}

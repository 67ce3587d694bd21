import Foundation
import Testing
import VitalsKit

@testable import StoreSamplesCore

/// The cache model of `SampleStore.startRequest`: a long-lived instance (a responder's worker)
/// that starts each request with it answers, and writes, as a fresh instance would, whatever
/// another writer did in between.
@Suite("the cache model: a long-lived store sees another writer's changes from its next request on", .serialized, .timeLimit(.minutes(5)))
struct StoreCacheModelTests {
    @Test("SQLite: agent status, monitor metadata and retention counts learnt in one request are read again in the next")
    func sqliteWorkerAndAnotherWriter() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "cache-model-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("vitals.db").path
        // The worker: samples from elsewhere, as POST /api/samples stores them.
        let worker = try SQLiteSampleStore(path: path, create: true, policy: IngestPolicy(remote: true))
        // Another process: the user's own command line.
        let other = try SQLiteSampleStore(path: path, create: true)
        let keepThree = Retention(perMonitor: 3, days: nil)

        // Request 1: agent paris is new, so pending and its sample held; the monitor is named One;
        // retention counts three samples of "kept".
        worker.startRequest(now: cacheNow)
        try ingestInProcess(
            worker,
            [cacheSample("api", minute: 1, #","name":"One","agent":"paris""#)]
                + (2...4).map { cacheSample("kept", minute: $0, #","agent":"paris""#) }, now: cacheNow, retention: keepThree)
        // Meanwhile: paris approved, the monitor renamed Two, three more samples of "kept" with no retention.
        #expect(try other.setAgentStatus("paris", to: .approved))
        try ingestInProcess(
            other, [cacheSample("api", minute: 5, #","name":"Two""#)] + (6...8).map { cacheSample("kept", minute: $0) }, now: cacheNow)

        // Request 2: the worker must see all of that.
        worker.startRequest(now: cacheNow)
        try ingestInProcess(
            worker,
            [cacheSample("api", minute: 9, #","name":"One","agent":"paris""#), cacheSample("kept", minute: 10, #","agent":"paris""#)],
            now: cacheNow, retention: keepThree)
        let fresh = try SQLiteSampleStore(path: path, create: false)
        let api = try #require(try fresh.monitor(matching: "api"))
        #expect(api.metadata.name == "One", "the worker named it One again: it did not take its own old memory for the store")
        #expect(
            try fresh.count(monitorID: api.id, from: 0, until: cacheNow, selection: .consensus) == 3,
            "the sample sent after approval counts (not held)")
        let kept = try #require(try fresh.monitor(matching: "kept"))
        #expect(
            try fresh.count(monitorID: kept.id, from: 0, until: cacheNow, selection: .consensus) == 3,
            "retention counted the other writer's samples too")
        #expect(try everyViewInProcess(worker, now: cacheNow) == everyViewInProcess(fresh, now: cacheNow))
    }

    @Test("ClickHouse: monitors, agents, sample numbers and read answers learnt in one request are read again in the next")
    func clickHouseWorkerAndAnotherWriter() throws {
        guard try requireGate(clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)") else {
            return
        }
        let server = try ClickHouseServer()
        try server.start()
        let location = try ClickHouseLocation("clickhouse://127.0.0.1:\(server.httpPort)/vitals", environment: [:], readFile: { _ in "" })
        let worker = try ClickHouseSampleStore(
            location: location, waitMs: 0, create: true, now: cacheNow, policy: IngestPolicy(remote: true))
        let other = try ClickHouseSampleStore(location: location, waitMs: 0, create: true, now: cacheNow)

        // Request 1: a pending agent's monitor (id 1, named One), then every view, which the
        // worker answers from one query per question, kept for the request.
        worker.startRequest(now: cacheNow)
        try ingestInProcess(worker, [cacheSample("api", minute: 1, #","name":"One","agent":"paris""#)], now: cacheNow)
        let before = try everyViewInProcess(worker, now: cacheNow)
        #expect(before["overview"]?.contains(#""agents_pending":1"#) == true)
        // Meanwhile: a new monitor (id 2), the first renamed, two more samples numbered, paris approved.
        try ingestInProcess(
            other, [cacheSample("web", minute: 2, #","name":"Web""#), cacheSample("api", minute: 3, #","name":"Two""#)], now: cacheNow)
        #expect(try other.setAgentStatus("paris", to: .approved))

        // Request 2: a new monitor gets id 3, not the 2 the worker would have given from memory;
        // the next sample numbers follow the other writer's; the name is set again; nothing is held.
        worker.startRequest(now: cacheNow)
        try ingestInProcess(
            worker, [cacheSample("db", minute: 4, #","agent":"paris""#), cacheSample("api", minute: 5, #","name":"One","agent":"paris""#)],
            now: cacheNow)
        let fresh = try ClickHouseSampleStore(location: location, waitMs: 0, create: false, now: cacheNow)
        #expect(try fresh.monitors().map { "\($0.id) \($0.monitor) \($0.metadata.name ?? "-")" } == ["1 api One", "2 web Web", "3 db -"])
        #expect(
            try server.query("SELECT groupArray(id) FROM (SELECT id FROM vitals.samples FINAL ORDER BY id)") == "[1,2,3,4,5]",
            "each sample its own number")
        #expect(try server.query("SELECT count() FROM vitals.samples FINAL WHERE held = 0") == "5")
        let after = try everyViewInProcess(worker, now: cacheNow)
        #expect(after != before)
        #expect(after == (try everyViewInProcess(fresh, now: cacheNow)), "the worker answers as a fresh instance does")
    }
}

import Foundation
import Testing

@testable import StoreSamplesCore

@Suite("answers kept between requests: exactly while they hold, computed once at a time")
struct ViewCacheTests {
    @Test("a kept answer is given within its span and generation only")
    func validity() throws {
        let cache = ViewCache()
        var computed = 0
        func ask(_ generation: Int64, _ now: Int64) throws -> String {
            String(
                decoding: try cache.answer("overview", generation: generation, now: now) {
                    computed += 1
                    return ViewCache.Computed(body: Array("g\(generation)@\(now)".utf8), validUntil: 200)
                }, as: UTF8.self)
        }
        #expect(try ask(1, 100) == "g1@100" && computed == 1)
        #expect(try ask(1, 150) == "g1@100" && computed == 1, "inside [100, 200): kept")
        #expect(try ask(1, 99) == "g1@99" && computed == 2, "before the span it was computed in: computed again")
        #expect(try ask(1, 200) == "g1@200" && computed == 3, "at its end: computed again, and not kept (it would hold until 200)")
        #expect(try ask(2, 150) == "g2@150" && computed == 4, "a write since: computed again")
        #expect(try ask(1, 150) == "g1@150" && computed == 5, "the older generation's answers were dropped")
    }

    @Test("while one thread computes an answer, another that wants it waits for it instead of computing it too")
    func singleFlight() throws {
        let cache = ViewCache()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let calls = Counter()
        let results = Counter()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let body = try? cache.answer("overview", generation: 1, now: 100) {
                calls.add()
                started.signal()
                release.wait()
                return ViewCache.Computed(body: Array("first".utf8), validUntil: 1000)
            }
            if body == Array("first".utf8) { results.add() }
        }
        started.wait()
        DispatchQueue.global().async(group: group) {
            let body = try? cache.answer("overview", generation: 1, now: 101) {
                calls.add()
                return ViewCache.Computed(body: Array("second".utf8), validUntil: 1000)
            }
            if body == Array("first".utf8) { results.add() }
        }
        // The second asks while the first computes, and waits for it.
        let deadline = Date().addingTimeInterval(10)
        while cache.waiting == 0, Date() < deadline { usleep(1_000) }
        #expect(cache.waiting == 1 && results.value == 0)
        release.signal()
        group.wait()
        #expect(calls.value == 1 && results.value == 2)
    }
}

/// A count shared by threads.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

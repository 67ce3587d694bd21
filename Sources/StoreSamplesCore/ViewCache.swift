import Foundation
import VitalsKit

/// Answers kept in memory between the requests a responder answers, each exactly as long as it
/// stays true: an answer is given again only while the store's generation is the one it was
/// computed at (no write since: every write transaction increments it, whoever writes) and the
/// clock is inside the span in which its time window holds the same samples. So a kept answer is
/// byte for byte the one a fresh computation would give; it only saves the work, and a write is
/// seen by the very next request.
///
/// Shared by every worker thread of a responder. While one thread computes an answer, the others
/// that want the same one wait for it rather than compute it too (at 10,000 monitors an overview
/// that eight threads computed at once took longer than wrk's 2 s timeout on a loaded machine).
/// A new generation drops every kept answer; past `budgetBytes` the oldest go first.
final class ViewCache: @unchecked Sendable {
    /// What a computation gives: the answer, and until when (exclusive, ms) it holds.
    struct Computed {
        var body: [UInt8]
        var validUntil: Int64
    }

    private struct Kept {
        var body: [UInt8]
        var validFrom: Int64
        var validUntil: Int64
        var stamp: Int
    }

    /// An answer being computed: its key at a generation.
    private struct Work: Hashable {
        var key: String
        var generation: Int64
    }

    private struct State {
        var generation: Int64 = .min
        var answers: [String: Kept] = [:]
        var bytes = 0
        var counter = 0
        var computing: Set<Work> = []
        var waiting = 0
    }

    /// Guards `state`, and wakes the threads waiting for an answer being computed.
    private let condition = NSCondition()
    private var state = State()
    /// The most bytes of answers kept.
    let budgetBytes: Int

    /// How many threads are waiting for an answer another computes (for tests).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.waiting
    }

    init(budgetBytes: Int = 32 << 20) {
        self.budgetBytes = budgetBytes
    }

    /// The answer named `key` at `now` for store generation `generation`: the kept one when it
    /// holds, else `compute()`'s (or that of the thread already computing it), kept for the next
    /// request. `compute` runs outside the lock.
    func answer(_ key: String, generation: Int64, now: Int64, compute: () throws -> Computed) throws -> [UInt8] {
        let work = Work(key: key, generation: generation)
        condition.lock()
        while true {
            if state.generation == generation, let entry = state.answers[key], entry.validFrom <= now, now < entry.validUntil {
                let body = entry.body
                condition.unlock()
                return body
            }
            guard state.computing.contains(work) else { break }
            state.waiting += 1
            condition.wait()
            state.waiting -= 1
        }
        state.computing.insert(work)
        condition.unlock()
        defer {
            condition.lock()
            state.computing.remove(work)
            condition.broadcast()
            condition.unlock()
        }
        let computed = try compute()
        guard computed.validUntil > now, computed.body.count <= budgetBytes / 4 else { return computed.body }
        condition.lock()
        if generation != state.generation {
            let (computing, waiting) = (state.computing, state.waiting)
            state = State()
            state.generation = generation
            state.computing = computing
            state.waiting = waiting
        }
        state.counter += 1
        if let old = state.answers[key] { state.bytes -= old.body.count }
        state.answers[key] = Kept(body: computed.body, validFrom: now, validUntil: computed.validUntil, stamp: state.counter)
        state.bytes += computed.body.count
        while state.bytes > budgetBytes, let oldest = state.answers.min(by: { $0.value.stamp < $1.value.stamp }) {
            state.bytes -= oldest.value.body.count
            state.answers[oldest.key] = nil
        }
        condition.unlock()
        return computed.body
    }
}

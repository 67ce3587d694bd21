import Synchronization
import VitalsKit

/// Answers kept in memory between the requests a responder answers, each exactly as long as it
/// stays true: an answer is given again only while the store's generation is the one it was
/// computed at (no write since: every write transaction increments it, whoever writes) and the
/// clock is inside the span in which its time window holds the same samples. So a kept answer is
/// byte for byte the one a fresh computation would give; it only saves the work, and a write is
/// seen by the very next request.
///
/// Shared by every worker thread of a responder. A new generation drops every kept answer;
/// past `budgetBytes` the oldest go first.
final class ViewCache: Sendable {
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

    private struct State {
        var generation: Int64 = .min
        var answers: [String: Kept] = [:]
        var bytes = 0
        var counter = 0
    }

    private let state = Mutex(State())
    /// The most bytes of answers kept.
    let budgetBytes: Int

    init(budgetBytes: Int = 32 << 20) {
        self.budgetBytes = budgetBytes
    }

    /// The answer named `key` at `now` for store generation `generation`: the kept one when it
    /// holds, else `compute()`'s, kept for the next request. `compute` runs outside the lock.
    func answer(_ key: String, generation: Int64, now: Int64, compute: () throws -> Computed) throws -> [UInt8] {
        let kept: [UInt8]? = state.withLock { state in
            guard state.generation == generation, let entry = state.answers[key], entry.validFrom <= now, now < entry.validUntil else { return nil }
            return entry.body
        }
        if let kept { return kept }
        let computed = try compute()
        guard computed.validUntil > now, computed.body.count <= budgetBytes / 4 else { return computed.body }
        state.withLock { state in
            if generation != state.generation {
                state = State()
                state.generation = generation
            }
            state.counter += 1
            if let old = state.answers[key] { state.bytes -= old.body.count }
            state.answers[key] = Kept(body: computed.body, validFrom: now, validUntil: computed.validUntil, stamp: state.counter)
            state.bytes += computed.body.count
            while state.bytes > budgetBytes, let oldest = state.answers.min(by: { $0.value.stamp < $1.value.stamp }) {
                state.bytes -= oldest.value.body.count
                state.answers[oldest.key] = nil
            }
        }
        return computed.body
    }
}

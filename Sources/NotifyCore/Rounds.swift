import VitalsKit

/// Where notify's rounds end (notify(1), Rounds and grouping). isitup decides its grouped
/// notification "after all checks complete": a round is one probe run, however long its slowest
/// probe takes. Input that marks its runs (the probes' `round_start` and `round_end`, passed on
/// by every filter) ends a round at the `round_end` that leaves no marked round open, or at the
/// end of the input; nothing the clock or the samples' times say ends it. Input without marks (a
/// replay of stored samples, hand-made lines) falls back to --group-wait: a round holds the
/// samples whose `at` lies within it of the round's first, and a pause in the input as long ends
/// it.
struct Rounds {
    /// The marked rounds begun and not ended (more than one when streams meet).
    private(set) var open: Set<String> = []

    /// Whether a marked round is open: only its end mark (or the input's end) ends it.
    var marked: Bool { !open.isEmpty }

    /// Whether the samples' times and pauses in the input end rounds (input without marks).
    var byTime: Bool { open.isEmpty }

    /// A `round_start`: returns whether a round of unmarked samples open before it must end
    /// first (the marks begin where nothing marked was open).
    mutating func begin(_ round: String) -> Bool {
        let wasMarked = marked
        open.insert(round)
        return !wasMarked
    }

    /// A `round_end`: returns whether the open round ends now (no marked round is left open).
    /// An end whose start was not seen (notify started mid-stream) ends the round too.
    mutating func end(_ round: String) -> Bool {
        open.remove(round)
        return open.isEmpty
    }

    /// An input ended: its rounds end with it. Returns whether a marked round was open.
    mutating func inputEnded() -> Bool {
        defer { open.removeAll() }
        return marked
    }
}

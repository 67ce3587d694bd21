import VitalsKit

/// Writes the marks around each round of a probe run (vitals-records(7) ROUND MARKS): a
/// `round_start` when the round's first probe starts and a `round_end` after its last sample.
/// A round is what the scheduler makes one (every target of a one-shot run; the targets due
/// together in `--watch`), so a reader downstream knows where a run ends, however long its
/// slowest probe takes, without waiting for a pause.
public struct RoundMarks {
    private let tool: String
    /// This run's part of every round id: random, so that rounds of runs meeting in one stream differ.
    private let run: String
    /// Rounds begun and not ended: when each began and the samples written so far.
    private var open: [Int: (startedAtMs: Int64, samples: Int)] = [:]

    /// Marks for a run of `tool` (`probe-http`, `probe-ping`).
    public init(tool: String) {
        self.tool = tool
        let random = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        run = String(repeating: "0", count: 16 - random.count) + random
    }

    /// The id round `round` is written with.
    func id(_ round: Int) -> String { "\(run)-\(round)" }

    /// A probe of `round` starts: writes the round's `round_start` when it is the round's first.
    public mutating func probeStarts(round: Int, output: RecordWriter) throws {
        guard open[round] == nil else { return }
        let now = Clock.wallMilliseconds()
        open[round] = (now, 0)
        var record = JSONObjectBuilder(capacity: 128)
        record.string("type", RoundMark.startType)
        record.string("round", id(round))
        record.string("tool", tool)
        record.string("at", Timestamp.format(milliseconds: now))
        try output.write(record.finish())
    }

    /// A sample of `round` has been written.
    public mutating func sampleWritten(round: Int) {
        open[round]?.samples += 1
    }

    /// `round` has no probe left: writes its `round_end`.
    public mutating func roundEnds(_ round: Int, output: RecordWriter) throws {
        guard let (startedAtMs, samples) = open.removeValue(forKey: round) else { return }
        var record = JSONObjectBuilder(capacity: 192)
        record.string("type", RoundMark.endType)
        record.string("round", id(round))
        record.string("tool", tool)
        record.string("at", Timestamp.format(milliseconds: Clock.wallMilliseconds()))
        record.string("started_at", Timestamp.format(milliseconds: startedAtMs))
        record.int("samples", samples)
        try output.write(record.finish())
    }
}

import VitalsKit

/// Reads samples and stores them in batches; passes each record on only after the
/// transaction holding it has committed, so nothing downstream sees an unstored sample.
///
/// A batch is committed when it holds `maxRows` samples, when its first sample has waited
/// `maxWaitMs`, or when the input pauses; so a streaming pipeline never waits long, and a
/// bulk load gets large transactions.
final class Ingester {
    let store: SampleStore
    let retention: Retention
    let output: RecordWriter
    private(set) var passThrough: Bool
    let diagnostics: Diagnostics
    let now: () -> Int64
    var maxRows = 1000
    var maxWaitMs: Int64 = 200
    /// Records added to the open batch, kept for passing on after the commit.
    private var pending: [UInt8] = []
    private var batchCount = 0
    private var batchStartedMs: Int64 = 0
    /// The one sample reader, kept from line to line.
    private var sampleReader = SampleLine()
    /// The first failure to commit; ingesting stops there.
    private(set) var failure: Error?
    /// Samples stored.
    private(set) var stored = 0

    init(store: SampleStore, retention: Retention, output: RecordWriter, passThrough: Bool,
         diagnostics: Diagnostics, now: @escaping () -> Int64) {
        self.store = store
        self.retention = retention
        self.output = output
        self.passThrough = passThrough
        self.diagnostics = diagnostics
        self.now = now
        pending.reserveCapacity(1 << 20)
    }

    /// Reads every line of `reader`; returns false when ingesting must stop (a commit failed,
    /// the reader downstream went away, or a stop signal arrived).
    func ingest(_ reader: LineReader) -> Bool {
        reader.onIdle = { [unowned self] in self.commit() }
        defer { reader.onIdle = nil }
        while failure == nil {
            reader.idleAfterMs = batchCount == 0 && pending.isEmpty ? -1 : Int32(max(0, maxWaitMs - (Clock.monotonicMilliseconds() - batchStartedMs)))
            guard let event = reader.next() else { break }
            switch event {
            case .tooLong(let length):
                diagnostics.error(SampleProblem.lineTooLong(bytes: length).message, source: reader.source, line: reader.lineNumber)
            case .line(let line):
                var own = StoredFields()
                switch sampleReader.read(line, extra: &own) {
                case .blank:
                    continue
                case .otherRecord:
                    passOn(line)
                case .problem(let problem):
                    diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
                    if problem.lineIsRecord { passOn(line) }
                case .sample:
                    do {
                        let sample = try StorableSample(sampleReader, own)
                        if batchCount == 0 && pending.isEmpty { batchStartedMs = Clock.monotonicMilliseconds() }
                        try store.add(sample)
                        batchCount += 1
                        passOn(line)
                    } catch let problem as SampleProblem {
                        diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
                        passOn(line)
                    } catch {
                        // The store failed (full disk, lock): the open batch is gone; stop here.
                        batchCount = 0
                        pending.removeAll(keepingCapacity: true)
                        failure = error
                        break
                    }
                }
                if batchCount >= maxRows || Clock.monotonicMilliseconds() - batchStartedMs >= maxWaitMs {
                    commit()
                }
            }
        }
        commit()
        return failure == nil && !reader.interrupted
    }

    /// Keeps a record to pass on after the open batch commits, in input order (samples, and
    /// the records that are not samples, which filters keep).
    private func passOn(_ line: UnsafeBufferPointer<UInt8>) {
        guard passThrough else { return }
        if batchCount == 0 && pending.isEmpty { batchStartedMs = Clock.monotonicMilliseconds() }
        pending.append(contentsOf: line)
        pending.append(0x0A)
    }

    /// Commits the open batch, then passes its records on.
    func commit() {
        guard batchCount > 0 || !pending.isEmpty, failure == nil else { return }
        do {
            if batchCount > 0 {
                try store.commitBatch(retention: retention, now: now())
                stored += batchCount
                batchCount = 0
            }
            do {
                if passThrough, !pending.isEmpty {
                    pending.removeLast()  // the writer adds the last newline itself
                    try output.write(pending[...])
                }
                try output.flush()
            } catch is BrokenPipe {
                // Nobody reads what we pass on any more; storing is still the job.
                passThrough = false
            }
            pending.removeAll(keepingCapacity: true)
        } catch {
            batchCount = 0
            pending.removeAll(keepingCapacity: true)
            failure = error
        }
    }
}

import VitalsKit

/// Reads samples and stores them in batches; passes each record on only after the
/// transaction holding it has committed, so nothing downstream sees an unstored sample.
///
/// A batch is committed when it holds `maxRows` samples (or the store's own bound:
/// `SampleWriter.maxBatchRows`, `batchIsFull`), when its first sample has waited
/// `maxWaitMs`, or when the input pauses; so a streaming pipeline never waits long, and a
/// bulk load gets large transactions.
final class Ingester {
    let store: SampleWriter
    let retention: Retention
    let output: RecordWriter
    private(set) var passThrough: Bool
    let diagnostics: Diagnostics
    let now: () -> Int64
    /// The most samples a batch holds, unless the store bounds it otherwise (ClickHouse: by bytes,
    /// see `ClickHouseSampleStore.batchBytes`). Each SQLite commit writes every index
    /// page its samples touched, and with samples of 1,000 monitors in turn nearly every sample
    /// touches a page of its own in the (monitor, time) index: a million samples in 1,000-sample
    /// transactions took 16.1 s, in 10,000-sample ones 9.0 s and 20,000-sample ones 8.2 s
    /// (sqlite3 .import of the same rows in one transaction: 14.6 s). Every ClickHouse INSERT
    /// makes the server a part to merge (18.16 slows inserts at 150 parts in a partition and
    /// refuses them at 300; its own advice is fewer, larger inserts). `maxWaitMs` still bounds
    /// how long a streaming pipeline waits.
    static let maxRows = 20_000
    let maxWaitMs: Int64 = 200
    // The batch's fields and the reader are touched for every line: exempt from dynamic
    // exclusivity checks (an ingester runs on one thread, one line at a time), they save 2.8% of a
    // ClickHouse ingest's instructions and 0.9% of a SQLite one on 100,000 bench lines (callgrind).
    /// Records added to the open batch, kept for passing on after the commit.
    @exclusivity(unchecked) private var pending: [UInt8] = []
    /// Records of the batch submitted and not yet acknowledged (a store that sends batches
    /// without waiting: ClickHouse), passed on once it is, and the number of its samples.
    private var inFlight: [UInt8] = []
    private var inFlightCount = 0
    @exclusivity(unchecked) private var batchCount = 0
    /// The line number of each sample of the open batch and of the batch in flight, in the
    /// order they were added (a conflict is reported by its line).
    @exclusivity(unchecked) private var batchLines: [Int] = []
    private var inFlightLines: [Int] = []
    /// `monitor` records in the open batch (they change the store but are no samples).
    @exclusivity(unchecked) private var batchNotes = 0
    @exclusivity(unchecked) private var batchStartedMs: Int64 = 0
    /// The one sample reader, kept from line to line.
    @exclusivity(unchecked) private var sampleReader = SampleLine()
    /// The agent every record must come from (an API token's; see `AgentStamp`), nil for any.
    var agent: String?
    /// A line with the agent stamped in, reused from line to line.
    @exclusivity(unchecked) private var stamped: [UInt8] = []
    /// The first failure to commit; ingesting stops there.
    private(set) var failure: Error?
    /// Samples stored.
    private(set) var stored = 0
    /// Samples not stored because the same sample was stored already (a replay).
    private(set) var duplicates = 0
    /// The lines of the samples not stored because another of the same identity was stored
    /// first, of the input being read (reported at its end), and of every input.
    private(set) var conflictLines: [Int] = []
    private(set) var conflicts = 0

    init(
        store: SampleWriter, retention: Retention, output: RecordWriter, passThrough: Bool,
        diagnostics: Diagnostics, now: @escaping () -> Int64
    ) {
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
            // A batch in flight counts too, records or not (--quiet): an input that pauses must not
            // leave it unacknowledged until the next line.
            reader.idleAfterMs =
                batchCount == 0 && batchNotes == 0 && pending.isEmpty && inFlight.isEmpty && inFlightCount == 0
                ? -1 : Int32(max(0, maxWaitMs - (Clock.monotonicMilliseconds() - batchStartedMs)))
            guard let event = reader.next() else { break }
            switch event {
            case .tooLong(let length):
                diagnostics.error(SampleProblem.lineTooLong(bytes: length).message, source: reader.source, line: reader.lineNumber)
            case .line(let line):
                var own = StoredFields()
                let kind = sampleReader.read(line, extra: &own)
                if let agent, isAgentsRecord(kind) {
                    switch AgentStamp.apply(agent: agent, line: line, reader: sampleReader, into: &stamped) {
                    case .asWritten:
                        handle(kind, sampleReader.line, own, reader)
                    case .refused(let why):
                        diagnostics.error(why, source: reader.source, line: reader.lineNumber)
                    case .stamped:
                        // The stamped line is read again by the same reader: what is stored is what it says.
                        let copy = stamped
                        copy.withUnsafeBufferPointer { buffer in
                            var stampedOwn = StoredFields()
                            handle(sampleReader.read(buffer, extra: &stampedOwn), buffer, stampedOwn, reader)
                        }
                    }
                } else {
                    handle(kind, sampleReader.line, own, reader)
                }
                if batchCount >= store.maxBatchRows || store.batchIsFull || Clock.monotonicMilliseconds() - batchStartedMs >= maxWaitMs {
                    // More input is waiting: send this batch and read the next while it is stored.
                    commit(waiting: false)
                }
            }
        }
        commit()
        if reportEachConflict {
            for line in conflictLines { diagnostics.error(Ingester.conflict(1), source: reader.source, line: line) }
        } else if let first = conflictLines.first {
            diagnostics.error(Ingester.conflict(conflictLines.count), source: reader.source, line: first)
        }
        conflictLines.removeAll()
        return failure == nil && !reader.interrupted
    }

    /// What a line `kind` calls for: stored (a sample, a monitor record), passed on (another
    /// record), reported (a problem) or skipped (blank). A probe run's `round_end` commits at
    /// once: the round's samples and the mark go on together, so whoever waits for the end of a
    /// round downstream (notify) does not wait for the batch.
    private func handle(_ kind: SampleLine.Kind, _ line: UnsafeBufferPointer<UInt8>, _ own: StoredFields, _ reader: LineReader) {
        switch kind {
        case .blank:
            return
        case .otherRecord:
            if let type = sampleReader.field(named: "type"), sampleReader.text(type) == "monitor" {
                keep(line, own, reader, monitorRecord: true)
            } else {
                passOn(line)
                if case .end = RoundMark(sampleReader) { commit() }
            }
        case .problem(let problem):
            diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
            if problem.lineIsRecord { passOn(line) }
        case .sample:
            keep(line, own, reader, monitorRecord: false)
        }
    }

    /// Whether a record of `kind` (just read) belongs to an agent: a sample or a monitor record.
    private func isAgentsRecord(_ kind: SampleLine.Kind) -> Bool {
        switch kind {
        case .sample: return true
        case .otherRecord:
            guard let type = sampleReader.field(named: "type") else { return false }
            return sampleReader.text(type) == "monitor"
        default: return false
        }
    }

    /// Stores the sample just read in the open batch, or, for a `monitor` record, registers or
    /// refreshes the monitor it states (no sample stored); then keeps the line to pass on after
    /// the commit. A line the store refuses is reported and passed on unchanged; a failure of
    /// the store itself (full disk, lock) drops the open batch and ends ingesting.
    private func keep(_ line: UnsafeBufferPointer<UInt8>, _ own: StoredFields, _ reader: LineReader, monitorRecord: Bool) {
        do {
            if batchCount == 0 && batchNotes == 0 && pending.isEmpty { batchStartedMs = Clock.monotonicMilliseconds() }
            let monitorID: Int64?
            if monitorRecord {
                monitorID = try store.note(try StorableSample.monitorRecord(sampleReader, own))
                batchNotes += 1
            } else {
                monitorID = try store.add(try StorableSample(sampleReader, own))
                batchCount += 1
                batchLines.append(reader.lineNumber)
            }
            passOn(line, monitorID: monitorID, hasMonitorID: own.monitorID != nil)
        } catch let problem as SampleProblem {
            diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
            passOn(line)
        } catch let refusal as StoreRefusal {
            diagnostics.error(refusal.message, source: reader.source, line: reader.lineNumber)
            passOn(line)
        } catch {
            try? settleInFlight()  // what was acknowledged before still goes on
            batchCount = 0
            batchLines.removeAll(keepingCapacity: true)
            batchNotes = 0
            pending.removeAll(keepingCapacity: true)
            failure = error
        }
    }

    /// Appends `line` as it is passed on: with `"monitor_id":ID` (the integer id of the views) added
    /// as its last field, so notify and other tools downstream can name the monitor as the views
    /// do. A line that already has a top-level `monitor_id` field (`hasMonitorID`, from the one
    /// scan of the line) is passed on as it is.
    static func appendPassingOn<Line: RandomAccessCollection<UInt8>>(
        _ line: Line, monitorID: Int64, hasMonitorID: Bool, to out: inout [UInt8]
    ) where Line.Index == Int {
        var end = line.count
        while end > 0, line[end - 1] == 0x20 || line[end - 1] == 0x09 || line[end - 1] == 0x0D { end -= 1 }
        guard end > 1, line[end - 1] == UInt8(ascii: "}"), !hasMonitorID else {
            out.append(contentsOf: line)
            return
        }
        out.append(contentsOf: line[0..<(end - 1)])
        out.append(contentsOf: #","monitor_id":"#.utf8)
        out.append(contentsOf: String(monitorID).utf8)
        out.append(UInt8(ascii: "}"))
    }

    /// Keeps a record to pass on after the open batch commits, in input order (samples, and
    /// the records that are not samples, which filters keep).
    /// A sample goes on with its `monitorID` added (see `appendPassingOn`).
    /// A store that numbers no monitors (a remote store) gives no `monitorID`: the line goes on as it is.
    private func passOn(_ line: UnsafeBufferPointer<UInt8>, monitorID: Int64? = nil, hasMonitorID: Bool = false) {
        guard passThrough else { return }
        if batchCount == 0 && pending.isEmpty { batchStartedMs = Clock.monotonicMilliseconds() }
        if let monitorID {
            Ingester.appendPassingOn(line, monitorID: monitorID, hasMonitorID: hasMonitorID, to: &pending)
        } else {
            pending.append(contentsOf: line)
        }
        pending.append(0x0A)
    }

    /// Commits the open batch, then passes its records on. With `waiting` false the store may
    /// still be storing it on return (`submitBatch`): its records are passed on at the next
    /// commit, after the store acknowledged it; an idle input or the end always waits.
    func commit(waiting: Bool = true) {
        guard failure == nil else { return }
        do {
            try settleInFlight()
            guard batchCount > 0 || batchNotes > 0 || !pending.isEmpty else { return }
            let samples = batchCount
            var outcome = BatchOutcome()
            if batchCount > 0 || batchNotes > 0 {
                if waiting {
                    outcome = try store.commitBatch(retention: retention, now: now())
                } else {
                    try store.submitBatch(retention: retention, now: now())
                }
                batchCount = 0
                batchNotes = 0
            }
            if waiting {
                count(outcome, of: samples, lines: batchLines)
                batchLines.removeAll(keepingCapacity: true)
                try passOnKept(&pending)
            } else {
                swap(&pending, &inFlight)
                swap(&batchLines, &inFlightLines)
                batchLines.removeAll(keepingCapacity: true)
                inFlightCount = samples
            }
        } catch {
            batchCount = 0
            batchLines.removeAll(keepingCapacity: true)
            inFlightLines.removeAll(keepingCapacity: true)
            batchNotes = 0
            pending.removeAll(keepingCapacity: true)
            inFlight.removeAll(keepingCapacity: true)
            failure = error
        }
    }

    /// Waits for the batch in flight, if any, then passes its records on.
    private func settleInFlight() throws {
        guard !inFlight.isEmpty || inFlightCount > 0 else { return }
        let outcome = try store.awaitSubmitted()
        count(outcome, of: inFlightCount, lines: inFlightLines)
        inFlightCount = 0
        inFlightLines.removeAll(keepingCapacity: true)
        try passOnKept(&inFlight)
    }

    /// Whether each conflict is a line error of its own (the API's answer lists them), rather
    /// than one line for an input, at the first (the command line's stderr).
    var reportEachConflict = false

    /// The words for `count` conflicts, at the line of the first.
    static func conflict(_ count: Int) -> String {
        count == 1
            ? "a sample conflicts with a stored one (the same monitor, agent and time, other content): the stored one is kept"
            : "\(count) samples conflict with stored ones (the same monitor, agent and time, other content): the stored ones are kept; "
                + "this line is the first"
    }

    /// Counts a stored batch of `samples` samples added from `lines`.
    private func count(_ outcome: BatchOutcome, of samples: Int, lines: [Int]) {
        stored += samples - outcome.skipped
        duplicates += outcome.duplicates.count
        conflicts += outcome.conflicts.count
        for position in outcome.conflicts where position < lines.count { conflictLines.append(lines[position]) }
    }

    /// Writes kept records downstream (unless nobody reads any more) and empties `records`.
    private func passOnKept(_ records: inout [UInt8]) throws {
        do {
            if passThrough, !records.isEmpty {
                records.removeLast()  // the writer adds the last newline itself
                try output.write(records[...])
            }
            try output.flush()
        } catch is BrokenPipe {
            // Nobody reads what we pass on any more; storing is still the job.
            passThrough = false
        }
        records.removeAll(keepingCapacity: true)
    }
}

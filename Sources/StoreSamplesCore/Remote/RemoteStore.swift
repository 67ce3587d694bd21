import VitalsKit

#if canImport(Glibc)
    import Glibc
#endif

/// A store that only writes: an agent's samples go to a server's `POST /api/samples`
/// (`--db https://...`; store-samples(1) REMOTE STORE), through a spool on disk.
///
/// Each batch the ingester commits is written to the spool and synced before anything is sent,
/// so the ingester passes its records on only once they are safe on disk; a batch is cut at
/// `RemoteSender.maxBodyBytes` as it fills. The spool's batches, those left by earlier runs first,
/// are sent as the input is read (`RemoteSender`) and, at the end of the input, for as long as
/// `--wait` allows failures (`finish`). The server numbers the monitors, so `add` gives no id: the
/// records go on as they came.
final class RemoteSampleWriter: SampleWriter {
    /// How long the end of a run keeps trying a server that fails, by default (`--wait`), ms.
    static let defaultWaitMs: Int64 = 10_000
    /// The spool's limit by default (`--spool-size`): some days of a few hundred monitors a minute.
    static let defaultSpoolBytes = 512 << 20
    /// How far below the largest request body a batch counts as full (`batchIsFull`): the ingester
    /// then commits it, so what it keeps to pass on is one request's worth, not 20,000 samples (a
    /// 100,000-sample input passed on peaked at 63 MB of resident memory with 20,000-sample
    /// batches, at 31 MB with these; the runtime and libraries alone take 26 MB).
    static let fullMarginBytes = 64 << 10
    /// How long a commit may spend sending what is due, ms: a stream's round goes on after that,
    /// and the rest is sent at the next commit or the end.
    static let commitBudgetMs: Int64 = 1_000

    let location: RemoteLocation
    let spool: Spool
    let sender: RemoteSender
    private let diagnostics: Diagnostics
    /// The lines of the open batch, each ending with a line feed.
    private var open: [UInt8] = []
    private var openLines = 0
    /// Records added, for pumping the sender every 64.
    private var added = 0

    /// An agent runs under a 32 MB goal (scripts/bench/agents). This has glibc map every buffer of
    /// 128 KiB or more alone and give it back when it is freed. Left to itself, glibc raises that
    /// threshold to the size of the first such buffer freed, and keeps later ones in a heap it seldom
    /// shrinks: an agent catching up 10 batches peaked at 32.2-32.3 MB that way, 31.8-32.0 MB this
    /// way (the runtime and libraries alone take 26 MB).
    ///
    /// C interop: mallopt(3) is looked up at run time, since <malloc.h> is not in Swift's Glibc
    /// module; where there is no glibc, nothing is done.
    static func mapLargeBuffersAlone() {
        #if canImport(Glibc)
            let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD, in glibc's <malloc.h>
            guard let symbol = dlsym(nil, "mallopt") else { return }  // nil: RTLD_DEFAULT
            let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
            _ = mallopt(mmapThreshold, 128 << 10)
        #endif
    }

    /// Opens the spool for `location` in the folder `spoolFolder` (see `Spool`), and a sender.
    init(location: RemoteLocation, spoolFolder: String, maxBytes: Int64, maxAgeMs: Int64, now: Int64, diagnostics: Diagnostics) throws {
        self.location = location
        self.diagnostics = diagnostics
        spool = try Spool(
            base: spoolFolder, name: location.spoolName, maxBytes: maxBytes, maxAgeMs: maxAgeMs, now: now, diagnostics: diagnostics)
        sender = RemoteSender(location: location, spool: spool, diagnostics: diagnostics)
        open.reserveCapacity(RemoteSender.maxBodyBytes)
    }

    @discardableResult
    func add(_ sample: StorableSample) throws -> Int64? {
        try append(sample.line)
        return nil
    }

    @discardableResult
    func note(_ monitor: StorableSample) throws -> Int64? {
        try append(monitor.line)
        return nil
    }

    @discardableResult
    func commitBatch(retention: Retention, now: Int64) throws -> BatchOutcome {
        try spoolOpenBatch()
        sender.deliverSome(budgetMs: RemoteSampleWriter.commitBudgetMs)
        return BatchOutcome()
    }

    func submitBatch(retention: Retention, now: Int64) throws {
        try spoolOpenBatch()
        sender.pump()
    }

    /// Spooled is stored, as far as the ingester is concerned: the request on the wire is let finish
    /// (an input that pauses next would leave it stalled), and the outcome is the server's to tell.
    @discardableResult
    func awaitSubmitted() throws -> BatchOutcome {
        sender.settle()
        return BatchOutcome()
    }

    var batchIsFull: Bool { open.count >= RemoteSender.maxBodyBytes - RemoteSampleWriter.fullMarginBytes }

    func abortBatch() {
        open.removeAll(keepingCapacity: true)
        openLines = 0
    }

    /// Adds a record's line to the open batch, spooling the batch first when the line would take it
    /// past the largest request body.
    private func append<Line: Collection<UInt8>>(_ line: Line) throws {
        if openLines > 0, open.count + line.count + 1 > RemoteSender.maxBodyBytes { try spoolOpenBatch() }
        open.append(contentsOf: line)
        open.append(0x0A)
        openLines += 1
        added += 1
        if added & 63 == 0 { sender.pump() }
    }

    /// Writes the open batch into the spool (durably), if it has a line; the open batch is empty after,
    /// whether or not the write succeeded (a failed one is neither spooled nor passed on).
    private func spoolOpenBatch() throws {
        guard openLines > 0 else { return }
        defer { abortBatch() }
        try spool.add(open, lines: openLines)
    }

    /// Ends a run: sends the batches waiting until none is left or failures have lasted `waitMs`, says
    /// what is left and why, and gives the exit status: 0 when every batch was delivered, 75
    /// (deferred) when some wait in the spool for a later run, 2 when a sample was lost (dropped by a
    /// limit), a line refused, or sending stopped for a reason a person must see to.
    func finish(waitMs: Int64) -> ExitStatus {
        sender.drain(waitMs: waitMs)
        if sender.refusedLines > RemoteSender.refusalsShown {
            diagnostics.note(
                "\(Spool.count(sender.refusedLines, "line", "lines")) refused in all, each kept in \(spool.refusedPath) with its reason")
        }
        var status = ExitStatus.success
        if sender.halted != nil || sender.refusedLines > 0 || spool.droppedSamples > 0 { status = .failure }
        let waiting = spool.entries
        guard !waiting.isEmpty else { return status }
        let samples = waiting.reduce(0) { $0 + spool.lines(of: $1) }
        let why: String
        if sender.busy {
            why = "another store-samples run holds \(spool.path)/.lock and sends them"
        } else if sender.halted != nil {
            why = "sending stopped (see above)"
        } else if Signals.stopRequested {
            why = "stopped by a signal"
        } else if let problem = sender.problem {
            let asked = sender.askedToWaitMs.map {
                " (the server asked to wait \(DurationText.describe(milliseconds: $0)), longer than --wait allows)"
            }
            why = problem + (asked ?? " (still failing after --wait \(DefaultText.duration(milliseconds: waitMs)))")
        } else {
            why = "not sent yet"
        }
        diagnostics.note(
            "\(Spool.count(samples, "sample", "samples")) in \(Spool.count(waiting.count, "batch", "batches")) wait in \(spool.path), "
                + "not delivered to \(location.display): \(why); the next run sends them first")
        return status.worst(.deferred)
    }
}

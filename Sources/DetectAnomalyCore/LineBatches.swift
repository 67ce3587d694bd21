import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// detect-anomaly runs as two stages on two threads: a reading thread reads the inputs, checks
// each line (JSON, the sample spine) and finds what the judge needs; the judging thread judges,
// writes the anomaly object into the line and writes it out. Reading and checking take about
// 57% of the instructions per bench line, judging and writing the rest plus the system's time
// for the output, so on two cores the two threads are busy about evenly. The stages pass lines in batches of a few thousand, three batches
// in all, so memory stays bounded and the order of lines and diagnostics is the input's.

/// What the reading thread found in one sample line: all the judging thread reads of it.
struct SampleFacts {
    /// The monitor id's bytes in the batch (the line's own bytes, or the decoded id after the
    /// line when it is written with escapes).
    var monitorStart = 0
    var monitorCount = 0
    /// Whether the sample is judged: the field holds a finite number and status is up or degraded.
    var judged = false
    /// The judged field's value (when `judged`).
    var value = 0.0
    /// Whether the sample is simulated (when `judged`).
    var simulated = false
    /// `at`, milliseconds since the epoch.
    var atMs: Int64 = 0
    /// `status`.
    var status = SampleStatus.unknown
    /// Where a promotion or the anomaly object rewrites the line (byte offsets in the line).
    var statusField = FieldRange()
    var reasonField: FieldRange?
    var messageField: FieldRange?
    var anomalyField: FieldRange?
}

/// One line of a batch, or one input's problem, in input order.
struct BatchEntry {
    enum Kind: UInt8 {
        /// A valid sample: `facts` hold it.
        case sample
        /// A record of another type: passed on as it came.
        case otherRecord
        /// A blank line: ignored.
        case blank
        /// A line that is not a usable sample: `problems[note]` says why.
        case problem
        /// A file that could not be opened or read: `messages[note]`.
        case inputError
    }

    var kind: Kind
    /// The line's bytes in the batch.
    var start: Int
    var count: Int
    /// The line's number in its input, for diagnostics.
    var lineNumber: Int
    /// An index into `problems` or `messages`.
    var note: Int
    var facts: SampleFacts
}

/// Lines of one input (and the problems of inputs that could not be read), handed from the
/// reading thread to the judging thread and back, emptied, for reuse.
final class LineBatch {
    /// A batch is handed on once it holds this many bytes or entries, or the input pauses.
    static let byteLimit = 256 * 1024
    static let entryLimit = 2048
    /// A batch that grew past this for a long line gives its memory back when reused.
    private static let keptCapacity = 1 << 20
    /// The bytes a batch starts with: room for a full batch and a last line of up to 64 KiB.
    private static let initialCapacity = byteLimit + 64 * 1024

    /// The input the lines came from.
    var source = ""
    // Touched for every line, by one thread at a time (the handoff's lock orders them):
    // exempt from dynamic exclusivity checks, 5.0% of detect-anomaly's instructions on 50,000
    // bench lines (callgrind).
    @exclusivity(unchecked) var bytes = LineBuffer(capacity: LineBatch.initialCapacity)
    @exclusivity(unchecked) var entries: [BatchEntry] = []
    var problems: [SampleProblem] = []
    var messages: [String] = []

    init() { entries.reserveCapacity(Self.entryLimit) }

    var isFull: Bool { bytes.count >= Self.byteLimit || entries.count >= Self.entryLimit }
    var isEmpty: Bool { entries.isEmpty }

    /// The bytes of a range of the batch, valid until the batch is emptied or grows.
    @inline(__always)
    func bytes(_ start: Int, _ count: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: bytes.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + start, count: count)
    }

    /// Adds a line that is not a usable sample (its bytes from `start`, none for a line too long to keep).
    func add(_ problem: SampleProblem, lineNumber: Int, start: Int = 0, count: Int = 0) {
        problems.append(problem)
        entries.append(
            BatchEntry(
                kind: .problem, start: start, count: count, lineNumber: lineNumber, note: problems.count - 1,
                facts: SampleFacts()))
    }

    /// Adds an input's problem (a file that could not be opened or read).
    func add(inputError message: String) {
        messages.append(message)
        entries.append(BatchEntry(kind: .inputError, start: 0, count: 0, lineNumber: 0, note: messages.count - 1, facts: SampleFacts()))
    }

    /// Empties the batch for reuse.
    func removeAll() {
        if bytes.capacity > Self.keptCapacity {
            bytes = LineBuffer(capacity: Self.initialCapacity)
        } else {
            bytes.removeAll()
        }
        entries.removeAll(keepingCapacity: true)
        problems.removeAll()
        messages.removeAll()
    }
}

/// The two stages' meeting point: filled batches go from the reader to the judge in order,
/// emptied ones come back. A fixed number of batches exists, so a reader ahead of the judge
/// waits for one to come back. The judge waits in `poll(2)` on a pipe the reader writes a byte
/// to with each batch, and on the signal handler's wake pipe, so a stop signal wakes it at
/// once whichever thread the signal was delivered to, and an idle judge costs nothing.
final class BatchHandoff: @unchecked Sendable {
    private let condition = NSCondition()
    private var ready: [LineBatch] = []
    private var spare: [LineBatch]
    private var finished = false
    private var cancelled = false
    /// Readable when a batch was published or the reader finished (nonblocking ends).
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(batches: Int = 3) {
        spare = (0..<batches).map { _ in LineBatch() }
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    // MARK: The reading thread

    /// An empty batch to fill; waits while all are in use. Nil once the judge has stopped.
    func emptyBatch() -> LineBatch? {
        condition.lock()
        defer { condition.unlock() }
        while spare.isEmpty, !cancelled { condition.wait() }
        return cancelled ? nil : spare.removeLast()
    }

    /// Hands a filled batch to the judge.
    func publish(_ batch: LineBatch) {
        condition.lock()
        ready.append(batch)
        condition.unlock()
        wakeJudge()
    }

    /// Says that no batch will follow.
    func finish() {
        condition.lock()
        finished = true
        condition.unlock()
        wakeJudge()
    }

    private func wakeJudge() {
        // A full pipe is readable already: nothing is lost when the write fails.
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: The judging thread

    /// The next filled batch, in order; nil at the end of the input, or once a stop signal
    /// arrived. `beforeWaiting` runs once before the judge would wait (it flushes the output,
    /// so nothing judged waits on input still to come), and returns in how many milliseconds it
    /// wants to run again if nothing arrived meanwhile (a checkpoint due then), or nil.
    func next(beforeWaiting: () throws -> Int64?) rethrows -> LineBatch? {
        var called = false
        /// When `beforeWaiting` asked to be called again: in this many milliseconds (nil: not).
        var again: Int64?
        while true {
            condition.lock()
            if !ready.isEmpty {
                let batch = ready.removeFirst()
                condition.unlock()
                return batch
            }
            let done = finished
            condition.unlock()
            if done || Signals.stopRequested { return nil }
            if !called {
                called = true
                again = try beforeWaiting()
                continue
            }
            var fds = [
                pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0),
            ]
            // Without a pipe (no descriptor was left to make one), look again every 10 ms.
            let timeout = wakeRead >= 0 ? again.map { Int32(clamping: max(0, $0)) } ?? -1 : 10
            if poll(&fds, Signals.wakeFD >= 0 ? 2 : 1, timeout) == 0, again != nil { called = false }
            var scratch = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
            while withUnsafeMutableBytes(of: &scratch, { read(wakeRead, $0.baseAddress, $0.count) }) > 0 {}
        }
    }

    /// Gives a judged batch back to the reader.
    func recycle(_ batch: LineBatch) {
        batch.removeAll()
        condition.lock()
        spare.append(batch)
        condition.signal()
        condition.unlock()
    }

    /// Tells the reader to stop (the judge stopped early: a signal, a closed output).
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }
}

/// The reading stage: reads the inputs in order on its own thread, checks each line and
/// finds its `SampleFacts`, and hands the lines on in batches.
final class BatchReader: @unchecked Sendable {
    private let inputs: Inputs
    private let handoff: BatchHandoff
    // Used only on the reading thread, for every line: exempt from dynamic exclusivity checks,
    // 1.3% of detect-anomaly's instructions on 50,000 bench lines (callgrind).
    @exclusivity(unchecked) private var preparer: SamplePreparer
    @exclusivity(unchecked) private var batch: LineBatch?
    /// The input being read, named by the batches of its lines.
    private var source = ""

    private struct Cancelled: Error {}

    init(inputs: Inputs, handoff: BatchHandoff, settings: DetectorSettings) {
        self.inputs = inputs
        self.handoff = handoff
        preparer = SamplePreparer(field: settings.field)
    }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in run() }
        // Deeply nested JSON recurses once per level (at most 512 levels).
        thread.stackSize = 4 << 20
        thread.start()
    }

    private func run() {
        defer { handoff.finish() }
        do {
            let report: (String) throws -> Void = { [self] message in try current().add(inputError: message) }
            try inputs.forEach(report: report) { reader in
                source = reader.source
                if let batch { batch.source = source }
                // When the input pauses, what was read goes to the judge at once.
                reader.onIdle = { [self] in publish() }
                reader.idleAfterMs = 0
                while !Signals.stopRequested {
                    guard let event = reader.next() else { break }
                    let batch = try current()
                    switch event {
                    case .tooLong(let length):
                        batch.add(.lineTooLong(bytes: length), lineNumber: reader.lineNumber)
                    case .line(let line):
                        preparer.add(line, lineNumber: reader.lineNumber, to: batch)
                    }
                    if batch.isFull { publish() }
                }
                reader.onIdle = nil
                publish()
            }
        } catch {
            // The judge stopped; nothing more is wanted.
            return
        }
        publish()
    }

    /// The batch being filled, taking an empty one when there is none.
    private func current() throws -> LineBatch {
        if let batch { return batch }
        guard let fresh = handoff.emptyBatch() else { throw Cancelled() }
        fresh.source = source
        batch = fresh
        return fresh
    }

    /// Hands on the batch being filled, when it holds anything.
    private func publish() {
        guard let filled = batch, !filled.isEmpty else { return }
        batch = nil
        handoff.publish(filled)
    }
}

/// Reads one line on the reading thread: copies it into the batch, checks it and finds its
/// `SampleFacts` in the spine reader's one pass.
struct SamplePreparer {
    /// The one sample reader, kept from line to line (its field array is reused).
    private var reader = SampleLine()
    /// The judged field's name, when it is not `latency_ms` (a spine field the reader reads).
    private let valueKey: [UInt8]?

    init(field: String) {
        valueKey = field == "latency_ms" ? nil : Array(field.utf8)
    }

    mutating func add(_ source: LineBytes, lineNumber: Int, to batch: LineBatch) {
        let start = batch.bytes.count
        // C interop: one memcpy of the line into the batch's buffer.
        source.withUnsafeBufferPointer { if let base = $0.baseAddress { batch.bytes.append(base, $0.count) } }
        let line = batch.bytes(start, source.count)
        var entry = BatchEntry(kind: .sample, start: start, count: source.count, lineNumber: lineNumber, note: 0, facts: SampleFacts())
        var own = AnomalyFields()
        let kind: SampleLine.Kind
        if let valueKey {
            kind = valueKey.withUnsafeBufferPointer { key in
                own.valueKey = key
                defer { own.valueKey = nil }
                return reader.read(line, extra: &own)
            }
        } else {
            kind = reader.read(line, extra: &own)
        }
        switch kind {
        case .sample:
            break
        case .otherRecord:
            entry.kind = .otherRecord
            batch.entries.append(entry)
            return
        case .blank:
            entry.kind = .blank
            batch.entries.append(entry)
            return
        case .problem(let problem):
            batch.add(problem, lineNumber: lineNumber, start: start, count: source.count)
            return
        }
        var facts = SampleFacts()
        let valueField = valueKey == nil ? reader.latencyField : own.value
        if let valueField, reader.status == .up || reader.status == .degraded,
            let value = NumberText.parse(reader.raw(valueField))
        {
            facts.judged = true
            facts.value = value
            facts.simulated = own.isSimulated(line)
        }
        facts.atMs = reader.atMs
        facts.status = reader.status
        facts.statusField = reader.statusField
        facts.reasonField = reader.reasonField
        facts.messageField = own.message
        facts.anomalyField = own.anomaly
        if reader.monitorIsPlain {
            facts.monitorStart = start + reader.monitorField.valueStart + 1
            facts.monitorCount = reader.monitorField.valueEnd - reader.monitorField.valueStart - 2
        } else {
            // Decoded after the line (the batch's memory may move; offsets stay true).
            let decoded = reader.withMonitor { Array($0) }
            facts.monitorStart = batch.bytes.count
            facts.monitorCount = decoded.count
            batch.bytes.append(decoded)
        }
        entry.facts = facts
        batch.entries.append(entry)
    }
}

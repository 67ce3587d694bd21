import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a follower reads from a store, in storage order: each stored batch (one write
/// transaction: an agent's POST, an ingest's commit) from its start to its end, its samples in
/// between, each with the integer id of its monitor.
enum FollowEvent {
    /// A batch begins (`number`: its batch number, the same each time the batch is read).
    case batchStart(number: UInt64)
    /// One of its samples: the line as stored, and its monitor's integer id (nil when the store
    /// gives none).
    case sample(record: LineBytes, monitorID: Int64?)
    /// The batch ended, with `samples` samples; the feed's `position` is now past it.
    case batchEnd(number: UInt64, samples: Int)
}

/// A store read by `follow`: the batches stored past a position, in the order they were stored.
/// SQLite numbers its samples in commit order (`SQLiteSampleStore+Follow`); ClickHouse has no such
/// order, so batches are read by when their writers sent them, a while after (`--lag`), and the
/// recent ones are remembered (`ClickHouseSampleStore+Follow`).
protocol FollowFeed: AnyObject {
    /// Where the feed stands: past the last batch it ended (`FollowEvent.batchEnd`), or past
    /// everything a whole pass read.
    var position: FollowPosition { get }
    /// Whether a pass may find something new (cheap, run every poll; true when it cannot tell).
    func mayHaveNews(now: Int64) throws -> Bool
    /// Reads every batch stored past `position` as of `now`, visiting each event in order, until
    /// `visit` returns false (a stop: the batch under way is read again by the next pass or run).
    /// Returns whether the pass read everything.
    func pass(now: Int64, _ visit: (FollowEvent) throws -> Bool) throws -> Bool
}

/// `store-samples follow`: writes the samples a store receives, batch by batch, each between a
/// `round_start` and a `round_end` (so a stored batch stays one round downstream), from a
/// durable cursor; a `tick` when nothing was written for a while. See store-samples(1), FOLLOW.
final class Follower {
    /// What the loop is given: where and how to read, and how often.
    struct Settings {
        /// Opens the feed at the cursor's position, else where `--from` says, or at the store's start
        /// when it appeared after the follower began (`appeared`: all of it was stored since); throws
        /// `StoreMissing` while there is no store to read yet.
        var openFeed: (_ start: FollowPosition?, _ appeared: Bool) throws -> FollowFeed
        /// The cursor file, if any.
        var cursor: FollowCursor?
        /// Read once, write what is new, save the cursor and end.
        var once: Bool
        /// Write a tick after this long without writing anything (0: never).
        var tickMs: Int64
        /// How often the store is asked whether something is new.
        var pollMs: Int64
        /// The time taken as now (the clock, or a fixed `--now`).
        var clock: () -> Int64
    }

    private let settings: Settings
    private let output: RecordWriter
    /// The descriptor `output` writes to, watched while waiting for the reader going away.
    private let outputFD: Int32
    private let diagnostics: Diagnostics
    /// The feed, once the store could be opened.
    private var feed: FollowFeed?
    /// The position saved last (nil: none saved by this run).
    private var saved: FollowPosition?
    /// When (monotonic ms) a record was last written, for ticks.
    private var lastWriteMs = Clock.monotonicMilliseconds()
    /// The line being built for a sample (reused).
    private var line: [UInt8] = []
    /// The one reader of the stored lines, to see whether one has its own `monitor_id`.
    private var reader = SampleLine()
    /// The batch being written: its number, when its start was written, and its samples so far.
    private var open: (number: UInt64, startedAt: Int64, samples: Int)?
    /// Lines written since the cursor was saved.
    private var unsaved = 0
    /// Whether the store's absence was said already.
    private var saidWaiting = false

    /// How often a SQLite store's generation is read: a sample is written at most this long after
    /// its commit (measured: see store-samples(1), FOLLOW).
    static let sqlitePollMs: Int64 = 100
    /// How often a ClickHouse store's parts are listed (each poll is a query to every shard).
    static let clickHousePollMs: Int64 = 500

    /// How many lines may be written before the cursor is saved within a pass (at a batch's end):
    /// what a kill -9 during a long catch-up can make a follower write again.
    static let saveEveryLines = 10_000

    init(_ settings: Settings, output: RecordWriter, outputFD: Int32, diagnostics: Diagnostics) {
        self.settings = settings
        self.output = output
        self.outputFD = outputFD
        self.diagnostics = diagnostics
    }

    /// Follows until a stop signal, the reader downstream going away, or, with `once`, one pass.
    func run() throws {
        let start = try settings.cursor?.load()
        do {
            while !Signals.stopRequested {
                if feed == nil { try openFeed(start) }
                if let feed {
                    let now = settings.clock()
                    if try feed.mayHaveNews(now: now) {
                        let whole = try feed.pass(now: now) { event in try self.take(event) }
                        if whole || unsaved >= Follower.saveEveryLines { try save(feed.position) }
                    }
                }
                if settings.once { break }
                try tickIfDue()
                // The reader went away: as for a broken pipe, the cursor stays where it was saved.
                guard wait() else { return }
            }
            if settings.once, feed != nil, settings.tickMs > 0 { try writeTick() }
            if let feed { try save(feed.position) }
        } catch is BrokenPipe {
            // Nobody reads any more: what was written last may not have been read, so the cursor
            // stays where it was saved.
            return
        }
    }

    /// Opens the feed at `start` (the cursor's position, else where --from says); while the store is
    /// missing, says so once (a long-lived follower waits for it) or, with `once`, fails.
    private func openFeed(_ start: FollowPosition?) throws {
        do {
            feed = try settings.openFeed(start, saidWaiting)
            if saidWaiting { diagnostics.note("the store is there now; following it") }
        } catch let missing as StoreMissing {
            if settings.once { throw ToolError(missing.description) }
            if !saidWaiting { diagnostics.note("\(missing.description); waiting for it") }
            saidWaiting = true
        }
    }

    /// Writes one event; returns false once a stop was asked for (the batch under way is left
    /// without its end, and read again by the next run).
    private func take(_ event: FollowEvent) throws -> Bool {
        switch event {
        case .batchStart(let number):
            let now = settings.clock()
            open = (number, now, 0)
            var mark = JSONObjectBuilder(capacity: 128)
            mark.string("type", RoundMark.startType)
            mark.string("round", FollowCursor.hex(number))
            mark.string("tool", "store-samples")
            mark.string("at", Timestamp.format(milliseconds: now))
            try output.write(mark.finish())
        case .sample(let record, let monitorID):
            line.removeAll(keepingCapacity: true)
            if let monitorID {
                var own = StoredFields()
                _ = reader.read(record, extra: &own)
                Ingester.appendPassingOn(record, monitorID: monitorID, hasMonitorID: own.monitorID != nil, to: &line)
                try output.write(line)
            } else {
                try output.write(record)
            }
            open?.samples += 1
        case .batchEnd(let number, let samples):
            var mark = JSONObjectBuilder(capacity: 192)
            mark.string("type", RoundMark.endType)
            mark.string("round", FollowCursor.hex(number))
            mark.string("tool", "store-samples")
            mark.string("at", Timestamp.format(milliseconds: settings.clock()))
            mark.string("started_at", Timestamp.format(milliseconds: open?.startedAt ?? settings.clock()))
            mark.int("samples", samples)
            try output.write(mark.finish())
            try output.flush()
            unsaved += samples + 2
            open = nil
            lastWriteMs = Clock.monotonicMilliseconds()
            if unsaved >= Follower.saveEveryLines, let feed { try save(feed.position) }
        }
        return !Signals.stopRequested
    }

    /// Saves `position` in the cursor file when it moved (everything it covers is flushed by now).
    private func save(_ position: FollowPosition) throws {
        guard let cursor = settings.cursor, position != saved else { return }
        try output.flush()
        try cursor.save(position, now: settings.clock())
        saved = position
        unsaved = 0
    }

    /// Writes a tick when nothing was written for `tickMs`.
    private func tickIfDue() throws {
        guard settings.tickMs > 0, Clock.monotonicMilliseconds() - lastWriteMs >= settings.tickMs else { return }
        try writeTick()
    }

    /// `{"type":"tick","at":NOW,"tool":"store-samples"}`: time passes, though nothing was stored.
    private func writeTick() throws {
        var tick = JSONObjectBuilder(capacity: 96)
        tick.string("type", "tick")
        tick.string("at", Timestamp.format(milliseconds: settings.clock()))
        tick.string("tool", "store-samples")
        try output.write(tick.finish())
        try output.flush()
        lastWriteMs = Clock.monotonicMilliseconds()
    }

    /// Waits for the next poll or tick, or a stop signal; returns false when the reader downstream
    /// went away meanwhile (a pipe whose reading end closed reports an error), so an idle follower
    /// ends with its pipeline rather than at its next write.
    private func wait() -> Bool {
        var timeout = settings.pollMs
        if settings.tickMs > 0 { timeout = min(timeout, max(0, lastWriteMs + settings.tickMs - Clock.monotonicMilliseconds())) }
        var fds = [pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0), pollfd(fd: outputFD, events: 0, revents: 0)]
        _ = poll(&fds, nfds_t(fds.count), Int32(clamping: timeout))
        return fds[1].revents & Int16(POLLERR) == 0
    }
}

import VitalsKit

/// One run of notify: reads samples, closes rounds (at the probes' round marks, else by
/// --group-wait), hands decisions to the dispatcher, writes the records (and passes the round
/// marks on after them) and keeps the state.
final class NotifyRun {
    let decider: Decider
    let dispatcher: Dispatcher
    let box: StateBox
    let stateFile: NotifyStateFile?
    let output: RecordWriter
    let diagnostics: Diagnostics
    let dryRun: Bool
    /// Pending deliveries for channels not configured in this run: kept as they are.
    var orphans: [PendingDelivery] = []
    /// The channels' escalations and fallbacks.
    var routes = ChannelRoutes()
    /// The windows added from scripts (`notify mute add`), read again whenever the file changes.
    var muteStore: MuteStore? {
        didSet { refreshMutes() }
    }
    private var muteStamp: (Int, Int)?

    private(set) var samples = 0
    private(set) var notifications = 0
    private(set) var delivered = 0
    private(set) var failedDeliveries = 0
    private(set) var pendingAtEnd = 0
    /// A write to standard output failed (a broken pipe, a full disk): raised at the end.
    private(set) var writeProblem: Error?

    /// Notifications decided and not yet written, with their jobs and dry-run channels.
    private var unwritten: [(notification: Notification, jobs: [Job], dryRunChannels: [String])] = []
    private var resolvedJobs: [Job] = []
    /// A quiet round's changes not yet saved (see `deliverAndWrite`), and when the state was last
    /// saved (monotonic ms).
    private var stateDirty = false
    private var lastSaveMs: Int64 = 0
    /// How often a stream of quiet rounds saves the state at most: 1 s. Writing the state of 1,000
    /// monitors seen from 10 places (2.6 MB) costs about 90 ms of JSONEncoder here, which was 70% of
    /// the server's CPU when its follower's notify saved after every stored batch.
    static let quietSaveEveryMs: Int64 = 1_000
    /// The one sample reader, kept from line to line.
    private var sampleReader = SampleLine()
    /// Where rounds end.
    private var rounds = Rounds()

    init(
        decider: Decider, dispatcher: Dispatcher, box: StateBox, stateFile: NotifyStateFile?, output: RecordWriter,
        diagnostics: Diagnostics, dryRun: Bool
    ) {
        self.decider = decider
        self.dispatcher = dispatcher
        self.box = box
        self.stateFile = stateFile
        self.output = output
        self.diagnostics = diagnostics
        self.dryRun = dryRun
    }

    /// Takes up a pending delivery of an earlier run.
    func resume(_ pending: PendingDelivery) {
        _ = dispatcher.enqueue(pending: pending)
    }

    /// Reads one input to its end.
    func read(_ reader: LineReader) {
        while let event = reader.next() {
            if writeProblem != nil { return }
            switch event {
            case .tooLong(let length):
                diagnostics.error(SampleProblem.lineTooLong(bytes: length).message, source: reader.source, line: reader.lineNumber)
            case .line(let bytes):
                var own = NotifyFields()
                switch sampleReader.read(bytes, extra: &own) {
                case .sample:
                    samples += 1
                    if samples & 255 == 0 { refreshMutes() }
                    let decisions = decider.add(SampleEvent(sampleReader, own, line: bytes), roundByTime: rounds.byTime)
                    if !decider.cycles.isEmpty {
                        for cycle in decider.cycles {
                            diagnostics.error(
                                "depends_on makes a cycle (\(cycle.joined(separator: " -> "))); its links are set aside, so it holds no failure back",
                                source: reader.source, line: reader.lineNumber)
                        }
                        decider.cycles.removeAll()
                    }
                    if !decisions.isEmpty { handle(decisions) }
                case .otherRecord:
                    if let mark = RoundMark(sampleReader) {
                        take(mark, line: bytes)
                    } else if let type = sampleReader.field(named: "type"), sampleReader.text(type) == "tick",
                        let field = sampleReader.field(named: "at"), let at = sampleReader.text(field).flatMap(Timestamp.parse)
                    {
                        // Time passing with no samples (store-samples follow): silence is judged by it.
                        if !rounds.marked { handle(decider.advanceClock(to: at), save: true) }
                    }
                case .blank:
                    continue
                case .problem(let problem):
                    diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
                }
            }
        }
    }

    /// A round mark: a `round_start` ends a round of unmarked samples open before it and is
    /// passed on; a `round_end` that leaves no marked round open ends the round, and is passed
    /// on after the round's notifications.
    private func take(_ mark: RoundMark, line: LineBytes) {
        refreshMutes()
        switch mark {
        case .start(let round):
            if rounds.begin(round), decider.roundOpen { handle(decider.closeRound(), save: true) }
        case .end(let round):
            if rounds.end(round) { handle(decider.closeRound(), save: true) }
        }
        passOn(line)
    }

    /// Writes a record notify passes on (a round mark) after what was written before it.
    private func passOn(_ line: LineBytes) {
        guard writeProblem == nil else { return }
        do {
            try output.write(line)
            try output.flush()
        } catch {
            writeProblem = error
        }
    }

    /// The input paused for a round's length: without an open marked round (whose end mark
    /// ends it, however long its slowest probe takes), close the round, deliver, save, and
    /// start a fresh delivery budget for the next burst.
    func idle() {
        if rounds.byTime {
            refreshMutes()
            dispatcher.resetBudget()
            handle(decider.closeRound(), save: true)
        }
        saveIfDirty()
    }

    /// Saves quiet rounds' changes that were put off, once the input pauses or ends.
    private func saveIfDirty() {
        guard stateDirty else { return }
        do {
            try save()
        } catch {
            if writeProblem == nil { writeProblem = error }
        }
    }

    /// One input (a file, standard input) ended: a marked round still open ends with it.
    func inputEnded() {
        if rounds.inputEnded() { handle(decider.closeRound(), save: true) }
    }

    /// The input ended: close the last round (monitors still waiting for their places told as they
    /// stand), deliver, save.
    func finish() throws {
        refreshMutes()
        decider.endOfInput()
        handle(decider.closeRound(), save: true)
        saveIfDirty()
        if let writeProblem { throw writeProblem }
        pendingAtEnd = dispatcher.unresolved.count
    }

    /// Reads the windows added from scripts again if their file changed since it was last read. A
    /// file that cannot be read is reported once and the windows read before are kept.
    private func refreshMutes() {
        guard let muteStore else { return }
        let stamp = muteStore.stamp()
        if let stamp, let known = muteStamp, stamp == known { return }
        if stamp == nil, muteStamp == nil, !decider.storedMutes.isEmpty { return }
        muteStamp = stamp
        do {
            decider.storedMutes = try muteStore.read().mutes.map(\.window)
        } catch {
            diagnostics.error("\(error)")
        }
    }

    /// Delivers a round's decisions and writes their records. The state is saved at once when
    /// something was decided or delivered. A quiet round (closed with nothing to tell, asked to
    /// save) is saved at most every `quietSaveEveryMs` while input keeps coming, and otherwise
    /// when the input pauses (`idle`) or ends: a backlog of rounds (a follower catching up, a
    /// replay) does not write the whole state after each of them. What a kill -9 can lose is
    /// then at most a second of quiet rounds, which change no notification already decided.
    private func handle(_ decisions: [Decision], save: Bool = false) {
        for decision in decisions {
            notifications += 1
            var jobs: [Job] = []
            var dryRunChannels: [String] = []
            var channels = decision.channels
            if decision.notification.event == .recovered {
                // A fallback that was told of a failure is told of its recovery.
                let recovered = Set(decision.notification.monitors.map(\.monitor))
                for (channel, told) in box.state.fallbackTold ?? [:] where !told.isDisjoint(with: recovered) {
                    channels.append(channel)
                    let left = told.subtracting(recovered)
                    box.state.fallbackTold![channel] = left.isEmpty ? nil : left
                }
            }
            for channel in channels {
                if channel == NotifyCommand.stdoutChannel {
                    decider.accepted(decision.notification, by: channel)
                } else if dryRun {
                    decider.accepted(decision.notification, by: channel)
                    dryRunChannels.append(channel)
                } else {
                    jobs.append(dispatcher.enqueue(decision.notification, channel: channel))
                }
            }
            unwritten.append((decision.notification, jobs, dryRunChannels))
        }
        do {
            try deliverAndWrite(save: save || !decisions.isEmpty, deferrable: decisions.isEmpty)
        } catch {
            if writeProblem == nil { writeProblem = error }
        }
    }

    /// Runs the dispatcher, writes the records of what was decided or attempted, saves the state
    /// (a `deferrable` save only once `quietSaveEveryMs` passed since the last; else it is owed).
    func deliverAndWrite(save mustSave: Bool = true, deferrable: Bool = false) throws {
        var attempted = false
        if !dryRun {
            dispatcher.run { job in
                if job.result == .delivered {
                    decider.accepted(job.notification, by: job.channel)
                    delivered += 1
                    if job.fallbackFor != nil, job.notification.isBad, !job.notification.event.isPlace {
                        box.state.fallbackTold = box.state.fallbackTold ?? [:]
                        box.state.fallbackTold![job.channel, default: []].formUnion(job.notification.monitors.map(\.monitor))
                    }
                } else {
                    failedDeliveries += 1
                    diagnostics.error("\(job.channel): \(job.notification.id) failed: \(job.lastError ?? "refused")")
                    for fallback in routes.fallbacks[job.channel] ?? [] {
                        // Failed for good: the channels it names as its fallback are given it.
                        let extra = dispatcher.enqueue(job.notification, channel: fallback)
                        extra.fallbackFor = job.channel
                        if let index = unwritten.firstIndex(where: { $0.notification.id == job.notification.id }) {
                            unwritten[index].jobs.append(extra)
                        }
                    }
                }
                resolvedJobs.append(job)
            }
            attempted = !resolvedJobs.isEmpty || dispatcher.unresolved.contains { $0.attempts > $0.attemptsReported }
        }
        if attempted || (mustSave && !(deferrable && Clock.monotonicMilliseconds() - lastSaveMs < Self.quietSaveEveryMs)) {
            try save()
        } else if mustSave {
            stateDirty = true
        }
        // New notifications, in the order decided.
        for item in unwritten {
            var outcomes = item.jobs.map(outcome)
            outcomes += item.dryRunChannels.map { DeliveryOutcome(channel: $0, result: .dryRun, attempts: 0) }
            for job in item.jobs {
                job.reported = true
                job.attemptsReported = job.attempts
            }
            try output.write(NotificationRecord.encode(item.notification, deliveries: outcomes, redelivery: false))
        }
        unwritten.removeAll()
        // Earlier notifications whose deliveries were attempted again.
        var order: [String] = []
        var byID: [String: [Job]] = [:]
        for job in resolvedJobs + dispatcher.unresolved where !job.reported || job.attempts > job.attemptsReported {
            guard job.attempts > job.attemptsReported || job.isResolved else { continue }
            if byID[job.notification.id] == nil { order.append(job.notification.id) }
            byID[job.notification.id, default: []].append(job)
        }
        resolvedJobs.removeAll()
        for id in order {
            let jobs = byID[id]!
            for job in jobs {
                job.reported = true
                job.attemptsReported = job.attempts
            }
            try output.write(NotificationRecord.encode(jobs[0].notification, deliveries: jobs.map(outcome), redelivery: true))
        }
        try output.flush()
    }

    private func outcome(_ job: Job) -> DeliveryOutcome {
        let result = job.result
        var outcome = DeliveryOutcome(
            channel: job.channel, result: result, attempts: job.attempts, code: job.lastCode,
            error: result == .delivered && job.failedLegs == 0 ? nil : job.lastError, fallbackFor: job.fallbackFor)
        if result == .pending { outcome.nextAttemptAt = job.openLegs.map(\.nextAttemptAt).min() }
        if job.fansOut {
            outcome.devicesSent = job.sent
            outcome.devicesRemoved = job.removed
        }
        return outcome
    }

    /// Writes the state: the decider's monitors and channels, the pending deliveries.
    func save() throws {
        guard let stateFile, !dryRun else { return }
        box.state.monitors = decider.monitors
        box.state.agents = decider.agents.isEmpty ? nil : decider.agents
        box.state.channels = decider.views
        box.state.pending = orphans + dispatcher.pending
        try stateFile.save(box.state)
        stateDirty = false
        lastSaveMs = Clock.monotonicMilliseconds()
    }

    /// One line for --summary.
    var summary: String {
        var parts = ["\(samples) samples", "\(notifications) notifications"]
        if !dryRun { parts.append("\(delivered) delivered") }
        if failedDeliveries > 0 { parts.append("\(failedDeliveries) failed") }
        if pendingAtEnd > 0 { parts.append("\(pendingAtEnd) pending") }
        if decider.heldFailures > 0 { parts.append("\(decider.heldFailures) failures held behind a failing parent") }
        if decider.staleSamples > 0 { parts.append("\(decider.staleSamples) samples older than their monitor's last skipped") }
        return parts.joined(separator: ", ")
    }
}

import HTTPTransport
import VitalsKit

/// A notification on its way to one channel.
final class Job {
    let notification: Notification
    let channel: String
    /// Decided by an earlier run (a pending delivery taken up again).
    let redelivery: Bool
    /// Attempts made by earlier runs.
    let priorAttempts: Int
    /// The most attempts any recipient had in this run.
    var attemptsThisRun = 0
    /// Attempts so far, earlier runs included.
    var attempts: Int { priorAttempts + attemptsThisRun }
    var firstAttemptAt: Int64?
    var nextAttemptAt: Int64
    var lastCode: Int?
    var lastError: String?
    /// Per recipient (push device token, or nil): unresolved ones.
    var legs: [Leg]
    /// The channel sends to several recipients (push devices): the record counts them.
    var fansOut = false
    /// A fallback's delivery: the channel whose delivery failed for good.
    var fallbackFor: String?
    var sent = 0
    var removed = 0
    var failedLegs = 0

    struct Leg {
        var target: String?
        var nextAttemptAt: Int64
        var attempts = 0
        var inFlight = false
        var done = false
    }

    /// Every recipient is done (sent, gone or refused).
    var isResolved: Bool { legs.allSatisfy(\.done) }
    /// The recipients still to be reached.
    var openLegs: [Leg] { legs.filter { !$0.done } }

    init(
        notification: Notification, channel: String, redelivery: Bool, attempts: Int = 0, firstAttemptAt: Int64? = nil,
        nextAttemptAt: Int64 = 0, lastError: String? = nil, legs: [String?]
    ) {
        self.notification = notification
        self.channel = channel
        self.redelivery = redelivery
        self.priorAttempts = attempts
        self.firstAttemptAt = firstAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.legs = legs.map { Leg(target: $0, nextAttemptAt: nextAttemptAt) }
    }

    /// A budget ran out with this job unresolved: later runs try it when due, but do not wait
    /// for its retries (so a dead channel cannot hold every later round for a whole budget).
    var exhausted = false
    /// Attempts already shown in a record.
    var attemptsReported = 0
    /// Whether a record showed this job already.
    var reported = false

    /// What became of it: pending while a recipient is unresolved; failed when no recipient
    /// took it and one refused it for good; delivered otherwise.
    var result: DeliveryOutcome.Result {
        if !isResolved { return .pending }
        return failedLegs > 0 && sent == 0 ? .failed : .delivered
    }
}

/// Runs deliveries: one job at a time per channel, in order, every attempt bounded; retries
/// network errors and the retryable answers with exponential backoff and jitter (or the
/// server's Retry-After), within a budget. What the budget does not cover stays pending.
final class Dispatcher {
    private let channels: [String: Channel]
    private let state: StateBox
    private let engine = HTTPEngine(maxInFlight: 32, wakeFD: Signals.wakeFD)
    private let environment: [String: String]
    /// The wall clock (ms): the real one, or --now plus the time elapsed.
    let wallClock: () -> Int64
    /// The delivery budget (ms), counted from the first delivery after a reset.
    let budgetMs: Int64
    /// Attempts older than this (since the first) are given up.
    let giveUpMs: Int64
    /// Longest single attempt.
    let attemptTimeoutMs: Int64 = 10_000
    private var budgetStart: Int64?
    /// Jobs per channel, in order.
    private var queues: [String: [Job]] = [:]
    private var channelOrder: [String] = []
    private var random = SystemRandomNumberGenerator()

    init(
        channels: [String: Channel], state: StateBox, environment: [String: String], budgetMs: Int64, giveUpMs: Int64,
        wallClock: @escaping () -> Int64
    ) {
        self.channels = channels
        self.state = state
        self.environment = environment
        self.budgetMs = budgetMs
        self.giveUpMs = giveUpMs
        self.wallClock = wallClock
    }

    /// Starts a fresh budget at the next delivery (the input paused: a new burst).
    func resetBudget() { budgetStart = nil }

    /// Queues a new notification for `channel`.
    func enqueue(_ notification: Notification, channel: String) -> Job {
        let legs = channels[channel]?.legs(state) ?? [nil]
        let job = Job(notification: notification, channel: channel, redelivery: false, legs: legs)
        job.fansOut = channels[channel]?.fansOut ?? false
        append(job)
        return job
    }

    /// Queues a pending delivery from an earlier run.
    func enqueue(pending: PendingDelivery) -> Job {
        let legs: [String?]
        if let devices = pending.devices {
            legs = devices.map { Optional($0) }
        } else {
            legs = channels[pending.channel]?.legs(state) ?? [nil]
        }
        let job = Job(
            notification: pending.notification, channel: pending.channel, redelivery: true, attempts: pending.attempts,
            firstAttemptAt: pending.firstAttemptAt, nextAttemptAt: pending.nextAttemptAt, lastError: pending.lastError,
            legs: legs)
        job.fansOut = channels[pending.channel]?.fansOut ?? false
        append(job)
        return job
    }

    private func append(_ job: Job) {
        if queues[job.channel] == nil { channelOrder.append(job.channel) }
        queues[job.channel, default: []].append(job)
    }

    /// Unresolved jobs, as pending deliveries for the state file.
    var pending: [PendingDelivery] {
        channelOrder.flatMap { queues[$0] ?? [] }.map { job in
            PendingDelivery(
                notification: job.notification, channel: job.channel, attempts: job.attempts,
                firstAttemptAt: job.firstAttemptAt ?? wallClock(),
                nextAttemptAt: job.openLegs.map(\.nextAttemptAt).min() ?? job.nextAttemptAt,
                lastError: job.lastError,
                devices: job.fansOut ? job.openLegs.compactMap(\.target) : nil)
        }
    }

    /// Delivers what is due, until everything is resolved, nothing more is due within the
    /// budget, or a stop signal. Calls `resolved` for each job that is done (delivered or failed).
    func run(resolved: (Job) -> Void) {
        let start = Clock.monotonicMilliseconds()
        // A budget spans a one-shot run's deliveries, or a burst of a live stream; one that ran
        // out is renewed by the next round's deliveries (a stream that never pauses still delivers).
        if budgetStart == nil || start >= budgetStart! + budgetMs { budgetStart = start }
        let deadline = budgetStart! + budgetMs
        var active: [Int: (Job, Int)] = [:]  // token -> (job, leg index)
        var processes: [(RunningProcess, Job, Int)] = []
        var nextToken = 1
        let wallOffset = wallClock() - start  // wall = monotonic + offset, for this run

        func wallNow() -> Int64 { Clock.monotonicMilliseconds() + wallOffset }

        func settle(_ job: Job, leg index: Int, verdict: DeliveryVerdict) {
            job.legs[index].inFlight = false
            let now = wallNow()
            switch verdict {
            case .accepted(let code):
                job.lastCode = code
                job.sent += 1
                job.legs[index].done = true
            case .gone(let code, let error):
                job.lastCode = code
                job.lastError = error
                job.removed += 1
                job.legs[index].done = true
            case .failed(let code, let error):
                job.lastCode = code
                job.lastError = error
                job.failedLegs += 1
                job.legs[index].done = true
            case .retry(let code, let error, let afterMs):
                job.lastCode = code
                job.lastError = error
                let attempts = job.priorAttempts + job.legs[index].attempts
                let delay = afterMs ?? backoff(attempts: attempts)
                job.legs[index].nextAttemptAt = now + max(0, delay)
                if Dispatcher.givesUp(first: job.firstAttemptAt, now: now, delay: delay, giveUpMs: giveUpMs) {
                    job.lastError = error + " (given up after \(DurationText.describe(milliseconds: giveUpMs)))"
                    job.failedLegs += 1
                    job.legs[index].done = true
                }
            }
        }

        while !Signals.stopRequested {
            let monotonicNow = Clock.monotonicMilliseconds()
            let now = wallNow()
            // Resolve finished jobs, in order per channel; start what is due.
            var soonest: Int64?
            for channelID in channelOrder {
                guard var queue = queues[channelID], !queue.isEmpty else { continue }
                while let head = queue.first, head.isResolved {
                    queue.removeFirst()
                    resolved(head)
                }
                queues[channelID] = queue
                guard let job = queue.first, let channel = channels[channelID] else { continue }
                for index in job.legs.indices where !job.legs[index].inFlight && !job.legs[index].done {
                    let due = job.legs[index].nextAttemptAt
                    if due > now {
                        if !job.exhausted { soonest = min(soonest ?? due, due) }
                        continue
                    }
                    let remaining = deadline - monotonicNow
                    guard remaining > 200 else { continue }
                    let timeout = Int(min(attemptTimeoutMs, remaining))
                    if job.firstAttemptAt == nil { job.firstAttemptAt = now }
                    job.legs[index].attempts += 1
                    job.attemptsThisRun = max(job.attemptsThisRun, job.legs[index].attempts)
                    job.legs[index].inFlight = true
                    switch channel.attempt(job.notification, leg: job.legs[index].target, state: state, nowMs: now, timeoutMs: timeout) {
                    case .http(let request):
                        active[nextToken] = (job, index)
                        engine.submit(request, token: nextToken)
                        nextToken += 1
                    case .process(let request):
                        processes.append((RunningProcess.start(request, environment: environment, timeoutMs: Int64(timeout)), job, index))
                    case .resolved(let verdict):
                        settle(job, leg: index, verdict: verdict)
                    }
                }
            }
            let anythingActive = !active.isEmpty || !processes.isEmpty
            let anyLegReady = channelOrder.contains { id in
                queues[id]?.first.map { $0.legs.contains { !$0.inFlight && !$0.done && $0.nextAttemptAt <= now } } ?? false
            }
            if !anythingActive {
                if anyLegReady && deadline - Clock.monotonicMilliseconds() > 200 { continue }
                guard let soonest, soonest - now < deadline - Clock.monotonicMilliseconds() - 200 else { break }
            }
            var wait: Int64 = 100
            if let soonest { wait = min(wait, max(1, soonest - now)) }
            if !processes.isEmpty { wait = min(wait, 20) }
            for completion in engine.step(timeoutMs: Int(wait)) {
                guard let (job, index) = active.removeValue(forKey: completion.token), let channel = channels[job.channel] else { continue }
                settle(
                    job, leg: index, verdict: channel.judge(completion.result, leg: job.legs[index].target, state: state, nowMs: wallNow()))
            }
            processes.removeAll { process, job, index in
                guard process.poll(), let outcome = process.outcome,
                    let channel = channels[job.channel]
                else { return false }
                settle(job, leg: index, verdict: channel.judge(outcome))
                return true
            }
        }
        // Out of budget or stopped: abandon what is in flight; it stays pending.
        engine.cancelAll()
        for (_, (job, index)) in active {
            job.legs[index].inFlight = false
            if job.legs[index].nextAttemptAt <= wallNow() { job.legs[index].nextAttemptAt = wallNow() }
            job.lastError = job.lastError ?? "no answer within the delivery budget"
        }
        for (_, job, index) in processes {
            job.legs[index].inFlight = false
            job.lastError = job.lastError ?? "the command did not finish within the delivery budget"
        }
        processes.removeAll()
        for job in unresolved where job.attemptsThisRun > 0 || job.redelivery { job.exhausted = true }
        for channelID in channelOrder {
            guard var queue = queues[channelID] else { continue }
            while let head = queue.first, head.isResolved {
                queue.removeFirst()
                resolved(head)
            }
            queues[channelID] = queue
        }
    }

    /// Jobs not resolved yet, in order.
    var unresolved: [Job] { channelOrder.flatMap { queues[$0] ?? [] } }

    /// 1 s, 2 s, 4 s, ... up to 5 minutes, each with jitter: a random part of the upper half.
    private func backoff(attempts: Int) -> Int64 {
        Int64.random(in: Dispatcher.backoffRange(attempts: attempts), using: &random)
    }

    /// The delays (ms) the backoff after `attempts` attempts picks from: the upper half of
    /// 1 s, 2 s, 4 s, ... for the 1st, 2nd, 3rd, ..., at most 5 minutes.
    static func backoffRange(attempts: Int) -> ClosedRange<Int64> {
        let base = Int64(1000) << Int64(min(max(attempts - 1, 0), 9))
        let capped = min(base, 300_000)
        return capped / 2...capped
    }

    /// Whether a delivery first tried at `first` and refused at `now` is given up rather than
    /// tried again `delay` later: its next attempt would fall more than `giveUpMs` after its first.
    static func givesUp(first: Int64?, now: Int64, delay: Int64, giveUpMs: Int64) -> Bool {
        guard let first else { return false }
        return now + delay - first > giveUpMs
    }
}

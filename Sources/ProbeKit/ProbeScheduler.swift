/// Limits on starting probes: how many at once, how many per host, how many new ones a second.
public struct ProbeLimits: Sendable, Equatable {
    /// Probes in flight at once.
    public var concurrency: Int
    /// Probes in flight at once against one host (`--per-host`); nil for no limit.
    var perHost: Int?
    /// New probes started per second overall (`--rate`); nil for no limit.
    var ratePerSecond: Double?

    /// Creates limits.
    public init(concurrency: Int, perHost: Int? = nil, ratePerSecond: Double? = nil) {
        self.concurrency = concurrency
        self.perHost = perHost
        self.ratePerSecond = ratePerSecond
    }
}

/// Decides when each probe starts, for probe-http and probe-ping alike: in input order, at most
/// `concurrency` at once, at most `perHost` at once against one host, new ones no closer together
/// than `1 / rate` seconds; with `watch`, each probe again `interval` after its previous start,
/// never twice at once (a probe that outlasts its interval runs again when it ends).
///
/// A probe held back by its host's limit does not hold back the probes behind it.
///
/// Probes run in rounds: every probe of a one-shot run is one round; with `watch`, the probes
/// that fall due at the same time make one (all of them while they share an interval). A round
/// ends when its last probe finishes, which `finish` says, so the run can mark it.
public struct ProbeScheduler {
    private let limits: ProbeLimits
    private let watch: Bool
    private let hostOf: [Int]
    private let intervalMs: [Int64]
    private var nextDueMs: [Int64]
    private var activeByHost: [Int]
    private var ready: [Int] = []
    private var readyHead = 0
    private var released: [Int] = []
    private var releasedHead = 0
    private var blocked: [[Int]]
    private var blockedHeads: [Int]
    private var due = DeadlineHeap()
    private var nextStartNs: UInt64 = 0
    private let spacingNs: UInt64
    /// Probes started and not finished.
    public private(set) var activeCount = 0
    /// The round of each probe's current run (0 before its first).
    private var roundOf: [Int]
    /// Per round not ended: its probes not finished yet.
    private var roundLeft: [Int: Int] = [:]
    /// The last round made.
    private var lastRound = 0

    /// Prepares to schedule probes against `hosts` (one per probe; equal strings are one host),
    /// each repeated every `intervalsMs` when `watch`.
    public init(hosts: [String], intervalsMs: [Int64], limits: ProbeLimits, watch: Bool) {
        precondition(hosts.count == intervalsMs.count)
        var slots: [String: Int] = [:]
        hostOf = hosts.map { host in
            if let slot = slots[host] { return slot }
            slots[host] = slots.count
            return slots.count - 1
        }
        self.limits = limits
        self.watch = watch
        self.intervalMs = intervalsMs
        nextDueMs = Array(repeating: 0, count: hosts.count)
        activeByHost = Array(repeating: 0, count: slots.count)
        blocked = Array(repeating: [], count: slots.count)
        blockedHeads = Array(repeating: 0, count: slots.count)
        spacingNs = limits.ratePerSecond.map { UInt64(max(1, (1e9 / $0).rounded())) } ?? 0
        roundOf = Array(repeating: 0, count: hosts.count)
        if watch {
            for index in hosts.indices { due.push(0, index) }
        } else {
            ready = Array(hosts.indices)
            if !hosts.isEmpty {
                lastRound = 1
                roundOf = Array(repeating: 1, count: hosts.count)
                roundLeft[1] = hosts.count
            }
        }
    }

    /// The round probe `index` runs in (from 1).
    public func round(of index: Int) -> Int { roundOf[index] }

    /// Whether every probe ran and none is left to run (never, with `watch`).
    public var isFinished: Bool {
        !watch && activeCount == 0 && readyHead == ready.count && releasedHead == released.count
    }

    /// Starts every probe that may start at `nowNs` (monotonic), calling `start` for each in order.
    public mutating func admit(nowNs: UInt64, _ start: (Int) throws -> Void) rethrows {
        try admit(nowNs: nowNs) { index, _ in try start(index) }
    }

    /// Starts every probe that may start at `nowNs` (monotonic), calling `start` for each in
    /// order with the probe and its round.
    public mutating func admit(nowNs: UInt64, _ start: (_ index: Int, _ round: Int) throws -> Void) rethrows {
        let nowMs = Int64(nowNs / 1_000_000)
        var roundDue: Int64?
        while let top = due.peek, top.deadline <= nowMs {
            due.pop()
            // Probes fall due in time order: those due at one time make one round.
            if top.deadline != roundDue {
                roundDue = top.deadline
                lastRound += 1
            }
            roundOf[top.value] = lastRound
            roundLeft[lastRound, default: 0] += 1
            ready.append(top.value)
        }
        while activeCount < limits.concurrency {
            let fromReleased = releasedHead < released.count
            guard fromReleased || readyHead < ready.count else { break }
            let index = fromReleased ? released[releasedHead] : ready[readyHead]
            let host = hostOf[index]
            if let perHost = limits.perHost, activeByHost[host] >= perHost {
                if fromReleased { releasedHead += 1 } else { readyHead += 1 }
                blocked[host].append(index)
                continue
            }
            if spacingNs > 0, nowNs < nextStartNs { break }
            if fromReleased { releasedHead += 1 } else { readyHead += 1 }
            activeCount += 1
            activeByHost[host] += 1
            if spacingNs > 0 { nextStartNs = max(nextStartNs, nowNs) + spacingNs }
            let previous = nextDueMs[index]
            var next = (previous == 0 ? nowMs : previous) + intervalMs[index]
            if next < nowMs { next = nowMs + intervalMs[index] }
            nextDueMs[index] = next
            try start(index, roundOf[index])
        }
        compact()
    }

    /// Marks probe `index` finished; with `watch` it is due again at its next interval. Returns
    /// the probe's round when it was the round's last probe to finish.
    @discardableResult
    public mutating func finish(_ index: Int) -> Int? {
        activeCount -= 1
        let host = hostOf[index]
        activeByHost[host] -= 1
        if blockedHeads[host] < blocked[host].count {
            released.append(blocked[host][blockedHeads[host]])
            blockedHeads[host] += 1
            if blockedHeads[host] == blocked[host].count {
                blocked[host].removeAll(keepingCapacity: true)
                blockedHeads[host] = 0
            }
        }
        if watch { due.push(nextDueMs[index], index) }
        let round = roundOf[index]
        let left = (roundLeft[round] ?? 1) - 1
        if left > 0 {
            roundLeft[round] = left
            return nil
        }
        roundLeft[round] = nil
        return round
    }

    /// Milliseconds until `admit` could start something that waits only on time (the rate, or a
    /// watched probe's next interval); nil when nothing waits on time.
    public func waitMs(nowNs: UInt64) -> Int? {
        var wait: Int?
        let startable = activeCount < limits.concurrency && (releasedHead < released.count || readyHead < ready.count)
        if startable, spacingNs > 0, nowNs < nextStartNs {
            wait = Int((nextStartNs - nowNs + 999_999) / 1_000_000)
        }
        if let top = due.peek {
            let untilDue = max(0, Int(top.deadline - Int64(nowNs / 1_000_000)))
            wait = min(wait ?? untilDue, untilDue)
        }
        return wait
    }

    private mutating func compact() {
        if readyHead > 4096, readyHead * 2 > ready.count {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
        if releasedHead > 1024, releasedHead * 2 > released.count {
            released.removeFirst(releasedHead)
            releasedHead = 0
        }
    }
}

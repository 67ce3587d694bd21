import HTTPTransport
import ProbeKit
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Settings for a run, from the command line.
struct PingSettings: Sendable {
    /// Samples in progress at once, per host, and started per second.
    var limits = ProbeLimits(concurrency: 1024)
    /// Probe forever, each target every `check_interval`.
    var watch = false
    /// Which ICMP sockets to use.
    var socketChoice: ICMPSocketChoice = .auto
    /// The User-Agent libcurl would send (no request is sent by tcp targets; kept for symmetry).
    var userAgent = "vitals-probe-ping/\(Vitals.version)"

    /// Defaults.
    init() {}
}

/// Echo slots of one socket: the sequence number of a request is its slot, and a slot's
/// generation (carried in the payload) changes every time it is reused, so a late reply to an
/// earlier request never counts for the current one.
struct SlotTable {
    var owner: [Int32]
    var generation: [UInt32]
    var sentRealtimeNs: [Int64]
    var sentMonotonicNs: [Int64]
    var deadlineNs: [Int64]
    private var free: [UInt16]
    private var freeHead = 0
    private var freeCount: Int
    private var nextGeneration: UInt32 = UInt32.random(in: 1...UInt32.max / 2)

    /// A table of `capacity` slots (at most 65,536: sequence numbers are 16 bits).
    init(capacity: Int) {
        let size = min(max(capacity, 64), 65_536)
        owner = Array(repeating: -1, count: size)
        generation = Array(repeating: 0, count: size)
        sentRealtimeNs = Array(repeating: 0, count: size)
        sentMonotonicNs = Array(repeating: 0, count: size)
        deadlineNs = Array(repeating: 0, count: size)
        free = (0..<size).map { UInt16($0) }
        freeCount = size
    }

    /// A free slot for `probe`, the longest free first (so a sequence number is reused as late as possible).
    mutating func take(for probe: Int) -> Int? {
        guard freeCount > 0 else { return nil }
        let slot = Int(free[freeHead])
        freeHead = (freeHead + 1) % free.count
        freeCount -= 1
        owner[slot] = Int32(probe)
        nextGeneration &+= 1
        generation[slot] = nextGeneration
        return slot
    }

    /// Frees a slot.
    mutating func release(_ slot: Int) {
        owner[slot] = -1
        deadlineNs[slot] = 0
        free[(freeHead + freeCount) % free.count] = UInt16(slot)
        freeCount += 1
    }
}

/// Runs ping and tcp samples, many at once on one thread: one ICMP socket per family, polled
/// with the resolver's pipe and (for tcp targets) libcurl's sockets; timers in one heap.
final class PingRunner {
    private struct Probe {
        let targetIndex: Int
        let family: IPAddress.Family?
        let monitor: String
    }

    /// One sample in progress.
    private struct Run {
        var active = false
        var runID = 0
        var atMs: Int64 = 0
        var address: IPAddress?
        var route: NetworkRoute?
        var statistics = PingStatistics()
        var outstanding = 0
        var failure: PingFailure?
        var icmpError: String?
        var stopSending = false
        var nextSendNs: Int64 = 0
        var resolveDeadlineNs: Int64 = 0
    }

    private enum Timer: Int {
        case send = 0
        case timeout4 = 1
        case timeout6 = 2
        case resolve = 3
    }

    private let targets: [PingTarget]
    private var probes: [Probe] = []
    private var runs: [Run]
    private var scheduler: ProbeScheduler
    private var marks = RoundMarks(tool: "probe-ping")
    private let settings: PingSettings
    private let output: RecordWriter
    private let diagnostics: Diagnostics
    private let network = NetworkView()
    private var sockets: [ICMPSocket?] = [nil, nil]
    private var socketFailures: [ICMPOpenFailure?] = [nil, nil]
    private var slots: [SlotTable]
    private var timers = DeadlineHeap()
    private lazy var resolver = Resolver()
    private var resolverStarted = false
    private var engine: HTTPEngine?
    private var resolving: [Int: Int] = [:]
    private var completed: [Int] = []
    private var nextRunID = 1
    private var sendsSinceDrain = 0
    private let cookie = UInt64.random(in: 1...UInt64.max)
    /// What was written so far.
    private(set) var tally = ProbeTally()
    /// The status line on a terminal, when one is wanted.
    var progress: ProbeProgress?

    /// The number of samples a round writes (two for a target with `ip: both`).
    var probeCount: Int { probes.count }

    /// Prepares samples for `targets` (two per target for `ip: both`).
    init(targets: [PingTarget], settings: PingSettings, output: RecordWriter, diagnostics: Diagnostics) {
        self.targets = targets
        self.settings = settings
        self.output = output
        self.diagnostics = diagnostics
        for (index, target) in targets.enumerated() {
            for (family, monitor) in target.ip.probes(monitor: target.id) {
                probes.append(Probe(targetIndex: index, family: family == .any ? nil : family == .v4 ? .v4 : .v6, monitor: monitor))
            }
        }
        runs = Array(repeating: Run(), count: probes.count)
        let maxCount = targets.map(\.count).max() ?? 1
        let capacity = min(probes.count, settings.limits.concurrency) * maxCount * 2
        slots = [SlotTable(capacity: capacity), SlotTable(capacity: capacity)]
        scheduler = ProbeScheduler(
            hosts: probes.map { targets[$0.targetIndex].host },
            intervalsMs: probes.map { targets[$0.targetIndex].checkIntervalMs },
            limits: settings.limits, watch: settings.watch)
    }

    /// Runs until every sample is written (or forever with `watch`), or a stop signal.
    func run() throws {
        defer { progress?.finish() }
        var waits: [WaitDescriptor] = []
        var pollfds: [pollfd] = []
        while !Signals.stopRequested {
            try scheduler.admit(nowNs: Clock.monotonicNanoseconds()) { index, round in
                try marks.probeStarts(round: round, output: output)
                begin(index)
            }
            fireTimers()
            try writeCompleted()
            if scheduler.isFinished { break }
            try output.flush()

            let now = Int64(Clock.monotonicNanoseconds())
            var waitMs = scheduler.waitMs(nowNs: UInt64(now)) ?? 1000
            if let top = timers.peek { waitMs = min(waitMs, Int(max(0, top.deadline - now) + 999_999) / 1_000_000) }
            waitMs = min(waitMs, 1000)
            progress?.update(inFlight: scheduler.activeCount, nextInMs: scheduler.waitMs(nowNs: UInt64(now)))

            waits.removeAll(keepingCapacity: true)
            for socket in sockets { if let socket { waits.append(WaitDescriptor(fd: socket.fd)) } }
            if resolverStarted { waits.append(WaitDescriptor(fd: resolver.wakeFD)) }
            if let engine {
                for completion in engine.step(timeoutMs: waitMs, alsoWaitingOn: &waits) {
                    try complete(completion)
                }
            } else {
                pollfds.removeAll(keepingCapacity: true)
                if Signals.wakeFD >= 0 { pollfds.append(pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)) }
                for wait in waits { pollfds.append(pollfd(fd: wait.fd, events: Int16(POLLIN), revents: 0)) }
                _ = poll(&pollfds, nfds_t(pollfds.count), Int32(waitMs))
                let offset = pollfds.count - waits.count
                for index in waits.indices { waits[index].ready = pollfds[offset + index].revents != 0 }
            }
            for wait in waits where wait.ready {
                if resolverStarted, wait.fd == resolver.wakeFD {
                    for answer in resolver.collect() { resolved(answer) }
                } else {
                    drain(fd: wait.fd)
                }
            }
            try writeCompleted()
        }
        engine?.cancelAll()
        try output.flush()
    }

    // MARK: - Starting

    private func begin(_ index: Int) {
        let target = targets[probes[index].targetIndex]
        runs[index] = Run()
        runs[index].active = true
        runs[index].runID = nextRunID
        nextRunID += 1
        runs[index].atMs = Clock.wallMilliseconds()
        if target.kind == .tcp {
            startTCP(index, target: target)
        } else if let literal = target.literal {
            startPinging(index, address: literal)
        } else {
            if !resolverStarted { resolverStarted = true }
            let family: Int32
            switch probes[index].family {
            case .v4?: family = AF_INET
            case .v6?: family = AF_INET6
            case nil: family = AF_UNSPEC
            }
            resolving[runs[index].runID] = index
            resolver.submit(token: runs[index].runID, host: target.host, family: family)
            // getaddrinfo cannot be cancelled; the sample stops waiting for it after this long.
            let deadline = Int64(Clock.monotonicNanoseconds()) + Int64(max(target.timeoutMs, 5000)) * 1_000_000
            runs[index].resolveDeadlineNs = deadline
            timers.push(deadline, encode(.resolve, index))
        }
    }

    private func resolved(_ answer: Resolver.Answer) {
        guard let index = resolving.removeValue(forKey: answer.token), runs[index].active, runs[index].runID == answer.token else { return }
        runs[index].resolveDeadlineNs = 0
        let target = targets[probes[index].targetIndex]
        guard let address = answer.addresses.first else {
            runs[index].failure = .dns("DNS lookup failed for \(target.host)" + (answer.error.map { " (\($0))" } ?? ""))
            completed.append(index)
            return
        }
        startPinging(index, address: address)
    }

    private func startPinging(_ index: Int, address: IPAddress) {
        runs[index].address = address
        runs[index].route = network.route(to: address)
        let familySlot = address.family == .v4 ? 0 : 1
        if sockets[familySlot] == nil, socketFailures[familySlot] == nil {
            switch ICMPSocket.open(family: address.family, choice: settings.socketChoice, cookie: cookie) {
            case .success(let socket): sockets[familySlot] = socket
            case .failure(let failure):
                socketFailures[familySlot] = failure
                if failure.permission {
                    diagnostics.error("ICMP over IPv\(address.family == .v4 ? 4 : 6): \(failure.message)")
                }
            }
        }
        if let failure = socketFailures[familySlot] {
            runs[index].failure = failure.permission ? .permission(failure.message) : .connect(failure.message)
            completed.append(index)
            return
        }
        sendNext(index, now: Int64(Clock.monotonicNanoseconds()))
    }

    private func startTCP(_ index: Int, target: PingTarget) {
        if engine == nil { engine = HTTPEngine(maxInFlight: settings.limits.concurrency, wakeFD: Signals.wakeFD) }
        // A connection only, to http://host:port/ or, with TLS, https://host:port/ with the
        // certificate read whether or not it is trusted.
        let url = (target.tls ? "https://" : "http://") + PingTarget.hostPort(target.host, target.port ?? 0) + "/"
        var request = HTTPRequest(url: url, method: "GET", timeoutMs: target.timeoutMs, userAgent: settings.userAgent)
        request.connectOnly = true
        request.maxRedirects = 0
        request.tls.verify = false
        request.tls.collectCertificates = target.tls
        switch probes[index].family {
        case .v4?: request.ipFamily = .v4
        case .v6?: request.ipFamily = .v6
        case nil: request.ipFamily = .any
        }
        engine?.submit(request, token: index)
    }

    // MARK: - Echo requests and replies

    private func sendNext(_ index: Int, now: Int64) {
        guard runs[index].active, !runs[index].stopSending, let address = runs[index].address else { return }
        let target = targets[probes[index].targetIndex]
        guard runs[index].statistics.sent < target.count else { return }
        let familySlot = address.family == .v4 ? 0 : 1
        guard let socket = sockets[familySlot] else { return }
        guard let slot = slots[familySlot].take(for: index) else {
            // Every sequence number is waiting for a reply: try again in a millisecond.
            runs[index].nextSendNs = now + 1_000_000
            timers.push(runs[index].nextSendNs, encode(.send, index))
            return
        }
        var realtime = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        let sentAt = Int64(Clock.monotonicNanoseconds())
        let code = socket.send(to: address, sequence: UInt16(slot), generation: slots[familySlot].generation[slot])
        if code != 0 {
            slots[familySlot].release(slot)
            if code == EAGAIN || code == EWOULDBLOCK || code == ENOBUFS || code == EINTR {
                drainAll()
                runs[index].nextSendNs = sentAt + 1_000_000
                timers.push(runs[index].nextSendNs, encode(.send, index))
                return
            }
            let words = "Cannot send to \(address): \(ICMPSocket.errorText(code))"
            runs[index].stopSending = true
            if runs[index].statistics.sent == 0 {
                runs[index].failure =
                    code == EPERM || code == EACCES
                    ? .permission(words + " (a firewall rule, or a broadcast address?)") : .connect(words)
            } else if runs[index].icmpError == nil {
                runs[index].icmpError = words
            }
            checkDone(index)
            return
        }
        slots[familySlot].sentRealtimeNs[slot] = Int64(realtime.tv_sec) * 1_000_000_000 + Int64(realtime.tv_nsec)
        slots[familySlot].sentMonotonicNs[slot] = sentAt
        let deadline = sentAt + Int64(target.timeoutMs) * 1_000_000
        slots[familySlot].deadlineNs[slot] = deadline
        timers.push(deadline, encode(familySlot == 0 ? .timeout4 : .timeout6, slot))
        runs[index].statistics.countSent()
        runs[index].outstanding += 1
        if runs[index].statistics.sent < target.count {
            runs[index].nextSendNs = sentAt + Int64(target.periodMs) * 1_000_000
            timers.push(runs[index].nextSendNs, encode(.send, index))
        }
        // In a burst, read replies as they come so the receive buffer never overflows.
        sendsSinceDrain += 1
        if sendsSinceDrain >= 64 { drainAll() }
    }

    private func drainAll() {
        sendsSinceDrain = 0
        for socket in sockets { if let socket { drain(fd: socket.fd) } }
    }

    private func drain(fd: Int32) {
        for familySlot in 0..<2 {
            guard let socket = sockets[familySlot], socket.fd == fd else { continue }
            socket.drain { event in handle(event, familySlot: familySlot) }
        }
    }

    private func handle(_ event: ICMPEvent, familySlot: Int) {
        switch event {
        case .reply(let sequence, let generation, let from, let receivedRealtimeNs):
            let slot = Int(sequence)
            guard slot < slots[familySlot].owner.count, slots[familySlot].owner[slot] >= 0,
                slots[familySlot].generation[slot] == generation
            else { return }
            let index = Int(slots[familySlot].owner[slot])
            guard let address = runs[index].address, address.high == from.high, address.low == from.low else { return }
            let now = Int64(Clock.monotonicNanoseconds())
            var rttNs = now - slots[familySlot].sentMonotonicNs[slot]
            if let received = receivedRealtimeNs {
                // The kernel's receive time is exact even when this thread was busy; fall back to
                // the monotonic clock if the wall clock stepped in between.
                let kernel = received - slots[familySlot].sentRealtimeNs[slot]
                if kernel >= 0, kernel <= rttNs + 1_000_000 { rttNs = kernel }
            }
            slots[familySlot].release(slot)
            runs[index].outstanding -= 1
            runs[index].statistics.add(rttMs: Double(rttNs) / 1_000_000)
            checkDone(index)
        case .failed(let sequence, let generation, let destination, let words):
            let slot = Int(sequence)
            guard slot < slots[familySlot].owner.count, slots[familySlot].owner[slot] >= 0 else { return }
            if let generation, slots[familySlot].generation[slot] != generation { return }
            let index = Int(slots[familySlot].owner[slot])
            if let destination, let address = runs[index].address, destination.high != address.high || destination.low != address.low {
                return
            }
            slots[familySlot].release(slot)
            runs[index].outstanding -= 1
            if runs[index].icmpError == nil { runs[index].icmpError = words }
            checkDone(index)
        }
    }

    private func fireTimers() {
        while let top = timers.peek, top.deadline <= Int64(Clock.monotonicNanoseconds()) {
            timers.pop()
            let kind = Timer(rawValue: top.value & 3) ?? .send
            let payload = top.value >> 2
            switch kind {
            case .send:
                if runs[payload].active, runs[payload].nextSendNs == top.deadline { sendNext(payload, now: top.deadline) }
            case .timeout4, .timeout6:
                let familySlot = kind == .timeout4 ? 0 : 1
                guard slots[familySlot].owner[payload] >= 0, slots[familySlot].deadlineNs[payload] == top.deadline else { continue }
                let index = Int(slots[familySlot].owner[payload])
                slots[familySlot].release(payload)
                runs[index].outstanding -= 1
                checkDone(index)
            case .resolve:
                guard runs[payload].active, runs[payload].resolveDeadlineNs == top.deadline else { continue }
                resolving[runs[payload].runID] = nil
                let target = targets[probes[payload].targetIndex]
                runs[payload].failure = .dns(
                    "DNS lookup for \(target.host) took longer than "
                        + DurationText.describe(milliseconds: Int64(max(target.timeoutMs, 5000))))
                completed.append(payload)
            }
        }
    }

    private func encode(_ timer: Timer, _ payload: Int) -> Int { payload << 2 | timer.rawValue }

    private func checkDone(_ index: Int) {
        let run = runs[index]
        guard run.active, run.outstanding == 0 else { return }
        if run.stopSending || run.statistics.sent >= targets[probes[index].targetIndex].count {
            completed.append(index)
        }
    }

    // MARK: - Finishing

    private func complete(_ completion: HTTPCompletion) throws {
        let index = completion.token
        guard runs[index].active else { return }
        let target = targets[probes[index].targetIndex]
        let result = completion.result
        let verdict = PingVerdictRules.decideTCP(target: target, result: result, nowSeconds: Clock.wallMilliseconds() / 1000)
        let record = PingSampleRecord.encodeTCP(
            target: target, monitor: probes[index].monitor, family: probes[index].family,
            atMs: runs[index].atMs, verdict: verdict, result: result,
            route: network.route(of: result, host: target.host))
        try emit(index, record: record, verdict: verdict)
    }

    private func writeCompleted() throws {
        while !completed.isEmpty {
            let batch = completed
            completed.removeAll(keepingCapacity: true)
            for index in batch where runs[index].active {
                let target = targets[probes[index].targetIndex]
                let run = runs[index]
                let verdict = PingVerdictRules.decide(
                    target: target, statistics: run.statistics, failure: run.failure, icmpError: run.icmpError)
                let record = PingSampleRecord.encodePing(
                    target: target, monitor: probes[index].monitor, family: probes[index].family,
                    atMs: run.atMs, verdict: verdict, statistics: run.statistics,
                    remote: run.address, route: run.route)
                try emit(index, record: record, verdict: verdict)
            }
        }
    }

    private func emit(_ index: Int, record: [UInt8], verdict: ProbeVerdict) throws {
        runs[index].active = false
        let round = scheduler.round(of: index)
        let roundEnded = scheduler.finish(index)
        tally.byStatus[verdict.status, default: 0] += 1
        if let latency = verdict.latencyMs, latency > (tally.slowest?.latencyMs ?? -1) {
            tally.slowest = (targets[probes[index].targetIndex].name, latency)
        }
        progress?.record(index, verdict.status)
        try output.write(record)
        marks.sampleWritten(round: round)
        if let roundEnded { try marks.roundEnds(roundEnded, output: output) }
    }
}

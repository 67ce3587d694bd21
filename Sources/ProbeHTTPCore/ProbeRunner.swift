import HTTPTransport
import ProbeKit
import VitalsKit

/// Settings for a run, from the command line.
struct ProbeSettings: Sendable {
    /// Probes in flight at once, per host, and started per second.
    var limits = ProbeLimits(concurrency: 256)
    /// Body bytes read at most for checks that need the body.
    var maxBodyBytes = 1 << 20
    /// Added to each measured latency (isitup's debug simulation).
    var simulatedLatencyMs: Double = 0
    /// Probe forever, each target every `check_interval`.
    var watch = false
    /// The User-Agent header.
    var userAgent = "vitals-probe-http/\(Vitals.version)"
    /// A probe that fails (down, error) is tried again up to this many more times in the same run (`--confirm`).
    var confirm = 0
    /// The pause before each of those tries (`--confirm-delay`), ms.
    var confirmDelayMs: Int64 = 0

    /// Defaults.
    init() {}
}

/// Runs probes on one `HTTPEngine`: once through every target, or forever on each target's interval.
final class ProbeRunner {
    private enum Stage { case primary, fallback, inspect }

    private struct Probe {
        let targetIndex: Int
        let family: IPFamily
        let monitor: String
        var stage = Stage.primary
        var startWallMs: Int64 = 0
        var deadlineMs: Int64 = 0
        var method = "HEAD"
        var fallbackNote: String?
        /// Why the HEAD failed, when a GET followed it (a sample `reason`, or `http_status` for 405 and 501).
        var headReason: String?
        var answerMethod = "HEAD"
        /// When the first attempt started (the sample's `at`), wall clock.
        var firstStartWallMs: Int64 = 0
        /// The attempts that failed before this one (`--confirm`).
        var tries: [ProbeTry] = []
    }

    /// Probes waiting to be tried again (`--confirm-delay`): index and when (monotonic ms).
    private var retries: [(index: Int, dueMs: Int64)] = []

    private var probes: [Probe] = []
    private let targets: [Target]
    /// The first answer of probes waiting for a certificate inspection.
    private var answers: [Int: HTTPResult] = [:]
    private let settings: ProbeSettings
    private let engine: HTTPEngine
    private let output: RecordWriter
    private var scheduler: ProbeScheduler
    private var marks = RoundMarks(tool: "probe-http")
    private let network = NetworkView()
    /// What was written so far.
    private(set) var tally = ProbeTally()
    /// The status line on a terminal, when one is wanted.
    var progress: ProbeProgress?

    /// The number of probes (two for a target with `ip: both`).
    var probeCount: Int { probes.count }

    /// Prepares probes for `targets` (two per target for `ip: both`).
    init(targets: [Target], settings: ProbeSettings, output: RecordWriter) {
        self.settings = settings
        self.output = output
        self.engine = HTTPEngine(maxInFlight: settings.limits.concurrency, wakeFD: Signals.wakeFD)
        self.targets = targets
        for (targetIndex, target) in targets.enumerated() {
            for (family, monitor) in target.ip.probes(monitor: target.id) {
                probes.append(Probe(targetIndex: targetIndex, family: family, monitor: monitor))
            }
        }
        scheduler = ProbeScheduler(
            hosts: probes.map { targets[$0.targetIndex].host },
            intervalsMs: probes.map { targets[$0.targetIndex].checkIntervalMs },
            limits: settings.limits, watch: settings.watch)
    }

    /// Runs until every probe has written its sample (or forever with `watch`), or a stop signal.
    ///
    /// The scheduler decides when each probe starts (concurrency, per-host and rate limits,
    /// intervals). A probe's start time (`at`) and its deadline are taken when it starts, not
    /// when it is queued, and its HEAD-to-GET fallback or certificate inspection runs in the
    /// slot it already holds. Each round of probes is marked: `round_start` when its first probe
    /// starts, `round_end` after its last sample.
    func run() throws {
        defer { progress?.finish() }
        while true {
            if Signals.stopRequested {
                engine.cancelAll()
                break
            }
            try scheduler.admit(nowNs: Clock.monotonicNanoseconds()) { index, round in
                try marks.probeStarts(round: round, output: output)
                begin(index, now: Clock.monotonicMilliseconds())
            }
            if scheduler.isFinished { break }
            try output.flush()
            var waitMs = min(1000, scheduler.waitMs(nowNs: Clock.monotonicNanoseconds()) ?? 1000)
            if !retries.isEmpty {
                let now = Clock.monotonicMilliseconds()
                for retry in retries where retry.dueMs <= now { begin(retry.index, now: now, again: true) }
                retries.removeAll { $0.dueMs <= now }
                if let next = retries.map(\.dueMs).min() { waitMs = min(waitMs, Int(max(0, next - now))) }
            }
            progress?.update(inFlight: scheduler.activeCount, nextInMs: scheduler.waitMs(nowNs: Clock.monotonicNanoseconds()))
            for completion in engine.step(timeoutMs: max(0, waitMs)) {
                try complete(completion)
            }
        }
        try output.flush()
    }

    /// Starts a probe's attempt: its first, or `again` after a failed one (`--confirm`).
    private func begin(_ index: Int, now: Int64, again: Bool = false) {
        var probe = probes[index]
        probe.stage = .primary
        probe.startWallMs = Clock.wallMilliseconds()
        if !again {
            probe.firstStartWallMs = probe.startWallMs
            probe.tries = []
        }
        probe.deadlineMs = now + Int64(targets[probe.targetIndex].timeoutMs)
        probe.fallbackNote = nil
        probe.headReason = nil
        answers[index] = nil
        let target = targets[probe.targetIndex]
        if target.kind == .ssl {
            probe.method = "CONNECT"
        } else {
            probe.method = target.method ?? (target.needsBody ? "GET" : "HEAD")
        }
        probes[index] = probe
        engine.submit(request(for: probe, method: probe.method, timeoutMs: target.timeoutMs), token: index)
    }

    private func request(for probe: Probe, method: String, timeoutMs: Int, inspect: Bool = false) -> HTTPRequest {
        let target = targets[probe.targetIndex]
        var request = HTTPRequest(url: target.url, method: method, timeoutMs: timeoutMs, userAgent: settings.userAgent)
        request.headers = target.headers
        request.body = target.body
        request.maxRedirects = target.maxRedirects
        request.ipFamily = probe.family
        request.tls = target.tls
        if inspect {
            request.connectOnly = true
            request.tls.verify = false
            request.tls.collectCertificates = true
            request.bodyPolicy = .none
            return request
        }
        if target.kind == .ssl {
            request.connectOnly = true
            request.tls.verify = false
            request.bodyPolicy = .none
            return request
        }
        if method == "HEAD" {
            request.bodyPolicy = .none
        } else if target.expectedContent != nil || target.expectedBodyHash != nil {
            request.bodyPolicy = .inspect(
                limit: max(settings.maxBodyBytes, target.speedTestBytes ?? 0), content: target.expectedContent.map { Array($0.utf8) },
                digest: target.expectedBodyHash.map { $0.count == 32 ? .md5 : .sha256 })
        } else {
            request.bodyPolicy = .discard(limit: target.speedTestBytes ?? settings.maxBodyBytes)
        }
        return request
    }

    private func complete(_ completion: HTTPCompletion) throws {
        let index = completion.token
        var probe = probes[index]
        let result = completion.result
        let now = Clock.monotonicMilliseconds()
        let remaining = Int(probe.deadlineMs - now)
        switch probe.stage {
        case .primary:
            let target = targets[probe.targetIndex]
            if probe.method == "HEAD", target.method == nil,
                let (note, reason) = ProbeRunner.fallback(for: result, timeoutMs: target.timeoutMs)
            {
                // isitup: on a failed HEAD, a GET with a time budget of its own.
                probe.stage = .fallback
                probe.fallbackNote = note
                probe.headReason = reason
                probe.method = "GET"
                probe.deadlineMs = now + Int64(target.timeoutMs)
                probes[index] = probe
                engine.submit(request(for: probe, method: "GET", timeoutMs: target.timeoutMs), token: index)
                return
            }
            fallthrough
        case .fallback:
            if ProbeRunner.needsInspection(result, target: targets[probe.targetIndex]), remaining > 0 {
                probe.stage = .inspect
                answers[index] = result
                probe.answerMethod = probe.method
                probes[index] = probe
                engine.submit(request(for: probe, method: "GET", timeoutMs: remaining, inspect: true), token: index)
                return
            }
            try finish(index, probe: probe, result: result, inspection: nil)
        case .inspect:
            try finish(index, probe: probe, result: answers.removeValue(forKey: index) ?? result, inspection: result)
        }
    }

    private func finish(_ index: Int, probe: Probe, result: HTTPResult, inspection: HTTPResult?) throws {
        var probe = probe
        let nowSeconds = Clock.wallMilliseconds() / 1000
        let method = probe.stage == .inspect ? probe.answerMethod : probe.method
        var verdict = HTTPVerdictRules.decide(
            target: targets[probe.targetIndex], result: result, method: method,
            fallbackNote: probe.fallbackNote, inspection: inspection,
            nowSeconds: nowSeconds, simulatedMs: settings.simulatedLatencyMs)
        if settings.simulatedLatencyMs > 0 {
            // isitup's words: `+<N>ms simulated`.
            verdict.message += " +\(LatencyWords.milliseconds(settings.simulatedLatencyMs)) simulated"
        }
        if verdict.status == .down || verdict.status == .error || !probe.tries.isEmpty {
            probe.tries.append(ProbeTry(atMs: probe.startWallMs, verdict: verdict))
        }
        if verdict.status == .down || verdict.status == .error, probe.tries.count <= settings.confirm, !Signals.stopRequested {
            // --confirm: a failure is tried again in the slot it holds, at once or after --confirm-delay.
            probes[index] = probe
            let now = Clock.monotonicMilliseconds()
            if settings.confirmDelayMs == 0 {
                begin(index, now: now, again: true)
            } else {
                retries.append((index, now + settings.confirmDelayMs))
            }
            return
        }
        probes[index] = probe
        let round = scheduler.round(of: index)
        let roundEnded = scheduler.finish(index)
        let record = SampleRecord.encode(
            target: targets[probe.targetIndex], monitor: probe.monitor, family: probe.family,
            atMs: probe.firstStartWallMs, method: method, verdict: verdict, result: result,
            route: network.route(of: result, host: targets[probe.targetIndex].host), headReason: probe.headReason,
            tries: probe.tries.count > 1 ? probe.tries : [], simulatedMs: settings.simulatedLatencyMs)
        tally.byStatus[verdict.status, default: 0] += 1
        if let latency = verdict.latencyMs, latency > (tally.slowest?.latencyMs ?? -1) {
            tally.slowest = (targets[probe.targetIndex].name, latency)
        }
        progress?.record(index, verdict.status)
        try output.write(record)
        marks.sampleWritten(round: round)
        if let roundEnded { try marks.roundEnds(roundEnded, output: output) }
    }

    /// Why a HEAD should be retried as GET (words for the message, and the sample's `head_reason`),
    /// or nil. isitup's rule: on any failure, GET. Failures before a request is sent (the name,
    /// the connection, the TLS handshake) and a redirect loop are left out: the method cannot
    /// change them, and a GET would only repeat them. A 405 or 501 answer is a HEAD the server
    /// does not do.
    static func fallback(for result: HTTPResult, timeoutMs: Int) -> (note: String, reason: String)? {
        if let failure = result.failure {
            let reason = TransportRules.reason(for: failure).rawValue
            switch failure {
            case .dns, .connect, .tls, .redirects: return nil
            case .reset: return ("HEAD was reset", reason)
            case .timeout: return ("HEAD timed out after \(DurationText.describe(milliseconds: Int64(timeoutMs)))", reason)
            case .tooLarge: return ("HEAD got headers too large", reason)
            case .protocol: return (result.curlCode == 52 ? "HEAD got an empty reply" : "HEAD got a bad reply", reason)
            }
        }
        if result.httpCode == 405 || result.httpCode == 501 {
            return ("HEAD answered \(result.httpCode)", SampleReason.httpStatus.rawValue)
        }
        return nil
    }

    /// Whether a failed TLS verification should be followed by a certificate-only handshake,
    /// to tell an expired certificate (down) from other TLS failures (error) and report its expiry.
    static func needsInspection(_ result: HTTPResult, target: Target) -> Bool {
        result.failure == .tls && result.curlCode == 60 && target.kind != .http && target.tls.verify
    }
}

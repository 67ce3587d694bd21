import HTTPTransport
import ProbeKit
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What `--connectivity` checks, from the command line.
struct ConnectivitySettings: Sendable {
    /// Online Now's reachability page.
    static let defaultURL = "https://www.apple.com/library/test/success.html"
    /// Online Now's speed test download (512 KB).
    static let defaultSpeedURL = "https://httpbin.org/bytes/512000"
    /// The speed test's time budget: URLSession's default request timeout, which Online Now's
    /// download runs under (the seed tests "a very slow network (>30s timeout)").
    static let defaultSpeedTimeoutMs = 60_000
    /// The success page's time budget: Online Now's reachability request runs under URLSession's
    /// default timeout too, 60 s, not a probe's 5 s (a page that answers after 6 s is online).
    static let defaultPageTimeoutMs = 60_000
    /// The word that page says when nothing stands in between (a captive portal answers otherwise).
    static let defaultExpected = "Success"

    /// The success page.
    var url = ConnectivitySettings.defaultURL
    /// What the page must contain.
    var expected = ConnectivitySettings.defaultExpected
    /// Where to download the speed test from (Online Now's by default); nil for no speed test.
    var speedURL: String? = ConnectivitySettings.defaultSpeedURL
    /// Bytes to download for the speed test (Online Now's 512 KB).
    var speedBytes = 512_000
    /// The time budget of the success page, apart from the probes' `--timeout`.
    var timeoutMs = ConnectivitySettings.defaultPageTimeoutMs
    /// The time budget of the speed test's download, apart from the page's.
    var speedTimeoutMs = ConnectivitySettings.defaultSpeedTimeoutMs
    /// With `watch`: how often to check.
    var intervalMs: Int64 = 60_000
    /// Check again every `intervalMs` until interrupted.
    var watch = false
    /// `--agent`, written as the sample's `agent`.
    var agent: String?
    /// Address family.
    var family: IPFamily = .any
    /// Skip certificate verification.
    var insecure = false
    /// The User-Agent header.
    var userAgent = "vitals-probe-http/\(Vitals.version)"

    /// Defaults.
    init() {}
}

/// Online Now's "am I online, and how fast" as one sample: the success page fetched with GET
/// and checked for its word, the interface and link type the request left by, and a speed
/// test from `speedURL` when online. Offline is an answer (`online: false`), not a failure.
final class ConnectivityCheck {
    private let settings: ConnectivitySettings
    private let output: RecordWriter
    private let engine = HTTPEngine(maxInFlight: 1, wakeFD: Signals.wakeFD)
    private let network = NetworkView(refreshAfterMs: 0)
    private let pageTarget: Target
    private var marks = RoundMarks(tool: "probe-http")
    /// What was written so far.
    private(set) var tally = ProbeTally()
    /// The status line on a terminal, when one is wanted.
    var progress: ProbeProgress?

    /// Prepares the check.
    init(settings: ConnectivitySettings, output: RecordWriter) throws(TargetProblem) {
        self.settings = settings
        self.output = output
        let parts = URLText(settings.url)
        guard let scheme = parts.scheme, scheme == "http" || scheme == "https", !parts.host.isEmpty else {
            throw TargetProblem("the connectivity URL must be an http:// or https:// URL, not '\(Redaction.url(settings.url))'")
        }
        var target = Target(
            id: "connectivity", name: "Connectivity", url: settings.url, kind: scheme == "http" ? .http : .https, parts: parts)
        target.method = "GET"
        target.expectedContent = settings.expected
        target.timeoutMs = settings.timeoutMs
        target.tls.verify = !settings.insecure
        target.checkIntervalMs = settings.intervalMs
        if let agent = settings.agent { target.extraFields = [JSONField("agent", .string(agent))] }
        pageTarget = target
    }

    /// Checks once, or with `watch` every interval until interrupted, writing one sample each
    /// time, each a round of its own between its marks.
    func run() throws {
        defer { progress?.finish() }
        var nextMs = Clock.monotonicMilliseconds()
        var round = 0
        repeat {
            let startMs = Clock.monotonicMilliseconds()
            round += 1
            try marks.probeStarts(round: round, output: output)
            guard let record = check() else { break }
            try output.write(record)
            marks.sampleWritten(round: round)
            try marks.roundEnds(round, output: output)
            try output.flush()
            guard settings.watch else { break }
            nextMs = max(nextMs + settings.intervalMs, startMs)
            while !Signals.stopRequested, Clock.monotonicMilliseconds() < nextMs {
                let waitMs = max(1, nextMs - Clock.monotonicMilliseconds())
                progress?.update(inFlight: 0, nextInMs: Int(waitMs))
                var descriptor = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, Int32(clamping: progress == nil ? waitMs : min(waitMs, 1000)))
            }
        } while !Signals.stopRequested
    }

    /// One check; nil when a stop signal cut it short.
    func check() -> [UInt8]? {
        let atMs = Clock.wallMilliseconds()
        var request = HTTPRequest(url: settings.url, method: "GET", timeoutMs: settings.timeoutMs, userAgent: settings.userAgent)
        request.ipFamily = settings.family
        request.maxRedirects = 0
        request.tls = pageTarget.tls
        request.bodyPolicy = .inspect(limit: 64 * 1024, content: pageTarget.expectedContent.map { Array($0.utf8) }, digest: nil)
        guard let page = fetch(request) else { return nil }
        let verdict = HTTPVerdictRules.decide(
            target: pageTarget, result: page, method: "GET", fallbackNote: nil, inspection: nil,
            nowSeconds: Clock.wallMilliseconds() / 1000, simulatedMs: 0)
        let online = !verdict.status.isFailure
        let route =
            network.route(of: page, host: pageTarget.host)
            ?? (online ? nil : network.defaultRoute(family: settings.family == .v6 ? .v6 : .v4))

        var answer = verdict
        if online {
            answer.message = "Online" + ConnectivityCheck.via(route) + ": " + verdict.message
            if let speedURL = settings.speedURL {
                var speedRequest = HTTPRequest(
                    url: speedURL, method: "GET", timeoutMs: settings.speedTimeoutMs, userAgent: settings.userAgent)
                speedRequest.ipFamily = settings.family
                speedRequest.tls.verify = !settings.insecure
                speedRequest.tls.collectCertificates = false
                speedRequest.bodyPolicy = .discard(limit: settings.speedBytes)
                guard let download = fetch(speedRequest) else { return nil }
                // A download cut short by the time budget still measured something.
                let answered = download.failure == nil && (200...299).contains(download.httpCode)
                let measured = answered || (download.failure == .timeout && download.bodyBytes > 0)
                if measured {
                    // From the request's start to its last byte, as Online Now times it.
                    let seconds = max(0, download.timings.total) / 1000
                    (answer.speedMbps, answer.speedConfidence) = HTTPVerdictRules.speed(bytes: download.bodyBytes, seconds: seconds)
                    answer.speedBytes = download.bodyBytes
                    if let speed = answer.speedMbps { answer.message += ", " + ConnectivityCheck.mbps(speed) }
                } else {
                    answer.speedBytes = download.bodyBytes
                    answer.message += "; speed test failed: " + ConnectivityCheck.failureWords(download)
                }
            }
        } else {
            // Offline is the answer, not a failed probe: the status is down, the reason says why.
            answer.status = .down
            answer.latencyMs = nil
            if page.failure == nil && route == nil {
                answer.message = "Offline: " + verdict.message
            } else if route == nil {
                answer.message = "Offline: no network route"
            } else if verdict.reason == .content {
                answer.message =
                    "Offline" + ConnectivityCheck.via(route) + ": the page did not say '\(settings.expected)' (a captive portal?)"
            } else {
                answer.message = "Offline" + ConnectivityCheck.via(route) + ": " + verdict.message
            }
        }
        // The speed fields are always written in this mode: the sample is Online Now's record.
        var recordTarget = pageTarget
        recordTarget.speedTestBytes = settings.speedBytes
        tally.byStatus[answer.status, default: 0] += 1
        progress?.record(0, answer.status)
        return SampleRecord.encode(
            target: recordTarget, monitor: pageTarget.id, family: settings.family, atMs: atMs, method: "GET",
            verdict: answer, result: page, route: route, online: online, simulatedMs: 0)
    }

    private func fetch(_ request: HTTPRequest) -> HTTPResult? {
        engine.submit(request, token: 0)
        while !Signals.stopRequested {
            if let done = engine.step(timeoutMs: 1000).first { return done.result }
        }
        engine.cancelAll()
        return nil
    }

    private static func via(_ route: NetworkRoute?) -> String {
        guard let route else { return "" }
        return " over \(route.link.rawValue) (\(route.interface))"
    }

    private static func mbps(_ value: Double) -> String {
        var out: [UInt8] = []
        JSONText.appendFixed(value, decimals: 2, to: &out)
        return String(decoding: out, as: UTF8.self) + " Mbps"
    }

    private static func failureWords(_ result: HTTPResult) -> String {
        if result.failure == nil { return "HTTP \(result.httpCode)" }
        let message = result.curlMessage.trimmingSpaces
        return message.hasSuffix(".") ? String(message.dropLast()) : message
    }
}

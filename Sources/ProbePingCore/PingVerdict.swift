import HTTPTransport
import ProbeKit
import VitalsKit

/// Round-trip statistics of one sample, as ping(8) computes them: duplicates and late replies
/// are not counted, and `mdev` is the population standard deviation of the round trips,
/// the square root of (the mean of the squares minus the square of the mean).
struct PingStatistics: Sendable, Equatable {
    /// Echo requests sent.
    private(set) var sent = 0
    /// Replies received (each request's first).
    private(set) var received = 0
    private var sumMs = 0.0
    private var sumSquaresMs = 0.0
    /// The fastest round trip.
    private(set) var minMs: Double?
    /// The slowest round trip.
    private(set) var maxMs: Double?

    /// No requests yet.
    init() {}

    /// Counts one request sent.
    mutating func countSent() { sent += 1 }

    /// Counts one reply with its round trip.
    mutating func add(rttMs: Double) {
        received += 1
        sumMs += rttMs
        sumSquaresMs += rttMs * rttMs
        minMs = min(minMs ?? rttMs, rttMs)
        maxMs = max(maxMs ?? rttMs, rttMs)
    }

    /// The mean round trip; nil with no replies.
    var averageMs: Double? { received > 0 ? sumMs / Double(received) : nil }

    /// ping(8)'s mdev; nil with no replies.
    var mdevMs: Double? {
        guard let average = averageMs else { return nil }
        return (max(0, sumSquaresMs / Double(received) - average * average)).squareRoot()
    }

    /// The share of requests without a reply, 0 to 100; nil when nothing was sent.
    var lossPercent: Double? { sent > 0 ? Double(sent - received) * 100 / Double(sent) : nil }
}

/// Why a ping sample could not measure anything.
enum PingFailure: Sendable, Equatable {
    /// The system refused ICMP sockets; the words say how to allow them.
    case permission(String)
    /// The name did not resolve.
    case dns(String)
    /// Nothing could be sent (no route, no IPv6, a local firewall refusing the send).
    case connect(String)
}

/// The status rules of probe-ping (documented in probe-ping(1), STATUS).
enum PingVerdictRules {
    /// A ping sample's verdict. `icmpError` is the first ICMP error that came back (in ping(8)'s
    /// words), `failure` what stopped the sample before it measured anything.
    static func decide(target: PingTarget, statistics: PingStatistics, failure: PingFailure?, icmpError: String?) -> ProbeVerdict {
        if statistics.received == 0 {
            switch failure {
            case .permission(let words)?: return ProbeVerdict(status: .error, reason: .permission, message: words)
            case .dns(let words)?: return ProbeVerdict(status: .error, reason: .dns, message: words)
            case .connect(let words)?: return ProbeVerdict(status: .error, reason: .connect, message: words)
            case nil: break
            }
            let counts = "0/\(statistics.sent) pings succeeded (0%)"
            if let icmpError { return ProbeVerdict(status: .error, reason: .connect, message: counts + ": " + icmpError) }
            return ProbeVerdict(
                status: .error, reason: .timeout,
                message: counts + ", no reply within " + DurationText.describe(milliseconds: Int64(target.timeoutMs)))
        }
        let average = statistics.averageMs ?? 0
        let loss = statistics.lossPercent ?? 0
        var message: String
        if statistics.received == statistics.sent {
            message = "\(statistics.received)/\(statistics.sent) packets received, avg \(LatencyWords.milliseconds(average))"
        } else {
            let succeeded = Double(statistics.received) * 100 / Double(statistics.sent)
            message =
                "\(statistics.received)/\(statistics.sent) pings succeeded (\(percent(succeeded))), avg \(LatencyWords.milliseconds(average))"
        }
        var verdict: ProbeVerdict
        if loss > target.maxLossPercent {
            verdict = ProbeVerdict(status: .down, reason: .loss, message: message + "; over \(percent(target.maxLossPercent)) lost")
        } else if average > target.degradedThresholdMs {
            verdict = ProbeVerdict(
                status: .down, reason: .latency, message: message + ", above \(plainNumber(target.degradedThresholdMs))ms")
        } else if average > target.okThresholdMs {
            verdict = ProbeVerdict(status: .degraded, reason: .latency, message: message + ", above \(plainNumber(target.okThresholdMs))ms")
        } else {
            verdict = ProbeVerdict(status: .up, reason: nil, message: message)
        }
        if let icmpError, statistics.received < statistics.sent { verdict.message += " (\(icmpError))" }
        verdict.latencyMs = average
        return verdict
    }

    /// A TCP sample's verdict: the connection (and handshake) made or not, the certificate's
    /// expiry for TLS as probe-http's `ssl` kind judges it, and the thresholds on the connect time.
    static func decideTCP(target: PingTarget, result: HTTPResult, nowSeconds: Int64) -> ProbeVerdict {
        let connectMs = max(0, result.timings.connect - result.timings.nameLookup)
        var verdict: ProbeVerdict
        if let failure = result.failure {
            let expiry = CertificateExpiry(expiries: result.certificateExpiries, nowSeconds: nowSeconds)
            if target.tls, expiry.refusedHandshake(result) {
                verdict = ProbeVerdict(status: .down, reason: .certExpiry, message: expiry.message)
            } else {
                verdict = ProbeVerdict(
                    status: .error, reason: TransportRules.reason(for: failure),
                    message: TransportRules.message(
                        failure, result: result, host: target.host, port: target.port ?? 0,
                        tls: target.tls, timeoutMs: target.timeoutMs, maxRedirects: 0))
            }
            if target.tls { verdict.tlsExpiryDays = expiry.days }
        } else if target.tls {
            verdict = decideHandshake(target: target, result: result, nowSeconds: nowSeconds, connectMs: connectMs)
        } else {
            let endpoint = result.remoteIP ?? target.host
            verdict = ProbeVerdict(
                status: .up, reason: nil,
                message: "Connected to \(endpoint) port \(target.port ?? 0) in \(LatencyWords.milliseconds(connectMs))")
        }
        guard result.failure == nil, result.timings.connect > 0 else { return verdict }
        verdict.latencyMs = connectMs
        if verdict.status.severity < SampleStatus.down.severity {
            if connectMs > target.degradedThresholdMs {
                verdict.status = .down
                verdict.reason = .latency
                verdict.message += ", above \(plainNumber(target.degradedThresholdMs))ms"
            } else if connectMs > target.okThresholdMs, verdict.status == .up {
                verdict.status = .degraded
                verdict.reason = .latency
                verdict.message += ", above \(plainNumber(target.okThresholdMs))ms"
            }
        }
        return verdict
    }

    /// A completed TLS handshake: the certificate's expiry against the target's days, as
    /// probe-http's `ssl` kind judges it (no certificate at all is an error).
    private static func decideHandshake(target: PingTarget, result: HTTPResult, nowSeconds: Int64, connectMs: Double) -> ProbeVerdict {
        let expiry = CertificateExpiry(expiries: result.certificateExpiries, nowSeconds: nowSeconds)
        let latency = result.timings.appConnect > 0 ? result.timings.appConnect : result.timings.total
        var verdict: ProbeVerdict
        if let days = expiry.days {
            if let status = expiry.status(okDays: target.sslOkDays, warningDays: target.sslWarningDays) {
                verdict = ProbeVerdict(status: status, reason: .certExpiry, message: expiry.message, latencyMs: latency)
            } else {
                let handshake = max(0, result.timings.appConnect - result.timings.connect)
                let words =
                    "Connected in \(LatencyWords.milliseconds(connectMs)), TLS in \(LatencyWords.milliseconds(handshake)); "
                    + "certificate valid for \(days) more days"
                verdict = ProbeVerdict(status: .up, reason: nil, message: words, latencyMs: latency)
            }
        } else {
            verdict = ProbeVerdict(status: .error, reason: .tls, message: "No certificate received", latencyMs: latency)
        }
        verdict.tlsExpiryDays = expiry.days
        return verdict
    }

    /// `60%`, `66.7%`.
    static func percent(_ value: Double) -> String {
        let tenths = (value * 10).rounded()
        if tenths.truncatingRemainder(dividingBy: 10) == 0 { return "\(Int(tenths / 10))%" }
        return "\(Int(tenths) / 10).\(Int(tenths) % 10)%"
    }
}

import HTTPTransport
import VitalsCrypto
import VitalsKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one probe concluded: the status and why, in the vocabulary of `vitals-records(7)`.
public struct Verdict: Sendable, Equatable {
    /// The sample's status.
    public var status: SampleStatus
    /// Why it is not `up` (nil when up).
    public var reason: SampleReason?
    /// In words, like OnlineTracker's `details`.
    public var message: String
    /// Time to the first response byte, the simulated addition included (nil when no response).
    public var latencyMs: Double?
    /// Days until the earliest certificate in the chain expires (negative when expired).
    public var tlsExpiryDays: Int?
    /// Download speed of a speed test.
    public var speedMbps: Double?
    /// How much to trust `speedMbps`.
    public var speedConfidence: String?
    /// The bytes the speed was measured over.
    public var speedBytes: Int?

    /// Creates a verdict.
    public init(status: SampleStatus, reason: SampleReason?, message: String, latencyMs: Double? = nil) {
        self.status = status
        self.reason = reason
        self.message = message
        self.latencyMs = latencyMs
    }
}

/// The rules that turn a response into a verdict (documented in probe-http(1), STATUS).
public enum VerdictRules {
    /// OpenSSL's X509_V_ERR_CERT_HAS_EXPIRED.
    public static let certificateExpiredCode = 10

    /// The highest speed reported (Online Now caps its figure to avoid outliers).
    public static let speedCapMbps = 1000.0

    /// Decides the verdict of a probe.
    /// - Parameters:
    ///   - result: the answering request's result.
    ///   - method: the method that answered.
    ///   - fallbackNote: why GET was used after HEAD, if it was.
    ///   - inspection: a certificate-only handshake made after a verification failure.
    ///   - nowSeconds: the time certificates are judged against.
    ///   - simulatedMs: isitup's debug latency added to the measurement.
    public static func decide(target: Target, result: HTTPResult, method: String, fallbackNote: String?,
                              inspection: HTTPResult?, nowSeconds: Int64, simulatedMs: Double) -> Verdict {
        let expiries = (inspection?.certificateExpiries.isEmpty == false ? inspection!.certificateExpiries : result.certificateExpiries)
        let earliest = expiries.min()
        let expiryDays = earliest.map { Int(floorDivide($0 - nowSeconds, 86_400)) }
        let expired = earliest.map { $0 <= nowSeconds } ?? false

        if let failure = result.failure {
            // A handshake refused only because the certificate expired is a server answering wrongly: down.
            if failure == .tls, target.kind != .http,
               result.verifyResult == certificateExpiredCode || (expired && result.curlCode == 60) {
                var verdict = Verdict(status: .down, reason: .certExpiry, message: expiryMessage(earliest: earliest, days: expiryDays, now: nowSeconds))
                verdict.tlsExpiryDays = expiryDays
                return verdict
            }
            var verdict = Verdict(status: .error, reason: reason(for: failure), message: transportMessage(failure, result: result, target: target))
            if let fallbackNote { verdict.message += " (\(method) after \(fallbackNote))" }
            verdict.tlsExpiryDays = target.kind == .http ? nil : expiryDays
            return verdict
        }

        let latency: Double
        if target.kind == .ssl {
            latency = result.timings.appConnect > 0 ? result.timings.appConnect : result.timings.total
        } else {
            latency = result.timings.startTransfer > 0 ? result.timings.startTransfer : result.timings.total
        }
        let measured = latency + simulatedMs
        var findings: [(SampleStatus, SampleReason, String)] = []

        if target.kind != .ssl {
            if !target.expectedStatus.contains(result.httpCode) {
                findings.append((.down, .httpStatus, "HTTP \(result.httpCode), expected \(target.expectedStatus)"))
            }
            if let content = target.expectedContent, findings.isEmpty {
                if !contains(result.body, Array(content.utf8)) {
                    if result.stoppedAtLimit {
                        findings.append((.down, .tooLarge, "Expected content not found in the first \(SizeWords.describe(result.body.count)) of the body (raise --max-body)"))
                    } else {
                        let shown = content.count > 50 ? String(content.prefix(50)) + "..." : content
                        findings.append((.down, .content, "Expected content not found: '\(shown)'"))
                    }
                }
            }
            if let expectedHash = target.expectedBodyHash, findings.isEmpty {
                if result.stoppedAtLimit {
                    findings.append((.down, .tooLarge, "Body is larger than \(SizeWords.describe(result.body.count)); cannot check its hash (raise --max-body)"))
                } else {
                    let actual = SHA256.hexDigest(result.body)
                    if actual != expectedHash {
                        findings.append((.down, .bodyHash, "Response body changed: sha256 \(actual.prefix(12))..., expected \(expectedHash.prefix(12))..."))
                    }
                }
            }
        }
        if target.kind != .http, let days = expiryDays {
            if expired || days < target.sslWarningDays {
                findings.append((.down, .certExpiry, expiryMessage(earliest: earliest, days: days, now: nowSeconds)))
            } else if days < target.sslOkDays {
                findings.append((.degraded, .certExpiry, expiryMessage(earliest: earliest, days: days, now: nowSeconds)))
            }
        } else if target.kind == .ssl {
            findings.append((.error, .tls, "No certificate received"))
        }
        if let degraded = target.degradedThresholdMs, measured > degraded {
            findings.append((.down, .latency, "Very high latency: \(milliseconds(measured))"))
        } else if let ok = target.okThresholdMs, measured > ok {
            findings.append((.degraded, .latency, "High latency: \(milliseconds(measured))"))
        }

        var verdict: Verdict
        if let worst = findings.max(by: { $0.0.severity < $1.0.severity }),
           let first = findings.first(where: { $0.0 == worst.0 }) {
            verdict = Verdict(status: first.0, reason: first.1, message: first.2, latencyMs: measured)
        } else if target.kind == .ssl {
            verdict = Verdict(status: .up, reason: nil, message: "Certificate valid for \(expiryDays ?? 0) more days", latencyMs: measured)
        } else {
            verdict = Verdict(status: .up, reason: nil, message: "HTTP \(result.httpCode) in \(milliseconds(measured))", latencyMs: measured)
        }
        if let fallbackNote { verdict.message += " (\(method) after \(fallbackNote))" }
        verdict.tlsExpiryDays = target.kind == .http ? nil : expiryDays

        if target.speedTestBytes != nil {
            let seconds = max(0, result.timings.total - result.timings.preTransfer) / 1000
            let (speed, confidence) = speed(bytes: result.bodyBytes, seconds: seconds)
            verdict.speedMbps = speed
            verdict.speedConfidence = confidence
            verdict.speedBytes = result.bodyBytes
            if let speed { verdict.message += ", \(format2(speed)) Mbps" }
        }
        return verdict
    }

    /// Online Now's speed: bytes × 8 / 10⁶ / seconds, capped at 1000 Mbps, with a confidence:
    /// `high` for at least 1 MiB over at least 0.5 s, `low` under 256 KiB, under 50 ms, or at the
    /// cap, `medium` otherwise. Nil speed when nothing was timed.
    public static func speed(bytes: Int, seconds: Double) -> (Double?, String?) {
        guard bytes > 0, seconds > 0 else { return (nil, bytes > 0 ? "low" : nil) }
        let raw = Double(bytes) * 8 / 1_000_000 / seconds
        let capped = min(raw, speedCapMbps)
        let confidence: String
        if bytes < 256 * 1024 || seconds < 0.05 || raw >= speedCapMbps {
            confidence = "low"
        } else if bytes >= 1024 * 1024 && seconds >= 0.5 {
            confidence = "high"
        } else {
            confidence = "medium"
        }
        return (capped, confidence)
    }

    /// The reason a transport failure maps to.
    public static func reason(for failure: TransportFailure) -> SampleReason {
        switch failure {
        case .dns: return .dns
        case .connect: return .connect
        case .reset: return .reset
        case .tls: return .tls
        case .timeout: return .timeout
        case .redirects: return .redirects
        case .tooLarge: return .tooLarge
        case .protocol: return .protocol
        }
    }

    /// A transport failure in words: `Connection refused by HOST port N`, `Request timeout after 5s (connecting)`.
    public static func transportMessage(_ failure: TransportFailure, result: HTTPResult, target: Target) -> String {
        let timings = result.timings
        switch failure {
        case .dns:
            return "DNS lookup failed for \(target.host)"
        case .connect:
            let endpoint = "\(target.host) port \(target.port)"
            switch Int32(result.osErrno) {
            case ECONNREFUSED: return "Connection refused by \(endpoint)"
            case ENETUNREACH: return "Network unreachable for \(endpoint)"
            case EHOSTUNREACH: return "Host unreachable: \(endpoint)"
            case EADDRNOTAVAIL: return "No usable address for \(endpoint)"
            default: return "Connection failed: " + trimCurl(result.curlMessage)
            }
        case .reset:
            return "Connection reset by the server"
        case .tls:
            return "TLS failed: " + trimCurl(result.curlMessage)
        case .timeout:
            let phase: String
            if timings.nameLookup == 0 { phase = "resolving the name" }
            else if timings.connect == 0 { phase = "connecting" }
            else if target.kind != .http && timings.appConnect == 0 { phase = "in the TLS handshake" }
            else if timings.startTransfer == 0 { phase = "waiting for the response" }
            else { phase = "reading the response" }
            return "Request timeout after \(DurationText.describe(milliseconds: Int64(target.timeoutMs))) (\(phase))"
        case .redirects:
            return "Too many redirects (more than \(target.maxRedirects))"
        case .tooLarge:
            return "Response headers larger than \(SizeWords.describe(256 * 1024))"
        case .protocol:
            if result.curlCode == 52 { return "Empty reply from the server" }
            if result.curlCode == 8 || result.curlCode == 1 { return "Not an HTTP response: " + trimCurl(result.curlMessage) }
            return "Protocol error: " + trimCurl(result.curlMessage)
        }
    }

    private static func trimCurl(_ message: String) -> String {
        var text = message.trimmingSpaces
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    static func expiryMessage(earliest: Int64?, days: Int?, now: Int64) -> String {
        guard let earliest, let days else { return "Certificate expiry unknown" }
        if earliest <= now {
            return "Certificate expired at " + Timestamp.formatSeconds(milliseconds: earliest * 1000)
        }
        return "Certificate expires in \(days) day\(days == 1 ? "" : "s")"
    }

    /// `25ms`, `4.2ms`, `0.033ms` (below a millisecond three places, as ping(8) writes them), `1234ms`.
    public static func milliseconds(_ value: Double) -> String {
        if value < 10 {
            var out: [UInt8] = []
            JSONText.appendFixed(value, decimals: value < 1 ? 3 : 1, to: &out)
            return String(decoding: out, as: UTF8.self) + "ms"
        }
        return "\(Int(value.rounded()))ms"
    }

    private static func format2(_ value: Double) -> String {
        var out: [UInt8] = []
        JSONText.appendFixed(value, decimals: 2, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == first {
                var match = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    match = false
                    break
                }
                if match { return true }
            }
            index += 1
        }
        return false
    }
}

/// Sizes in words: `1 MiB`, `512 KiB`, `300 bytes`.
public enum SizeWords {
    /// A short description of `bytes`.
    public static func describe(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

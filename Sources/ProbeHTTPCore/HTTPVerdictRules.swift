import HTTPTransport
import ProbeKit
import VitalsCrypto
import VitalsKit

/// The rules that turn a response into a verdict (documented in probe-http(1), STATUS).
enum HTTPVerdictRules {
    /// The highest speed reported (Online Now caps its figure to avoid outliers).
    static let speedCapMbps = 1000.0

    /// Decides the verdict of a probe.
    /// - Parameters:
    ///   - result: the answering request's result.
    ///   - method: the method that answered.
    ///   - fallbackNote: why GET was used after HEAD, if it was.
    ///   - inspection: a certificate-only handshake made after a verification failure.
    ///   - nowSeconds: the time certificates are judged against.
    ///   - simulatedMs: isitup's debug latency added to the measurement.
    static func decide(
        target: Target, result: HTTPResult, method: String, fallbackNote: String?,
        inspection: HTTPResult?, nowSeconds: Int64, simulatedMs: Double
    ) -> ProbeVerdict {
        let expiry = CertificateExpiry(
            expiries: inspection?.certificateExpiries.isEmpty == false ? inspection!.certificateExpiries : result.certificateExpiries,
            nowSeconds: nowSeconds)
        let expiryDays = expiry.days

        if let failure = result.failure {
            // A handshake refused only because the certificate expired is a server answering wrongly: down.
            if target.kind != .http, expiry.refusedHandshake(result) {
                var verdict = ProbeVerdict(status: .down, reason: .certExpiry, message: expiry.message)
                verdict.tlsExpiryDays = expiryDays
                return verdict
            }
            var verdict = ProbeVerdict(
                status: .error, reason: TransportRules.reason(for: failure),
                message: transportMessage(failure, result: result, target: target))
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
            let inspection = result.inspection ?? BodyInspection(bytes: 0, contentFound: false, digest: nil)
            if let content = target.expectedContent, findings.isEmpty {
                if !inspection.contentFound {
                    if result.stoppedAtLimit {
                        findings.append(
                            (
                                .down, .tooLarge,
                                "Expected content not found in the first \(SizeWords.describe(inspection.bytes)) of the body (raise --max-body)"
                            ))
                    } else {
                        let shown = content.count > 50 ? String(content.prefix(50)) + "..." : content
                        findings.append((.down, .content, "Expected content not found: '\(shown)'"))
                    }
                }
            }
            if let expectedHash = target.expectedBodyHash, findings.isEmpty {
                if result.stoppedAtLimit {
                    findings.append(
                        (
                            .down, .tooLarge,
                            "Body is larger than \(SizeWords.describe(inspection.bytes)); cannot check its hash (raise --max-body)"
                        ))
                } else {
                    let isMD5 = expectedHash.count == 32
                    let actual = inspection.digest ?? ""

                    if actual != expectedHash {
                        findings.append(
                            (
                                .down, .bodyHash,
                                "Response body changed: \(isMD5 ? "md5" : "sha256") \(actual.prefix(12))..., expected \(expectedHash.prefix(12))..."
                            ))
                    }
                }
            }
        }
        if target.kind != .http, expiryDays != nil {
            if let status = expiry.status(okDays: target.sslOkDays, warningDays: target.sslWarningDays) {
                findings.append((status, .certExpiry, expiry.message))
            }
        } else if target.kind == .ssl {
            findings.append((.error, .tls, "No certificate received"))
        }
        if let degraded = target.degradedThresholdMs, measured > degraded {
            findings.append((.down, .latency, "Very high latency: \(LatencyWords.milliseconds(measured))"))
        } else if let ok = target.okThresholdMs, measured > ok {
            findings.append((.degraded, .latency, "High latency: \(LatencyWords.milliseconds(measured))"))
        }

        var verdict: ProbeVerdict
        if let worst = findings.max(by: { $0.0.severity < $1.0.severity }),
            let first = findings.first(where: { $0.0 == worst.0 })
        {
            verdict = ProbeVerdict(status: first.0, reason: first.1, message: first.2, latencyMs: measured)
        } else if target.kind == .ssl {
            verdict = ProbeVerdict(
                status: .up, reason: nil, message: "Certificate valid for \(expiryDays ?? 0) more days", latencyMs: measured)
        } else {
            verdict = ProbeVerdict(
                status: .up, reason: nil, message: "HTTP \(result.httpCode) in \(LatencyWords.milliseconds(measured))", latencyMs: measured)
        }
        if let fallbackNote { verdict.message += " (\(method) after \(fallbackNote))" }
        verdict.tlsExpiryDays = target.kind == .http ? nil : expiryDays

        if target.speedTestBytes != nil {
            // Online Now times its download from the request's start to its last byte (Date()
            // around URLSession's data(from:)): the name, the connection and the wait included.
            let seconds = max(0, result.timings.total) / 1000
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
    static func speed(bytes: Int, seconds: Double) -> (Double?, String?) {
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

    /// A transport failure in words, for `target`.
    static func transportMessage(_ failure: TransportFailure, result: HTTPResult, target: Target) -> String {
        TransportRules.message(
            failure, result: result, host: target.host, port: target.port, tls: target.kind != .http,
            timeoutMs: target.timeoutMs, maxRedirects: target.maxRedirects)
    }

    private static func format2(_ value: Double) -> String {
        var out: [UInt8] = []
        JSONText.appendFixed(value, decimals: 2, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

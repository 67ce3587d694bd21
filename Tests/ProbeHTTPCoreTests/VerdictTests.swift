import HTTPTransport
import Testing
import VitalsKit

@testable import ProbeHTTPCore
@testable import ProbeKit

func response(
    code: Int = 200, ttfb: Double = 20, body: String = "", failure: TransportFailure? = nil,
    curlCode: Int = 0, verify: Int = 0, expiries: [Int64] = [], stopped: Bool = false
) -> HTTPResult {
    var result = HTTPResult()
    result.httpCode = code
    result.timings.nameLookup = 1
    result.timings.connect = 2
    result.timings.preTransfer = 3
    result.timings.startTransfer = ttfb
    result.timings.total = ttfb + 1
    result.body = Array(body.utf8)
    result.bodyBytes = result.body.count
    result.failure = failure
    result.curlCode = curlCode
    result.verifyResult = verify
    result.certificateExpiries = expiries
    result.stoppedAtLimit = stopped
    return result
}

let now: Int64 = 1_800_000_000
let day: Int64 = 86_400

func decide(_ target: Target, _ result: HTTPResult, simulated: Double = 0) -> ProbeVerdict {
    HTTPVerdictRules.decide(
        target: target, result: result, method: "GET", fallbackNote: nil, inspection: nil, nowSeconds: now, simulatedMs: simulated)
}

@Suite("status mapping")
struct VerdictTests {
    let http = Target(id: "a", name: "a", url: "http://a.example/", kind: .http)
    let https = Target(id: "b", name: "b", url: "https://b.example/", kind: .https)

    @Test("an expected status is up; others are down/http_status")
    func statusCodes() {
        #expect(decide(http, response(code: 200)).status == .up)
        #expect(decide(http, response(code: 399)).status == .up)
        let down = decide(http, response(code: 404))
        #expect(down.status == .down && down.reason == .httpStatus && down.message == "HTTP 404, expected 200-399")
    }

    @Test(
        "transport failures are error with their reason",
        arguments: [
            (TransportFailure.dns, SampleReason.dns), (.connect, .connect), (.reset, .reset), (.tls, .tls),
            (.timeout, .timeout), (.redirects, .redirects), (.tooLarge, .tooLarge), (.protocol, .protocol),
        ])
    func failures(failure: TransportFailure, reason: SampleReason) {
        let verdict = decide(http, response(code: 0, failure: failure))
        #expect(verdict.status == .error)
        #expect(verdict.reason == reason)
        #expect(verdict.latencyMs == nil)
    }

    @Test("thresholds: at the ok threshold is up, above it degraded, above the degraded threshold down")
    func thresholds() {
        var target = http
        target.okThresholdMs = 80
        target.degradedThresholdMs = 200
        #expect(decide(target, response(ttfb: 80)).status == .up)
        #expect(decide(target, response(ttfb: 80.5)).status == .degraded)
        #expect(decide(target, response(ttfb: 200)).status == .degraded)
        let down = decide(target, response(ttfb: 201))
        #expect(down.status == .down && down.reason == .latency && down.message == "Very high latency: 201ms")
        #expect(decide(target, response(ttfb: 50), simulated: 100).status == .degraded, "simulated latency counts")
    }

    @Test("certificates: days ≥ ok up, ≥ warning degraded, below or expired down")
    func certificates() {
        #expect(decide(https, response(expiries: [now + 30 * day])).status == .up)
        let degraded = decide(https, response(expiries: [now + 29 * day + 100, now + 400 * day]))
        #expect(degraded.status == .degraded && degraded.tlsExpiryDays == 29, "the earliest certificate counts")
        #expect(decide(https, response(expiries: [now + 14 * day])).status == .degraded)
        #expect(decide(https, response(expiries: [now + 13 * day])).status == .down)
        let expired = decide(https, response(expiries: [now - 3 * day]))
        #expect(expired.status == .down && expired.tlsExpiryDays == -3)
        #expect(expired.message == "Certificate expired at " + Timestamp.formatSeconds(milliseconds: (now - 3 * day) * 1000))
    }

    @Test("a handshake refused for an expired certificate is down/cert_expiry, not error")
    func expiredHandshake() {
        let verdict = decide(
            https,
            response(
                code: 0, failure: .tls, curlCode: 60, verify: CertificateExpiry.expiredVerifyCode,
                expiries: [now - day - 5]))
        #expect(verdict.status == .down && verdict.reason == .certExpiry)
        let untrusted = decide(https, response(code: 0, failure: .tls, curlCode: 60, verify: 18, expiries: [now + 90 * day]))
        #expect(untrusted.status == .error && untrusted.reason == .tls && untrusted.tlsExpiryDays == 90)
    }

    @Test("content, hash and truncation")
    func bodyChecks() {
        // What the transfer's inspection of the body found (BodyInspectorTests check the finding itself).
        func inspected(found: Bool = true, digest: String? = nil, stopped: Bool = false) -> HTTPResult {
            var result = response(body: "", stopped: stopped)
            result.inspection = BodyInspection(bytes: 14, contentFound: found, digest: digest)
            return result
        }
        var target = http
        target.expectedContent = "needle"
        #expect(decide(target, inspected(found: true)).status == .up)
        #expect(decide(target, inspected(found: false)).reason == .content)
        let cut = decide(target, inspected(found: false, stopped: true))
        #expect(cut.reason == .tooLarge && cut.message == "Expected content not found in the first 14 bytes of the body (raise --max-body)")
        target.expectedContent = nil
        let sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        target.expectedBodyHash = sha
        #expect(decide(target, inspected(digest: sha)).status == .up)
        let changed = decide(target, inspected(digest: "0" + sha.dropFirst()))
        #expect(changed.reason == .bodyHash && changed.message == "Response body changed: sha256 0a7816bf8f01..., expected ba7816bf8f01...")
        #expect(decide(target, inspected(digest: sha, stopped: true)).reason == .tooLarge)
    }

    @Test("the worst finding wins; among equals the first in rule order")
    func precedence() {
        var target = https
        target.okThresholdMs = 10
        let both = decide(target, response(ttfb: 50, expiries: [now + 20 * day]))
        #expect(both.status == .degraded && both.reason == .certExpiry)
        target.degradedThresholdMs = 20
        #expect(decide(target, response(ttfb: 50, expiries: [now + 20 * day])).reason == .latency, "down beats degraded")
    }

    @Test("speed: Online Now's formula, capped at 1000, with a confidence")
    func speed() {
        let (mbps, confidence) = HTTPVerdictRules.speed(bytes: 512_000, seconds: 0.5)
        #expect(mbps == 8.192 && confidence == "medium")
        #expect(HTTPVerdictRules.speed(bytes: 2_000_000, seconds: 1).1 == "high")
        #expect(HTTPVerdictRules.speed(bytes: 100_000, seconds: 1).1 == "low")
        #expect(HTTPVerdictRules.speed(bytes: 512_000_000, seconds: 1) == (1000, "low"))
        #expect(HTTPVerdictRules.speed(bytes: 0, seconds: 1).0 == nil)
    }
}

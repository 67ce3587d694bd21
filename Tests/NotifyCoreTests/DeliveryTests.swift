import HTTPTransport
import Testing
import VitalsKit

@testable import NotifyCore

/// How an answer is judged and when a delivery is tried again, from notify(1), DELIVERY:
/// "retried on network errors and on 408, 425, 429 and 5xx answers (SMTP: 4xx replies), after
/// 1, 2, 4, ... seconds (at most 5 minutes) with jitter, or after the server's Retry-After";
/// "Other answers (a 4xx, a refused login, a certificate that does not verify) fail for good".
@Suite("delivery: judgements and the retry schedule")
struct DeliveryTests {
    static func answer(_ code: Int, body: String = "", headers: [String] = []) -> HTTPResult {
        var result = HTTPResult()
        result.httpCode = code
        result.body = Array(body.utf8)
        result.responseHeaders = headers
        return result
    }

    @Test("HTTP: 2xx accepted; 408, 425, 429 and 5xx retried; other answers refused for good")
    func httpStatuses() {
        for code in [200, 201, 202, 204, 299] {
            #expect(HTTPJudgement.standard(Self.answer(code), nowMs: 0) == .accepted(code: code))
        }
        for code in [408, 425, 429, 500, 502, 503, 599] {
            guard case .retry(let got, _, let after) = HTTPJudgement.standard(Self.answer(code), nowMs: 0) else {
                Issue.record("\(code) is retried")
                continue
            }
            #expect(got == code)
            #expect(after == nil, "no Retry-After: the backoff decides")
        }
        for code in [301, 304, 400, 401, 403, 404, 410, 413, 422, 451] {
            guard case .failed(let got, _) = HTTPJudgement.standard(Self.answer(code), nowMs: 0) else {
                Issue.record("\(code) fails for good")
                continue
            }
            #expect(got == code)
        }
    }

    @Test("a network error is retried, with curl's words")
    func networkError() {
        var result = HTTPResult()
        result.failure = .connect
        result.curlMessage = "Couldn't connect to server"
        #expect(
            HTTPJudgement.standard(result, nowMs: 0)
                == .retry(code: nil, error: "connect: Couldn't connect to server", afterMs: nil))
    }

    @Test("the error says the status and the body's first line, at most 200 bytes")
    func errorWords() {
        #expect(
            HTTPJudgement.standard(Self.answer(400, body: "  bad payload \nsecond line"), nowMs: 0)
                == .failed(code: 400, error: "HTTP 400: bad payload"))
        #expect(HTTPJudgement.standard(Self.answer(404), nowMs: 0) == .failed(code: 404, error: "HTTP 404"))
        let long = String(repeating: "x", count: 300)
        #expect(
            HTTPJudgement.standard(Self.answer(400, body: long), nowMs: 0)
                == .failed(code: 400, error: "HTTP 400: " + String(repeating: "x", count: 200)))
    }

    @Test("Retry-After: delta-seconds, or an HTTP date counted from now; a past date is now; anything else is ignored")
    func retryAfter() {
        // RFC 9110 10.2.3: delay-seconds or an HTTP-date.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"  // 784111777 s since the epoch (date -d ... +%s)
        let now: Int64 = 784_111_777_000 - 90_000
        func after(_ value: String) -> Int64? {
            HTTPJudgement.retryAfter(Self.answer(503, headers: ["Retry-After: \(value)"]), nowMs: now)
        }
        #expect(after("120") == 120_000)
        #expect(after("0") == 0)
        #expect(after(date) == 90_000)
        #expect(HTTPJudgement.retryAfter(Self.answer(503, headers: ["retry-after:  7 "]), nowMs: 0) == 7_000, "names are case-insensitive")
        #expect(HTTPJudgement.retryAfter(Self.answer(503, headers: ["Retry-After: \(date)"]), nowMs: 784_111_777_000 + 5_000) == 0)
        // RFC 9111 1.2.2: a delta-seconds greater than the greatest integer a recipient can
        // represent is taken as 2^31 seconds. A server's huge value is no crash.
        #expect(after("99999999999999999999") == 2_147_483_648_000)
        #expect(after("1e300") == 2_147_483_648_000)
        #expect(after("-5") == nil)
        #expect(after("soon") == nil)
        #expect(HTTPJudgement.retryAfter(Self.answer(503), nowMs: now) == nil)
        // The verdict carries it.
        #expect(
            HTTPJudgement.standard(Self.answer(429, headers: ["Retry-After: 30"]), nowMs: now)
                == .retry(code: 429, error: "HTTP 429", afterMs: 30_000))
    }

    @Test("commands: exit 0 accepted, 75 (EX_TEMPFAIL) retried, anything else or a signal refused")
    func commands() {
        #expect(ProcessJudgement.sysexits(ProcessOutcome(exitStatus: 0)) == .accepted(code: 0))
        #expect(
            ProcessJudgement.sysexits(ProcessOutcome(exitStatus: 75, error: "busy"))
                == .retry(code: 75, error: "exit status 75: busy", afterMs: nil))
        #expect(ProcessJudgement.sysexits(ProcessOutcome(exitStatus: 1)) == .failed(code: 1, error: "exit status 1"))
        #expect(ProcessJudgement.sysexits(ProcessOutcome(exitStatus: 64)) == .failed(code: 64, error: "exit status 64"))
        #expect(
            ProcessJudgement.sysexits(ProcessOutcome(exitStatus: nil, error: "killed by signal 9"))
                == .failed(code: nil, error: "killed by signal 9"))
    }

    @Test("the backoff: the upper half of 1 s, 2 s, 4 s, ... after the 1st, 2nd, 3rd attempt, at most 5 minutes")
    func backoff() {
        // 2^(n-1) s for the nth attempt; jitter takes a random part of the upper half.
        #expect(Dispatcher.backoffRange(attempts: 1) == 500...1_000)
        #expect(Dispatcher.backoffRange(attempts: 2) == 1_000...2_000)
        #expect(Dispatcher.backoffRange(attempts: 3) == 2_000...4_000)
        #expect(Dispatcher.backoffRange(attempts: 5) == 8_000...16_000)
        // 2^8 = 256 s, still under 5 minutes; 2^9 = 512 s is capped at 300 s.
        #expect(Dispatcher.backoffRange(attempts: 9) == 128_000...256_000)
        #expect(Dispatcher.backoffRange(attempts: 10) == 150_000...300_000)
        #expect(Dispatcher.backoffRange(attempts: 1_000) == 150_000...300_000, "no overflow however many attempts")
        // Attempts carried over from an earlier run count: the 4th attempt overall waits 4 to 8 s.
        #expect(Dispatcher.backoffRange(attempts: 4) == 4_000...8_000)
    }

    @Test("give up: a retry due more than --give-up-after after the first attempt fails for good instead")
    func giveUp() {
        let day: Int64 = 86_400_000
        // First attempt at 0, refused at 23h53m20s, next try 400 s later: exactly 24 h, still tried.
        #expect(!Dispatcher.givesUp(first: 0, now: 86_000_000, delay: 400_000, giveUpMs: day))
        // One millisecond later than 24 h: given up.
        #expect(Dispatcher.givesUp(first: 0, now: 86_000_000, delay: 400_001, giveUpMs: day))
        // The first attempt's time is from the wall clock, which earlier runs kept in the state.
        #expect(Dispatcher.givesUp(first: 1_000, now: 1_000 + day, delay: 1, giveUpMs: day))
        #expect(!Dispatcher.givesUp(first: nil, now: 10 * day, delay: 300_000, giveUpMs: day), "never tried: nothing to give up")
    }

    @Test("mail: SMTP 4xx replies retried, 5xx and a refused login or TLS refused for good")
    func mail() throws {
        let channel = try MailChannel(try ChannelURL("mailto://u:${PW}@smtp.example.com?to=ops@example.com", environment: ["PW": "x"]))
        let box = StateBox(NotifyState())
        func judged(curl: Int, code: Int, failure: TransportFailure? = nil) -> DeliveryVerdict {
            var result = HTTPResult()
            result.curlCode = curl
            result.httpCode = code
            result.failure = failure
            result.curlMessage = "words"
            return channel.judge(result, leg: nil, state: box, nowMs: 0)
        }
        #expect(judged(curl: 0, code: 250) == .accepted(code: 250))
        // curl 56 (receive error) with a 451 reply: transient.
        #expect(judged(curl: 56, code: 451) == .retry(code: 451, error: "words", afterMs: nil))
        #expect(judged(curl: 55, code: 550) == .failed(code: 550, error: "words"))
        // curl 67: login denied; curl 64: STARTTLS required and not offered.
        guard case .failed = judged(curl: 67, code: 535) else {
            Issue.record("a refused login fails for good")
            return
        }
        guard case .failed = judged(curl: 64, code: 0) else {
            Issue.record("no STARTTLS fails for good")
            return
        }
        guard case .failed = judged(curl: 60, code: 0, failure: .tls) else {
            Issue.record("a bad certificate fails for good")
            return
        }
        #expect(judged(curl: 7, code: 0, failure: .connect) == .retry(code: nil, error: "words", afterMs: nil))
    }
}

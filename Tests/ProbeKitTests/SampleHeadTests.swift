import Testing
import VitalsKit

@testable import ProbeKit

/// The leading fields both probes write, compared byte for byte with records written by hand.
@Suite("a sample's leading fields")
struct SampleHeadTests {
    /// 1,700,000,000 seconds after 1970 is 2023-11-14 22:13:20 UTC; plus 123 ms.
    let atMs: Int64 = 1_700_000_000_123

    @Test("probe-http's: every leading field in vitals-records(7)'s order, quotes, backslashes and control bytes escaped")
    func httpHead() {
        let verdict = ProbeVerdict(status: .down, reason: .httpStatus, message: "HTTP 503, expected \"200-399\"")
        var record = SampleHead.begin(
            monitor: "api/ipv4", name: "say \"hi\"\\now é", kind: "https",
            target: "https://h.example/?q=a\tb\u{1}", atMs: atMs, method: "HEAD", verdict: verdict, capacity: 64)
        let written = String(decoding: record.finish(), as: UTF8.self)
        let expected =
            #"{"type":"sample","monitor":"api/ipv4","name":"say \"hi\"\\now é","kind":"https","#
            + #""target":"https://h.example/?q=a\tb\u0001","at":"2023-11-14T22:13:20.123Z","method":"HEAD","#
            + #""status":"down","reason":"http_status","message":"HTTP 503, expected \"200-399\""}"#
        #expect(written == expected)
    }

    @Test("probe-ping's: no method field, and a null reason when up")
    func pingHead() {
        let verdict = ProbeVerdict(status: .up, reason: nil, message: "3/3 packets received, avg 0.041ms", latencyMs: 0.041)
        var record = SampleHead.begin(
            monitor: "ping-::1", name: "line\nbreak", kind: "ping", target: "::1",
            atMs: atMs, method: nil, verdict: verdict, capacity: 64)
        let written = String(decoding: record.finish(), as: UTF8.self)
        let expected =
            #"{"type":"sample","monitor":"ping-::1","name":"line\nbreak","kind":"ping","target":"::1","#
            + #""at":"2023-11-14T22:13:20.123Z","status":"up","reason":null,"message":"3/3 packets received, avg 0.041ms"}"#
        #expect(written == expected)
    }
}

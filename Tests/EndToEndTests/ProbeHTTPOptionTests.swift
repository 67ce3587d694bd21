import FixtureServer
import Foundation
import Testing
import VitalsKit

/// probe-http's options that change how a probe is made, each checked against what the local
/// server received or against probe-http(1): --user-agent, --max-redirects, --ip, --timeout.
/// Expected values come from the man page and the fixture server's documented endpoints.
@Suite("probe-http options end to end", .hangGuard(minutes: 2))
struct ProbeHTTPOptionTests {
    func samples(_ result: RunResult) throws -> [String: JSONObject] { try result.samplesByMonitor() }

    @Test("--user-agent is the User-Agent the server receives; without it, vitals-probe-http/VERSION as probe-http(1) says")
    func userAgent() throws {
        let server = try FixtureServer()
        let plain = try run("probe-http", [], stdin: server.baseURL + "/ok\n")
        #expect(try plain.records().first?.string("status") == "up", "\(plain.stdout)")
        let chosen = try run("probe-http", ["--user-agent", "uptime-check/2.0 (ops team)"], stdin: server.baseURL + "/fixed\n")
        #expect(try chosen.records().first?.string("status") == "up", "\(chosen.stdout)")
        #expect(server.requests(for: "/ok").map { $0.header("User-Agent") } == ["vitals-probe-http/\(Vitals.version)"])
        #expect(server.requests(for: "/fixed").map { $0.header("User-Agent") } == ["uptime-check/2.0 (ops team)"])
    }

    @Test("--max-redirects N follows N redirects, N+1 is error/redirects naming the limit; the default is 5; a target's max_redirects wins")
    func maxRedirects() throws {
        // /redirect/K answers K redirects (to /redirect/K-1, ...), then 200 at /redirect/0.
        let server = try FixtureServer()
        let limited = try run(
            "probe-http", ["--max-redirects", "2"],
            stdin: """
                {"id":"two","url":"\(server.baseURL)/redirect/2"}
                {"id":"three","url":"\(server.baseURL)/redirect/3"}
                {"id":"own","url":"\(server.baseURL)/redirect/3","max_redirects":3}
                """)
        let byMonitor = try samples(limited)
        let two = try #require(byMonitor["two"])
        #expect(two.string("status") == "up", "\(two.string("message") ?? "")")
        #expect(two.int("code") == 200)
        let three = try #require(byMonitor["three"])
        #expect(three.string("status") == "error")
        #expect(three.string("reason") == "redirects")
        #expect(three.string("message") == "Too many redirects (more than 2)")
        #expect(byMonitor["own"]?.string("status") == "up", "the target's own max_redirects 3 beats --max-redirects 2")
        // "two" and "own" reached /redirect/0; "three" stopped after its second redirect.
        #expect(server.requests(for: "/redirect/0").count == 2)
        #expect(server.requests(for: "/redirect/3").count == 2)

        let defaults = try samples(
            try run(
                "probe-http", [],
                stdin: """
                    {"id":"five","url":"\(server.baseURL)/redirect/5"}
                    {"id":"six","url":"\(server.baseURL)/redirect/6"}
                    """))
        #expect(defaults["five"]?.string("status") == "up")
        #expect(defaults["six"]?.string("reason") == "redirects")
        #expect(defaults["six"]?.string("message") == "Too many redirects (more than 5)")
    }

    @Test("--ip 4 and --ip 6 choose the family of a name with both on loopback (localhost); --ip both writes one sample each")
    func ipFamily() throws {
        // The first server listens on 127.0.0.1 and ::1 at one port, the second on 127.0.0.1 only.
        let dual = try FixtureServer(alsoIPv6: true)
        let v4Only = try FixtureServer()
        let dualTarget = #"{"id":"dual","url":"http://localhost:\#(dual.port)/ok"}"# + "\n"
        let four = try #require(try run("probe-http", ["--ip", "4"], stdin: dualTarget).records().first)
        #expect(four.string("status") == "up", "\(four.string("message") ?? "")")
        #expect(four.string("remote_ip") == "127.0.0.1")
        #expect(four.string("ip") == "4")
        let six = try #require(try run("probe-http", ["--ip", "6"], stdin: dualTarget).records().first)
        #expect(six.string("status") == "up", "\(six.string("message") ?? "")")
        #expect(six.string("remote_ip") == "::1")
        #expect(six.string("ip") == "6")
        let both = try samples(try run("probe-http", ["--ip", "both"], stdin: dualTarget))
        #expect(both["dual/ipv4"]?.string("remote_ip") == "127.0.0.1")
        #expect(both["dual/ipv6"]?.string("remote_ip") == "::1")
        #expect(both.count == 2)

        // Nothing listens on ::1 at the second server's port: over IPv6 the probe cannot connect.
        let v4Target = #"{"id":"v4","url":"http://localhost:\#(v4Only.port)/ok"}"# + "\n"
        let refused = try #require(try run("probe-http", ["--ip", "6"], stdin: v4Target).records().first)
        #expect(refused.string("status") == "error")
        #expect(refused.string("reason") == "connect")
        #expect(v4Only.requests.isEmpty)
        let reached = try #require(try run("probe-http", ["--ip", "4"], stdin: v4Target).records().first)
        #expect(reached.string("status") == "up")
        #expect(v4Only.requests(for: "/ok").count == 1)
    }

    @Test(
        "--timeout is the budget of a target without timeout_seconds: a hanging endpoint ends after it, not after the default 5 s, reason timeout"
    )
    func timeout() throws {
        let server = try FixtureServer()
        let started = Clock.monotonicMilliseconds()
        let result = try run("probe-http", ["--timeout", "700ms"], stdin: server.baseURL + "/hang\n")
        let elapsed = Clock.monotonicMilliseconds() - started
        let sample = try #require(try result.records().first)
        #expect(sample.string("status") == "error")
        #expect(sample.string("reason") == "timeout")
        #expect(sample.string("message")?.hasPrefix("Request timeout after 700ms (") == true, "\(sample.string("message") ?? "")")
        // The probe waited out its budget; the bounds above it only tell 700 ms from the default
        // 5 s (and from the never of /hang), far from anything a busy machine adds.
        let total = try #require(sample.double("total_ms"))
        #expect(total >= 690 && total < 5000, "the probe ran \(total) ms on a 700 ms budget")
        #expect(elapsed < 30_000, "the run took \(elapsed) ms")

        // A target's own timeout_seconds is its budget, whatever --timeout says.
        let own = try #require(
            try run(
                "probe-http", ["--timeout", "60s"],
                stdin: #"{"url":"\#(server.baseURL)/hang","timeout_seconds":0.3}"# + "\n"
            ).records().first)
        #expect(own.string("reason") == "timeout")
        #expect(own.string("message")?.hasPrefix("Request timeout after 300ms (") == true, "\(own.string("message") ?? "")")
        let ownTotal = try #require(own.double("total_ms"))
        #expect(ownTotal >= 290 && ownTotal < 30_000, "a 300 ms budget, not --timeout's 60 s: \(ownTotal) ms")
    }
}

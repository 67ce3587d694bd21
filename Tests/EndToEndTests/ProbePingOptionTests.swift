import FixtureServer
import Foundation
import Testing
import VitalsKit

/// probe-ping's tuning options (probe-ping(1), OPTIONS), each with a test that fails if the
/// option were ignored: --count, --period, --timeout, --ok-ms, --degraded-ms, --ip, --socket,
/// --ssl-ok-days, --ssl-warning-days, --concurrency, --per-host and --rate. (--max-loss,
/// --watch, --interval, --only, --exit-status and --summary are in ProbePingTests.) Expected
/// values come from the man page and the arithmetic of the options, not from earlier runs.
@Suite("probe-ping options end to end", .hangGuard(minutes: 3))
struct ProbePingOptionTests {
    func samples(_ result: RunResult) throws -> [String: JSONObject] { try result.samplesByMonitor() }

    /// When each sample started (`at`), in milliseconds, by monitor.
    func starts(_ byMonitor: [String: JSONObject]) throws -> [String: Int64] {
        try byMonitor.mapValues { sample in try #require(sample.string("at").flatMap(Timestamp.parse)) }
    }

    @Test("--count sets the echo requests of a sample, --period their spacing; a target's ping_count wins")
    func countAndPeriod() throws {
        guard try needsICMP() else { return }
        let started = Clock.monotonicMilliseconds()
        let result = try run(
            "probe-ping", ["--count", "4", "--period", "100ms"],
            stdin: "127.0.0.1\n" + #"{"id":"own","target":"127.0.0.1","ping_count":2}"# + "\n")
        let elapsed = Clock.monotonicMilliseconds() - started
        let byMonitor = try samples(result)
        #expect(byMonitor["ping-127.0.0.1"]?.int("sent") == 4)
        #expect(byMonitor["ping-127.0.0.1"]?.int("received") == 4)
        #expect(byMonitor["own"]?.int("sent") == 2)
        // Four requests 100 ms apart span 300 ms; at the default period (1 s) they would span 3 s.
        #expect(elapsed >= 300, "the run took \(elapsed) ms")
        #expect(elapsed < 3000, "the run took \(elapsed) ms")
    }

    @Test("--timeout is how long each request waits for its reply; a target's timeout_seconds wins")
    func timeout() throws {
        guard try needsNamespace() else { return }
        // Inside this namespace the kernel answers no echo request: every request times out.
        let namespace = try NetworkNamespace(setup: "sysctl -q -w net.ipv4.icmp_echo_ignore_all=1")
        let started = Clock.monotonicMilliseconds()
        let result = try namespace.inside(
            "probe-ping --count 2 --period 10ms --timeout 250ms",
            stdin: "127.0.0.1\n" + #"{"id":"own","target":"127.0.0.1","timeout_seconds":0.1}"# + "\n")
        let elapsed = Clock.monotonicMilliseconds() - started
        let byMonitor = try samples(result)
        let silent = try #require(byMonitor["ping-127.0.0.1"], "\(result.stdout) \(result.stderr)")
        #expect(silent.string("status") == "error")
        #expect(silent.string("reason") == "timeout")
        #expect(silent.string("message") == "0/2 pings succeeded (0%), no reply within 250ms")
        #expect(byMonitor["own"]?.string("message") == "0/2 pings succeeded (0%), no reply within 100ms")
        // The last request is sent 10 ms after the first and waits 250 ms; the default (2 s) would take 2 s.
        #expect(elapsed >= 250, "the run took \(elapsed) ms")
        #expect(elapsed < 2000, "the run took \(elapsed) ms")
    }

    @Test("--ok-ms and --degraded-ms judge a ping's average round trip; a target's thresholds win")
    func pingThresholds() throws {
        guard try needsICMP() else { return }
        let input =
            "127.0.0.1\n" + #"{"id":"own","target":"127.0.0.1","ping_ok_threshold_ms":1000,"ping_degraded_threshold_ms":2000}"# + "\n"
        let degraded = try samples(try run("probe-ping", ["--count", "2", "--period", "10ms", "--ok-ms", "0"], stdin: input))
        #expect(degraded["ping-127.0.0.1"]?.string("status") == "degraded")
        #expect(degraded["ping-127.0.0.1"]?.string("reason") == "latency")
        #expect(degraded["ping-127.0.0.1"]?.string("message")?.hasSuffix(", above 0ms") == true)
        #expect(degraded["own"]?.string("status") == "up", "a loopback round trip is far below 1000 ms")
        let down = try samples(
            try run("probe-ping", ["--count", "2", "--period", "10ms", "--ok-ms", "0", "--degraded-ms", "0"], stdin: input))
        #expect(down["ping-127.0.0.1"]?.string("status") == "down")
        #expect(down["ping-127.0.0.1"]?.string("reason") == "latency")
        #expect(down["own"]?.string("status") == "up")
    }

    @Test("--ok-ms and --degraded-ms judge a tcp sample's connect time")
    func tcpThresholds() throws {
        let server = try FixtureServer()
        let target = "tcp://127.0.0.1:\(server.port)\n"
        let monitor = "tcp-127.0.0.1-\(server.port)"
        #expect(try samples(try run("probe-ping", ProbePingTests.patient, stdin: target))[monitor]?.string("status") == "up")
        let degraded = try #require(try samples(try run("probe-ping", ["--ok-ms", "0"], stdin: target))[monitor])
        #expect(degraded.string("status") == "degraded")
        #expect(degraded.string("reason") == "latency")
        #expect(degraded.string("message")?.hasSuffix(", above 0ms") == true)
        let down = try #require(try samples(try run("probe-ping", ["--ok-ms", "0", "--degraded-ms", "0"], stdin: target))[monitor])
        #expect(down.string("status") == "down")
        #expect(down.string("reason") == "latency")
    }

    @Test("--ip 4, 6 and both choose the family of a name (localhost) for tcp; an address keeps its own family")
    func ipFamily() throws {
        // One server on 127.0.0.1 and ::1 at one port, one on 127.0.0.1 only.
        let dual = try FixtureServer(alsoIPv6: true)
        let v4Only = try FixtureServer()
        let target = "tcp://localhost:\(dual.port)\n"
        let monitor = "tcp-localhost-\(dual.port)"
        let four = try #require(try samples(try run("probe-ping", ["--ip", "4"] + ProbePingTests.patient, stdin: target))[monitor])
        #expect(four.string("remote_ip") == "127.0.0.1")
        #expect(four.string("ip") == "4")
        let six = try #require(try samples(try run("probe-ping", ["--ip", "6"] + ProbePingTests.patient, stdin: target))[monitor])
        #expect(six.string("status") == "up", "\(six.string("message") ?? "")")
        #expect(six.string("remote_ip") == "::1")
        #expect(six.string("ip") == "6")
        let both = try samples(try run("probe-ping", ["--ip", "both"] + ProbePingTests.patient, stdin: target))
        #expect(both[monitor + "/ipv4"]?.string("remote_ip") == "127.0.0.1")
        #expect(both[monitor + "/ipv6"]?.string("remote_ip") == "::1")
        #expect(both.count == 2)
        // Nothing listens on ::1 at the second server's port.
        let refused = try #require(
            try run("probe-ping", ["--ip", "6"] + ProbePingTests.patient, stdin: "tcp://localhost:\(v4Only.port)\n").records().first)
        #expect(refused.string("status") == "error")
        #expect(refused.string("reason") == "connect")
        // --ip is for names: an IPv6 address is probed over IPv6 whatever --ip says.
        let literal = try #require(
            try run("probe-ping", ["--ip", "4"] + ProbePingTests.patient, stdin: "[::1]:\(dual.port)\n").records().first)
        #expect(literal.string("status") == "up")
        #expect(literal.string("remote_ip") == "::1")
        #expect(literal["ip"] == nil)
    }

    @Test("--socket: with datagram ICMP sockets refused (ping_group_range '1 0'), datagram is a permission error, raw and auto work")
    func socketChoice() throws {
        guard try needsNamespace() else { return }
        let namespace = try NetworkNamespace(setup: "sysctl -q -w net.ipv4.ping_group_range='1 0'")
        for (choice, status) in [("datagram", "error"), ("raw", "up"), ("auto", "up")] {
            let result = try namespace.inside("probe-ping --count 1 --socket \(choice)", stdin: "127.0.0.1\n")
            let sample = try #require(try result.records().first, "\(choice): \(result.stderr)")
            #expect(sample.string("status") == status, "\(choice): \(sample.string("message") ?? "")")
            if choice == "datagram" {
                #expect(sample.string("reason") == "permission")
                #expect(result.status == 2)
            }
        }
    }

    @Test("--ssl-ok-days and --ssl-warning-days judge a tls target's certificate; a target's own days win")
    func certificateDays() throws {
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.selfSigned(named: "sixty", daysLeft: 60)
        let server = try TLSServer(cert: cert, key: key)
        let hostPort = server.url.replacingOccurrences(of: "https://", with: "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        let input =
            #"{"id":"cert","target":"tcp://\#(hostPort)","tls":true}"# + "\n"
            + #"{"id":"own","target":"tcp://\#(hostPort)","tls":true,"ssl_ok_threshold_days":30}"# + "\n"
        // 60 days left (TestCertificates adds half a day): fine by the defaults (30 and 14).
        let fine = try samples(try run("probe-ping", [], stdin: input))
        #expect(fine["cert"]?.string("status") == "up", "\(fine["cert"]?.string("message") ?? "")")
        let warned = try samples(try run("probe-ping", ["--ssl-ok-days", "90"], stdin: input))
        #expect(warned["cert"]?.string("status") == "degraded")
        #expect(warned["cert"]?.string("reason") == "cert_expiry")
        #expect(warned["cert"]?.string("message") == "Certificate expires in 60 days")
        #expect(warned["own"]?.string("status") == "up", "ssl_ok_threshold_days 30 beats --ssl-ok-days 90")
        let down = try samples(try run("probe-ping", ["--ssl-ok-days", "90", "--ssl-warning-days", "70"], stdin: input))
        #expect(down["cert"]?.string("status") == "down")
        #expect(down["cert"]?.string("reason") == "cert_expiry")
        #expect(down["cert"]?.int("tls_expiry_days") == 60)
    }

    @Test("--rate spaces the starts of samples: 5 a second starts four tcp samples 200 ms apart")
    func rate() throws {
        let server = try FixtureServer()
        let input = (1...4).map { #"{"id":"r\#($0)","target":"tcp://127.0.0.1:\#(server.port)"}"# }.joined(separator: "\n")
        let at = try starts(try samples(try run("probe-ping", ["--rate", "5"], stdin: input))).values.sorted()
        #expect(at.count == 4)
        for (earlier, later) in zip(at, at.dropFirst()) {
            #expect(later - earlier >= 190, "starts \(at)")
        }
    }

    @Test("--concurrency 1 runs one sample at a time; --per-host 1 holds back a second sample of a host, not other hosts")
    func concurrencyAndPerHost() throws {
        guard try needsICMP() else { return }
        // Each sample sends two requests 100 ms apart, so it lasts at least 100 ms.
        let input = """
            {"id":"a","target":"127.0.0.1"}
            {"id":"b","target":"127.0.0.1"}
            {"id":"c","target":"127.0.0.2"}
            """
        let options = ["--count", "2", "--period", "100ms"]
        let serial = try starts(try samples(try run("probe-ping", options + ["--concurrency", "1"], stdin: input)))
        let order = serial.values.sorted()
        #expect(order.count == 3)
        for (earlier, later) in zip(order, order.dropFirst()) {
            #expect(later - earlier >= 95, "one at a time: \(serial)")
        }
        let perHost = try starts(try samples(try run("probe-ping", options + ["--per-host", "1"], stdin: input)))
        let a = try #require(perHost["a"])
        let b = try #require(perHost["b"])
        let c = try #require(perHost["c"])
        #expect(b - a >= 95, "b waits for a on 127.0.0.1: \(perHost)")
        #expect(c - a < 95, "c, on another host, is not held back: \(perHost)")
    }
}

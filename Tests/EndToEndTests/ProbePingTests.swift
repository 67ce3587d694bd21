import FixtureServer
import Foundation
import Testing
import VitalsKit

/// Whether this process may send ICMP echo requests: an unprivileged datagram ICMP socket
/// (allowed by net.ipv4.ping_group_range) or a raw one (root or CAP_NET_RAW) opens. Tried once.
private let icmpAllowed: Bool = {
    for type in [Int32(SOCK_DGRAM.rawValue), Int32(SOCK_RAW.rawValue)] {
        let fd = socket(AF_INET, type, Int32(IPPROTO_ICMP))
        if fd >= 0 {
            close(fd)
            return true
        }
    }
    return false
}()

/// The gates of probe-ping's tests, each through `requireGate` (skipped saying why, or failed
/// under VITALS_REQUIRE_GATES=1).
func needsICMP(sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
    try requireGate(
        icmpAllowed, "ICMP echo is not allowed here: it needs root, CAP_NET_RAW, or net.ipv4.ping_group_range covering this user's group",
        sourceLocation: sourceLocation)
}

func needsNamespace(sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
    try requireGate(
        NetworkNamespace.available, "cannot make a network namespace: it needs root and iproute2 (ip netns)",
        sourceLocation: sourceLocation)
}

func needsFirewall(sourceLocation: SourceLocation = #_sourceLocation) throws -> Bool {
    try requireGate(
        NetworkNamespace.firewallAvailable, "cannot load nftables rules in a network namespace: it needs root, iproute2 and nft",
        sourceLocation: sourceLocation)
}

extension RunResult {
    /// The samples a probe wrote, by monitor (a later one with the same monitor wins).
    func samplesByMonitor() throws -> [String: JSONObject] {
        var byMonitor: [String: JSONObject] = [:]
        for record in try records() { byMonitor[record.string("monitor") ?? ""] = record }
        return byMonitor
    }
}

/// probe-ping run as users run it: the built binary in real pipes. Packets go only to loopback
/// addresses and to namespaces these tests make (the drop, loss and reject addresses live in
/// them). Raw ICMP sockets need root, as CI runs; the unprivileged path and the permission
/// error are tested as the user nobody inside a namespace whose ping_group_range the test sets.
@Suite("probe-ping end to end", .hangGuard(minutes: 3))
struct ProbePingTests {
    /// Fast settings for tests: three requests 10 ms apart.
    let quick = ["--count", "3", "--period", "10ms"]
    /// Latency thresholds no loopback connection reaches, however loaded the machine, for tests
    /// that judge something else (a tcp connect is timed by the prober's own loop, which a busy
    /// machine can delay past the default 80 ms; ICMP replies carry the kernel's own times).
    static let patient = ["--ok-ms", "60000", "--degraded-ms", "60000"]

    func samples(_ result: RunResult) throws -> [String: JSONObject] { try result.samplesByMonitor() }

    /// Checks what must hold in every sample with replies: counts, and min ≤ avg ≤ max, with
    /// mdev no more than half the spread (a standard deviation never is).
    func checkFigures(_ sample: JSONObject, sent: Int, received: Int) throws {
        #expect(sample.int("sent") == sent)
        #expect(sample.int("received") == received)
        let loss = try #require(sample.double("loss_percent"))
        #expect(abs(loss - Double(sent - received) * 100 / Double(sent)) < 0.001)
        guard received > 0 else {
            for field in ["rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms", "latency_ms"] { #expect(sample[field] == .null) }
            return
        }
        let low = try #require(sample.double("rtt_min_ms"))
        let average = try #require(sample.double("rtt_avg_ms"))
        let high = try #require(sample.double("rtt_max_ms"))
        let deviation = try #require(sample.double("rtt_mdev_ms"))
        #expect(low > 0 && low <= average + 0.0005 && average <= high + 0.0005)
        #expect(deviation >= 0 && deviation <= (high - low) / 2 + 0.001)
        #expect(sample.double("latency_ms") == average)
    }

    @Test("127.0.0.1 and ::1 answer every echo request; the sample has ping(8)'s figures, the interface and link")
    func loopback() throws {
        guard try needsICMP() else { return }
        let result = try run("probe-ping", quick, stdin: "127.0.0.1\n::1\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let byMonitor = try samples(result)
        #expect(byMonitor.count == 2)
        for (monitor, address) in [("ping-127.0.0.1", "127.0.0.1"), ("ping-::1", "::1")] {
            let sample = try #require(byMonitor[monitor], "\(byMonitor.keys)")
            #expect(sample.string("type") == "sample")
            #expect(sample.string("kind") == "ping")
            #expect(sample.string("target") == address)
            #expect(sample.string("status") == "up")
            #expect(sample["reason"] == .null)
            #expect(sample.string("remote_ip") == address)
            try checkFigures(sample, sent: 3, received: 3)
            #expect(sample.string("message")?.hasPrefix("3/3 packets received, avg ") == true)
            #expect(sample.string("interface") == (try routeDevice(address)))
            #expect(sample.string("link") == "loopback")
            let keys = sample.fields.map(\.key)
            #expect(
                keys == [
                    "type", "monitor", "name", "kind", "target", "at", "status", "reason", "message", "latency_ms", "sent",
                    "received", "loss_percent", "rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms", "remote_ip",
                    "interface", "link", "check_interval", "enabled", "config",
                ], "no agent without --agent")
            let at = try #require(sample.string("at").flatMap(Timestamp.parse))
            #expect(abs(at - Clock.wallMilliseconds()) < 60_000)
        }
    }

    @Test("thresholds: ping_ok_threshold_ms 0 makes any round trip degraded, ping_degraded_threshold_ms 0 down")
    func thresholds() throws {
        guard try needsICMP() else { return }
        let input = """
            {"id":"ok","target":"127.0.0.1"}
            {"id":"slow","target":"127.0.0.1","config":{"ping_ok_threshold_ms":0}}
            {"id":"slower","target":"127.0.0.1","ping_ok_threshold_ms":0,"ping_degraded_threshold_ms":0}
            """
        let byMonitor = try samples(try run("probe-ping", quick, stdin: input))
        #expect(byMonitor["ok"]?.string("status") == "up")
        #expect(byMonitor["slow"]?.string("status") == "degraded")
        #expect(byMonitor["slow"]?.string("reason") == "latency")
        #expect(byMonitor["slow"]?.string("message")?.hasSuffix(", above 0ms") == true)
        #expect(byMonitor["slower"]?.string("status") == "down")
        #expect(byMonitor["slower"]?.string("reason") == "latency")
    }

    @Test("many targets at once, several on one address: each gets exactly its own replies")
    func manyAtOnce() throws {
        guard try needsICMP() else { return }
        // 60 targets on 20 loopback addresses, three per address, each sending 5 requests.
        var lines: [String] = []
        for copy in 1...3 {
            for host in 1...20 { lines.append(#"{"id":"t\#(host)-\#(copy)","target":"127.0.0.\#(host)","ping_count":5}"#) }
        }
        let result = try run("probe-ping", ["--period", "10ms"], stdin: lines.joined(separator: "\n"))
        let records = try result.records()
        #expect(records.count == 60)
        for sample in records {
            #expect(sample.string("status") == "up", "\(sample.string("monitor") ?? ""): \(sample.string("message") ?? "")")
            try checkFigures(sample, sent: 5, received: 5)
            #expect(sample.string("remote_ip") == sample.string("target"))
        }
    }

    @Test("ip 4 on a name resolves it (from /etc/hosts, no DNS packet) and pings the address")
    func resolvesNames() throws {
        guard try needsICMP() else { return }
        let result = try run("probe-ping", quick, stdin: #"{"target":"localhost","ip":"4"}"# + "\n")
        let sample = try #require(try result.records().first)
        #expect(sample.string("remote_ip") == "127.0.0.1")
        #expect(sample.string("ip") == "4")
        #expect(sample.string("status") == "up")
        let missing = try run("probe-ping", quick, stdin: unresolvableHost + "\n")
        let failed = try #require(try missing.records().first)
        #expect(failed.string("status") == "error")
        #expect(failed.string("reason") == "dns")
        #expect(failed.string("message")?.hasPrefix("DNS lookup failed for \(unresolvableHost)") == true)
        #expect(failed["interface"] == .null)
    }

    // MARK: - TCP

    @Test("tcp: an open loopback port is up with its connect time; a closed one is error/connect")
    func tcp() throws {
        let server = try FixtureServer(alsoIPv6: true)
        let closed = try RefusingPort()
        let input = """
            tcp://127.0.0.1:\(server.port)
            [::1]:\(server.port)
            {"id":"closed","target":"127.0.0.1:\(closed.port)"}
            """
        let result = try run("probe-ping", ProbePingTests.patient, stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let byMonitor = try samples(result)
        for (monitor, address) in [("tcp-127.0.0.1-\(server.port)", "127.0.0.1"), ("tcp-::1-\(server.port)", "::1")] {
            let open = try #require(byMonitor[monitor], "\(byMonitor.keys)")
            #expect(open.string("kind") == "tcp")
            #expect(open.string("status") == "up", "\(open.string("message") ?? "")")
            #expect(open.string("remote_ip") == address)
            #expect(open.string("message")?.hasPrefix("Connected to \(address) port \(server.port) in ") == true)
            let connect = try #require(open.double("connect_ms"))
            #expect(open.double("latency_ms") == connect)
            #expect(open.string("link") == "loopback")
            #expect(open["tls_ms"] == nil && open["sent"] == nil, "no TLS field without tls, no ping fields")
        }
        let refused = try #require(byMonitor["closed"])
        #expect(refused.string("status") == "error")
        #expect(refused.string("reason") == "connect")
        #expect(refused.string("message") == "Connection refused by 127.0.0.1 port \(closed.port)")
        #expect(refused["latency_ms"] == .null)
        #expect(server.requests.isEmpty, "a tcp probe sends no request")
    }

    @Test("tcp with tls: the handshake and the certificate's expiry, judged like probe-http's ssl kind")
    func tcpTLS() throws {
        let certificates = try TestCertificates()
        let (goodCert, goodKey) = try certificates.selfSigned(named: "good", daysLeft: 60)
        let good = try TLSServer(cert: goodCert, key: goodKey)
        let (oldCert, oldKey) = try certificates.selfSigned(named: "old", daysLeft: -3)
        let old = try TLSServer(cert: oldCert, key: oldKey)
        func hostPort(_ server: TLSServer) -> String {
            server.url.replacingOccurrences(of: "https://", with: "").trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        }
        let input = """
            {"id":"good","target":"tcp://\(hostPort(good))","tls":true}
            {"id":"old","target":"tcp://\(hostPort(old))","tls":true}
            """
        let byMonitor = try samples(try run("probe-ping", ProbePingTests.patient, stdin: input))
        let fine = try #require(byMonitor["good"])
        #expect(fine.string("status") == "up", "\(fine.string("message") ?? "")")
        // 60 days and a half left, rounded down (TestCertificates adds half a day).
        #expect(fine.int("tls_expiry_days") == 60)
        #expect(fine.double("tls_ms") != nil)
        #expect(fine.string("message")?.contains("certificate valid for 60 more days") == true)
        let expired = try #require(byMonitor["old"])
        #expect(expired.string("status") == "down")
        #expect(expired.string("reason") == "cert_expiry")
        // Ended 2.5 days ago (TestCertificates adds half a day to -3): -2.5 rounded down is -3.
        #expect(expired.int("tls_expiry_days") == -3)
    }

    // MARK: - Namespaces: drops, loss, rejects, routes, links, permissions

    /// The addresses the namespace tests use: all inside the namespace, on its loopback.
    /// 192.0.2.1 drops every echo request, 192.0.2.2 drops two of every five (in order),
    /// 192.0.2.3 rejects them with host-unreachable, 192.0.2.4 answers, 2001:db8::1 drops.
    static let firewall = """
        ip addr add 192.0.2.1/32 dev lo
        ip addr add 192.0.2.2/32 dev lo
        ip addr add 192.0.2.3/32 dev lo
        ip addr add 192.0.2.4/32 dev lo
        ip addr add 2001:db8::1/128 dev lo
        nft -f - <<'RULES'
        table inet vitals {
          chain input {
            type filter hook input priority 0;
            ip daddr 192.0.2.1 icmp type echo-request drop
            ip daddr 192.0.2.2 icmp type echo-request numgen inc mod 5 < 2 drop
            ip daddr 192.0.2.3 icmp type echo-request reject with icmp type host-unreachable
            ip6 daddr 2001:db8::1 icmpv6 type echo-request drop
          }
        }
        RULES
        """

    @Test(
        "drops, loss and rejects inside a namespace, over raw and datagram sockets",
        arguments: ["raw", "datagram"])
    func lossAndDrops(socket: String) throws {
        guard try needsFirewall() else { return }
        let namespace = try NetworkNamespace(setup: ProbePingTests.firewall + "\nsysctl -q -w net.ipv4.ping_group_range='0 2147483647'")
        let input = "192.0.2.1\n192.0.2.2\n192.0.2.3\n2001:db8::1\n192.0.2.4\n198.51.100.1\n"
        let result = try namespace.inside("probe-ping --socket \(socket) --count 5 --period 10ms --timeout 300ms", stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let byMonitor = try samples(result)
        #expect(byMonitor.count == 6)

        let dropped = try #require(byMonitor["ping-192.0.2.1"])
        #expect(dropped.string("status") == "error")
        #expect(dropped.string("reason") == "timeout")
        #expect(dropped.string("message") == "0/5 pings succeeded (0%), no reply within 300ms")
        try checkFigures(dropped, sent: 5, received: 0)

        // nftables drops requests 1, 2, 6, 7, ... (numgen counts 0 to 4): three of five answered.
        let lossy = try #require(byMonitor["ping-192.0.2.2"])
        #expect(lossy.string("status") == "down")
        #expect(lossy.string("reason") == "loss")
        #expect(lossy.string("message")?.hasPrefix("3/5 pings succeeded (60%), avg ") == true)
        #expect(lossy.string("message")?.hasSuffix("; over 20% lost") == true)
        try checkFigures(lossy, sent: 5, received: 3)

        let rejected = try #require(byMonitor["ping-192.0.2.3"])
        #expect(rejected.string("status") == "error")
        #expect(rejected.string("reason") == "connect")
        #expect(rejected.string("message") == "0/5 pings succeeded (0%): Destination host unreachable (from 192.0.2.3)")

        let silent6 = try #require(byMonitor["ping-2001:db8::1"])
        #expect(silent6.string("reason") == "timeout")
        try checkFigures(silent6, sent: 5, received: 0)

        let fine = try #require(byMonitor["ping-192.0.2.4"])
        #expect(fine.string("status") == "up")
        try checkFigures(fine, sent: 5, received: 5)

        // No route out of the namespace: nothing is sent, and there is no interface.
        let unroutable = try #require(byMonitor["ping-198.51.100.1"])
        #expect(unroutable.string("status") == "error")
        #expect(unroutable.string("reason") == "connect")
        #expect(unroutable.string("message") == "Cannot send to 198.51.100.1: Network is unreachable")
        #expect(unroutable.int("sent") == 0)
        #expect(unroutable["interface"] == .null && unroutable["link"] == .null)

        // --max-loss 40 allows three of five.
        let allowed = try namespace.inside("probe-ping --socket \(socket) --count 5 --period 10ms --max-loss 40", stdin: "192.0.2.2\n")
        #expect(try allowed.records().first?.string("status") == "up")
    }

    @Test(
        "replies to another process's requests to the same address never count: a run whose requests were all dropped stays at 0",
        arguments: ["raw", "datagram"])
    func noMixing(socket: String) throws {
        guard try needsFirewall() else { return }
        // The first five echo requests to 192.0.2.5 are dropped, every later one answered. Run A
        // sends its five (all dropped) and waits; once the counter shows five drops, run B pings the
        // same address 20 times (two targets of 10). A raw socket sees B's replies too: A must still get none.
        let namespace = try NetworkNamespace(
            setup: """
                ip addr add 192.0.2.5/32 dev lo
                sysctl -q -w net.ipv4.ping_group_range='0 2147483647'
                nft -f - <<'RULES'
                table inet vitals {
                  counter first { }
                  chain input {
                    type filter hook input priority 0;
                    ip daddr 192.0.2.5 icmp type echo-request numgen inc mod 1000000 < 5 counter name first drop
                  }
                }
                RULES
                """)
        let result = try namespace.inside(
            """
            cd "$(mktemp -d)"
            echo 192.0.2.5 | probe-ping --socket \(socket) --count 5 --period 10ms --timeout 3s > a.ndjson &
            until nft list counter inet vitals first | grep -q 'packets 5 '; do sleep 0.01; done
            printf '{"id":"b1","target":"192.0.2.5"}\\n{"id":"b2","target":"192.0.2.5"}\\n' | probe-ping --socket \(socket) --count 10 --period 10ms > b.ndjson
            wait
            cat a.ndjson b.ndjson
            rm -r "$PWD"
            """)
        let records = try result.records()
        #expect(records.count == 3, "status \(result.status): \(result.stdout) \(result.stderr)")
        let first = try #require(records.first)
        try checkFigures(first, sent: 5, received: 0)
        #expect(first.string("reason") == "timeout")
        for other in records.dropFirst() { try checkFigures(other, sent: 10, received: 10) }
    }

    @Test("as an unprivileged user, datagram ICMP sockets work where ping_group_range allows them")
    func unprivileged() throws {
        guard try needsNamespace() else { return }
        let namespace = try NetworkNamespace(setup: "sysctl -q -w net.ipv4.ping_group_range='0 2147483647'")
        let result = try namespace.insideAsNobody("id -u; probe-ping --count 3 --period 10ms", stdin: "127.0.0.1\n::1\n")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.first == "65534")
        let records = try result.stdout.split(separator: "\n").dropFirst().map { line -> JSONObject in
            guard case .object(let object) = try JSONParser.parse(String(line)) else { throw TestFailure("not an object") }
            return object
        }.filter { !RunResult.isRoundMark($0) }
        #expect(records.count == 2)
        for sample in records {
            #expect(sample.string("status") == "up", "\(sample.string("message") ?? "")")
            try checkFigures(sample, sent: 3, received: 3)
        }
    }

    @Test("when neither socket is allowed: a permission error per sample saying how to allow it, once on stderr, exit 2")
    func permission() throws {
        guard try needsNamespace() else { return }
        // A new namespace's ping_group_range is "1 0" (no group); nobody has no CAP_NET_RAW.
        let namespace = try NetworkNamespace(setup: "sysctl -q -w net.ipv4.ping_group_range='1 0'")
        let result = try namespace.insideAsNobody("probe-ping --count 3 --period 10ms", stdin: "127.0.0.1\n127.0.0.2\n::1\n")
        #expect(result.status == 2)
        let records = try result.records()
        #expect(records.count == 3, "every target still has its sample")
        for sample in records {
            #expect(sample.string("status") == "error")
            #expect(sample.string("reason") == "permission")
            let message = try #require(sample.string("message"))
            #expect(message.contains("uid 65534"))
            #expect(message.contains("net.ipv4.ping_group_range='0 2147483647'"))
            #expect(message.contains("(now '1 0')"))
            #expect(message.contains("CAP_NET_RAW"))
            #expect(sample.int("sent") == 0)
        }
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2, "once per family: \(result.stderr)")
        #expect(lines.first?.hasPrefix("probe-ping: ICMP over IPv4: ICMP echo is not allowed") == true)
        // Asking for datagram sockets only names only the sysctl.
        let datagram = try namespace.insideAsNobody("probe-ping --socket datagram --count 1", stdin: "127.0.0.1\n")
        #expect(try datagram.records().first?.string("message")?.contains("CAP_NET_RAW") == false)
    }

    @Test("interface and link follow the route: a veth pair is ethernet, a tun device is vpn")
    func links() throws {
        guard try needsNamespace() else { return }
        let namespace = try NetworkNamespace(
            setup: """
                ip link add vitals-a type veth peer name vitals-b
                ip addr add 10.77.0.1/24 dev vitals-a
                ip link set vitals-a up
                ip link set vitals-b up
                ip tuntap add dev vitals-vpn mode tun
                ip addr add 10.78.0.1/24 dev vitals-vpn
                ip link set vitals-vpn up
                """)
        let result = try namespace.inside("probe-ping --count 1 --timeout 100ms", stdin: "10.77.0.2\n10.78.0.2\n")
        let byMonitor = try samples(result)
        let veth = try #require(byMonitor["ping-10.77.0.2"])
        #expect(veth.string("interface") == (try routeDevice("10.77.0.2", namespace: namespace)))
        #expect(veth.string("interface") == "vitals-a")
        #expect(veth.string("link") == "ethernet")
        let tunnel = try #require(byMonitor["ping-10.78.0.2"])
        #expect(tunnel.string("interface") == "vitals-vpn")
        #expect(tunnel.string("link") == "vpn")
    }

    // MARK: - The command line

    @Test("bad target lines are reported with their line numbers, probe-http's skipped; the rest are probed; exit 2")
    func badLines() throws {
        guard try needsICMP() else { return }
        let input = """
            127.0.0.1
            not a host
            https://example.com/
            {"target":"127.0.0.1","ping_count":"many"}
            {"target":"127.0.0.2"
            127.0.0.2
            """
        let result = try run("probe-ping", quick, stdin: input)
        #expect(result.status == 2)
        #expect(try result.records().count == 2)
        #expect(result.stderr.contains("probe-ping: <stdin>:2: expected a host or a JSON object, got 'not a host'"))
        #expect(result.stderr.contains("probe-ping: <stdin>:3: warning: 'https://example.com/' is probed by probe-http; skipped"))
        #expect(result.stderr.contains("probe-ping: <stdin>:4: field 'ping_count' must be a whole number"))
        #expect(result.stderr.contains("probe-ping: <stdin>:5: not valid JSON"))
    }

    @Test("--exit-status, --summary, --only, and a reader that goes away")
    func commandLine() throws {
        guard try needsICMP() else { return }
        let closed = try RefusingPort()
        let input = "{\"name\":\"loop\",\"target\":\"127.0.0.1\"}\n{\"name\":\"shut\",\"target\":\"127.0.0.1:\(closed.port)\"}\n"
        let failing = try run("probe-ping", quick + ["--exit-status", "--summary"], stdin: input)
        #expect(failing.status == 1)
        #expect(failing.stderr.hasPrefix("probe-ping: 2 probes: 1 up, 1 error; slowest loop ("), "\(failing.stderr)")
        let only = try run("probe-ping", quick + ["--exit-status", "--only", "loop"], stdin: input)
        #expect(only.status == 0)
        #expect(try only.records().map { $0.string("name") } == ["loop"])
        let none = try run("probe-ping", ["--only", "nothing-like-it"], stdin: input)
        #expect(none.status == 64)
        #expect(none.stderr.contains("no target matches 'nothing-like-it' (closest: "))
        let head = try shell("yes 127.0.0.1 | head -n 200 | probe-ping --count 1 | head -n 1")
        #expect(head.status == 0)
        #expect(head.lines.count == 1)
        for arguments in [["--count", "11"], ["--period", "1ms"], ["--socket", "magic"], ["--ok-ms", "300"], ["--interval", "5s"]] {
            #expect(try run("probe-ping", arguments).status == 64, "\(arguments)")
        }
    }

    @Test("SIGINT during a one-shot run abandons samples in progress and exits 130, every line written whole")
    func interruptOneShot() throws {
        guard try needsICMP() else { return }
        let server = try FixtureServer()
        let tool = try RunningTool("probe-ping", [])
        // The tcp sample ends at once; the ping sample would take 9 seconds.
        try tool.input.write(
            contentsOf: Data("tcp://127.0.0.1:\(server.port)\n{\"target\":\"127.0.0.1\",\"ping_count\":10}\n".utf8))
        try tool.input.close()
        #expect(try #require(tool.readLine()).contains("\"type\":\"round_start\""))
        let first = try #require(tool.readLine())
        #expect(first.contains("\"kind\":\"tcp\""))
        let (status, rest, _) = tool.stop(SIGINT)
        #expect(status == 130)
        #expect(rest.isEmpty, "no round_end for the round cut short")
    }

    @Test("--watch samples each target every interval and stops on SIGINT with 130")
    func watch() throws {
        guard try needsICMP() else { return }
        let tool = try RunningTool("probe-ping", ["--watch", "--interval", "200ms", "--count", "1"])
        tool.input.write(Data("127.0.0.1\n".utf8))
        try tool.input.close()
        var starts: [Int64] = []
        for _ in 0..<3 {
            let line = try #require(tool.readLineSkippingMarks())
            guard case .object(let sample) = try JSONParser.parse(line) else { throw TestFailure(line) }
            #expect(sample.string("status") == "up")
            starts.append(try #require(sample.string("at").flatMap(Timestamp.parse)))
        }
        let (status, _, stderr) = tool.stop(SIGINT)
        #expect(status == 130, "\(stderr)")
        // Starts are due every 200 ms from the first (the schedule does not drift), and none comes
        // early; any of them can come late by whatever the loaded machine takes to run the tool,
        // which shortens the gap after it by as much, so no gap is held to 200 ms. An ignored
        // --interval gives 0 (back to back) or 60 s (the default): the third sample starts at
        // least one interval after the first unless the first came a whole interval late.
        #expect(starts[2] - starts[0] >= 200, "one sample per interval: \(starts)")
    }
}

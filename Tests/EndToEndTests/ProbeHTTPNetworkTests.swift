import FixtureServer
import Foundation
import Testing
import VitalsKit

/// probe-http's network view, Online Now's connectivity check, and the politeness limits:
/// the built binary against the fixture server on loopback (and namespaces made here).
@Suite("probe-http network view, connectivity and politeness", .hangGuard(minutes: 2))
struct ProbeHTTPNetworkTests {
    let server: FixtureServer

    init() throws {
        server = try FixtureServer()
    }

    func url(_ path: String) -> String { server.baseURL + path }

    @Test("every sample names the interface it left by and its link type, as iproute2 and sysfs say")
    func interfaceAndLink() throws {
        let result = try run("probe-http", [], stdin: url("/ok") + "\n")
        let sample = try #require(try result.records().first)
        let device = try #require(try routeDevice("127.0.0.1"))
        #expect(sample.string("interface") == device)
        // The loopback interface's ARPHRD type is 772 (include/uapi/linux/if_arp.h).
        let type = try String(contentsOfFile: "/sys/class/net/\(device)/type", encoding: .utf8)
        #expect(type.trimmingCharacters(in: .whitespacesAndNewlines) == "772")
        #expect(sample.string("link") == "loopback")
        let keys = sample.fields.map(\.key)
        let remote = try #require(keys.firstIndex(of: "remote_ip"))
        #expect(Array(keys[remote...].prefix(4)) == ["remote_ip", "interface", "link", "http_version"])
        // A name that does not resolve has no interface.
        let unresolved = try #require(try run("probe-http", [], stdin: "http://\(unresolvableHost)/\n").records().first)
        #expect(unresolved["interface"] == .null && unresolved["link"] == .null)
    }

    @Test("--connectivity: online over loopback, with a speed test of --speed-test-bytes from --speed-url")
    func online() throws {
        let result = try run("probe-http", ["--connectivity", url("/content?text=Success"), "--speed-url", url("/bytes/600000"),
                                            "--speed-test-bytes", "100000"])
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.records()
        #expect(records.count == 1)
        let sample = try #require(records.first)
        #expect(sample.string("monitor") == "connectivity")
        #expect(sample.string("status") == "up")
        #expect(sample["online"] == .bool(true))
        #expect(sample.string("link") == "loopback")
        #expect(sample.string("message")?.hasPrefix("Online over loopback (") == true, "\(sample.string("message") ?? "")")
        let speed = try #require(sample.double("speed_mbps"))
        #expect(speed > 0 && speed <= 1000)
        #expect(["low", "medium", "high"].contains(sample.string("speed_confidence") ?? ""))
        // Reading stops once the asked-for bytes are in: at least 100000, far from the 600000 offered.
        let bytes = try #require(sample.int("speed_bytes"))
        #expect(bytes >= 100_000 && bytes < 600_000)
        #expect(server.requests(for: "/content").map(\.method) == ["GET"])
        #expect(server.requests(for: "/bytes/600000").count == 1)
    }

    @Test("--connectivity: a page without the expected word (a captive portal) is offline: down, exit 0; 1 with --exit-status")
    func captivePortal() throws {
        let result = try run("probe-http", ["--connectivity", url("/content?text=Please+log+in"), "--speed-url", url("/bytes/1000")])
        #expect(result.status == 0)
        let sample = try #require(try result.records().first)
        #expect(sample["online"] == .bool(false))
        #expect(sample.string("status") == "down")
        #expect(sample.string("reason") == "content")
        #expect(sample.string("message")?.contains("did not say 'Success'") == true)
        #expect(sample["speed_mbps"] == .null && sample["speed_confidence"] == .null)
        #expect(server.requests(for: "/bytes/1000").isEmpty, "no speed test while offline")
        let strict = try run("probe-http", ["--connectivity", "--exit-status", "--expect", "Welcome", url("/content?text=Please+log+in")])
        #expect(strict.status == 1)
        let custom = try run("probe-http", ["--connectivity", "--expect", "log in", url("/content?text=Please+log+in")])
        #expect(try custom.records().first?["online"] == .bool(true))
    }

    @Test("--connectivity: a refused connection is offline, and the route to the address still names the interface")
    func refused() throws {
        let closed = try RefusingPort()
        let result = try run("probe-http", ["--connectivity", "http://127.0.0.1:\(closed.port)/"])
        #expect(result.status == 0)
        let sample = try #require(try result.records().first)
        #expect(sample["online"] == .bool(false))
        #expect(sample.string("reason") == "connect")
        #expect(sample.string("interface") == (try routeDevice("127.0.0.1")))
        #expect(sample.string("message")?.hasPrefix("Offline over loopback") == true)
    }

    @Test("--connectivity with no network at all: offline, no interface, and the message says so")
    func noNetwork() throws {
        guard try needsNamespace() else { return }
        // A namespace with only loopback: no default route, so nothing outside is reachable.
        let namespace = try NetworkNamespace(setup: "")
        let result = try namespace.inside("probe-http --connectivity --timeout 2s http://\(unresolvableHost)/")
        #expect(result.status == 0, "\(result.stderr)")
        let sample = try #require(try result.records().first)
        #expect(sample["online"] == .bool(false))
        #expect(sample.string("reason") == "dns")
        #expect(sample["interface"] == .null && sample["link"] == .null)
        #expect(sample.string("message") == "Offline: no network route")
    }

    @Test("--connectivity refuses what does not apply, and a non-HTTP URL")
    func connectivityUsage() throws {
        for arguments in [["--connectivity", "a", "b"], ["--connectivity", "--only", "x"], ["--connectivity", "ftp://x/"],
                          ["--connectivity", "--speed-url", "file:///etc/passwd"], ["--expect", "x"], ["--connectivity", "--ip", "both"]] {
            let result = try run("probe-http", arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
        }
    }

    @Test("--per-host 1: probes of one host never overlap; each starts after the one before has ended")
    func perHost() throws {
        let input = (1...4).map { url("/delay/100?n=\($0)") }.joined(separator: "\n") + "\n"
        let result = try run("probe-http", ["--per-host", "1", "-c", "10"], stdin: input)
        let samples = try result.records().sorted { ($0.string("at") ?? "") < ($1.string("at") ?? "") }
        #expect(samples.count == 4)
        for (earlier, later) in zip(samples, samples.dropFirst()) {
            let start = try #require(earlier.string("at").flatMap(Timestamp.parse))
            let total = try #require(earlier.double("total_ms"))
            let next = try #require(later.string("at").flatMap(Timestamp.parse))
            // Times are whole milliseconds, so allow one for rounding.
            #expect(next + 1 >= start + Int64(total.rounded(.down)), "a probe started before the previous one on its host ended")
        }
    }

    @Test("--rate R: new probes start at least 1/R seconds apart")
    func rate() throws {
        let input = (1...5).map { url("/ok?n=\($0)") }.joined(separator: "\n") + "\n"
        let result = try run("probe-http", ["--rate", "20"], stdin: input)
        let starts = try result.records().compactMap { $0.string("at").flatMap(Timestamp.parse) }.sorted()
        #expect(starts.count == 5)
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            // 20 a second is one per 50 ms; the wall-clock stamps are whole milliseconds.
            #expect(later - earlier >= 49, "\(starts)")
        }
    }

    @Test("probe-ping's targets in a probe-http file are skipped with a warning")
    func skipsPingTargets() throws {
        let input = """
        \(url("/ok"))
        tcp://127.0.0.1:22
        {"target":"192.0.2.1","kind":"ping"}
        """
        let result = try run("probe-http", [], stdin: input)
        #expect(result.status == 0)
        #expect(try result.records().count == 1)
        #expect(result.stderr.contains("<stdin>:2: warning: kind 'tcp' is probed by probe-ping; skipped"))
        #expect(result.stderr.contains("<stdin>:3: warning: kind 'ping' is probed by probe-ping; skipped"))
    }
}

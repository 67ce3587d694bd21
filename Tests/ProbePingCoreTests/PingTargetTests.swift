import Foundation
import ProbeKit
import Testing
import VitalsKit

@testable import ProbePingCore

func parsePingTargets(_ text: String, defaults: PingDefaults = PingDefaults()) -> ([PingTarget], [String]) {
    let diagnostics = Diagnostics(tool: "probe-ping", capture: true)
    var parser = PingTargetParser(defaults: defaults, diagnostics: diagnostics)
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    Array(text.utf8).withUnsafeBytes { _ = Streams.writeAll(fds[1], $0) }
    close(fds[1])
    parser.read(LineReader(fd: fds[0], source: "t", ownsDescriptor: true))
    return (parser.targets, diagnostics.captured.map { String($0.dropLast()) })
}

func pingTarget(_ line: String, defaults: PingDefaults = PingDefaults()) throws -> PingTarget {
    let (targets, problems) = parsePingTargets(line, defaults: defaults)
    guard let first = targets.first, problems.isEmpty else { throw PingParseFailure(problems: problems) }
    return first
}

struct PingParseFailure: Error { let problems: [String] }

@Suite("probe-ping targets")
struct PingTargetTests {
    @Test(
        "bare hosts, addresses and ports: kind, host, port, id and name",
        arguments: [
            ("8.8.8.8", PingKind.ping, "8.8.8.8", nil, "ping-8.8.8.8", "8.8.8.8"),
            ("::1", .ping, "::1", nil, "ping-::1", "::1"),
            ("[2001:DB8::1]", .ping, "2001:db8::1", nil, "ping-2001:db8::1", "2001:db8::1"),
            ("Host.Example", .ping, "host.example", nil, "ping-host.example", "host.example"),
            ("db.example:5432", .tcp, "db.example", 5432, "tcp-db.example-5432", "db.example:5432"),
            ("[::1]:443", .tcp, "::1", 443, "tcp-::1-443", "[::1]:443"),
            ("tcp://127.0.0.1:22", .tcp, "127.0.0.1", 22, "tcp-127.0.0.1-22", "127.0.0.1:22"),
            ("tcp://[::1]:8443/", .tcp, "::1", 8443, "tcp-::1-8443", "[::1]:8443"),
        ] as [(String, PingKind, String, Int?, String, String)])
    func bare(line: String, kind: PingKind, host: String, port: Int?, id: String, name: String) throws {
        let target = try pingTarget(line)
        #expect(target.kind == kind)
        #expect(target.host == host)
        #expect(target.port == port)
        #expect(target.id == id)
        #expect(target.name == name)
        #expect(target.count == 5 && target.okThresholdMs == 80 && target.degradedThresholdMs == 200)
        #expect(target.timeoutMs == 2000 && target.periodMs == 1000 && target.maxLossPercent == 20)
        #expect(target.display == (kind == .tcp ? "tcp://" + PingTarget.hostPort(host, port!) : host))
    }

    @Test("an OnlineTracker ping monitor, thresholds in config, is read as it is")
    func onlineTrackerMonitor() throws {
        let target = try pingTarget(
            #"{"id":1,"type":"target","name":"Google DNS","target":"8.8.8.8","config":{"ping_count":3,"ping_ok_threshold_ms":50,"ping_degraded_threshold_ms":150},"check_interval":30,"enabled":true,"team":"net"}"#
        )
        #expect(target.id == "1" && target.name == "Google DNS")
        #expect(target.count == 3 && target.okThresholdMs == 50 && target.degradedThresholdMs == 150)
        #expect(target.checkIntervalMs == 30_000)
        #expect(target.extraFields == [JSONField("team", .string("net"))])
    }

    @Test("ping_count is clamped to 1...10 with a warning, as OnlineTracker's server does")
    func clamped() {
        let (targets, problems) = parsePingTargets(
            #"""
            {"target":"192.0.2.1","ping_count":0}
            {"target":"192.0.2.2","ping_count":50}
            """#)
        #expect(targets.map(\.count) == [1, 10])
        #expect(
            problems == [
                "probe-ping: t:1: warning: ping_count 0 is outside 1 to 10; using 1 (OnlineTracker's bounds)",
                "probe-ping: t:2: warning: ping_count 50 is outside 1 to 10; using 10 (OnlineTracker's bounds)",
            ])
    }

    @Test("probe-http's targets are skipped with a warning; other mistakes are errors naming the line")
    func problems() {
        let (targets, problems) = parsePingTargets(
            #"""
            https://example.com/
            {"target":"example.com","kind":"https"}
            {"target":"192.0.2.1:80","kind":"ping"}
            {"target":"192.0.2.1","kind":"tcp"}
            {"target":"192.0.2.1","tls":true}
            {"target":"192.0.2.1","ip":"6"}
            {"target":"192.0.2.1:70000"}
            {"target":"exa mple"}
            ftp://example.com
            {"target":"192.0.2.1","ping_degraded_threshold_ms":10}
            {"name":"no target"}
            192.0.2.1
            """#)
        #expect(targets.map(\.host) == ["192.0.2.1"])
        #expect(problems.count == 11, "\(problems)")
        let expected = [
            "t:1: warning: 'https://example.com/' is probed by probe-http; skipped",
            "t:2: warning: kind 'https' is probed by probe-http; skipped",
            "t:3: a ping target has no port",
            "t:4: kind 'tcp' needs a port",
            "t:5: field 'tls' needs a tcp target",
            "t:6: '192.0.2.1' is an IPv4 address; it cannot be probed over IPv6",
            "t:7: '192.0.2.1:70000' has a bad port '70000' (1 to 65535)",
            "t:8: 'exa mple' is not a host name or an address",
            "t:9: unsupported scheme 'ftp'",
            "t:10: ping_degraded_threshold_ms (10) is below ping_ok_threshold_ms (80)",
            "t:11: target has no 'target'",
        ]
        for (problem, start) in zip(problems, expected) {
            #expect(problem.hasPrefix("probe-ping: " + start), "\(problem)")
        }
    }

    @Test("defaults come from the options; a long derived id ends in a hash")
    func defaultsAndIDs() throws {
        var defaults = PingDefaults()
        defaults.count = 3
        defaults.okThresholdMs = 10
        defaults.degradedThresholdMs = 20
        defaults.timeoutMs = 500
        defaults.intervalOverrideMs = 5000
        defaults.ip = .v6
        let target = try pingTarget(#"{"target":"192.0.2.1","check_interval":60}"#, defaults: defaults)
        #expect(target.ip == .any, "--ip is for names; an IPv4 literal stays IPv4")
        #expect(try pingTarget("host.example", defaults: defaults).ip == .v6)
        #expect(target.count == 3 && target.okThresholdMs == 10 && target.degradedThresholdMs == 20)
        #expect(target.timeoutMs == 500 && target.checkIntervalMs == 5000)
        let host = String(repeating: "a", count: 60) + "." + String(repeating: "b", count: 60) + ".example"
        let id = PingTarget.derivedID(kind: .ping, host: host, port: nil)
        #expect(id.count == 80)
        #expect(id.hasPrefix("ping-aaaa"))
        // The last 8 characters are the start of the SHA-256 of the uncut id (checked with sha256sum).
        #expect(id.suffix(9) == "-" + String(sha256(of: "ping-" + host).prefix(8)))
    }
}

/// SHA-256 in hex from the system's sha256sum, an independent implementation.
func sha256(of text: String) -> String {
    let result = try? ChildProcess.run(["sha256sum"], input: Array(text.utf8))
    return String(decoding: result?.output ?? [], as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
}

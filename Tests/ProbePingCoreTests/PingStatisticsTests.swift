import ProbeKit
import Testing
import VitalsKit

@testable import ProbePingCore

@Suite("ping statistics and status rules")
struct PingStatisticsTests {
    func statistics(sent: Int, rtts: [Double]) -> PingStatistics {
        var statistics = PingStatistics()
        for _ in 0..<sent { statistics.countSent() }
        for rtt in rtts { statistics.add(rttMs: rtt) }
        return statistics
    }

    @Test("min, avg, max, mdev and loss as ping(8) defines them")
    func figures() throws {
        // By hand: mean of 1, 2, 3, 4 is 2.5; mean of squares (1 + 4 + 9 + 16) / 4 = 7.5;
        // mdev = sqrt(7.5 - 2.5²) = sqrt(1.25) = 1.11803...; 4 of 5 answered is 20% loss.
        let figures = statistics(sent: 5, rtts: [3, 1, 4, 2])
        #expect(figures.sent == 5 && figures.received == 4)
        #expect(figures.minMs == 1 && figures.maxMs == 4)
        #expect(figures.averageMs == 2.5)
        #expect(abs(try #require(figures.mdevMs) - 1.118034) < 1e-6)
        #expect(figures.lossPercent == 20)
        // Equal round trips have no deviation; nothing sent has no loss figure.
        #expect(statistics(sent: 3, rtts: [10, 10, 10]).mdevMs == 0)
        #expect(PingStatistics().lossPercent == nil && PingStatistics().averageMs == nil)
        // 1 of 3 lost: 33.333...%.
        #expect(abs(try #require(statistics(sent: 3, rtts: [1, 1]).lossPercent) - 100.0 / 3) < 1e-9)
    }

    func target(ok: Double = 80, degraded: Double = 200, maxLoss: Double = 20) -> PingTarget {
        var target = PingTarget(id: "dns", name: "Google DNS", kind: .ping, host: "192.0.2.1")
        target.okThresholdMs = ok
        target.degradedThresholdMs = degraded
        target.maxLossPercent = maxLoss
        return target
    }

    @Test("latency at or below ok is up, at or below degraded is degraded, above is down; words are OnlineTracker's")
    func thresholds() {
        let up = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 5, rtts: [25, 25, 25, 25, 25]), failure: nil, icmpError: nil)
        #expect(up.status == .up && up.reason == nil)
        #expect(up.message == "5/5 packets received, avg 25ms")
        #expect(up.latencyMs == 25)
        let atOK = PingVerdictRules.decide(target: target(), statistics: statistics(sent: 1, rtts: [80]), failure: nil, icmpError: nil)
        #expect(atOK.status == .up, "80 is at the ok threshold: up")
        let degraded = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 2, rtts: [80, 81]), failure: nil, icmpError: nil)
        #expect(degraded.status == .degraded && degraded.reason == .latency)
        #expect(degraded.message == "2/2 packets received, avg 81ms, above 80ms")
        let atDegraded = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 1, rtts: [200]), failure: nil, icmpError: nil)
        #expect(atDegraded.status == .degraded)
        let down = PingVerdictRules.decide(target: target(), statistics: statistics(sent: 1, rtts: [200.5]), failure: nil, icmpError: nil)
        #expect(down.status == .down && down.reason == .latency)
        #expect(down.message == "1/1 packets received, avg 201ms, above 200ms")
        let fast = PingVerdictRules.decide(target: target(), statistics: statistics(sent: 1, rtts: [0.033]), failure: nil, icmpError: nil)
        #expect(fast.message == "1/1 packets received, avg 0.033ms")
    }

    @Test("loss up to --max-loss is allowed, more is down; nothing back is an error")
    func loss() {
        let allowed = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 5, rtts: [20, 20, 20, 20]), failure: nil, icmpError: nil)
        #expect(allowed.status == .up)
        #expect(allowed.message == "4/5 pings succeeded (80%), avg 20ms")
        let lost = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 5, rtts: [25, 25, 25]), failure: nil, icmpError: nil)
        #expect(lost.status == .down && lost.reason == .loss)
        #expect(lost.message == "3/5 pings succeeded (60%), avg 25ms; over 20% lost")
        let strict = PingVerdictRules.decide(
            target: target(maxLoss: 0), statistics: statistics(sent: 3, rtts: [1, 1]), failure: nil, icmpError: nil)
        #expect(strict.status == .down && strict.message.hasPrefix("2/3 pings succeeded (66.7%)"))
        let silent = PingVerdictRules.decide(target: target(), statistics: statistics(sent: 5, rtts: []), failure: nil, icmpError: nil)
        #expect(silent.status == .error && silent.reason == .timeout)
        #expect(silent.message == "0/5 pings succeeded (0%), no reply within 2s")
        #expect(silent.latencyMs == nil)
        let refused = PingVerdictRules.decide(
            target: target(), statistics: statistics(sent: 5, rtts: []), failure: nil,
            icmpError: "Destination host unreachable (from 192.0.2.254)")
        #expect(refused.status == .error && refused.reason == .connect)
        #expect(refused.message == "0/5 pings succeeded (0%): Destination host unreachable (from 192.0.2.254)")
    }

    @Test("failures before anything was measured keep their reason")
    func failures() {
        let none = PingStatistics()
        for (failure, reason) in [
            (PingFailure.permission("not allowed"), SampleReason.permission), (.dns("no such host"), .dns),
            (.connect("Cannot send"), .connect),
        ] {
            let verdict = PingVerdictRules.decide(target: target(), statistics: none, failure: failure, icmpError: nil)
            #expect(verdict.status == .error && verdict.reason == reason)
        }
    }
}

@Suite("ICMP packets")
struct ICMPPacketTests {
    @Test("the Internet checksum of RFC 1071's example is 0x220d")
    func checksum() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (end-around carry); its complement is 220d.
        let bytes: [UInt8] = [0x00, 0x01, 0xF2, 0x03, 0xF4, 0xF5, 0xF6, 0xF7]
        #expect(bytes.withUnsafeBytes { ICMPSocket.checksum($0) } == 0x220D)
        // A packet holding its own checksum sums to zero.
        var packet: [UInt8] = [8, 0, 0, 0, 0x12, 0x34, 0x00, 0x07] + Array(repeating: 0x5A, count: 56)
        let sum = packet.withUnsafeBytes { ICMPSocket.checksum($0) }
        packet[2] = UInt8(sum >> 8)
        packet[3] = UInt8(sum & 0xFF)
        #expect(packet.withUnsafeBytes { ICMPSocket.checksum($0) } == 0)
    }

    let cookie: UInt64 = 0x0102_0304_0506_0708

    /// An echo header and payload as this run writes them: type, code, checksum, id, sequence, cookie, generation.
    func echo(type: UInt8, id: UInt16, sequence: UInt16, cookie: UInt64, generation: UInt32) -> [UInt8] {
        var bytes: [UInt8] = [type, 0, 0, 0, UInt8(id >> 8), UInt8(id & 0xFF), UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: cookie >> (56 - 8 * $0)) }
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: generation >> (24 - 8 * $0)) }
        return bytes + Array(repeating: 0, count: 44)
    }

    /// A 20-byte IPv4 header from `source` to `destination` carrying ICMP.
    func ipv4Header(from source: [UInt8], to destination: [UInt8]) -> [UInt8] {
        [0x45, 0, 0, 84, 0, 0, 0, 0, 64, 1, 0, 0] + source + destination
    }

    @Test("an IPv4 echo reply, with or without its IP header, matches its identifier and cookie only")
    func replies() throws {
        let from = try #require(IPAddress("192.0.2.7"))
        let reply = echo(type: 0, id: 0x4242, sequence: 513, cookie: cookie, generation: 99)
        for packet in [reply, ipv4Header(from: [192, 0, 2, 7], to: [192, 0, 2, 1]) + reply] {
            let event = packet.withUnsafeBytes {
                ICMPSocket.parse($0, family: .v4, from: from, timestamp: 5, identifier: 0x4242, cookie: cookie)
            }
            guard case .reply(let sequence, let generation, let source, let timestamp)? = event else {
                Issue.record("no reply parsed from \(packet.count) bytes")
                continue
            }
            #expect(sequence == 513 && generation == 99 && source == from && timestamp == 5)
        }
        let otherProcess = reply.withUnsafeBytes {
            ICMPSocket.parse($0, family: .v4, from: from, timestamp: nil, identifier: 0x4243, cookie: cookie)
        }
        #expect(otherProcess == nil, "a raw socket sees other processes' replies; their identifier differs")
        let otherRun = reply.withUnsafeBytes {
            ICMPSocket.parse($0, family: .v4, from: from, timestamp: nil, identifier: nil, cookie: cookie + 1)
        }
        #expect(otherRun == nil, "same identifier, another run's cookie")
        let request = echo(type: 8, id: 0x4242, sequence: 1, cookie: cookie, generation: 1)
        #expect(
            request.withUnsafeBytes { ICMPSocket.parse($0, family: .v4, from: from, timestamp: nil, identifier: nil, cookie: cookie) }
                == nil,
            "our own echo request seen on loopback is not a reply")
    }

    @Test("an IPv4 host-unreachable names the request it is about")
    func unreachable() throws {
        // Type 3 code 1 from a router 192.0.2.254, quoting our request's IP header and ICMP header.
        let quoted =
            ipv4Header(from: [192, 0, 2, 1], to: [198, 51, 100, 9])
            + Array(echo(type: 8, id: 0x4242, sequence: 7, cookie: cookie, generation: 3))
        let packet = ipv4Header(from: [192, 0, 2, 254], to: [192, 0, 2, 1]) + [3, 1, 0, 0, 0, 0, 0, 0] + quoted
        let event = packet.withUnsafeBytes {
            ICMPSocket.parse($0, family: .v4, from: IPAddress("192.0.2.254"), timestamp: nil, identifier: 0x4242, cookie: cookie)
        }
        guard case .failed(let sequence, let generation, let destination, let words)? = event else {
            Issue.record("no error parsed")
            return
        }
        #expect(sequence == 7 && generation == 3)
        #expect(destination == IPAddress("198.51.100.9"))
        #expect(words == "Destination host unreachable (from 192.0.2.254)")
        // A router that quotes only 8 bytes of the request (RFC 792's minimum): matched by sequence and destination.
        let short =
            ipv4Header(from: [192, 0, 2, 254], to: [192, 0, 2, 1]) + [11, 0, 0, 0, 0, 0, 0, 0]
            + ipv4Header(from: [192, 0, 2, 1], to: [198, 51, 100, 9])
            + Array(echo(type: 8, id: 0x4242, sequence: 8, cookie: cookie, generation: 3).prefix(8))
        let shortEvent = short.withUnsafeBytes {
            ICMPSocket.parse($0, family: .v4, from: IPAddress("192.0.2.254"), timestamp: nil, identifier: 0x4242, cookie: cookie)
        }
        guard case .failed(let shortSequence, let shortGeneration, _, let shortWords)? = shortEvent else {
            Issue.record("no error parsed from a short quote")
            return
        }
        #expect(shortSequence == 8 && shortGeneration == nil && shortWords.hasPrefix("Time to live exceeded"))
    }

    @Test("an IPv6 echo reply and an address-unreachable")
    func ipv6() throws {
        let from = try #require(IPAddress("2001:db8::9"))
        let reply = echo(type: 129, id: 0x0101, sequence: 2, cookie: cookie, generation: 4)
        guard
            case .reply(let sequence, let generation, _, _)? = reply.withUnsafeBytes({
                ICMPSocket.parse($0, family: .v6, from: from, timestamp: nil, identifier: nil, cookie: cookie)
            })
        else {
            Issue.record("no IPv6 reply parsed")
            return
        }
        #expect(sequence == 2 && generation == 4)
        // Type 1 code 3, quoting a 40-byte IPv6 header (next header 58) to 2001:db8::9 and our request.
        var header = [UInt8](repeating: 0, count: 40)
        header[0] = 0x60
        header[6] = 58
        header[24] = 0x20
        header[25] = 0x01
        header[26] = 0x0D
        header[27] = 0xB8
        header[39] = 9
        let error = [1, 3, 0, 0, 0, 0, 0, 0] + header + echo(type: 128, id: 0x0101, sequence: 6, cookie: cookie, generation: 5)
        guard
            case .failed(let errorSequence, _, let destination, let words)? = error.withUnsafeBytes({
                ICMPSocket.parse($0, family: .v6, from: IPAddress("2001:db8::1"), timestamp: nil, identifier: nil, cookie: cookie)
            })
        else {
            Issue.record("no IPv6 error parsed")
            return
        }
        #expect(errorSequence == 6 && destination == from && words == "Address unreachable (from 2001:db8::1)")
    }

    @Test("slots are reused oldest first, with a new generation each time")
    func slots() throws {
        var table = SlotTable(capacity: 64)
        let taken = table.take(for: 1)
        let first = try #require(taken)
        let generation = table.generation[first]
        table.release(first)
        var seen: [Int] = []
        for _ in 0..<64 {
            let slot = table.take(for: 2)
            seen.append(try #require(slot))
        }
        #expect(table.take(for: 3) == nil, "all 64 in use")
        #expect(seen.last == first, "the slot freed first comes back last")
        #expect(table.generation[first] != generation)
        #expect(Set(seen).count == 64)
    }
}

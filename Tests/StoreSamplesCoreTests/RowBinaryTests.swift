import Testing
import VitalsKit

@testable import StoreSamplesCore

/// The error a damaged answer gives, or nil when `body` read it without one.
private func damage(_ bytes: [UInt8], _ body: (inout RowBinaryReader) throws -> Void) -> String? {
    var reader = RowBinaryReader(bytes)
    do {
        try body(&reader)
        return nil
    } catch {
        return "\(error)"
    }
}

@Suite("RowBinary: ClickHouse's answers read exactly, a damaged one an error")
struct RowBinaryTests {
    /// Three monitors as the store writes them: text with escapes and non-ASCII, nulls, a config.
    static let monitors: [MonitorRecord] = [
        MonitorRecord(
            id: 1, monitor: "api",
            metadata: MonitorMetadata(
                name: "API", kind: "https", target: "https://api.example/",
                agent: nil, description: "the \"main\" one — Zürich", checkInterval: 60,
                config: #"{"method":"GET"}"#, enabled: true),
            firstSeen: 1_769_644_800_000),
        MonitorRecord(id: 2, monitor: "web", firstSeen: 1_769_644_801_000),
        MonitorRecord(
            id: 300, monitor: String(repeating: "m", count: 200), metadata: MonitorMetadata(enabled: false),
            firstSeen: -5),
    ]

    static func encodedMonitors() -> (bytes: [UInt8], rowEnds: [Int]) {
        var writer = RowBinaryWriter()
        var ends: [Int] = []
        for (index, record) in monitors.enumerated() {
            ClickHouseRows.write(record, version: UInt64(index + 1), to: &writer)
            ends.append(writer.bytes.count)
        }
        return (writer.bytes, ends)
    }

    static func readMonitors(_ reader: inout RowBinaryReader) throws -> [MonitorRecord] {
        var result: [MonitorRecord] = []
        while !reader.atEnd { result.append(try ClickHouseRows.monitor(&reader)) }
        return result
    }

    static func same(_ a: [MonitorRecord], _ b: [MonitorRecord]) -> Bool {
        a.count == b.count
            && zip(a, b).allSatisfy {
                $0.id == $1.id && $0.monitor == $1.monitor && $0.metadata == $1.metadata
                    && $0.firstSeen == $1.firstSeen
            }
    }

    @Test("monitor rows read back as written, field by field")
    func monitorRoundTrip() throws {
        var reader = RowBinaryReader(RowBinaryTests.encodedMonitors().bytes)
        #expect(RowBinaryTests.same(try RowBinaryTests.readMonitors(&reader), RowBinaryTests.monitors))
    }

    @Test("an answer cut at every byte: an error, or (cut between rows) exactly the rows before; never a crash")
    func cutAtEveryByte() {
        let (bytes, ends) = RowBinaryTests.encodedMonitors()
        var errors = 0
        for cut in 0..<bytes.count {
            var reader = RowBinaryReader(Array(bytes[..<cut]))
            do {
                let rows = try RowBinaryTests.readMonitors(&reader)
                // Only a cut at a row's end reads without an error (RowBinary has no row count).
                #expect(cut == 0 || ends.contains(cut), "cut at \(cut) read \(rows.count) rows")
                #expect(RowBinaryTests.same(rows, Array(RowBinaryTests.monitors.prefix(ends.filter { $0 <= cut }.count))))
            } catch {
                errors += 1
                #expect("\(error)".hasPrefix("ClickHouse sent a damaged answer: "), "\(error)")
            }
        }
        #expect(errors == bytes.count - 1 - (ends.count - 1), "every cut but the empty answer and the row ends is an error")
    }

    @Test("agent rows and stored samples read back as written; a cut one is an error")
    func agentsAndSamples() throws {
        let agent = AgentRecord(id: "paris", status: .pending, createdAt: 1, lastSeen: 2, monitorCount: 0, name: "Paris probe")
        var writer = RowBinaryWriter()
        ClickHouseRows.write(agent, version: 9, to: &writer)
        var reader = RowBinaryReader(writer.bytes)
        #expect(try ClickHouseRows.agent(&reader) == agent)
        #expect(reader.atEnd)
        for cut in 0..<writer.bytes.count {
            #expect(damage(Array(writer.bytes[..<cut])) { _ = try ClickHouseRows.agent(&$0) } != nil, "cut at \(cut)")
        }

        // A stored sample as a query selects it: id, at, status, latency_ms, message, tls_expiry_days, identity_agent, reason.
        var sample = RowBinaryWriter()
        sample.uint64(42)
        sample.int64(1_769_644_800_123)
        sample.uint8(SampleStatus.degraded.storeCode)
        sample.optionalFloat64(0.1 + 0.2)
        sample.optionalString("slow \"é\"")
        sample.optionalInt64(nil)
        sample.string("tokyo")
        sample.optionalString("latency")
        var read = RowBinaryReader(sample.bytes)
        #expect(
            try ClickHouseRows.storedSample(&read)
                == StoredSample(
                    id: 42, at: 1_769_644_800_123, status: .degraded, latencyMs: 0.1 + 0.2,
                    message: "slow \"é\"", tlsExpiryDays: nil, place: "tokyo", reason: "latency"))
        for cut in 0..<sample.bytes.count {
            #expect(damage(Array(sample.bytes[..<cut])) { _ = try ClickHouseRows.storedSample(&$0) } != nil, "cut at \(cut)")
        }
    }

    @Test("bad lengths: past the end, longer than 64 bits, the largest a length can say")
    func badLengths() {
        // A 5-byte string announced, 3 sent.
        #expect(
            damage([5, 0x61, 0x62, 0x63]) { _ = try $0.string() }
                == "ClickHouse sent a damaged answer: a string of 5 bytes, with 3 left, at byte 1 of 4")
        // Eleven LEB128 groups: more than 64 bits.
        #expect(
            damage(Array(repeating: 0xFF, count: 10) + [0x01, 0x61]) { _ = try $0.string() }
                == "ClickHouse sent a damaged answer: a string length of more than 64 bits at byte 0 of 12")
        // Ten groups whose last sets bits past the 64th.
        #expect(
            damage(Array(repeating: 0x80, count: 9) + [0x02]) { _ = try $0.string() }
                == "ClickHouse sent a damaged answer: a string length of more than 64 bits at byte 0 of 10")
        // 2^64 - 1 bytes announced (ten groups, the last 0x01): past the end, no overflow.
        #expect(
            damage(Array(repeating: 0xFF, count: 9) + [0x01]) { _ = try $0.string() }
                == "ClickHouse sent a damaged answer: a string of 18446744073709551615 bytes, with 0 left, at byte 10 of 10")
        // Int.max + 1 = 2^63 bytes: the length is compared unsigned, never turned negative.
        #expect(
            damage(Array(repeating: 0x80, count: 9) + [0x01, 0x61]) { _ = try $0.withStringLine { _ in } }
                == "ClickHouse sent a damaged answer: a string of 9223372036854775808 bytes, with 1 left, at byte 10 of 11")
        // A length whose continuation byte never comes.
        #expect(damage([0x80]) { _ = try $0.string() } == "ClickHouse sent a damaged answer: a byte at byte 1 of 1")
        #expect(damage([1, 2, 3]) { _ = try $0.int64() } == "ClickHouse sent a damaged answer: an 8-byte number at byte 0 of 3")
    }

    @Test(
        "text that is not UTF-8 is an error, in a string and in the bytes of an export line",
        arguments: [
            [0xC3, 0x28],  // a lead byte without its continuation
            [0xC0, 0x80],  // an overlong NUL
            [0xED, 0xA0, 0x80],  // a surrogate
            [0x61, 0xFF],  // a byte UTF-8 never uses
            [0xE2, 0x82],  // cut inside a character
        ] as [[UInt8]])
    func badUTF8(_ text: [UInt8]) {
        let bytes = [UInt8(text.count)] + text
        let expected = "ClickHouse sent a damaged answer: a string that is not UTF-8 at byte 1 of \(bytes.count)"
        #expect(damage(bytes) { _ = try $0.string() } == expected)
        #expect(damage(bytes) { _ = try $0.withStringLine { _ in } } == expected)
        #expect(
            damage([0] + bytes) { _ = try $0.optionalString() }
                == "ClickHouse sent a damaged answer: a string that is not UTF-8 at byte 2 of \(bytes.count + 1)")
        // The same bytes as UTF-8 they are meant to be read fine.
        var euro = RowBinaryReader([3, 0xE2, 0x82, 0xAC])
        #expect((try? euro.string()) == "€")
    }

    @Test("values the store never writes: a null flag other than 0 or 1, an id past 63 bits, a status code, an agent status")
    func impossibleValues() {
        #expect(
            damage([2, 0, 0, 0, 0, 0, 0, 0, 0]) { _ = try $0.optionalInt64() }
                == "ClickHouse sent a damaged answer: a null flag (0 or 1), not 2, at byte 0 of 9")
        #expect(
            damage([0, 0, 0, 0, 0, 0, 0, 0x80]) { _ = try $0.uint64AsInt64() }
                == "ClickHouse sent a damaged answer: a number that fits 63 bits, not 9223372036854775808, at byte 0 of 8")
        var sample = RowBinaryWriter()
        sample.uint64(1)
        sample.int64(0)
        sample.uint8(9)
        #expect(
            damage(sample.bytes + [1, 1, 1]) { _ = try ClickHouseRows.storedSample(&$0) }
                == "the store holds a sample status code 9 that store-samples never writes (0 to 4)")
        var agent = RowBinaryWriter()
        agent.string("paris")
        agent.string("maybe")
        #expect(
            damage(agent.bytes) { _ = try ClickHouseRows.agent(&$0) }
                == "the store holds an agent status 'maybe' that store-samples never writes (pending, approved, rejected)")
    }

    @Test("numbers travel exactly: doubles bit for bit, integers at their limits")
    func exactNumbers() throws {
        let doubles = [0.1 + 0.2, -0.0, Double.leastNonzeroMagnitude, 1e308, 123.456]
        let integers = [Int64.min, -1, 0, Int64.max]
        var writer = RowBinaryWriter()
        for value in doubles { writer.float64(value) }
        for value in integers { writer.int64(value) }
        var reader = RowBinaryReader(writer.bytes)
        for value in doubles { #expect(try reader.float64().bitPattern == value.bitPattern) }
        for value in integers { #expect(try reader.int64() == value) }
        #expect(reader.atEnd)
    }
}

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

    @Test("a batch's rows are sent in the samples table's key order: day, monitor by its bytes, time, place by its bytes")
    func rowsInKeyOrder() throws {
        // Monitors by bytes: "e" + combining acute (65 CC 81) < "f" (66) < "m1" (6D 31) < "m10" <
        // "m2" < "é" (C3 A9). Swift's String order puts the first two the other way round.
        #expect(!("e\u{301}" < "f"))
        #expect(ClickHouseRows.byteOrderRanks(["é", "f", "e\u{301}", "m10", "m1", "m2"]) == [5, 1, 0, 3, 2, 4])
        let day = Int64(86_400_000)
        let jan2: Int64 = 1_767_312_000_000  // 2026-01-02T00:00:00Z
        // (monitor, time, place, tag): each row is written as the store's begin (monitor, at,
        // identity agent), then a tag standing for the rest.
        let rows: [(String, Int64, String, String)] = [
            ("m2", jan2 + 36_000_000, "", "m2 10:00"),
            ("m10", jan2 + 32_400_000, "", "m10 09:00"),
            ("m1", jan2 + 39_600_000, "b", "m1 11:00 b"),
            ("m1", jan2 - 60_000, "", "m1 Jan 1 23:59"),
            ("m1", jan2 + 39_600_000, "a", "m1 11:00 a"),
            ("m2", jan2 + day, "", "m2 Jan 3"),
            ("m1", jan2 + 39_600_000 - 1, "c", "m1 10:59:59.999 c"),
        ]
        var writer = RowBinaryWriter()
        var starts: [Int] = []
        for (monitor, at, place, tag) in rows {
            starts.append(writer.bytes.count)
            writer.string(monitor)
            writer.int64(at)
            writer.string(place)
            writer.string(tag)
        }
        let ranks = ClickHouseRows.byteOrderRanks(["m2", "m10", "m1"])
        let monitorRanks = rows.map { row in ranks[["m2", "m10", "m1"].firstIndex(of: row.0)!] }
        var sorted: [UInt8] = []
        try ClickHouseRows.appendSorted(writer.bytes, starts: starts, monitorRanks: monitorRanks, to: &sorted)
        var reader = RowBinaryReader(sorted)
        var tags: [String] = []
        while !reader.atEnd {
            _ = try reader.string()
            _ = try reader.int64()
            _ = try reader.string()
            tags.append(try reader.string())
        }
        #expect(
            tags == [
                "m1 Jan 1 23:59", "m1 10:59:59.999 c", "m1 11:00 a", "m1 11:00 b", "m10 09:00", "m2 10:00", "m2 Jan 3",
            ])
        #expect(sorted.count == writer.bytes.count)
    }
}

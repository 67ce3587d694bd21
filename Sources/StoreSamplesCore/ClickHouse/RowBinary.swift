import VitalsKit

/// Rows in ClickHouse's `RowBinary` format: little-endian numbers, LEB128-length strings, a
/// null byte before a Nullable's value. Exact for doubles both ways (the text formats' parser
/// of 18.16 can be one ulp off), and the cheapest for the server to read.
struct RowBinaryWriter {
    var bytes: [UInt8] = []

    mutating func uint8(_ value: UInt8) { bytes.append(value) }

    mutating func int64(_ value: Int64) { uint64(UInt64(bitPattern: value)) }

    mutating func uint64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func float64(_ value: Double) { uint64(value.bitPattern) }

    mutating func string<Bytes: Collection<UInt8>>(_ value: Bytes) {
        var length = UInt64(value.count)
        repeat {
            let low = UInt8(length & 0x7F)
            length >>= 7
            bytes.append(length == 0 ? low : low | 0x80)
        } while length != 0
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) { string(value.utf8) }

    mutating func optionalString(_ value: String?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        string(value)
    }

    mutating func optionalBytes<Bytes: Collection<UInt8>>(_ value: Bytes?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        string(value)
    }

    mutating func optionalInt64(_ value: Int64?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        int64(value)
    }

    mutating func optionalFloat64(_ value: Double?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        float64(value)
    }

    mutating func optionalUInt8(_ value: UInt8?) {
        guard let value else { return bytes.append(1) }
        bytes.append(0)
        bytes.append(value)
    }
}

/// Reads an answer in `RowBinary`, column by column as the query listed them. A damaged answer
/// (cut short, a length past its end or longer than 64 bits, a null flag other than 0 or 1,
/// text that is not UTF-8) is a `ToolError` naming the byte, never a crash.
///
/// RowBinary has no row count: an answer cut exactly between two rows reads as fewer rows. The
/// transport tells that case apart (a reply that ends before its last chunk is a failure), and
/// reads ask the server to answer only once the query is done (`ClickHouseClient.run`).
struct RowBinaryReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A reader of `bytes` from byte `offset` on.
    init(_ bytes: [UInt8], at offset: Int) {
        self.bytes = bytes
        self.offset = offset
    }

    var atEnd: Bool { offset >= bytes.count }

    /// The error for a damaged answer: `what` was expected at the current byte.
    private func damaged(_ what: String) -> ToolError {
        ToolError("ClickHouse sent a damaged answer: \(what) at byte \(offset) of \(bytes.count)")
    }

    /// The place of the next `count` bytes, taken.
    private mutating func take(_ count: Int, _ what: @autoclosure () -> String) throws -> Int {
        guard count >= 0, count <= bytes.count - offset else { throw damaged(what()) }
        defer { offset += count }
        return offset
    }

    mutating func uint8() throws -> UInt8 { bytes[try take(1, "a byte")] }

    mutating func uint64() throws -> UInt64 {
        let start = try take(8, "an 8-byte number")
        var value: UInt64 = 0
        for index in (0..<8).reversed() { value = value << 8 | UInt64(bytes[start + index]) }
        return value
    }

    mutating func int64() throws -> Int64 { Int64(bitPattern: try uint64()) }

    mutating func float64() throws -> Double { Double(bitPattern: try uint64()) }

    /// A `Nullable` column's flag: 1 for NULL, 0 for a value that follows.
    mutating func isNull() throws -> Bool {
        let flag = try uint8()
        guard flag <= 1 else {
            offset -= 1
            throw damaged("a null flag (0 or 1), not \(flag),")
        }
        return flag == 1
    }

    /// The place of the next string's bytes (after its LEB128 length), taken.
    private mutating func stringRange() throws -> Range<Int> {
        let start = offset
        var length: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try uint8()
            // Ten 7-bit groups hold 64 bits; the tenth may use only its lowest bit.
            guard shift < 63 || (shift == 63 && byte <= 1) else {
                offset = start
                throw damaged("a string length of more than 64 bits")
            }
            length |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        guard length <= UInt64(bytes.count - offset) else {
            throw damaged("a string of \(length) bytes, with \(bytes.count - offset) left,")
        }
        let first = try take(Int(length), "")
        return first..<(first + Int(length))
    }

    /// Whether the bytes left hold a whole string (its length, then that many bytes): false when
    /// they stop short, as a piece of an answer read as it comes may.
    func holdsString() -> Bool {
        var position = offset
        var length: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count, shift < 64 {
            let byte = bytes[position]
            position += 1
            length |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return length <= UInt64(bytes.count - position) }
            shift += 7
        }
        // Cut inside the length, or a length too long (reading it says so).
        return shift >= 64
    }

    /// Where the next string's bytes are (not checked as UTF-8), taken.
    mutating func stringBytesRange() throws -> Range<Int> { try stringRange() }

    private func notUTF8(_ range: Range<Int>) -> ToolError {
        ToolError("ClickHouse sent a damaged answer: a string that is not UTF-8 at byte \(range.lowerBound) of \(bytes.count)")
    }

    mutating func string() throws -> String {
        let range = try stringRange()
        guard let text = String(validating: bytes[range], as: UTF8.self) else { throw notUTF8(range) }
        return text
    }

    /// A string (checked to be UTF-8), handed to `body` as a line without copying.
    mutating func withStringLine<R>(_ body: (LineBytes) throws -> R) throws -> R {
        let range = try stringRange()
        guard (try? UTF8Span(validating: bytes.span.extracting(range))) != nil else { throw notUTF8(range) }
        return try LineBytes.with(bytes, range, body)
    }

    mutating func optionalString() throws -> String? { try isNull() ? nil : try string() }
    mutating func optionalInt64() throws -> Int64? { try isNull() ? nil : try int64() }
    mutating func optionalFloat64() throws -> Double? { try isNull() ? nil : try float64() }
    mutating func optionalUInt8() throws -> UInt8? { try isNull() ? nil : try uint8() }

    /// A `UInt64` column that must fit an `Int64` (ids and counts).
    mutating func uint64AsInt64() throws -> Int64 {
        let value = try uint64()
        guard value <= UInt64(Int64.max) else {
            offset -= 8
            throw damaged("a number that fits 63 bits, not \(value),")
        }
        return Int64(value)
    }
}

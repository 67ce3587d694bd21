/// One line as `LineReader` hands it out, without its terminator: a read-only view of the
/// reader's buffer, valid until the reader's next call (keep a copy, `Array(line)`, to hold it
/// longer). Reading it by index, by iterating or as a collection is bounds-checked in every
/// build: an index outside the line traps, and never reads a neighbouring line's bytes.
///
/// The byte scanners take it whole (`SampleLine.read`, `JSONParser.scanObject` and `parse`,
/// `RecordWriter.write`): they reach its bytes inside VitalsKit, where each raw read carries its
/// figure. Elsewhere `withUnsafeBufferPointer` is for C interop (write(2), memcpy into a batch).
public struct LineBytes: RandomAccessCollection {
    public typealias Element = UInt8
    public typealias Index = Int
    public typealias Indices = Range<Int>

    @usableFromInline let buffer: UnsafeBufferPointer<UInt8>

    /// A view of `buffer`, which must stay valid and unchanged while the view is used.
    @inlinable
    public init(unsafeBuffer buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

    /// Calls `body` with a view of `bytes` (a line kept in an array: a stamped copy, a test's).
    @inlinable
    public static func with<R>(_ bytes: [UInt8], _ body: (LineBytes) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { try body(LineBytes(unsafeBuffer: $0)) }
    }

    /// Calls `body` with a view of `bytes[range]` (a record inside a buffer read whole, such as
    /// a ClickHouse answer's string), without copying it; `range` must lie within `bytes`.
    @inlinable
    public static func with<R>(_ bytes: [UInt8], _ range: Range<Int>, _ body: (LineBytes) throws -> R) rethrows -> R {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "a range outside the bytes")
        return try bytes.withUnsafeBufferPointer { try body(LineBytes(unsafeBuffer: UnsafeBufferPointer(rebasing: $0[range]))) }
    }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { buffer.count }

    /// The byte at `position`; a position outside the line traps.
    @inlinable
    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < buffer.count, "a byte outside the line")
        return buffer[position]
    }

    @inlinable
    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try body(buffer)
    }

    /// Calls `body` with the bytes in place: for C interop only.
    @inlinable
    public func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try body(buffer)
    }

    /// The line as text (invalid UTF-8 repaired).
    public var text: String { String(decoding: buffer, as: UTF8.self) }
}

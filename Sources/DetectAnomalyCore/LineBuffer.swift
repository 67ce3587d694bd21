#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The output line being built: raw memory filled with `memcpy`, reused for every line (the
/// generic `Array.append(contentsOf:)` cost several times more per byte on this hot path).
struct LineBuffer: ~Copyable {
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written so far.
    private(set) var count = 0

    init(capacity: Int = 4096) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    /// Empties the buffer, keeping its memory.
    mutating func removeAll() { count = 0 }

    /// Appends `length` bytes from `source`.
    @inline(__always)
    mutating func append(_ source: UnsafeRawPointer, _ length: Int) {
        if count + length > capacity { grow(to: count + length) }
        memcpy(storage + count, source, length)
        count += length
    }

    /// Appends a slice of a line.
    @inline(__always)
    mutating func append(_ line: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        guard !range.isEmpty else { return }
        append(line.baseAddress! + range.lowerBound, range.count)
    }

    /// Appends static ASCII text.
    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(text.utf8Start, text.utf8CodeUnitCount)
    }

    /// Appends an array's bytes.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { if let base = $0.baseAddress { append(base, $0.count) } }
    }

    /// Appends one byte.
    @inline(__always)
    mutating func append(byte: UInt8) {
        if count == capacity { grow(to: count + 1) }
        storage[count] = byte
        count += 1
    }

    /// Appends `value` rounded to `decimals` places (at most 6), trailing zeros dropped, as
    /// `JSONText.appendFixed` writes it (`12.5`, `3`, `-0.042`); NaN and infinities are `null`.
    mutating func append(_ value: Double, decimals: Int) {
        guard value.isFinite else { append("null"); return }
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (value * Double(scale)).rounded()
        guard abs(scaled) < 9.0e18 else { append(Array(String(value).utf8)); return }
        var units = Int64(scaled)
        if units < 0 {
            append(byte: UInt8(ascii: "-"))
            units = -units
        }
        var places = decimals
        while places > 0, units % 10 == 0 {
            units /= 10
            places -= 1
        }
        // Digits from the right into a stack buffer: the fraction's `places` digits, a point, the rest.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { raw in
            var end = raw.count
            var rest = units
            var written = 0
            repeat {
                if written == places, places > 0 {
                    end -= 1
                    raw[end] = UInt8(ascii: ".")
                }
                end -= 1
                raw[end] = UInt8(rest % 10) + 0x30
                rest /= 10
                written += 1
            } while rest > 0 || written <= places
            append(raw.baseAddress! + end, raw.count - end)
        }
    }

    /// Appends a whole number.
    mutating func append(integer value: Int) { append(Double(value), decimals: 0) }

    /// The bytes written, valid until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage, count: count) }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        grown.update(from: storage, count: count)
        storage.deallocate()
        storage = grown
        capacity = newCapacity
    }
}

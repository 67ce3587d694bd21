import Foundation
import Testing
import VitalsKit

@testable import DetectAnomalyCore

/// A small deterministic generator (xorshift), so failures reproduce.
struct TestRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// The median of a list, by sorting a copy: the textbook definition the window is checked against.
func referenceMedian(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let n = sorted.count
    return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
}

@Suite("windows: ring, median and MAD")
struct WindowTests {
    @Test("a ring keeps the last values in order and returns what it evicts")
    func ring() {
        var ring = Ring<Int>(capacity: 3)
        #expect(ring.append(1) == nil && ring.append(2) == nil && ring.append(3) == nil)
        #expect(ring.isFull)
        #expect(ring.append(4) == 1)
        #expect(ring.append(5) == 2)
        #expect(ring.inOrder == [3, 4, 5])
    }

    @Test("median and MAD by hand")
    func byHand() {
        var window = SortedWindow(capacity: 10)
        for value in [1.0, 2, 3, 4, 100] { window.append(value) }
        // Median 3; distances 2, 1, 0, 1, 97 → sorted 0, 1, 1, 2, 97 → MAD 1.
        #expect(window.median == 3)
        #expect(window.mad == 1)
        window.append(5)
        // 1, 2, 3, 4, 5, 100: median 3.5; distances 2.5, 1.5, 0.5, 0.5, 1.5, 96.5 → 0.5, 0.5, 1.5, 1.5, 2.5, 96.5 → MAD 1.5.
        #expect(window.median == 3.5)
        #expect(window.mad == 1.5)
        var equal = SortedWindow(capacity: 4)
        for _ in 0..<4 { equal.append(7) }
        #expect(equal.median == 7 && equal.mad == 0)
        var one = SortedWindow(capacity: 4)
        one.append(-2)
        #expect(one.median == -2 && one.mad == 0)
    }

    @Test("sliding median and MAD equal sorting the last values, for many windows and sizes")
    func againstSorting() {
        var random = TestRandom(state: 0x9E37_79B9_7F4A_7C15)
        for capacity in [1, 2, 3, 4, 5, 8, 49, 50] {
            var window = SortedWindow(capacity: capacity)
            var all: [Double] = []
            for step in 0..<400 {
                // Repeated values and heavy outliers on purpose.
                let value = step % 11 == 0 ? 5 : (random.uniform() < 0.1 ? random.uniform() * 1e4 : (random.uniform() * 100).rounded())
                window.append(value)
                all.append(value)
                let last = Array(all.suffix(capacity))
                let median = referenceMedian(last)
                #expect(window.median == median)
                #expect(window.mad == referenceMedian(last.map { abs($0 - median) }), "capacity \(capacity), step \(step)")
                #expect(window.ring.inOrder == last)
            }
        }
    }
}

@Suite("number literals")
struct NumberTextTests {
    func parse(_ text: String) -> Double? {
        var text = text
        return text.withUTF8 { NumberText.parse($0) }
    }

    @Test("plain decimals give the same Double as the standard library's parser")
    func sameAsStandardLibrary() {
        var random = TestRandom(state: 42)
        for _ in 0..<20_000 {
            let integer = random.next() % 100_000
            let fraction = random.next() % 1000
            let places = Int(random.next() % 4)
            var text = String(integer)
            if places > 0 {
                let digits = String(fraction)
                text += "." + String(String(repeating: "0", count: max(0, 3 - digits.count)) + digits).prefix(places)
            }
            #expect(parse(text) == Double(text), "\(text)")
            #expect(parse("-" + text) == Double("-" + text), "-\(text)")
        }
        for text in [
            "0", "-0", "0.1", "0.3", "123456789012345", "1234567890123456", "1e3", "1.5E-2",
            "0.000000000000000001", "99999999999999999999", "48.200",
        ] {
            #expect(parse(text) == Double(text), "\(text)")
        }
    }

    @Test("what is not a finite number is nil")
    func notNumbers() {
        #expect(parse("null") == nil)
        #expect(parse("\"48\"") == nil)
        #expect(parse("true") == nil)
        #expect(parse("1e400") == nil)
        #expect(parse("") == nil)
    }
}

@Suite("output buffer")
struct LineBufferTests {
    func text(_ build: (inout LineBuffer) -> Void) -> String {
        var buffer = LineBuffer(capacity: 4)
        build(&buffer)
        return String(decoding: buffer.bytes, as: UTF8.self)
    }

    @Test("numbers are written as JSONText.appendFixed writes them")
    func numbersMatchFoundation() {
        var random = TestRandom(state: 2024)
        var values: [Double] = [0, -0.0, 0.5, 12.5, 3, 0.042, -0.0004, 0.0005, 1e15, -123.4567, 99.9995, .nan, .infinity]
        for _ in 0..<5000 {
            let magnitude = pow(10, random.uniform() * 8 - 3)
            values.append((random.uniform() < 0.5 ? -1 : 1) * magnitude * random.uniform())
        }
        for value in values {
            for decimals in 0...3 {
                var expected: [UInt8] = []
                JSONText.appendFixed(value, decimals: decimals, to: &expected)
                #expect(
                    text { $0.append(value, decimals: decimals) } == String(decoding: expected, as: UTF8.self),
                    "\(value) to \(decimals) places")
            }
        }
    }

    @Test("it grows past its first capacity and keeps what was written")
    func grows() {
        let long = String(repeating: "x", count: 10_000)
        #expect(
            text { buffer in
                buffer.append("ab")
                Array(long.utf8).withUnsafeBufferPointer { buffer.append($0, 0..<$0.count) }
                buffer.append(byte: UInt8(ascii: "!"))
            } == "ab" + long + "!")
    }
}

/// The compact fast path of `JSONParser.scanObject`: an object written as the tools write
/// records, read with raw pointers and no optional bytes. It decides nothing it cannot decide
/// alone: any line it declines goes to the general scan from the start, which gives the verdict
/// and words the error, so the two agree on every line (a differential test holds them to it).
/// Measured: a third of the general scan's instructions on a probe-http line (callgrind), the
/// reason this unsafe code is kept.
extension JSONParser {
    /// The common line, fast: an object written compactly (no blank between tokens, none
    /// around it), whose keys and string values have no escapes, and whose values are strings,
    /// numbers, true, false or null, as the tools write records. True when the line is such an
    /// object, with `fields` filled as the general scan fills them. False for anything else,
    /// valid or not, having decided nothing: the general scan then reads the line from the
    /// start and gives the verdict and the error. Raw pointers, no optional bytes, strings
    /// eight bytes at a time: a third of the general scan's instructions on a probe-http line.
    @inline(__always)
    static func scanCompactObject(_ bytes: UnsafeBufferPointer<UInt8>, into fields: inout [FieldRange]) -> Bool {
        guard let base = bytes.baseAddress, bytes.count >= 2, base[0] == UInt8(ascii: "{") else { return false }
        let end = bytes.count
        if base[1] == UInt8(ascii: "}") { return end == 2 }
        // Fields are gathered on the stack and added to the array 32 at a time: one append per
        // field cost about 40 instructions (a uniqueness check each time).
        return withUnsafeTemporaryAllocation(of: FieldRange.self, capacity: 32) { pending -> Bool in
            let slots = pending.baseAddress!
            var found = 0
            var index = 1
            while true {
                guard index < end, base[index] == UInt8(ascii: "\"") else { return false }
                let keyStart = index + 1
                let keyEnd = plainStringEnd(base, from: keyStart, end)
                guard keyEnd >= 0 else { return false }
                index = keyEnd + 1
                guard index + 1 < end, base[index] == UInt8(ascii: ":") else { return false }
                index += 1
                let valueStart = index
                let first = base[index]
                if first == UInt8(ascii: "\"") {
                    let close = plainStringEnd(base, from: index + 1, end)
                    guard close >= 0 else { return false }
                    index = close + 1
                } else if first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39) {
                    let number = numberEnd(base, from: index, end)
                    // A number that breaks the grammar, or ends the line, is the general scan's to word.
                    guard number.problem == nil, number.index < end else { return false }
                    index = number.index
                } else if first == UInt8(ascii: "n") {
                    guard index + 4 <= end, word(base, index) == word("null") else { return false }
                    index += 4
                } else if first == UInt8(ascii: "t") {
                    guard index + 4 <= end, word(base, index) == word("true") else { return false }
                    index += 4
                } else if first == UInt8(ascii: "f") {
                    guard index + 5 <= end, word(base, index + 1) == word("alse") else { return false }
                    index += 5
                } else {
                    return false
                }
                if found == 32 {
                    fields.append(contentsOf: UnsafeBufferPointer(start: slots, count: found))
                    found = 0
                }
                (slots + found).initialize(to: FieldRange(keyStart: keyStart, keyEnd: keyEnd, valueStart: valueStart, valueEnd: index))
                found += 1
                guard index < end else { return false }
                let next = base[index]
                if next == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard next == UInt8(ascii: "}"), index + 1 == end else { return false }
                fields.append(contentsOf: UnsafeBufferPointer(start: slots, count: found))
                return true
            }
        }
    }

    /// Four bytes as one integer, for comparing literals.
    @inline(__always)
    private static func word(_ base: UnsafePointer<UInt8>, _ index: Int) -> UInt32 {
        UnsafeRawPointer(base + index).loadUnaligned(as: UInt32.self)
    }

    @inline(__always)
    private static func word(_ literal: StaticString) -> UInt32 {
        UnsafeRawPointer(literal.utf8Start).loadUnaligned(as: UInt32.self)
    }

    /// The index of the quote closing a string whose content starts at `start`, or -1 when a
    /// backslash, a control character or a non-ASCII byte comes first, or the line ends (the
    /// general scan decides).
    @inline(__always)
    private static func plainStringEnd(_ base: UnsafePointer<UInt8>, from start: Int, _ end: Int) -> Int {
        var index = ordinaryStringBytesEnd(base, from: start, end)
        while index < end {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") { return index }
            // A backslash, a control character or a byte of 0x80 and up (UTF-8 to check): the
            // general scan's. Checking UTF-8 here too kept this routine from being inlined
            // (callgrind: 509 M instructions for 50,000 bench lines against 489 M).
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return -1 }
            index += 1
        }
        return -1
    }
}

/// Why a line is not valid JSON, and where (a 1-based column in bytes).
public struct JSONSyntaxError: Error, Equatable, CustomStringConvertible {
    /// What was expected or found.
    public let message: String
    /// The byte column where the problem was seen.
    public let column: Int
    /// `message at column N`.
    public var description: String { "\(message) at column \(column)" }
}

/// The byte range of one top-level field of an object line, found without building values.
public struct FieldRange: Sendable, Equatable {
    /// Start of the key's content (after the opening quote).
    public var keyStart: Int
    /// End of the key's content (the closing quote).
    public var keyEnd: Int
    /// Start of the value's first byte.
    public var valueStart: Int
    /// One past the value's last byte.
    public var valueEnd: Int

    /// Creates a range (all zero by default).
    public init(keyStart: Int = 0, keyEnd: Int = 0, valueStart: Int = 0, valueEnd: Int = 0) {
        self.keyStart = keyStart
        self.keyEnd = keyEnd
        self.valueStart = valueStart
        self.valueEnd = valueEnd
    }
}

/// A strict RFC 8259 parser over bytes, as a cursor with mutating methods (no closures
/// capturing locals, which cost dynamic exclusivity checks on the hot path). This file holds the
/// cursor and the scans that validate without building values (the hot path);
/// `JSONParser+Values.swift` builds `JSONValue`s (the cold path), over the same cursor.
///
/// Two uses: `parse` builds a `JSONValue` (targets, configuration, cold paths);
/// `scanObject` validates an object line and returns the byte ranges of its top-level
/// fields without allocating values, so filters can read a few fields and splice their own
/// into the original bytes.
public struct JSONParser {
    // Raw pointers (the cursor's bytes and the entries that take them, the eight-byte string skip,
    // the UTF-8 and number helpers the compact scan shares): the safe form, the cursor and helpers
    // over LineBytes, bounds-checked, words assembled from checked bytes, costs 15.0% more of
    // digest's instructions and 18.0% more of detect-anomaly's on 50,000 bench lines (660.3 M
    // against 574.2 M; 589.2 M against 499.5 M, callgrind). One measurement for every raw pointer
    // in this file, and for the cursor's bytes that JSONParser+Values.swift reads.
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// Nesting deeper than this is an error rather than a stack overflow.
    public static let maxDepth = 512

    /// Creates a parser over `bytes`; they must stay valid while it is used.
    public init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Parses one complete JSON value; anything but whitespace after it is an error.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index != bytes.count { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    /// Parses a JSON value from text.
    public static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses a JSON value from a byte array.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        try parse(bytes.span)
    }

    // The span entries serve cold paths (state files, target arrays, configuration) that hold
    // their bytes in arrays: safe code there, the buffer pointer only in here, where the scanner
    // that the hot path shares walks it.

    /// Parses one complete JSON value from a span of bytes (an array's, a slice's).
    public static func parse(_ bytes: Span<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in try parse(buffer) }
    }

    /// `parse(_:)` over a line `LineReader` handed out.
    public static func parse(_ line: LineBytes) throws(JSONSyntaxError) -> JSONValue { try parse(line.buffer) }

    /// `scanObject(_:)` over a line `LineReader` handed out.
    public static func scanObject(_ line: LineBytes) throws(JSONSyntaxError) -> [FieldRange] { try scanObject(line.buffer) }

    /// `scanObject(_:)` over a span of bytes.
    public static func scanObject(_ bytes: Span<UInt8>) throws(JSONSyntaxError) -> [FieldRange] {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in try scanObject(buffer) }
    }

    /// `scanArray(_:)` over a span of bytes.
    public static func scanArray(_ bytes: Span<UInt8>) throws(JSONSyntaxError) -> [Range<Int>] {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONSyntaxError) in try scanArray(buffer) }
    }

    /// Validates that `bytes` is one JSON object and returns its top-level fields' ranges, in order.
    public static func scanObject(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> [FieldRange] {
        var fields: [FieldRange] = []
        fields.reserveCapacity(24)
        try scanObject(bytes, into: &fields)
        return fields
    }

    /// Like `scanObject(_:)`, filling `fields` (emptied first, capacity kept) so a hot loop
    /// reuses one array instead of allocating one per line.
    public static func scanObject(_ bytes: UnsafeBufferPointer<UInt8>, into fields: inout [FieldRange]) throws(JSONSyntaxError) {
        fields.removeAll(keepingCapacity: true)
        if scanCompactObject(bytes, into: &fields) { return }
        fields.removeAll(keepingCapacity: true)
        try scanAnyObject(bytes, into: &fields)
    }

    /// `scanObject` without the compact fast path: every object, every error (tests compare the two).
    static func scanAnyObject(_ bytes: UnsafeBufferPointer<UInt8>, into fields: inout [FieldRange]) throws(JSONSyntaxError) {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "{") else {
            if parser.index >= bytes.count { throw parser.error("empty line; expected a JSON object") }
            throw parser.error("expected a JSON object")
        }
        if try !parser.open(closing: UInt8(ascii: "}")) {
            repeat {
                let keyStart = parser.index + 1
                try parser.skipFieldName()
                let keyEnd = parser.index - 1
                try parser.skipColon()
                let valueStart = parser.index
                // Strings and numbers, most of a record's values, skipped here without the
                // general dispatch (same checks, same errors).
                switch parser.peek() ?? 0 {
                case UInt8(ascii: "\""): try parser.skipString()
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parser.skipNumber()
                default: try parser.skipValue()
                }
                fields.append(FieldRange(keyStart: keyStart, keyEnd: keyEnd, valueStart: valueStart, valueEnd: parser.index))
            } while try parser.nextElement(closing: UInt8(ascii: "}"))
        }
        parser.skipWhitespace()
        if parser.index != bytes.count { throw parser.error("unexpected text after the JSON object") }
    }

    /// Validates that `bytes` is one JSON array and returns the byte range of each element, in order.
    public static func scanArray(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> [Range<Int>] {
        var parser = JSONParser(bytes)
        var elements: [Range<Int>] = []
        parser.skipWhitespace()
        guard parser.peek() == UInt8(ascii: "[") else { throw parser.error("expected a JSON array") }
        if try !parser.open(closing: UInt8(ascii: "]")) {
            repeat {
                let start = parser.index
                try parser.skipValue()
                elements.append(start..<parser.index)
            } while try parser.nextElement(closing: UInt8(ascii: "]"))
        }
        parser.skipWhitespace()
        if parser.index != bytes.count { throw parser.error("unexpected text after the JSON array") }
        return elements
    }

    // MARK: - Cursor

    @inline(__always) func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: index >= bytes.count ? message.replacingEnd() : message, column: index + 1)
    }

    @inline(__always) mutating func skipWhitespace() {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 } else { return }
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unknown literal; expected true, false or null") }
        let base = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != base[offset] {
            throw error("unknown literal; expected true, false or null")
        }
        index += count
    }

    // MARK: - Containers (the one object and array loop's steps, shared by the scans and the values)

    /// At an opening `{` or `[`: one level deeper (an error past `maxDepth`), past the bracket and
    /// whitespace. True when the container is empty: its `closing` byte is passed and the level
    /// left again; otherwise the elements follow, and `nextElement` leaves the level.
    @inline(__always) mutating func open(closing: UInt8) throws(JSONSyntaxError) -> Bool {
        depth += 1
        if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
        index += 1
        skipWhitespace()
        guard peek() == closing else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After an element: past a `,` and whitespace (true: another element follows), or past the
    /// `closing` byte, leaving the level (false: the container ended); anything else is an error.
    @inline(__always) mutating func nextElement(closing: UInt8) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        let next = peek()
        if next == UInt8(ascii: ",") {
            index += 1
            skipWhitespace()
            return true
        }
        guard next == closing else {
            throw error(closing == UInt8(ascii: "}") ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array")
        }
        index += 1
        depth -= 1
        return false
    }

    /// At a field's name: past it (an error if it is no string).
    @inline(__always) mutating func skipFieldName() throws(JSONSyntaxError) {
        guard peek() == UInt8(ascii: "\"") else { throw error("expected a field name in double quotes") }
        try skipString()
    }

    /// After a field's name: past whitespace, the `:` (an error if it is missing) and whitespace.
    @inline(__always) mutating func skipColon() throws(JSONSyntaxError) {
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after a field name") }
        index += 1
        skipWhitespace()
    }

    // MARK: - Skipping (validation without values)

    private mutating func skipValue() throws(JSONSyntaxError) {
        guard let byte = peek() else { throw error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"):
            if try open(closing: UInt8(ascii: "}")) { break }
            repeat {
                try skipFieldName()
                try skipColon()
                try skipValue()
            } while try nextElement(closing: UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            if try open(closing: UInt8(ascii: "]")) { break }
            repeat { try skipValue() } while try nextElement(closing: UInt8(ascii: "]"))
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: throw error("unexpected character '\(printable(byte))'; expected a value")
        }
    }

    /// Skips a string starting at its opening quote, validating escapes and control characters.
    @inline(__always) mutating func skipString() throws(JSONSyntaxError) {
        index += 1
        while index < bytes.count {
            skipOrdinaryStringBytes()
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                index += 1
                guard let escape = peek() else { break }
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 1
                case UInt8(ascii: "u"):
                    index += 1
                    _ = try readHex4()
                default:
                    throw error("invalid escape '\\\(printable(escape))' in a string")
                }
                continue
            }
            if byte < 0x20 { throw error("control character in a string (escape it)") }
            if byte >= 0x80 {
                let length = bytes.baseAddress.map { Self.utf8SequenceLength($0, index, bytes.count) } ?? 0
                guard length > 0 else { throw error("a string is not valid UTF-8") }
                index += length
                continue
            }
            index += 1
        }
        throw error("unterminated string")
    }

    /// Moves `index` over string bytes that need no attention; see `ordinaryStringBytesEnd`.
    @inline(__always) private mutating func skipOrdinaryStringBytes() {
        guard let base = bytes.baseAddress else { return }
        index = Self.ordinaryStringBytesEnd(base, from: index, bytes.count)
    }

    /// From `start`, skips string bytes that need no attention (ASCII other than `"`, `\` and the
    /// control characters) eight at a time: the index of the first byte that does, or where fewer
    /// than eight bytes are left before `end` (the caller reads those one by one). Bytes of 0x80
    /// and up stop it: the caller checks that they form UTF-8 (`utf8SequenceLength`), so every
    /// reader refuses the same lines (RFC 8259 §8.1: JSON text is UTF-8).
    ///
    /// Per 64-bit word, `(w - 0x01...01 * n) & ~w & 0x80...80` flags the bytes below n (n <= 0x80),
    /// and the lowest flag is exact (a borrow only reaches bytes above a flagged one); a byte equal
    /// to c is a zero byte of `w ^ c...c`; `w & 0x80...80` flags the bytes of 0x80 and up.
    @inline(__always)
    static func ordinaryStringBytesEnd(_ base: UnsafePointer<UInt8>, from start: Int, _ end: Int) -> Int {
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var index = start
        while index + 8 <= end {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let flags = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- ones &* 0x20) & ~word | word) & highs
            if flags != 0 { return index + flags.trailingZeroBitCount / 8 }
            index += 8
        }
        return index
    }

    /// The length of the well-formed UTF-8 sequence starting at `index` (a byte of 0x80 or more),
    /// or 0 when there is none (RFC 3629 §4: no overlong forms, no surrogates, nothing past U+10FFFF).
    @inline(__always)
    static func utf8SequenceLength(_ base: UnsafePointer<UInt8>, _ index: Int, _ end: Int) -> Int {
        @inline(__always) func continuation(_ at: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            at < end && base[at] >= low && base[at] <= high
        }
        switch base[index] {
        case 0xC2...0xDF: return continuation(index + 1) ? 2 : 0
        case 0xE0: return continuation(index + 1, 0xA0) && continuation(index + 2) ? 3 : 0
        case 0xE1...0xEC, 0xEE, 0xEF: return continuation(index + 1) && continuation(index + 2) ? 3 : 0
        case 0xED: return continuation(index + 1, 0x80, 0x9F) && continuation(index + 2) ? 3 : 0
        case 0xF0: return continuation(index + 1, 0x90) && continuation(index + 2) && continuation(index + 3) ? 4 : 0
        case 0xF1...0xF3: return continuation(index + 1) && continuation(index + 2) && continuation(index + 3) ? 4 : 0
        case 0xF4: return continuation(index + 1, 0x80, 0x8F) && continuation(index + 2) && continuation(index + 3) ? 4 : 0
        default: return 0
        }
    }

    @inline(__always) mutating func skipNumber() throws(JSONSyntaxError) {
        guard let base = bytes.baseAddress else { throw error("invalid number") }
        let number = Self.numberEnd(base, from: index, bytes.count)
        index = number.index
        if let problem = number.problem { throw error(problem.description) }
    }

    /// RFC 8259's number grammar, the one both scans use: from `start` (a `-` or a digit), one
    /// past the number, or the index of the first byte that breaks the grammar and what it
    /// breaks. (A number that runs to `end` is whole; what may follow is the caller's to judge.)
    @inline(__always)
    static func numberEnd(_ base: UnsafePointer<UInt8>, from start: Int, _ end: Int) -> (index: Int, problem: StaticString?) {
        var index = start
        @inline(__always) func isDigit(_ at: Int) -> Bool { at < end && base[at] &- 0x30 < 10 }
        if index < end, base[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { return (index, "invalid number") }
        if base[index] == 0x30 {
            index += 1
            if isDigit(index) { return (index, "invalid number (leading zero)") }
        } else {
            repeat { index += 1 } while isDigit(index)
        }
        if index < end, base[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return (index, "invalid number (digit expected after '.')") }
            repeat { index += 1 } while isDigit(index)
        }
        if index < end, base[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < end, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { return (index, "invalid number (digit expected in exponent)") }
            repeat { index += 1 } while isDigit(index)
        }
        return (index, nil)
    }

    mutating func readHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("incomplete \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    func printable(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }
}

extension String {
    fileprivate func replacingEnd() -> String {
        self.hasPrefix("unterminated") || self.hasPrefix("empty") ? self : "unexpected end of line; " + self
    }
}

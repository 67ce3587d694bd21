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
/// capturing locals, which cost dynamic exclusivity checks on the hot path).
///
/// Two uses: `parse` builds a `JSONValue` (targets, configuration, cold paths);
/// `scanObject` validates an object line and returns the byte ranges of its top-level
/// fields without allocating values, so filters can read a few fields and splice their own
/// into the original bytes.
public struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
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
        parser.index += 1
        parser.skipWhitespace()
        if parser.peek() == UInt8(ascii: "}") {
            parser.index += 1
        } else {
            while true {
                guard parser.peek() == UInt8(ascii: "\"") else { throw parser.error("expected a field name in double quotes") }
                let keyStart = parser.index + 1
                try parser.skipString()
                let keyEnd = parser.index - 1
                parser.skipWhitespace()
                guard parser.peek() == UInt8(ascii: ":") else { throw parser.error("expected ':' after a field name") }
                parser.index += 1
                parser.skipWhitespace()
                let valueStart = parser.index
                // Strings and numbers, most of a record's values, skipped here without the
                // general dispatch (same checks, same errors).
                switch parser.peek() ?? 0 {
                case UInt8(ascii: "\""): try parser.skipString()
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parser.skipNumber()
                default: try parser.skipValue()
                }
                fields.append(FieldRange(keyStart: keyStart, keyEnd: keyEnd, valueStart: valueStart, valueEnd: parser.index))
                parser.skipWhitespace()
                let next = parser.peek()
                if next == UInt8(ascii: ",") {
                    parser.index += 1
                    parser.skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "}") {
                    parser.index += 1
                    break
                }
                throw parser.error("expected ',' or '}' in an object")
            }
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
        parser.index += 1
        parser.skipWhitespace()
        if parser.peek() == UInt8(ascii: "]") {
            parser.index += 1
        } else {
            while true {
                let start = parser.index
                try parser.skipValue()
                elements.append(start..<parser.index)
                parser.skipWhitespace()
                let next = parser.peek()
                if next == UInt8(ascii: ",") {
                    parser.index += 1
                    parser.skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "]") {
                    parser.index += 1
                    break
                }
                throw parser.error("expected ',' or ']' in an array")
            }
        }
        parser.skipWhitespace()
        if parser.index != bytes.count { throw parser.error("unexpected text after the JSON array") }
        return elements
    }

    // MARK: - Cursor

    @inline(__always) private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(message: index >= bytes.count ? message.replacingEnd() : message, column: index + 1)
    }

    @inline(__always) private mutating func skipWhitespace() {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 } else { return }
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unknown literal; expected true, false or null") }
        let base = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != base[offset] {
            throw error("unknown literal; expected true, false or null")
        }
        index += count
    }

    // MARK: - Skipping (validation without values)

    private mutating func skipValue() throws(JSONSyntaxError) {
        guard let byte = peek() else { throw error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"):
            depth += 1
            if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return
            }
            while true {
                guard peek() == UInt8(ascii: "\"") else { throw error("expected a field name in double quotes") }
                try skipString()
                skipWhitespace()
                guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after a field name") }
                index += 1
                skipWhitespace()
                try skipValue()
                skipWhitespace()
                let next = peek()
                if next == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                throw error("expected ',' or '}' in an object")
            }
            depth -= 1
        case UInt8(ascii: "["):
            depth += 1
            if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return
            }
            while true {
                try skipValue()
                skipWhitespace()
                let next = peek()
                if next == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "]") {
                    index += 1
                    break
                }
                throw error("expected ',' or ']' in an array")
            }
            depth -= 1
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try skipNumber()
        default: throw error("unexpected character '\(printable(byte))'; expected a value")
        }
    }

    /// Skips a string starting at its opening quote, validating escapes and control characters.
    @inline(__always) private mutating func skipString() throws(JSONSyntaxError) {
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

    @inline(__always) private mutating func skipNumber() throws(JSONSyntaxError) {
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

    private mutating func readHex4() throws(JSONSyntaxError) -> UInt32 {
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

    // MARK: - Building values

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard let byte = peek() else { throw error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"):
            depth += 1
            if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
            defer { depth -= 1 }
            index += 1
            skipWhitespace()
            var fields: [JSONField] = []
            if peek() == UInt8(ascii: "}") {
                index += 1
                return .object(JSONObject(fields))
            }
            while true {
                guard peek() == UInt8(ascii: "\"") else { throw error("expected a field name in double quotes") }
                let key = try parseString()
                skipWhitespace()
                guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after a field name") }
                index += 1
                skipWhitespace()
                let value = try parseValue()
                fields.append(JSONField(key, value))
                skipWhitespace()
                let next = peek()
                if next == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                throw error("expected ',' or '}' in an object")
            }
            return .object(JSONObject(fields))
        case UInt8(ascii: "["):
            depth += 1
            if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth) levels") }
            defer { depth -= 1 }
            index += 1
            skipWhitespace()
            var items: [JSONValue] = []
            if peek() == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                items.append(try parseValue())
                skipWhitespace()
                let next = peek()
                if next == UInt8(ascii: ",") {
                    index += 1
                    skipWhitespace()
                    continue
                }
                if next == UInt8(ascii: "]") {
                    index += 1
                    break
                }
                throw error("expected ',' or ']' in an array")
            }
            return .array(items)
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            try skipNumber()
            return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
        default:
            throw error("unexpected character '\(printable(byte))'; expected a value")
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = index
        try skipString()
        let contentStart = start + 1
        let contentEnd = index - 1
        let raw = UnsafeBufferPointer(rebasing: bytes[contentStart..<contentEnd])
        if !raw.contains(UInt8(ascii: "\\")) {
            guard let text = String(validating: raw, as: UTF8.self) else {
                index = start
                throw error("a string is not valid UTF-8")
            }
            return text
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(raw.count)
        var cursor = JSONParser(raw)
        while cursor.index < raw.count {
            let byte = raw[cursor.index]
            if byte != UInt8(ascii: "\\") {
                decoded.append(byte)
                cursor.index += 1
                continue
            }
            cursor.index += 1
            let escape = raw[cursor.index]
            cursor.index += 1
            switch escape {
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try cursor.readHex4()
                if scalar >= 0xD800, scalar < 0xDC00,
                    cursor.index + 6 <= raw.count, raw[cursor.index] == UInt8(ascii: "\\"), raw[cursor.index + 1] == UInt8(ascii: "u")
                {
                    let save = cursor.index
                    cursor.index += 2
                    let low = try cursor.readHex4()
                    if low >= 0xDC00, low < 0xE000 {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        cursor.index = save
                    }
                }
                let unicode = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                decoded.append(contentsOf: Array(String(Character(unicode)).utf8))
            default: decoded.append(escape)
            }
        }
        guard let text = String(validating: decoded, as: UTF8.self) else {
            index = start
            throw error("a string is not valid UTF-8")
        }
        return text
    }

    private func printable(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
    }
}

extension String {
    fileprivate func replacingEnd() -> String {
        self.hasPrefix("unterminated") || self.hasPrefix("empty") ? self : "unexpected end of line; " + self
    }
}

/// Building `JSONValue`s: the cold path (targets, configuration, a request's body), over the cursor
/// that `JSONParser.swift` scans with. Kept apart from the scans, which validate without building
/// anything; both walk containers with the same steps (`open`, `skipColon`, `nextElement`).
///
/// The cursor's bytes are raw for the scans' sake: their safe form costs 15.0% more of digest's
/// instructions and 18.0% more of detect-anomaly's on 50,000 bench lines (callgrind; the figures
/// are in JSONParser.swift).
extension JSONParser {
    mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard let byte = peek() else { throw error("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"):
            var fields: [JSONField] = []
            if try open(closing: UInt8(ascii: "}")) { return .object(JSONObject(fields)) }
            repeat {
                guard peek() == UInt8(ascii: "\"") else { throw error("expected a field name in double quotes") }
                let key = try parseString()
                try skipColon()
                fields.append(JSONField(key, try parseValue()))
            } while try nextElement(closing: UInt8(ascii: "}"))
            return .object(JSONObject(fields))
        case UInt8(ascii: "["):
            var items: [JSONValue] = []
            if try open(closing: UInt8(ascii: "]")) { return .array(items) }
            repeat { items.append(try parseValue()) } while try nextElement(closing: UInt8(ascii: "]"))
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

    mutating func parseString() throws(JSONSyntaxError) -> String {
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
}

/// Fast JSON output into byte arrays: strings escaped, integers and fixed-point numbers
/// formatted without Foundation, so building a record costs a few hundred nanoseconds.
public enum JSONText {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends a JSON value, compact.
    public static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let flag): appendLiteral(flag ? "true" : "false", to: &out)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let text): appendString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, field) in object.fields.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(field.key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(field.value, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends static ASCII text as is.
    @inline(__always)
    public static func appendLiteral(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    /// Appends `text` as a quoted JSON string, escaping `"`, `\` and control characters.
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { appendString(bytes: $0, to: &out) }
    }

    /// Appends UTF-8 bytes as a quoted JSON string.
    public static func appendString(bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if byte >= 0x20 && byte != 0x22 && byte != 0x5C { continue }
            if index > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            runStart = index + 1
            out.append(UInt8(ascii: "\\"))
            switch byte {
            case 0x22: out.append(0x22)
            case 0x5C: out.append(0x5C)
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            default:
                out.append(contentsOf: [UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
            }
        }
        if bytes.count > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count])) }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends an integer in decimal.
    public static func appendInt(_ value: Int64, to out: inout [UInt8]) {
        if value == 0 {
            out.append(0x30)
            return
        }
        var magnitude = value.magnitude
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The digits counted, room made for them, then written from the right. Safe code: the
        // stack buffer written through a raw pointer it replaced took 0.7% fewer of snapshot-delta
        // take's instructions on 50,000 records (callgrind), under the 1% that keeps unsafe code.
        var count = 1
        var rest = magnitude / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var index = out.count
        while magnitude > 0 {
            index -= 1
            out[index] = UInt8(magnitude % 10) + 0x30
            magnitude /= 10
        }
    }

    /// Appends an integer in decimal.
    @inline(__always)
    public static func appendInt(_ value: Int, to out: inout [UInt8]) { appendInt(Int64(value), to: &out) }

    /// Appends `value` rounded to `decimals` places, trailing zeros dropped (`12.5`, `3`, `0.042`);
    /// NaN and infinities become `null`.
    public static func appendFixed(_ value: Double, decimals: Int, to out: inout [UInt8]) {
        guard value.isFinite else {
            appendLiteral("null", to: &out)
            return
        }
        var scale: Int64 = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (value * Double(scale)).rounded()
        guard abs(scaled) < 9.0e18 else {
            out.append(contentsOf: String(value).utf8)
            return
        }
        var units = Int64(scaled)
        if units < 0 {
            out.append(UInt8(ascii: "-"))
            units = -units
        }
        appendInt(units / scale, to: &out)
        var fraction = units % scale
        if fraction == 0 || decimals == 0 { return }
        var places = decimals
        while fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        out.append(UInt8(ascii: "."))
        var divisor: Int64 = 1
        for _ in 1..<places { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(fraction / divisor) + 0x30)
            fraction %= divisor
            divisor /= 10
        }
    }
}

/// Builds one JSON object record field by field, straight into bytes.
public struct JSONObjectBuilder {
    /// The bytes so far (an unfinished object until `finish()`).
    public private(set) var bytes: [UInt8]
    private var empty = true

    /// Starts an object.
    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    @inline(__always)
    private mutating func key(_ name: StaticString) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// Adds a string field (`null` when nil).
    public mutating func string(_ name: StaticString, _ value: String?) {
        key(name)
        if let value { JSONText.appendString(value, to: &bytes) } else { JSONText.appendLiteral("null", to: &bytes) }
    }

    /// Adds an integer field (`null` when nil).
    public mutating func int(_ name: StaticString, _ value: Int?) {
        key(name)
        if let value { JSONText.appendInt(value, to: &bytes) } else { JSONText.appendLiteral("null", to: &bytes) }
    }

    /// Adds a number rounded to `decimals` places (`null` when nil).
    public mutating func fixed(_ name: StaticString, _ value: Double?, decimals: Int = 3) {
        key(name)
        if let value { JSONText.appendFixed(value, decimals: decimals, to: &bytes) } else { JSONText.appendLiteral("null", to: &bytes) }
    }

    /// Adds a boolean field (`null` when nil).
    public mutating func bool(_ name: StaticString, _ value: Bool?) {
        key(name)
        if let value { JSONText.appendLiteral(value ? "true" : "false", to: &bytes) } else { JSONText.appendLiteral("null", to: &bytes) }
    }

    /// Adds any JSON value under a static key.
    public mutating func value(_ name: StaticString, _ value: JSONValue) {
        key(name)
        JSONText.append(value, to: &bytes)
    }

    /// Adds a field whose value `write` appends as JSON itself (a nested object or array).
    public mutating func nested(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
        key(name)
        write(&bytes)
    }

    /// Adds a field whose key is not known in advance (a user's own field), escaped as needed.
    public mutating func field(_ name: String, _ value: JSONValue) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        JSONText.appendString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        JSONText.append(value, to: &bytes)
    }

    /// Closes the object and returns its bytes.
    public mutating func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}

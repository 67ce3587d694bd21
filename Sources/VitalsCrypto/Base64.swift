/// Base64 (RFC 4648 §4) and its URL-safe, unpadded form (§5, as JWTs use it), without Foundation.
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The Base64 text of `bytes`; `url` picks the URL-safe alphabet without padding.
    public static func encode(_ bytes: [UInt8], url: Bool = false) -> String {
        let alphabet = url ? urlAlphabet : standardAlphabet
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 2 < bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            var value = UInt32(bytes[index]) << 16
            if rest == 2 { value |= UInt32(bytes[index + 1]) << 8 }
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if rest == 2 { out.append(alphabet[Int(value >> 6 & 63)]) }
            if !url { out.append(contentsOf: rest == 2 ? [UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of Base64 text in either alphabet, padded or not; nil when it is not Base64.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            default:
                return nil
            }
            if padding > 0 { return nil }
            values.append(value)
        }
        guard values.count % 4 != 1, padding <= 2 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 3 < values.count {
            let value =
                UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6 | UInt32(values[index + 3])
            out.append(UInt8(value >> 16 & 0xFF))
            out.append(UInt8(value >> 8 & 0xFF))
            out.append(UInt8(value & 0xFF))
            index += 4
        }
        let rest = values.count - index
        if rest >= 2 {
            var value = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12
            if rest == 3 { value |= UInt32(values[index + 2]) << 6 }
            out.append(UInt8(value >> 16 & 0xFF))
            if rest == 3 { out.append(UInt8(value >> 8 & 0xFF)) }
        }
        return out
    }
}

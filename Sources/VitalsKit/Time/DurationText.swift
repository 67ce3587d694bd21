/// Durations as people type them: `250ms`, `30s`, `5m`, `24h`, `7d`, `2w`, `1h30m`, `1.5h`.
/// A bare number is seconds.
public enum DurationText {
    /// Milliseconds for `text`, or nil if it is not a duration (or is negative).
    public static func parseMilliseconds(_ text: String) -> Int64? {
        let units: [(String, Double)] = [
            ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000),
            ("d", 86_400_000), ("w", 604_800_000),
        ]
        let bytes = Array(text.trimmingSpaces.utf8)
        guard !bytes.isEmpty else { return nil }
        var index = 0
        var total = 0.0
        var sawPart = false
        while index < bytes.count {
            let numberStart = index
            while index < bytes.count, (bytes[index] >= 0x30 && bytes[index] <= 0x39) || bytes[index] == UInt8(ascii: ".") {
                index += 1
            }
            guard index > numberStart, let number = Double(String(decoding: bytes[numberStart..<index], as: UTF8.self)) else {
                return nil
            }
            let unitStart = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "a"), bytes[index] <= UInt8(ascii: "z") { index += 1 }
            let unit = String(decoding: bytes[unitStart..<index], as: UTF8.self)
            if unit.isEmpty {
                guard !sawPart, index == bytes.count else { return nil }
                total += number * 1000
            } else {
                guard let factor = units.first(where: { $0.0 == unit })?.1 else { return nil }
                total += number * factor
            }
            sawPart = true
        }
        guard total.isFinite, total < 9.0e15 else { return nil }
        return Int64(total.rounded())
    }

    /// Short human text for a duration: `250ms`, `4.2s`, `3m`, `2h 5m`, `3d`.
    public static func describe(milliseconds: Int64) -> String {
        if milliseconds < 1000 { return "\(milliseconds)ms" }
        if milliseconds < 60_000 {
            let tenths = (milliseconds + 50) / 100
            return tenths % 10 == 0 ? "\(tenths / 10)s" : "\(tenths / 10).\(tenths % 10)s"
        }
        let minutes = milliseconds / 60_000
        if minutes < 60 { return "\(minutes)m" }
        let hours = minutes / 60
        if hours < 48 { return minutes % 60 == 0 ? "\(hours)h" : "\(hours)h \(minutes % 60)m" }
        return "\(hours / 24)d"
    }
}

/// Sizes as people type them: `65536`, `512K`, `1M`, `1MiB`, `2G` (K, M, G are powers of 1024).
public enum SizeText {
    /// Bytes for `text`, or nil.
    public static func parseBytes(_ text: String) -> Int? {
        var body = text.trimmingSpaces.uppercased()
        for suffix in ["IB", "B"] where body.hasSuffix(suffix) && body.count > suffix.count {
            body.removeLast(suffix.count)
            break
        }
        var factor = 1
        if let last = body.last, let power = ["K": 1, "M": 2, "G": 3].first(where: { $0.key == String(last) })?.value {
            body.removeLast()
            for _ in 0..<power { factor *= 1024 }
        }
        guard let number = Double(body), number >= 0, number.isFinite, number * Double(factor) < 9.0e15 else { return nil }
        return Int((number * Double(factor)).rounded())
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs, CRs and LFs.
    public var trimmingSpaces: String {
        let scalars = unicodeScalars
        var start = scalars.startIndex
        var end = scalars.endIndex
        func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" }
        while start < end, isSpace(scalars[start]) { start = scalars.index(after: start) }
        while end > start, isSpace(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        return String(scalars[start..<end])
    }
}

/// RFC 3339 timestamps, formatted and parsed with fixed-width arithmetic (no `DateFormatter`,
/// which costs about 66 µs a date; this costs well under one).
public enum Timestamp {
    /// `2026-01-27T10:30:00.123Z` for milliseconds since the epoch, UTC.
    public static func format(milliseconds: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(milliseconds: milliseconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `2026-01-27T10:30:00Z` (whole seconds), the form the OnlineTracker API uses.
    public static func formatSeconds(milliseconds: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(20)
        append(milliseconds: milliseconds, to: &out, fraction: false)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the RFC 3339 UTC text of `milliseconds` (with `.mmm` unless `fraction` is false).
    public static func append(milliseconds: Int64, to out: inout [UInt8], fraction: Bool = true) {
        let (days, msOfDay) = floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let secondOfDay = Int(msOfDay / 1000)
        appendDigits(year, width: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3600, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, width: 2, to: &out)
        if fraction {
            out.append(UInt8(ascii: "."))
            appendDigits(Int(msOfDay % 1000), width: 3, to: &out)
        }
        out.append(UInt8(ascii: "Z"))
    }

    /// Parses RFC 3339 (`2026-01-27T10:30:00Z`, `...00.5+02:00`, a space for `T`) and Apple
    /// Health's `2019-05-10 08:30:00 -0700`; returns milliseconds since the epoch, or nil.
    /// Fractions beyond milliseconds are truncated.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// Parses timestamp bytes; see `parse(_:)`.
    ///
    /// A struct cursor rather than nested functions capturing a local index: those cost
    /// dynamic exclusivity checks, and every sample reader parses its `at` here.
    // The raw view is the callers' (a String's UTF-8, libxml2's attribute values); the bytes are
    // read through LineBytes, bounds-checked: 0.33% more of a SQLite ingest's instructions on
    // 100,000 bench lines (4,640.6 M against 4,625.2 M), none measurable for digest (574.24 M) or
    // detect-anomaly (499.46 M) on 50,000 (callgrind); under the 1% that keeps unsafe code.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        let bytes = LineBytes(unsafeBuffer: bytes)
        if let canonical = parseCanonical(bytes) { return canonical }
        var cursor = TimestampCursor(bytes: bytes)
        guard let year = cursor.digits(4), cursor.expect(UInt8(ascii: "-")), let month = cursor.digits(2),
            cursor.expect(UInt8(ascii: "-")), let day = cursor.digits(2)
        else { return nil }
        guard let separator = cursor.peek(),
            separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") || separator == 0x20
        else { return nil }
        cursor.index += 1
        guard let hour = cursor.digits(2), cursor.expect(UInt8(ascii: ":")), let minute = cursor.digits(2),
            cursor.expect(UInt8(ascii: ":")), let second = cursor.digits(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var milliseconds = 0
        if let mark = cursor.peek(), mark == UInt8(ascii: ".") || mark == UInt8(ascii: ",") {
            cursor.index += 1
            var places = 0
            while let byte = cursor.peek(), byte >= 0x30, byte <= 0x39 {
                if places < 3 { milliseconds = milliseconds * 10 + Int(byte - 0x30) }
                places += 1
                cursor.index += 1
            }
            guard places > 0 else { return nil }
            for _ in places..<max(places, 3) { milliseconds *= 10 }
        }
        if cursor.peek() == 0x20 { cursor.index += 1 }
        guard let zone = cursor.peek() else { return nil }
        var offsetMinutes = 0
        if zone == UInt8(ascii: "Z") || zone == UInt8(ascii: "z") {
            cursor.index += 1
        } else if zone == UInt8(ascii: "+") || zone == UInt8(ascii: "-") {
            cursor.index += 1
            guard let offsetHours = cursor.digits(2) else { return nil }
            _ = cursor.expect(UInt8(ascii: ":"))
            guard let offsetMins = cursor.digits(2), offsetHours < 24, offsetMins < 60 else { return nil }
            offsetMinutes = (offsetHours * 60 + offsetMins) * (zone == UInt8(ascii: "-") ? -1 : 1)
        } else {
            return nil
        }
        guard cursor.index == bytes.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(milliseconds)
    }

    /// The form the tools write, `2026-01-27T10:30:00.000Z` (and without the fraction), read
    /// at fixed positions: the common case of every sample's `at`. Nil for anything else (the
    /// general parser then decides).
    @inline(__always)
    private static func parseCanonical(_ bytes: LineBytes) -> Int64? {
        let count = bytes.count
        guard count == 24 || count == 20, bytes[count - 1] == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"),
            bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":"), count == 20 || bytes[19] == UInt8(ascii: ".")
        else { return nil }
        let year100 = twoDigits(bytes, 0)
        let year1 = twoDigits(bytes, 2)
        let month = twoDigits(bytes, 5)
        let day = twoDigits(bytes, 8)
        let hour = twoDigits(bytes, 11)
        let minute = twoDigits(bytes, 14)
        let second = twoDigits(bytes, 17)
        var milliseconds = 0
        if count == 24 {
            let hundreds = Int(bytes[20]) &- 0x30
            milliseconds = twoDigits(bytes, 21)
            guard UInt(bitPattern: hundreds) <= 9, milliseconds < 100 else { return nil }
            milliseconds += hundreds * 100
        }
        guard year100 < 100, year1 < 100 else { return nil }
        let year = year100 * 100 + year1
        guard month >= 1, month <= 12, day >= 1, day <= daysInMonth(year: year, month: month),
            hour < 24, minute < 60, second < 61
        else { return nil }
        let seconds = Int64(days(fromCivil: year, month, day)) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59))
        return seconds * 1000 + Int64(milliseconds)
    }

    /// The two decimal digits at `index` as a number, or 1000 when either is not a digit (so
    /// every range check after refuses it).
    @inline(__always)
    private static func twoDigits(_ bytes: LineBytes, _ index: Int) -> Int {
        let tens = UInt(bytes[index]) &- 0x30
        let ones = UInt(bytes[index + 1]) &- 0x30
        return tens > 9 || ones > 9 ? 1000 : Int(tens * 10 + ones)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    public static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day number since 1970-01-01.
    public static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = Int(days) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        var quotient = value / divisor
        var remainder = value % divisor
        if remainder < 0 {
            quotient -= 1
            remainder += divisor
        }
        return (quotient, remainder)
    }

    @inline(__always)
    private static func appendDigits(_ value: Int, width: Int, to out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(rest / divisor % 10) + 0x30)
            rest %= divisor
            divisor /= 10
        }
    }
}

/// A position in timestamp bytes, for `Timestamp.parse(bytes:)`.
private struct TimestampCursor {
    let bytes: LineBytes
    var index = 0

    init(bytes: LineBytes) { self.bytes = bytes }

    @inline(__always)
    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    /// `count` decimal digits as a number, or nil (the cursor then stays where it was).
    @inline(__always)
    mutating func digits(_ count: Int) -> Int? {
        guard index + count <= bytes.count else { return nil }
        var value = 0
        for offset in 0..<count {
            let byte = bytes[index + offset]
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        index += count
        return value
    }

    /// Steps over `byte` when it is next.
    @inline(__always)
    mutating func expect(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }
}

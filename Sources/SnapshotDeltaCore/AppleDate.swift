import VitalsKit

// Unsafe pointers here are C interop (dates and device texts are libxml2's attribute values, read in place): kept.

/// Apple Health's dates: `2019-05-10 08:30:00 -0700` with an offset that varies within one
/// file (daylight saving time, travel), normalized to UTC by VitalsKit's fixed-width
/// `Timestamp.parse` (measured: about as fast as a parser for this one form, and it takes
/// RFC 3339 too); and the calendar days of activity summaries.
enum AppleDate {
    /// Milliseconds since the epoch, or nil when `bytes` is not a date.
    @inline(__always)
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        Timestamp.parse(bytes: bytes)
    }

    /// A calendar day `yyyy-MM-dd` (an activity summary's `dateComponents`): its UTC midnight and its year.
    static func parseDay(_ bytes: UnsafeBufferPointer<UInt8>) -> (start: Int64, year: Int)? {
        guard bytes.count == 10, let year = Int(String(decoding: bytes.prefix(4), as: UTF8.self)),
            let start = Timestamp.parse(String(decoding: bytes, as: UTF8.self) + "T00:00:00Z")
        else { return nil }
        return (start, year)
    }
}

/// HealthKit's device description without the memory address it embeds:
/// `<<HKDevice: 0x3012772a0>, name:Apple Watch, …>` becomes `name:Apple Watch, …`.
/// The address changes from one export to the next, so it must not reach any identity.
enum DeviceText {
    private static let prefix: [UInt8] = Array("<<HKDevice: 0x".utf8)

    /// The description without the address (a slice of `bytes`), or `bytes` unchanged when
    /// it does not have HealthKit's form.
    static func stripped(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard bytes.count > prefix.count else { return bytes }
        for index in 0..<prefix.count where bytes[index] != prefix[index] { return bytes }
        var cursor = prefix.count
        while cursor < bytes.count, bytes[cursor] != UInt8(ascii: ">") { cursor += 1 }
        guard cursor < bytes.count else { return bytes }
        cursor += 1
        while cursor < bytes.count, bytes[cursor] == UInt8(ascii: ",") || bytes[cursor] == 0x20 { cursor += 1 }
        var end = bytes.count
        if end > cursor, bytes[end - 1] == UInt8(ascii: ">") { end -= 1 }
        return UnsafeBufferPointer(rebasing: bytes[cursor..<end])
    }

    /// The same for text.
    static func stripped(_ text: String) -> String {
        var text = text
        return text.withUTF8 { String(decoding: stripped($0), as: UTF8.self) }
    }
}

/// HTTP's dates and the `Retry-After` header, for every tool that sends over HTTP and waits when a
/// server asks it to (notify's channels, store-samples' remote store).
public enum HTTPDate {
    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form of Retry-After dates, in ms since
    /// 1970; fields out of their ranges (RFC 9110 5.6.7) are no date.
    public static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]), let year = Int(parts[3]),
            (1...31).contains(day), (0...9999).contains(year)
        else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let month = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        let days = Timestamp.days(fromCivil: year, month + 1, day)
        return (Int64(days) * 86_400 + Int64(clock[0] * 3600 + clock[1] * 60 + clock[2])) * 1000
    }

    /// A `Retry-After` value as milliseconds from `nowMs` (wall clock): delta-seconds or an HTTP
    /// date (a date past is 0). Seconds past 2^31 count as 2^31 (RFC 9111 1.2.2), so a server's
    /// huge value is a long wait, not a crash; nil for a value that is neither.
    public static func retryAfterMs(_ text: String, nowMs: Int64) -> Int64? {
        if let seconds = Double(text), seconds >= 0, seconds.isFinite { return Int64(min(seconds, 2_147_483_648) * 1000) }
        if let date = parse(text) { return max(0, date - nowMs) }
        return nil
    }
}

import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The time zone digest writes times in and decides "today" in (`--tz`): local time, UTC,
/// a fixed offset (`+02:00`, `-0530`) or a zone name from the system's database (`Europe/Paris`).
struct Zone: Sendable {
    private enum Kind: Sendable {
        case local
        case fixed(Int)
        case named(TimeZone)
    }
    private let kind: Kind
    /// How the option was given, normalized (`local`, `UTC`, `+02:00`, `Europe/Paris`), for the cache key.
    let name: String

    /// Local time, as the `TZ` environment variable or the system says.
    static let local = Zone(kind: .local, name: "local")
    /// UTC.
    static let utc = Zone(kind: .fixed(0), name: "UTC")

    /// The zone for `text`, or nil when it is not one.
    static func parse(_ text: String) -> Zone? {
        let trimmed = text.trimmingSpaces
        switch trimmed.lowercased() {
        case "local": return .local
        case "utc", "z", "gmt", "+00:00", "-00:00", "+0000", "+00": return .utc
        default: break
        }
        if let first = trimmed.first, first == "+" || first == "-" {
            let digits = trimmed.dropFirst().filter { $0 != ":" }
            guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), digits.count == 2 || digits.count == 4,
                let hours = Int(digits.prefix(2)), let minutes = Int(digits.count == 4 ? digits.suffix(2) : "0"),
                hours <= 14, minutes < 60
            else { return nil }
            let seconds = (hours * 3600 + minutes * 60) * (first == "-" ? -1 : 1)
            return Zone(kind: .fixed(seconds), name: offsetText(seconds))
        }
        guard trimmed.contains("/") || trimmed.allSatisfy({ $0.isLetter }), let zone = TimeZone(identifier: trimmed) else { return nil }
        return Zone(kind: .named(zone), name: trimmed)
    }

    /// The offset from UTC at instant `ms`, seconds.
    func offsetSeconds(at ms: Int64) -> Int {
        switch kind {
        case .fixed(let seconds): return seconds
        case .named(let zone): return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))
        case .local:
            var seconds = time_t(floorDivide(ms, 1000))
            var parts = tm()
            guard localtime_r(&seconds, &parts) != nil else { return 0 }
            return Int(parts.tm_gmtoff)
        }
    }

    /// The local calendar day of `ms` (days since 1970-01-01 in this zone).
    func day(of ms: Int64) -> Int64 {
        floorDivide(ms + Int64(offsetSeconds(at: ms)) * 1000, 86_400_000)
    }

    /// Local date and time parts of `ms`.
    func parts(of ms: Int64) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, offset: Int) {
        let offset = offsetSeconds(at: ms)
        let local = ms + Int64(offset) * 1000
        let days = floorDivide(local, 86_400_000)
        let (year, month, day) = Timestamp.civil(fromDays: days)
        let minuteOfDay = Int((local - days * 86_400_000) / 60_000)
        return (year, month, day, minuteOfDay / 60, minuteOfDay % 60, offset)
    }

    /// `UTC` or `+02:00`: the label of the offset at `ms`.
    func label(at ms: Int64) -> String { Self.offsetText(offsetSeconds(at: ms)) }

    static func offsetText(_ seconds: Int) -> String {
        if seconds == 0 { return "UTC" }
        let magnitude = abs(seconds) / 60
        return (seconds < 0 ? "-" : "+") + two(magnitude / 60) + ":" + two(magnitude % 60)
    }

    static func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

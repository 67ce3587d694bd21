import Foundation
import VitalsKit

/// The calendar year of an instant in one time zone, without a `Calendar` per sample:
/// the UTC instants of each local New Year are computed once per year seen, and an
/// instant is placed between two of them.
final class YearCalendar {
    /// The zone's identifier (`UTC`, `Europe/Paris`).
    let identifier: String
    private let zone: TimeZone
    private var newYears: [Int: Int64] = [:]
    private var cachedYear = Int.min
    private var cachedStart: Int64 = 0
    private var cachedEnd: Int64 = 0

    /// A calendar for `identifier`, or nil when the system does not know the zone.
    init?(identifier: String) {
        guard let zone = TimeZone(identifier: identifier) else { return nil }
        self.identifier = identifier
        self.zone = zone
    }

    /// The zone to use when none is named: `TZ`, else the system's, else UTC.
    static func defaultIdentifier(environment: [String: String]) -> String {
        if var tz = environment["TZ"], !tz.isEmpty {
            if tz.hasPrefix(":") { tz.removeFirst() }
            if tz.hasPrefix("/") { tz = tz.components(separatedBy: "/zoneinfo/").last ?? tz }
            if TimeZone(identifier: tz) != nil { return tz }
        }
        let system = TimeZone.current.identifier
        return system.isEmpty ? "UTC" : system
    }

    /// The UTC instant (ms) of local midnight on January 1 of `year`.
    func newYear(_ year: Int) -> Int64 {
        if let known = newYears[year] { return known }
        // Local midnight read as if it were UTC, then moved by the zone's offset at that instant
        // (twice, in case the offset itself changes around New Year).
        let localAsUTC = Int64(Timestamp.days(fromCivil: year, 1, 1)) * 86_400
        var offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(localAsUTC))))
        offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(localAsUTC - offset))))
        let instant = (localAsUTC - offset) * 1000
        newYears[year] = instant
        return instant
    }

    /// The local calendar year of `milliseconds` since the epoch.
    @inline(__always)
    func year(of milliseconds: Int64) -> Int {
        if milliseconds >= cachedStart, milliseconds < cachedEnd { return cachedYear }
        return lookUp(milliseconds)
    }

    private func lookUp(_ milliseconds: Int64) -> Int {
        // A first guess from UTC, then step to the year whose bounds hold the instant.
        let days = milliseconds >= 0 ? milliseconds / 86_400_000 : (milliseconds - 86_399_999) / 86_400_000
        var year = Timestamp.civil(fromDays: days).year
        while milliseconds < newYear(year) { year -= 1 }
        while milliseconds >= newYear(year + 1) { year += 1 }
        cachedYear = year
        cachedStart = newYear(year)
        cachedEnd = newYear(year + 1)
        return year
    }
}

import VitalsKit

/// The period an SLA report covers (`digest --period` or `--since`/`--until`): a calendar month
/// (`2026-11`), an ISO week (`2026-W47`, Monday to Monday), a day (`2026-11-28`), or a range;
/// calendar boundaries are midnights in the digest's zone (`--tz`).
struct SLAPeriod: Equatable {
    /// Start (inclusive) and end (exclusive), ms since the epoch.
    var start: Int64
    var end: Int64
    /// How it was asked for: `2026-11`, `2026-W47`, `2026-11-28`, or the range's two ends.
    var label: String

    /// The period `text` names in `zone`, or nil.
    static func parse(_ text: String, zone: Zone) -> SLAPeriod? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, parts[0].count == 4, let year = Int(parts[0]) else { return nil }
        if parts.count == 2, parts[1].hasPrefix("W"), let week = Int(parts[1].dropFirst()), (1...53).contains(week) {
            // ISO 8601: week 1 holds the year's first Thursday; weeks start on Monday.
            let january4 = Int64(Timestamp.days(fromCivil: year, 1, 4))
            let weekday = Int((january4 + 3) % 7)  // 0 Monday ... 6 Sunday (day 0, 1970-01-01, was a Thursday)
            let monday = january4 - Int64(weekday) + Int64(week - 1) * 7
            if week == 53 {
                // Only years whose week 53 exists: the Monday after it is still in that week-year.
                let nextJanuary4 = Int64(Timestamp.days(fromCivil: year + 1, 1, 4))
                let nextMonday = nextJanuary4 - Int64((nextJanuary4 + 3) % 7)
                guard monday < nextMonday else { return nil }
            }
            return SLAPeriod(start: midnight(monday, zone), end: midnight(monday + 7, zone), label: text)
        }
        guard let month = Int(parts[1]), (1...12).contains(month), parts[1].count == 2 else { return nil }
        if parts.count == 2 {
            let first = Int64(Timestamp.days(fromCivil: year, month, 1))
            let next = Int64(month == 12 ? Timestamp.days(fromCivil: year + 1, 1, 1) : Timestamp.days(fromCivil: year, month + 1, 1))
            return SLAPeriod(start: midnight(first, zone), end: midnight(next, zone), label: text)
        }
        guard parts.count == 3, parts[2].count == 2, let day = Int(parts[2]), (1...31).contains(day) else { return nil }
        let days = Int64(Timestamp.days(fromCivil: year, month, day))
        guard Timestamp.civil(fromDays: days) == (year, month, day) else { return nil }
        return SLAPeriod(start: midnight(days, zone), end: midnight(days + 1, zone), label: text)
    }

    /// `--since`/`--until`: an RFC 3339 time, or a date (its midnight in `zone`).
    static func instant(_ text: String, zone: Zone) -> Int64? {
        if let at = Timestamp.parse(text) { return at }
        let parts = text.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3, text.count == 10 else { return nil }
        let days = Int64(Timestamp.days(fromCivil: parts[0], parts[1], parts[2]))
        guard Timestamp.civil(fromDays: days) == (parts[0], parts[1], parts[2]) else { return nil }
        return midnight(days, zone)
    }

    /// The instant of midnight starting civil day `days` (since 1970-01-01) in `zone`.
    static func midnight(_ days: Int64, _ zone: Zone) -> Int64 {
        let civil = days * 86_400_000
        let guess = civil - Int64(zone.offsetSeconds(at: civil)) * 1000
        return civil - Int64(zone.offsetSeconds(at: guess)) * 1000
    }
}

/// A maintenance window (a `maintenance` record, as `notify mute list --all` writes them).
struct MaintenanceWindow: Equatable {
    /// Monitor ids or shell patterns.
    var monitors: [String]
    var start: Int64
    var end: Int64

    /// Whether it names `monitor`.
    func covers(_ monitor: String) -> Bool {
        monitors.contains { pattern in
            pattern == monitor || (pattern.contains(where: { "*?[".contains($0) }) && fnmatch(pattern, monitor, 0) == 0)
        }
    }

    /// The windows in `text` (NDJSON; records of other types skipped); each bad line is reported
    /// through `problem` with its number.
    static func read(_ text: String, problem: (Int, String) -> Void) -> [MaintenanceWindow] {
        var windows: [MaintenanceWindow] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = String(line).trimmingSpaces
            if trimmed.isEmpty { continue }
            guard case .object(let object)? = try? JSONParser.parse(trimmed) else {
                problem(index + 1, "not a JSON object")
                continue
            }
            guard object["type"]?.stringValue == "maintenance" else { continue }
            let monitors = object["monitors"]?.arrayValue?.compactMap { $0.stringValue } ?? []
            guard !monitors.isEmpty, let start = object["start"]?.stringValue.flatMap(Timestamp.parse),
                let end = object["end"]?.stringValue.flatMap(Timestamp.parse), end > start
            else {
                problem(index + 1, "a maintenance record needs monitors, and a start before its end (RFC 3339)")
                continue
            }
            windows.append(MaintenanceWindow(monitors: monitors, start: start, end: end))
        }
        return windows
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One monitor's accounting over the period (digest(1), SLA REPORTS).
struct SLAMonitor: Equatable {
    var monitor: String
    var name: String
    /// Time judged up (degraded and partial included), down (down or error), with no check, and in
    /// maintenance (left out; 0 without --maintenance), ms. They add up to the period's length.
    var upMs: Int64 = 0
    var downMs: Int64 = 0
    var noDataMs: Int64 = 0
    var maintenanceMs: Int64 = 0
    /// Of the up time, the time judged degraded (not a partial outage).
    var degradedMs: Int64 = 0
    /// Time in a partial outage (fewer than a quorum of places failing): measured, not up, and
    /// spent from the budget, as digest's uptime counts it.
    var partialMs: Int64 = 0
    /// Checks in the period, and those that passed only on a retry (flaky).
    var checks = 0
    var flakyChecks = 0
    /// The outages: runs of down time, each start, end (exclusive) and length, ms.
    var outages: [(start: Int64, end: Int64)] = []

    /// Up, down and partial: the time measured.
    var measuredMs: Int64 { upMs + downMs + partialMs }
    /// The time spent from the error budget: down and partial.
    var usedMs: Int64 { downMs + partialMs }
    /// Uptime in percent of the measured time (nil: nothing measured).
    var uptimePercent: Double? { measuredMs > 0 ? Double(upMs) * 100 / Double(measuredMs) : nil }
    /// The error budget: (100 - slo) percent of the measured time, ms (rounded to the millisecond).
    func budgetMs(slo: Double) -> Int64 { Int64((Double(measuredMs) * (100 - slo) / 100).rounded()) }

    static func == (a: SLAMonitor, b: SLAMonitor) -> Bool {
        a.monitor == b.monitor && a.upMs == b.upMs && a.downMs == b.downMs && a.noDataMs == b.noDataMs
            && a.maintenanceMs == b.maintenanceMs && a.outages.map(\.start) == b.outages.map(\.start)
    }
}

/// An SLA report: for each monitor, uptime by time over the period, its outages and its error
/// budget, by the rules it states (`SLAReport.rules`).
struct SLAReport {
    var period: SLAPeriod
    /// The target, percent.
    var slo: Double
    /// Whether maintenance windows were given (and so left out).
    var maintenanceLeftOut: Bool
    var quorum: Quorum
    var monitors: [SLAMonitor]

    /// A check's status counts from its time until the next check of the monitor, at most this many
    /// of its check intervals.
    static let coverIntervals: Int64 = 1

    /// Builds the report from each monitor's rows (any order), judged by the place rule when a
    /// monitor has several places.
    static func build(
        services: ServiceTable, rows: [[SampleRow]], period: SLAPeriod, slo: Double, quorum: Quorum, maintenance: [MaintenanceWindow]?
    ) -> SLAReport {
        var monitors: [SLAMonitor] = []
        for service in rows.indices where !rows[service].isEmpty {
            let monitor = services.monitor(service)
            let windows = (maintenance ?? []).filter { $0.covers(monitor) }
            var account = SLAMonitor(monitor: monitor, name: services.name(service))
            let sorted = rows[service].sorted { ($0.at, $0.sequence) < ($1.at, $1.sequence) }
            let places = Set(sorted.map(\.place)).count
            // The consensus of each check: the place rule over each place's latest vote (vitals(7), PLACES).
            var votes: [UInt16: PlaceRule.Vote] = [:]
            var judged: [(row: SampleRow, status: SampleStatus, partial: Bool)] = []
            for row in sorted {
                var status = row.sampleStatus
                var partial = false
                if places > 1 {
                    let key = services.placeKey(UInt32(service), Int(row.place))
                    let interval = row.intervalMs > 0 ? row.intervalMs : PlaceRule.defaultIntervalMs
                    if let verdict = PlaceRule.verdict(
                        place: key, at: row.at, status: status, others: Array(votes.values), intervalMs: interval, quorum: quorum)
                    {
                        status = verdict.status
                        partial = verdict.isPartial
                    }
                    if row.sampleStatus != .unknown { votes[row.place] = PlaceRule.Vote(place: key, at: row.at, status: row.sampleStatus) }
                }
                judged.append((row, status, partial))
            }
            // Segments of time: each check holds until the next, at most its interval; clipped to the period.
            var segments: [(start: Int64, end: Int64, status: SampleStatus, partial: Bool)] = []
            for (index, item) in judged.enumerated() {
                if item.row.at >= period.start, item.row.at < period.end {
                    account.checks += 1
                    if item.row.attempts > 1, item.status == .up || item.status == .degraded { account.flakyChecks += 1 }
                }
                let interval = item.row.intervalMs > 0 ? item.row.intervalMs : PlaceRule.defaultIntervalMs
                var end = item.row.at + coverIntervals * interval
                if index + 1 < judged.count { end = min(end, judged[index + 1].row.at) }
                let start = max(item.row.at, period.start)
                end = min(end, period.end)
                guard end > start, item.status != .unknown else { continue }
                segments.append((start, end, item.status, item.partial))
            }
            // Maintenance: each window's part of a segment is left out.
            var covered: Int64 = 0
            var lastDownEnd = Int64.min
            for segment in segments {
                for piece in cut(segment.start, segment.end, by: windows) {
                    let length = piece.end - piece.start
                    covered += length
                    if piece.inMaintenance {
                        account.maintenanceMs += length
                        continue
                    }
                    if segment.partial {
                        account.partialMs += length
                        continue
                    }
                    switch segment.status {
                    case .down, .error:
                        account.downMs += length
                        if piece.start == lastDownEnd, !account.outages.isEmpty {
                            account.outages[account.outages.count - 1].end = piece.end
                        } else {
                            account.outages.append((piece.start, piece.end))
                        }
                        lastDownEnd = piece.end
                    case .degraded:
                        account.upMs += length
                        account.degradedMs += length
                    default:
                        account.upMs += length
                    }
                }
            }
            // Maintenance with no check in it is still maintenance, not a gap.
            let unmeasuredMaintenance = max(0, merged(windows, within: period) - account.maintenanceMs)
            account.maintenanceMs += unmeasuredMaintenance
            account.noDataMs = (period.end - period.start) - covered - unmeasuredMaintenance
            monitors.append(account)
        }
        monitors.sort { $0.monitor < $1.monitor }
        return SLAReport(period: period, slo: slo, maintenanceLeftOut: maintenance != nil, quorum: quorum, monitors: monitors)
    }

    /// The pieces of [start, end) inside and outside `windows`, in order.
    static func cut(_ start: Int64, _ end: Int64, by windows: [MaintenanceWindow]) -> [(start: Int64, end: Int64, inMaintenance: Bool)] {
        var pieces: [(start: Int64, end: Int64, inMaintenance: Bool)] = []
        var at = start
        while at < end {
            if let window = windows.first(where: { $0.start <= at && at < $0.end }) {
                let next = min(end, window.end)
                pieces.append((at, next, true))
                at = next
            } else {
                let next = min(end, windows.map(\.start).filter { $0 > at }.min() ?? end)
                pieces.append((at, next, false))
                at = next
            }
        }
        return pieces
    }

    /// The length of the union of `windows` inside the period, ms.
    static func merged(_ windows: [MaintenanceWindow], within period: SLAPeriod) -> Int64 {
        let spans = windows.map { (max($0.start, period.start), min($0.end, period.end)) }.filter { $0.0 < $0.1 }.sorted { $0.0 < $1.0 }
        var total: Int64 = 0
        var current: (Int64, Int64)?
        for span in spans {
            if let open = current, span.0 <= open.1 {
                current = (open.0, max(open.1, span.1))
            } else {
                if let open = current { total += open.1 - open.0 }
                current = span
            }
        }
        if let open = current { total += open.1 - open.0 }
        return total
    }

    /// The report's rules, in words: how it counts (every format states them).
    var rules: [(key: String, words: String)] {
        var out: [(String, String)] = []
        out.append(
            (
                "time",
                "Uptime is measured by time, not by counting checks: each check's status holds from its time until the next check "
                    + "of the monitor, for at most one check interval (its check_interval, else 60 s)."
            ))
        out.append(
            (
                "gaps",
                "Time without a check (before the first, after the last, or a gap longer than an interval) is left out: neither up "
                    + "nor down, reported as no data; the error budget is taken of the measured time only."
            ))
        out.append(
            (
                "maintenance",
                maintenanceLeftOut
                    ? "Maintenance windows (--maintenance) are left out: time in them is neither up nor down, and an outage in them is none."
                    : "Maintenance is counted like any other time (no --maintenance was given)."
            ))
        out.append(
            (
                "places",
                "A monitor checked from several places is judged by the place rule (--quorum \(quorum)): each check counts as the "
                    + "monitor's status at its time; a partial outage (fewer than a quorum of places failing) is not up, as in digest's "
                    + "uptime: its time is measured, spent from the budget, and reported apart, not as an outage."
            ))
        out.append(("degraded", "Degraded counts as up (a partial outage aside); down and error count as down."))
        out.append(
            (
                "retries",
                "A check tried again (probe-http --confirm) counts as its last try: one that passed on a retry counts as up, and is "
                    + "counted as flaky."
            ))
        out.append(
            (
                "budget",
                "The error budget is (100 - target) percent of the measured time, spent by down and partial time; the target is "
                    + "met when uptime is at least the target."
            ))
        return out
    }
}

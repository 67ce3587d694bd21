import VitalsKit

/// How the human formats write numbers, times and lists, the same way everywhere.
struct Words {
    /// The zone times are written in.
    let zone: Zone
    /// The window's end: times on its local day are written as `HH:MM` alone.
    let reference: Int64?

    /// `48 ms`, `4.2 ms`, `1,250 ms`: whole milliseconds from 10 up, one decimal below.
    static func latency(_ ms: Double) -> String {
        if ms < 9.95 { return fixed(ms, decimals: 1) + " ms" }
        return grouped(Int64(ms.rounded())) + " ms"
    }

    /// A percentage with one decimal, never rounded up to 100 or down to 0: `99.7%`, `>99.9%`, `<0.1%`, `100%`.
    static func percent(_ value: Double) -> String {
        if value >= 100 { return "100%" }
        if value <= 0 { return "0%" }
        if value >= 99.95 { return ">99.9%" }
        if value < 0.05 { return "<0.1%" }
        return fixed(value, decimals: 1) + "%"
    }

    /// `93.2 Mbit/s`.
    static func speed(_ mbps: Double) -> String { fixed(mbps, decimals: 1) + " Mbit/s" }

    /// `14m`, `2h 5m`, `4.2s`.
    static func duration(_ ms: Int64) -> String { DurationText.describe(milliseconds: ms) }

    /// An outage's length, in minutes as every other outage is (`14m`, `2h 5m`), and `<1m`
    /// under a minute: an outage that has only just begun (one down sample, length 0) is
    /// not "0ms".
    static func outage(_ ms: Int64) -> String { ms < 60_000 ? "<1m" : duration(ms) }

    /// `24 hours`, `7 days`, `30 minutes`, `90 seconds` (or the short form for odd values).
    static func span(_ ms: Int64) -> String {
        let units: [(Int64, String)] = [(86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute"), (1000, "second")]
        if ms == 86_400_000 { return "24 hours" }
        for (size, unit) in units where ms >= size && ms % size == 0 {
            let count = ms / size
            return count == 1 ? "1 \(unit)" : "\(grouped(count)) \(unit)s"
        }
        return duration(ms)
    }

    /// `5-minute bucket`, `1-hour bucket`, or `bucket of 90s` for odd widths.
    static func unit(_ ms: Int64) -> String {
        let units: [(Int64, String)] = [(86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute"), (1000, "second")]
        for (size, unit) in units where ms >= size && ms % size == 0 {
            return "\(grouped(ms / size))-\(unit) bucket"
        }
        return "bucket of \(duration(ms))"
    }

    /// `1,440`.
    static func grouped(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// `1,440`.
    static func grouped(_ value: Int) -> String { grouped(Int64(value)) }

    /// `once`, `twice`, `3 times`.
    static func times(_ count: Int) -> String {
        switch count {
        case 1: return "once"
        case 2: return "twice"
        default: return "\(grouped(count)) times"
        }
    }

    /// `1 outage`, `3 outages`.
    static func count(_ value: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(grouped(value)) " + (value == 1 ? singular : plural ?? singular + "s")
    }

    /// `a`, `a and b`, `a, b and c`.
    static func list(_ items: [String]) -> String {
        switch items.count {
        case 0: return ""
        case 1: return items[0]
        default: return items.dropLast().joined(separator: ", ") + " and " + items.last!
        }
    }

    /// `value` rounded to `decimals` places, trailing zeros kept (`4.0`).
    static func fixed(_ value: Double, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let units = Int64((value * scale).rounded())
        if decimals == 0 { return grouped(units) }
        let whole = units / Int64(scale)
        var fraction = String(abs(units % Int64(scale)))
        while fraction.count < decimals { fraction = "0" + fraction }
        return (units < 0 && whole == 0 ? "-" : "") + grouped(whole) + "." + fraction
    }

    /// `03:15` on the reference's local day, `2026-01-26 23:10` otherwise.
    func time(_ ms: Int64) -> String {
        let p = zone.parts(of: ms)
        let clock = Zone.two(p.hour) + ":" + Zone.two(p.minute)
        if let reference, zone.day(of: reference) == zone.day(of: ms) { return clock }
        return date(p) + " " + clock
    }

    /// `10:05 and 10:10`: a correlation bucket's bounds.
    func bucket(_ failure: CorrelatedFailure) -> String {
        time(failure.start) + " and " + time(failure.end)
    }

    /// `10:05-10:10`: a correlation bucket, short.
    func bucketRange(_ failure: CorrelatedFailure) -> String {
        time(failure.start) + "-" + time(failure.end)
    }

    /// `2026-01-27 10:30 UTC` (or `+02:00`): a full time with its offset.
    func fullTime(_ ms: Int64) -> String {
        let p = zone.parts(of: ms)
        return date(p) + " " + Zone.two(p.hour) + ":" + Zone.two(p.minute) + " " + Zone.offsetText(p.offset)
    }

    private func date(_ p: (year: Int, month: Int, day: Int, hour: Int, minute: Int, offset: Int)) -> String {
        "\(p.year)-" + Zone.two(p.month) + "-" + Zone.two(p.day)
    }

    /// `the 24 hours to 2026-01-27 10:30 UTC`.
    func window(_ facts: DigestFacts) -> String {
        guard let end = facts.windowEnd else { return "the last \(Words.span(facts.windowMs))" }
        return "the \(Words.span(facts.windowMs)) to \(fullTime(end))"
    }

    /// `3 up, 1 degraded and 1 down`, in severity order from up.
    static func statusCounts(_ counts: [SampleStatus: Int]) -> String {
        let order: [SampleStatus] = [.up, .degraded, .down, .error, .unknown]
        return list(
            order.compactMap { status in
                guard let count = counts[status], count > 0 else { return nil }
                return "\(grouped(count)) \(status.rawValue)"
            })
    }

    /// The column titles of the service tables (Markdown, HTML), after Service and Now.
    static let tableTitles = ["Uptime", "Checks", "Avg", "p95", "Latest", "Trend", "Outages", "Outage time", "Speed"]

    /// One service's cells under `tableTitles`.
    static func tableCells(_ s: ServiceFacts) -> [String] {
        let none = "–"
        var cells: [String] = [percent(s.uptimePercent), grouped(s.checks)]
        cells.append(s.latencyAvgMs.map(latency) ?? none)
        if let p95 = s.latencyP95Ms {
            cells.append((s.p95Exact ? "" : "≈") + latency(p95))
        } else {
            cells.append(none)
        }
        cells.append(s.latencyLatestMs.map(latency) ?? none)
        cells.append(s.trend.label.rawValue)
        cells.append(grouped(s.outages))
        if s.outages > 0 {
            cells.append(outage(s.outageMs) + (s.ongoingOutage ? " (ongoing)" : ""))
        } else {
            cells.append(none)
        }
        cells.append(s.speedAvgMbps.map(speed) ?? none)
        return cells
    }
}

import Foundation
import Testing
import VitalsKit

@testable import DigestCore

/// The facts digest(1) documents, each expected value worked out by hand from its FACTS and
/// WINDOW sections (and isitup's Daily Digest, seed 000 section 10) on the samples beside it.
@Suite("percentiles by nearest rank")
struct PercentileTests {
    @Test("p95 is the value at rank ⌈0.95 n⌉ in ascending order")
    func ranks() {
        func p95(_ values: [Double]) -> Double? {
            var sketch = LatencySketch()
            for value in values { sketch.add(value) }
            return sketch.percentile(0.95)
        }
        // n = 20: ⌈19⌉ = 19, the 19th smallest; given in reverse order.
        #expect(p95((1...20).reversed().map(Double.init)) == 19)
        // n = 21: ⌈19.95⌉ = 20.
        #expect(p95((1...21).map(Double.init)) == 20)
        // n = 100: rank 95.
        #expect(p95((1...100).map { Double($0) * 1.5 }) == 142.5)
        // n = 12: rank ⌈11.4⌉ = 12 (rounding up, not to the nearest).
        #expect(p95((1...12).map(Double.init)) == 12)
        // n = 1: rank ⌈0.95⌉ = 1; n = 2: rank ⌈1.9⌉ = 2.
        #expect(p95([7]) == 7)
        #expect(p95([7, 3]) == 7)
        // Ties: 19 × 10 ms and one 500 ms, n = 20, rank 19 is 10 ms: one slow check is not the p95.
        #expect(p95(Array(repeating: 10, count: 19) + [500]) == 10)
    }

    @Test("exact up to 512 latencies, then the histogram (latency_p95_exact says which)")
    func exactLimit() {
        var sketch = LatencySketch()
        for value in 1...512 { sketch.add(Double(value)) }
        #expect(sketch.isExact)
        // n = 512: rank ⌈486.4⌉ = 487.
        #expect(sketch.percentile(0.95) == 487)
        sketch.add(513)
        #expect(!sketch.isExact)
        // n = 513: rank ⌈487.35⌉ = 488; the estimate is within 1% of 488.
        let estimate = sketch.percentile(0.95)!
        #expect(abs(estimate - 488) / 488 <= 0.01, "\(estimate)")
    }

    @Test("the estimate never leaves the values' range: all equal gives that value; zeros give zero")
    func clamped() {
        var same = LatencySketch()
        for _ in 0..<1_000 { same.add(100) }
        #expect(same.percentile(0.95) == 100)
        var zeros = LatencySketch()
        for _ in 0..<600 { zeros.add(0) }
        zeros.add(80)
        // n = 601: rank ⌈570.95⌉ = 571, within the 600 zeros; rank 601 is the 80 ms, within 1%.
        #expect(zeros.percentile(0.95) == 0)
        #expect(abs(zeros.percentile(1)! - 80) / 80 <= 0.01)
    }
}

@Suite("chart bins and the trend over the day")
struct TrendOverDayTests {
    /// `levels` ms, one latency per bin, bins numbered from 0, `step` ms wide.
    static func bins(_ levels: [Double]) -> [ChartBin] {
        levels.enumerated().map { index, ms in
            ChartBin(index: Int64(index), checks: 1, latencyCount: 1, latencySumMicros: Int64((ms * 1000).rounded()))
        }
    }

    @Test("the chart step: the narrowest of the list that fits the samples in 160 bins")
    func steps() {
        var scale = ChartScale()
        // Two samples 159 s apart, on whole seconds: 160 one-second bins.
        _ = scale.observe(0)
        _ = scale.observe(159_000)
        #expect(scale.step == 1_000)
        // 160 s apart: 161 bins, too many; 5 s: 33 bins.
        #expect(scale.observe(160_000) == 5)
        #expect(scale.step == 5_000)
        // Seven hours of 5-minute samples (0 to 6h55m, 84 samples): 1 min gives 416 bins, 5 min 84.
        var seven = ChartScale()
        for i in Int64(0)..<84 { _ = seven.observe(i * 300_000) }
        #expect(seven.step == 300_000)
        // A day of 1-minute samples: 5 min gives 288 bins, 10 min 144.
        var day = ChartScale()
        for i in Int64(0)..<1_440 { _ = day.observe(i * 60_000) }
        #expect(day.step == 600_000)
        // Past 7 days the step doubles: 1,200 days is 172 weekly bins, 86 of 14 days.
        var years = ChartScale()
        _ = years.observe(0)
        _ = years.observe(1_200 * 86_400_000)
        #expect(years.step == 14 * 86_400_000)
    }

    @Test("digest(1)'s example: 70 to 330 ms over seven hours of 5-minute samples is increasing, 298.7 ms against 200 ms")
    func manExample() throws {
        // 84 samples, i = 0..83, latency 70 + 260 i / 83 ms, one per 5-minute bin.
        // The span is 84 bins; its last quarter starts at bin 84 × 3 / 4 = 63: bins 63..83, 21 of
        // them, median bin 73: 70 + 260 × 73 / 83 = 298.67. The typical level is the median of
        // all 84: bins 41 and 42, 70 + 260 × 41.5 / 83 = 200. 298.67 ≥ 1.2 × 200 and 98.67 ≥ 5.
        let levels = (0..<84).map { 70 + 260 * Double($0) / 83 }
        let trend = try #require(Trend.overDay(Self.bins(levels), step: 300_000))
        #expect(trend.label == .increasing)
        #expect(abs(trend.recentMs! - 298.67) < 0.01)
        #expect(abs(trend.earlierMs! - 200) < 0.001)
        #expect(trend.samples == 21)
    }

    @Test("a short history falls back to the newest N: fewer than 8 bins, or under an hour from first to last")
    func shortHistory() {
        // 7 bins of 10 minutes: 70 minutes, but 7 bins.
        #expect(Trend.overDay(Self.bins(Array(repeating: 50, count: 7)), step: 600_000) == nil)
        // 11 bins of 5 minutes: 55 minutes.
        #expect(Trend.overDay(Self.bins(Array(repeating: 50, count: 11)), step: 300_000) == nil)
        // 12 bins of 5 minutes: an hour.
        #expect(Trend.overDay(Self.bins(Array(repeating: 50, count: 12)), step: 300_000)?.label == .stable)
    }

    @Test("20% and 5 ms either way, against the median of the span")
    func thresholds() {
        // 12 bins: 9 at the typical level, the last 3 (bins 9..11, the last quarter) at the recent one.
        // The median of the 12 is the mean of the 6th and 7th smallest, both at the typical level.
        func label(_ typical: Double, _ recent: Double) -> Trend.Label? {
            Trend.overDay(Self.bins(Array(repeating: typical, count: 9) + Array(repeating: recent, count: 3)), step: 300_000)?.label
        }
        #expect(label(100, 120) == .increasing, "+20%, +20 ms")
        #expect(label(100, 119) == .stable, "+19%")
        #expect(label(100, 80) == .decreasing, "-20%, -20 ms")
        #expect(label(100, 81) == .stable, "-19%")
        #expect(label(10, 14) == .stable, "+40% but 4 ms")
        #expect(label(10, 15) == .increasing, "+50% and 5 ms")
        #expect(label(20, 15) == .decreasing, "-25% and 5 ms")
    }

    @Test("medians: one slow bin, even the newest, leaves a steady level stable")
    func oneSlowBin() {
        // 20 bins at 100 ms but the last at 1,000: the last quarter is bins 15..19, median 100.
        let trend = Trend.overDay(Self.bins(Array(repeating: 100, count: 19) + [1_000]), step: 300_000)
        #expect(trend?.label == .stable)
        #expect(trend?.recentMs == 100)
    }

    @Test("bins without latency are left out; the span runs from the first bin with latencies to the last")
    func gaps() {
        // Bins 0..15 at 5 minutes (80 minutes); bins 4..7 hold only errors. The span is 16 bins;
        // its last quarter starts at bin 12: bins 12..15 at 200 ms; the typical level is the
        // median of the 12 bins with latencies, 8 at 100 and 4 at 200: (100 + 100) / 2 = 100.
        var bins = Self.bins(Array(repeating: 100, count: 12) + Array(repeating: 200, count: 4))
        for index in 4..<8 { bins[index] = ChartBin(index: Int64(index), checks: 1, failed: 1) }
        let trend = Trend.overDay(bins, step: 300_000)
        #expect(trend?.recentMs == 200)
        #expect(trend?.earlierMs == 100)
        #expect(trend?.label == .increasing)
    }
}

@Suite("the window, services in order, correlated failures")
struct DigestFactsTests {
    typealias In = DigestInput

    @Test("--now: the window is the 24 hours before it; a sample exactly at either end is in it")
    func windowWithNow() throws {
        let now = In.at("10:00")
        let facts = try In.facts(
            [
                #"{"type":"sample","monitor":"a","at":"2026-01-26T10:00:00Z","status":"up"}"#,
                #"{"type":"sample","monitor":"a","at":"2026-01-26T09:59:59.999Z","status":"down"}"#,
                In.line("a", "10:00", "up"),
                In.line("a", "10:00:00.001", "down"),
            ], now: now)
        #expect(facts.windowStart == now - 86_400_000)
        #expect(facts.windowEnd == now)
        #expect(facts.samplesRead == 4)
        #expect(facts.samplesInWindow == 2)
        let a = try In.service(facts, "a")
        #expect(a.checks == 2)
        #expect(a.outages == 0, "both failing samples lie outside")
        #expect(a.uptimePercent == 100)
    }

    @Test("without --now the window ends at the newest sample, whatever order the input came in")
    func windowAtNewest() throws {
        // Read newest first: 2026-01-28 10:00 (the end), then 10:00 the day before (the start,
        // in), then 09:59 (out), then a down at 2026-01-28 09:00.
        let lines = [
            #"{"type":"sample","monitor":"a","at":"2026-01-28T10:00:00Z","status":"up"}"#,
            In.line("a", "10:00", "up"),
            In.line("a", "09:59", "down"),
            #"{"type":"sample","monitor":"a","at":"2026-01-28T09:00:00Z","status":"down"}"#,
        ]
        let facts = try In.facts(lines)
        #expect(facts.windowEnd == Timestamp.parse("2026-01-28T10:00:00Z"))
        #expect(facts.samplesInWindow == 3)
        let a = try In.service(facts, "a")
        // In time order: up 10:00, down 09:00 (next day), up 10:00: one outage of an hour.
        #expect(a.outages == 1)
        #expect(a.outageMs == 3_600_000)
        #expect(a.status == .up, "the status of the newest sample, not of the last read")
        // The same samples sorted give the same facts.
        #expect(try In.facts([lines[2], lines[1], lines[3], lines[0]]) == facts)
    }

    @Test("uptime is the share of checks up or degraded; latency figures leave out checks without one")
    func uptime() throws {
        // up 40, degraded 400, down (none), error (none), unknown 10: 2 of 5 available, 40%.
        let facts = try In.facts([
            In.line("a", "10:00", "up", latency: "40"), In.line("a", "10:01", "degraded", latency: "400"),
            In.line("a", "10:02", "down"), In.line("a", "10:03", "error"), In.line("a", "10:04", "unknown", latency: "10"),
        ])
        let a = try In.service(facts, "a")
        #expect(a.checks == 5)
        #expect(a.uptimePercent == 40)
        #expect(a.latencyChecks == 3)
        #expect(a.latencyAvgMs == 150, "(40 + 400 + 10) / 3")
        #expect(a.latencyMinMs == 10)
        #expect(a.latencyMaxMs == 400)
        #expect(a.latencyLatestMs == 10)
        // n = 3: rank ⌈2.85⌉ = 3, the largest.
        #expect(a.latencyP95Ms == 400)
        #expect(a.p95Exact)
        // The outage: down at 10:02 to unknown at 10:04, which does not fail.
        #expect(a.outages == 1 && a.outageMs == 120_000)
        #expect(a.status == .unknown)
    }

    @Test("services worst first: by status now, then outages, outage time, uptime, checks not up, id")
    func order() throws {
        var lines = [
            In.line("s-up", "10:00", "up"), In.line("s-unknown", "10:00", "unknown"), In.line("s-degraded", "10:00", "degraded"),
            In.line("s-down", "10:00", "down"), In.line("s-error", "10:00", "error"),
        ]
        // All up now: b had two outages, c one long one, d one short one; e degraded once, f all up.
        for (monitor, statuses) in [
            ("b", ["down", "up", "down", "up", "up", "up"]), ("c", ["down", "down", "down", "up", "up", "up"]),
            ("d", ["down", "up", "up", "up", "up", "up"]), ("e", ["up", "degraded", "up", "up", "up", "up"]),
            ("f", ["up", "up", "up", "up", "up", "up"]), ("a", ["up", "up", "up", "up", "up", "up"]),
        ] {
            for (minute, status) in statuses.enumerated() { lines.append(In.line(monitor, "10:0\(minute)", status)) }
        }
        let facts = try In.facts(lines, now: In.at("10:10"))
        #expect(facts.services.map(\.monitor) == ["s-error", "s-down", "s-degraded", "s-unknown", "b", "c", "d", "e", "a", "f", "s-up"])
        // The worst is the first; with nothing wrong anywhere there is none.
        #expect(facts.worst?.monitor == "s-error")
        #expect(try In.facts([In.line("a", "10:00", "up")]).worst == nil)
    }

    @Test("more outage time first when outages and uptime are equal")
    func orderByOutageTime() throws {
        // x: down 10:00 to 10:01, y: down 10:00 to 10:05; both 1 of 2 checks up, one outage each.
        let facts = try In.facts([
            In.line("x", "10:00", "down"), In.line("x", "10:01", "up"), In.line("y", "10:00", "down"), In.line("y", "10:05", "up"),
        ])
        #expect(facts.services.map(\.monitor) == ["y", "x"])
    }

    @Test("lower uptime first: 1 unknown check in 2 is worse than 1 in 4")
    func orderByUptime() throws {
        let facts = try In.facts([
            In.line("x", "10:00", "unknown"), In.line("x", "10:01", "up"), In.line("x", "10:02", "up"), In.line("x", "10:03", "up"),
            In.line("y", "10:00", "unknown"), In.line("y", "10:01", "up"),
        ])
        // x: 3 of 4 available (75%); y: 1 of 2 (50%): y first.
        #expect(facts.services.map(\.monitor) == ["y", "x"])
    }

    @Test("correlated failures: outages beginning in one bucket, counted from 1970-01-01 00:00 UTC, by when they began")
    func correlation() throws {
        // Buckets of 5 minutes: [10:00, 10:05) and [10:05, 10:10).
        let facts = try In.facts(
            [
                In.line("a", "10:00", "up"), In.line("a", "10:04:59", "down"),
                In.line("b", "10:00", "up"), In.line("b", "10:01", "error"), In.line("b", "10:02", "up"),
                In.line("b", "10:04:59.500", "down"),
                In.line("c", "10:00", "up"), In.line("c", "10:05", "down"),
                In.line("d", "10:00", "up"), In.line("d", "10:09", "down"),
            ], now: In.at("10:10"))
        // b began twice in the first bucket and counts once, at its first start, 10:01 (its
        // second, 10:04:59.5, is after a's at 10:04:59).
        // c (10:05) and d (10:09) share the second.
        #expect(
            facts.correlated == [
                CorrelatedFailure(start: In.at("10:00"), end: In.at("10:05"), monitors: ["b", "a"], names: ["b", "a"]),
                CorrelatedFailure(start: In.at("10:05"), end: In.at("10:10"), monitors: ["c", "d"], names: ["c", "d"]),
            ])
        // With 1-minute buckets no two begin together.
        #expect(try In.facts([In.line("a", "10:04:59", "down"), In.line("c", "10:05", "down")], bucket: 60_000).correlated.isEmpty)
    }

    @Test("the longest outage over all services: the longest, then the earliest")
    func longest() throws {
        let facts = try In.facts(
            [
                In.line("a", "10:00", "down"), In.line("a", "10:10", "up"),
                In.line("b", "09:00", "down"), In.line("b", "09:10", "up"),
                In.line("c", "10:00", "down"), In.line("c", "10:05", "up"),
            ], now: In.at("11:00"))
        // a and b both lasted 10 minutes; b began first.
        #expect(facts.longestOutage == OutageFact(monitor: "b", name: "b", start: In.at("09:00"), end: In.at("09:10"), durationMs: 600_000))
    }

    @Test("--max-services: the rest summed up in one group")
    func hidden() throws {
        let facts = try In.facts(
            [
                In.line("a", "10:00", "down"), In.line("b", "10:00", "down"), In.line("b", "10:01", "up"),
                In.line("c", "10:00", "up"), In.line("d", "10:00", "degraded"),
            ], now: In.at("10:02"), maxServices: 2)
        // Worst first: a (down now), d (degraded now), b (up, one outage), c.
        #expect(facts.shownServices.map(\.monitor) == ["a", "d"])
        let rest = try #require(facts.hidden)
        #expect(rest.services == 2)
        #expect(rest.byStatus == [.up: 2])
        #expect(rest.checks == 3 && rest.available == 2)
        #expect(rest.outages == 1 && rest.outageMs == 60_000)
        #expect(try In.facts([In.line("a", "10:00", "up")], maxServices: 0).hidden == nil)
    }

    @Test("the mean speed over the samples that measured one")
    func speed() throws {
        let facts = try In.facts([
            In.line("home", "10:00", "up", extra: #","speed_mbps":90"#), In.line("home", "10:01", "up"),
            In.line("home", "10:02", "up", extra: #","speed_mbps":95.5"#), In.line("home", "10:03", "up", extra: #","speed_mbps":null"#),
        ])
        let home = try In.service(facts, "home")
        #expect(home.speedChecks == 2)
        #expect(home.speedAvgMbps == 92.75)
    }

    @Test("anomaly episodes in the facts: each once, at its onset, or going on at the window's first sample")
    func anomalies() throws {
        let episode = { (state: String) in #","anomaly":{"verdict":"degrading","episode":{"state":"\#(state)","id":1}}"# }
        let facts = try In.facts(
            [
                In.line("a", "09:00", "degraded", extra: episode("onset")),  // before the window
                In.line("a", "10:00", "degraded", extra: episode("ongoing")),
                In.line("a", "10:01", "up", extra: episode("end")),
                In.line("a", "10:02", "degraded", extra: episode("onset")),
                In.line("a", "10:03", "degraded", extra: episode("ongoing")),
                In.line("a", "10:04", "degraded", extra: episode("ongoing")),
            ], now: In.at("10:05"), window: 600_000)
        #expect(try In.service(facts, "a").anomalies == 2)
        #expect(facts.overall.anomalies == 2)
    }
}

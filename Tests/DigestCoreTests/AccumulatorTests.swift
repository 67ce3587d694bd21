import Testing
import VitalsKit

@testable import DigestCore

/// One service's facts as `ServiceAccumulator` gathers them, fed rows in time order. Each
/// expected value is worked out from digest(1), FACTS, on the minutes written beside it.
@Suite("ServiceAccumulator: outages, uptime, latency, episodes")
struct AccumulatorTests {
    static let minute: Int64 = 60_000

    /// A row at `minute` minutes past 2026-01-27T10:00Z.
    static func row(_ minute: Int64, _ status: UInt8, latencyMs: Int64? = nil, episode: AnomalyEpisodeState? = nil) -> SampleRow {
        var row = SampleRow(
            at: DigestInput.at("10:00") + minute * Self.minute,
            latencyMicros: latencyMs.map { $0 * 1000 } ?? SampleRow.none,
            speedMilli: SampleRow.none, sequence: UInt64(minute), service: 0, status: status)
        row.episode = episode?.rawValue ?? 0
        return row
    }

    static func fed(_ rows: [SampleRow], windowEnd: Int64? = nil) -> ServiceAccumulator {
        var accumulator = ServiceAccumulator(trendSamples: 10)
        for row in rows { accumulator.add(row, binStep: 60_000) }
        if let windowEnd { accumulator.finish(windowEnd: windowEnd) }
        return accumulator
    }

    @Test("an outage runs from a failing sample after one that was not to the next sample that does not fail")
    func outages() {
        let (up, down, error) = (StatusIndex.up, StatusIndex.down, StatusIndex.error)
        // Minutes 0..6: up, down, down, up, error, up, up. Outages 1→3 (2 min) and 4→5 (1 min).
        let acc = Self.fed(
            [
                Self.row(0, up), Self.row(1, down), Self.row(2, down), Self.row(3, up), Self.row(4, error),
                Self.row(5, up), Self.row(6, up),
            ], windowEnd: DigestInput.at("10:30"))
        #expect(acc.outageCount == 2)
        #expect(acc.outageTotal == 3 * Self.minute)
        #expect(acc.longestOutage == Outage(start: DigestInput.at("10:01"), end: DigestInput.at("10:03"), duration: 2 * Self.minute))
        #expect(acc.openOutageStart == nil)
        #expect(acc.checks == 7)
    }

    @Test("a first sample that fails begins an outage; one still going on lasts until the window's end")
    func ongoing() {
        let acc = Self.fed([Self.row(0, StatusIndex.down), Self.row(1, StatusIndex.error)], windowEnd: DigestInput.at("10:10"))
        #expect(acc.outageCount == 1)
        #expect(acc.openOutageStart == DigestInput.at("10:00"))
        // 10:00 to the window's end at 10:10.
        #expect(acc.outageTotal == 10 * Self.minute)
        #expect(acc.longestOutage == Outage(start: DigestInput.at("10:00"), end: nil, duration: 10 * Self.minute))
    }

    @Test("degraded and unknown samples do not fail: they end an outage and begin none")
    func notFailing() {
        // down 0, unknown 1 (ends it: 1 min), degraded 2, down 3, degraded 5 (ends it: 2 min).
        let acc = Self.fed(
            [
                Self.row(0, StatusIndex.down), Self.row(1, StatusIndex.unknown), Self.row(2, StatusIndex.degraded),
                Self.row(3, StatusIndex.down), Self.row(5, StatusIndex.degraded),
            ], windowEnd: DigestInput.at("10:30"))
        #expect(acc.outageCount == 2)
        #expect(acc.outageTotal == 3 * Self.minute)
        #expect(acc.longestOutage?.start == DigestInput.at("10:03"))
    }

    @Test("an outage's start is reported to the correlation once, at the sample that begins it")
    func beginsOnce() {
        var acc = ServiceAccumulator(trendSamples: 10)
        var began: [Bool] = []
        for (minute, status) in [StatusIndex.up, StatusIndex.down, StatusIndex.error, StatusIndex.up, StatusIndex.error].enumerated() {
            began.append(acc.add(Self.row(Int64(minute), status), binStep: 60_000))
        }
        // up, down (begins), error (the same outage), up, error (begins the second).
        #expect(began == [false, true, false, false, true])
    }

    @Test("latency: mean, least, most and newest over the samples that have one; a sample without one is still a check")
    func latency() {
        // 40, 10, (error, none), 30: three latencies, 80 ms in all.
        let acc = Self.fed([
            Self.row(0, StatusIndex.up, latencyMs: 40), Self.row(1, StatusIndex.up, latencyMs: 10),
            Self.row(2, StatusIndex.error), Self.row(3, StatusIndex.up, latencyMs: 30),
        ])
        #expect(acc.checks == 4)
        #expect(acc.latencyCount == 3)
        #expect(acc.latencySumMicros == 80_000)
        #expect(acc.latencyMinMicros == 10_000)
        #expect(acc.latencyMaxMicros == 40_000)
        #expect(acc.lastLatencyMicros == 30_000)
        #expect(acc.trendLatencies == [40_000, 10_000, 30_000], "the trend keeps latencies only, in time order")
        // The newest sample had none: no newest latency.
        let noLatest = Self.fed([Self.row(0, StatusIndex.up, latencyMs: 40), Self.row(1, StatusIndex.error)])
        #expect(noLatest.lastLatencyMicros == SampleRow.none)
    }

    @Test("the trend keeps the newest 2N latencies, oldest first")
    func trendRing() {
        var acc = ServiceAccumulator(trendSamples: 2)
        for minute in Int64(0)..<7 { acc.add(Self.row(minute, StatusIndex.up, latencyMs: minute + 1), binStep: 60_000) }
        // Latencies 1..7 ms; the newest 4 are 4, 5, 6, 7.
        #expect(acc.trendLatencies == [4_000, 5_000, 6_000, 7_000])
    }

    @Test("anomaly episodes count once, at their onset; one going on at the first sample counts too")
    func episodes() {
        let (up, degraded) = (StatusIndex.up, StatusIndex.degraded)
        // onset, ongoing, ongoing, end, up, onset, ongoing: two episodes.
        let two = Self.fed([
            Self.row(0, degraded, episode: .onset), Self.row(1, degraded, episode: .ongoing),
            Self.row(2, degraded, episode: .ongoing), Self.row(3, up, episode: .end), Self.row(4, up),
            Self.row(5, degraded, episode: .onset), Self.row(6, degraded, episode: .ongoing),
        ])
        #expect(two.anomalies == 2)
        // The window cut into an episode: its first sample is inside one (ongoing), then it ends.
        let cut = Self.fed([
            Self.row(0, degraded, episode: .ongoing), Self.row(1, degraded, episode: .ongoing),
            Self.row(2, up, episode: .end),
        ])
        #expect(cut.anomalies == 1)
        // Samples without an anomaly object count none, degraded or not.
        #expect(Self.fed([Self.row(0, degraded), Self.row(1, degraded)]).anomalies == 0)
    }

    @Test("chart bins: checks, failures, degraded checks and latency per bin; re-binning merges them")
    func bins() {
        var acc = ServiceAccumulator(trendSamples: 10)
        // 10:00 up 10 ms, 10:00:30 down, 10:01 degraded 30 ms (1-minute bins: 2 bins).
        acc.add(
            SampleRow(
                at: DigestInput.at("10:00"), latencyMicros: 10_000, speedMilli: SampleRow.none, sequence: 0, service: 0,
                status: StatusIndex.up), binStep: 60_000)
        acc.add(
            SampleRow(
                at: DigestInput.at("10:00:30"), latencyMicros: SampleRow.none, speedMilli: SampleRow.none, sequence: 1,
                service: 0, status: StatusIndex.down), binStep: 60_000)
        acc.add(
            SampleRow(
                at: DigestInput.at("10:01"), latencyMicros: 30_000, speedMilli: SampleRow.none, sequence: 2, service: 0,
                status: StatusIndex.degraded), binStep: 60_000)
        #expect(acc.bins.count == 2)
        #expect(acc.bins[0].checks == 2 && acc.bins[0].failed == 1 && acc.bins[0].endsFailed)
        #expect(acc.bins[1].degraded == 1 && !acc.bins[1].endsFailed)
        // 10:00 is minute 29,491,800 since the epoch (date -u -d 2026-01-27T10:00:00Z +%s: 1,769,508,000 s, / 60).
        #expect(acc.bins[0].index == 29_491_800)
        // Five-minute bins: both minutes fall in bin 5,898,360 (29,491,800 / 5).
        acc.rebin(factor: 5)
        #expect(
            acc.bins == [
                ChartBin(
                    index: 5_898_360, checks: 3, failed: 1, degraded: 1, latencyCount: 2, latencySumMicros: 40_000,
                    endsFailed: false)
            ])
    }
}

import Foundation
import Testing
import VitalsKit

@testable import DetectAnomalyCore

/// 2026-01-05T00:00:00Z, a Monday.
let monday: Int64 = 1_767_571_200_000

@Suite("mad detector: median and MAD in log space")
struct MADDetectorTests {
    let settings = DetectorSettings(detector: .mad)

    @Test("degrading beyond median + 3.5 robust deviations; the deviation never below 0.05")
    func threshold() {
        // Nine points of 100: y = ln 101 each, MAD 0, so sigma is the floor 0.05.
        // Bound: ln 101 + 3.5 × 0.05 = ln 101 + 0.175; in ms, 101 × e^0.175 - 1 = 119.3159...
        let bound = 101 * exp(0.175) - 1
        #expect(abs(bound - 119.3159) < 1e-4)
        for (latest, verdict) in [(119.3, AnomalyVerdict.stable), (119.4, .degrading)] {
            var detector = MADDetector(settings: settings)
            for _ in 0..<9 { _ = detector.judge(Observation(value: 100), settings: settings) }
            let report = detector.judge(Observation(value: latest), settings: settings)
            #expect(report.verdict == verdict, "latest \(latest)")
            #expect(report.baselineCount == 9)
            #expect(abs(report.median! - 100) < 1e-9)
            #expect(abs(report.threshold! - bound) < 1e-9)
            // z = ln(1 + latest) - ln 101, over 0.05.
            #expect(abs(report.z! - (log(1 + latest) - log(101)) / 0.05) < 1e-9)
        }
    }

    @Test("fewer than 10 points is unknown")
    func minimum() {
        var detector = MADDetector(settings: settings)
        var reports: [MADDetector.Report] = []
        for _ in 0..<9 { reports.append(detector.judge(Observation(value: 100), settings: settings)) }
        #expect(reports.allSatisfy { $0.verdict == .unknown && $0.score == 0 })
        #expect(detector.judge(Observation(value: 100), settings: settings).verdict == .stable)
    }

    @Test("state saved and restored continues exactly")
    func stateRoundTrip() throws {
        var random = TestRandom(state: 7)
        let values = (0..<150).map { _ in 50 + random.uniform() * (random.uniform() < 0.05 ? 2000 : 40) }
        var continuous = MADDetector(settings: settings)
        var expected: [MADDetector.Report] = []
        for value in values { expected.append(continuous.judge(Observation(value: value), settings: settings)) }
        var restored = MADDetector(settings: settings)
        var got: [MADDetector.Report] = []
        for value in values {
            got.append(restored.judge(Observation(value: value), settings: settings))
            restored = try roundTrip(restored, settings: settings)
        }
        #expect(got == expected)
    }
}

@Suite("robust detector: sustained shifts, drifts, seasons")
struct RobustDetectorTests {
    let settings = DetectorSettings(detector: .robust)

    /// Feeds `values` to a new detector, one every `stepMs` from `start` (no `at` when nil).
    func feed(
        _ values: [Double], start: Int64 = monday, stepMs: Int64? = 60_000,
        settings: DetectorSettings? = nil
    ) -> [RobustDetector.Report] {
        let settings = settings ?? self.settings
        var detector = RobustDetector(settings: settings)
        var reports: [RobustDetector.Report] = []
        for (index, value) in values.enumerated() {
            let at = stepMs.map { start + Int64(index) * $0 }
            reports.append(detector.judge(Observation(value: value, atMs: at), settings: settings))
        }
        return reports
    }

    @Test("one spike is never a shift; three in a row are (CUSUM 2.5 + 2.5 + 2.5 > 7)")
    func spikesAndShift() {
        // 20 points of 100: median ln 101, MAD 0, sigma 0.05. A value of 200 is
        // (ln 201 - ln 101) / 0.05 = 13.76 sigmas out, capped at 4: each adds 4 - 1.5 = 2.5.
        let reports = feed(Array(repeating: 100, count: 20) + [200] + Array(repeating: 100, count: 5))
        #expect(reports.allSatisfy { $0.verdict != .degrading })
        #expect(reports[20].cusum == 2.5)
        #expect(abs(reports[20].z! - (log(201.0) - log(101.0)) / 0.05) < 1e-9)
        #expect(reports[21].cusum == 1, "a normal point takes 1.5 off")
        #expect(reports[22].cusum == 0)
        #expect(abs(reports[20].score - 2.5 / 9.5) < 1e-12, "score = S / (S + 7)")

        let run = feed(Array(repeating: 100, count: 20) + [200, 200, 200])
        #expect(run[20].verdict == .stable && run[21].verdict == .stable)
        #expect(run[21].cusum == 5)
        #expect(run[22].verdict == .degrading)
        #expect(run[22].rule == .shift)
        #expect(run[22].cusum == 7.5)
        // Degrading scores 0.5 + 0.5 e / (e + ln 2), e = the last five values' excess over the median in log units:
        // the median of (101, 101, 201, 201, 201) in log is ln 201, so e = ln(201 / 101).
        let excess = log(201.0 / 101.0)
        #expect(abs(run[22].score - (0.5 + 0.5 * excess / (excess + log(2.0)))) < 1e-12)

        // The CUSUM stops at 7 + 2.5 = 9.5, so the alarm ends two normal samples after a long run.
        let long = feed(
            Array(repeating: 100, count: 20) + Array(repeating: 200, count: 10)
                + [100, 100, 100])
        #expect(long[29].cusum == 9.5 && long[29].verdict == .degrading)
        #expect(long[30].cusum == 8 && long[30].verdict == .degrading)
        #expect(long[31].cusum == 6.5 && long[31].verdict == .stable)
    }

    @Test("a slow drift is caught by the day-long level, and ends once the level follows")
    func drift() {
        // A noisy but steady series (80, 100, 125 in turn: sigma about 0.33) for 26 hours, then a rise
        // of 0.1% a sample for 500 samples (x1.65), then flat at that level for two days.
        let cycle: [Double] = [80, 100, 125]
        let steady = 26 * 60
        var values: [Double] = []
        for index in 0..<steady { values.append(cycle[index % 3]) }
        for index in 0..<500 { values.append(cycle[index % 3] * pow(1.001, Double(index + 1))) }
        let top = pow(1.001, 500.0)
        for index in 0..<2880 { values.append(cycle[index % 3] * top) }
        let reports = feed(values)
        #expect(reports[0..<steady].allSatisfy { $0.verdict != .degrading }, "steady: nothing")
        #expect(reports[10..<steady].allSatisfy { $0.cusum == 0 }, "the cycle alone stays inside 1.5 sigmas")
        let flagged = reports.indices.filter { reports[$0].verdict == .degrading }
        #expect(!flagged.isEmpty)
        #expect(flagged.allSatisfy { reports[$0].rule == .drift }, "no single step is large: only the drift rule fires")
        #expect((flagged.first ?? 0) > steady && (flagged.first ?? .max) < steady + 500, "caught during the rise")
        #expect(flagged.allSatisfy { reports[$0].score > 0.5 }, "a drift scores above 0.5")
        #expect(reports[0..<steady].allSatisfy { $0.score <= 0.5 })
        #expect(reports.last!.verdict == .stable, "two days later the level has followed")
        #expect(reports[1500].level != nil && reports[1400].level == nil, "the level is used after a day")
    }

    @Test("a daily pattern is learned: after a few days, the daily step is not an anomaly")
    func seasonality() {
        // Every 5 minutes for 6 days: 100 ms from 00:00 to 11:59 UTC, 200 ms from 12:00 to 23:59,
        // with a small wobble (97, 100, 103).
        let wobble: [Double] = [0.97, 1, 1.03]
        let step: Int64 = 300_000
        var values: [Double] = []
        for index in 0..<(6 * 288) {
            let hour = Int((Int64(index) * step) % 86_400_000 / 3_600_000)
            values.append((hour < 12 ? 100 : 200) * wobble[index % 3])
        }
        let reports = feed(values, stepMs: step)
        let firstDay = reports[0..<288].filter { $0.verdict == .degrading }.count
        let lastTwoDays = reports[(4 * 288)...].filter { $0.verdict == .degrading }.count
        #expect(firstDay > 0, "before it has learned the day, noon's doubling is an anomaly")
        #expect(lastTwoDays == 0, "on days 5 and 6 the step is expected")
        // The expected value at this hour includes the offset: in the afternoon the median is about 200.
        let afternoon = reports[5 * 288 + 200]
        #expect(abs(afternoon.median! - 200) < 20)
    }

    @Test("without timestamps: no seasons, one minute a sample for the level")
    func withoutTimestamps() {
        let reports = feed(Array(repeating: 100, count: 1500), stepMs: nil)
        #expect(reports[1400].level == nil && reports[1499].level != nil, "the level waits 1440 assumed minutes")
        #expect(reports.allSatisfy { $0.verdict != .degrading })
    }

    @Test("--direction low: a sustained fall is degrading, a rise is not")
    func low() {
        var low = settings
        low.direction = .low
        let fall = feed(Array(repeating: 100, count: 20) + [40, 40, 40], settings: low)
        #expect(fall[22].verdict == .degrading && fall[22].rule == .shift)
        let rise = feed(Array(repeating: 100, count: 20) + [400, 400, 400], settings: low)
        #expect(rise.allSatisfy { $0.verdict != .degrading })
        var both = settings
        both.direction = .both
        let either = feed(Array(repeating: 100, count: 20) + [40, 40, 40], settings: both)
        #expect(either[22].verdict == .degrading)
    }

    @Test("state saved and restored continues exactly")
    func stateRoundTrip() throws {
        var random = TestRandom(state: 99)
        let values = (0..<900).map { index in (index / 300 == 1 ? 180.0 : 100) * (0.8 + 0.4 * random.uniform()) }
        let expected = feed(values, stepMs: 600_000)
        var restored = RobustDetector(settings: settings)
        var got: [RobustDetector.Report] = []
        for (index, value) in values.enumerated() {
            got.append(restored.judge(Observation(value: value, atMs: monday + Int64(index) * 600_000), settings: settings))
            restored = try roundTrip(restored, settings: settings)
        }
        #expect(got == expected)
        #expect(expected.contains { $0.verdict == .degrading }, "the trace exercises the alarm too")
    }
}

import Testing
import VitalsKit

@testable import DetectAnomalyCore

/// The seed's rules (isitup AnomalyDetector, seed section 7), branch by branch, with its numbers:
/// minimumSamples 10, rollingWindowSize 50, thresholdMultiplier 2.5, fallback 1800 ms, +500 ms.
/// Expected figures are worked out by hand in the comments.
@Suite("seed detector: isitup's rules, exactly")
struct SeedDetectorTests {
    let settings = DetectorSettings(detector: .seed)

    /// Feeds `values` (real unless listed in `simulated`) and returns the report of each.
    func feed(_ detector: inout SeedDetector, _ values: [Double], simulated: Set<Int> = []) -> [SeedDetector.Report] {
        var reports: [SeedDetector.Report] = []
        for (index, value) in values.enumerated() {
            reports.append(detector.judge(Observation(value: value, simulated: simulated.contains(index)), settings: settings))
        }
        return reports
    }

    @Test("the seed's defaults")
    func defaults() {
        #expect(settings.window == 50)
        #expect(settings.minSamples == 10)
        #expect(settings.threshold == 2.5)
        #expect(SeedDetector.simulatedFallback == 1800)
        #expect(SeedDetector.simulatedMargin == 500)
    }

    @Test("fewer than 10 points in recent, the latest included, is unknown; the 10th is judged")
    func minimumSamples() {
        var detector = SeedDetector(settings: settings)
        // 9 points: recent holds 9 < 10, whatever the value.
        let early = feed(&detector, [100, 100, 100, 100, 100, 100, 100, 100, 9999])
        #expect(early.allSatisfy { $0.verdict == .unknown })
        // The 9th (9999) had a baseline of 8 points, all 100: mean 100, stddev 0.
        #expect(early[8].baselineCount == 8 && early[8].mean == 100 && early[8].stddev == 0)
        #expect(early[8].score == 0, "unknown scores 0")
        // The 10th: recent = 10 points; baseline = the 9 before: eight 100s and 9999.
        // mean = (800 + 9999) / 9 = 1199.888...; it is judged.
        let tenth = detector.judge(Observation(value: 100), settings: settings)
        #expect(tenth.verdict == .stable)
        #expect(tenth.baselineCount == 9)
        #expect(abs(tenth.mean! - 10799.0 / 9) < 1e-9)
    }

    /// 24 × 90, 24 × 110 and one 100: mean 4900 / 49 = 100; population variance
    /// (24 × 100 + 24 × 100 + 0) / 49 = 4800 / 49, stddev 9.897433...; threshold
    /// 100 + 2.5 × 9.897433 = 124.743583...
    static let baseline: [Double] = [100] + Array(repeating: [90.0, 110.0], count: 24).flatMap { $0 }

    @Test("mean and population stddev over the previous 49; degrading only strictly above mean + 2.5 sd")
    func threshold() {
        let stddev = (4800.0 / 49).squareRoot()
        #expect(abs(stddev - 9.897433186) < 1e-8)
        for (latest, verdict) in [(124.7, AnomalyVerdict.stable), (124.8, .degrading), (50.0, .stable)] {
            var detector = SeedDetector(settings: settings)
            _ = feed(&detector, Self.baseline)
            let report = detector.judge(Observation(value: latest), settings: settings)
            #expect(report.verdict == verdict, "latest \(latest)")
            #expect(report.baselineCount == 49)
            #expect(report.mean == 100)
            #expect(abs(report.stddev! - stddev) < 1e-12)
            #expect(abs(report.threshold! - (100 + 2.5 * stddev)) < 1e-12)
        }
    }

    @Test("exactly at the threshold is stable (the rule is latest > threshold)")
    func equalIsStable() {
        // 9 points of 100: stddev 0, threshold exactly 100; latest 100 is stable, 100.001 degrading.
        var detector = SeedDetector(settings: settings)
        _ = feed(&detector, Array(repeating: 100, count: 9))
        let equal = detector.judge(Observation(value: 100), settings: settings)
        #expect(equal.verdict == .stable && equal.threshold == 100 && equal.score == 0)
        let above = detector.judge(Observation(value: 100.001), settings: settings)
        #expect(above.verdict == .degrading)
        #expect(above.score == 1, "any excess over a zero deviation is infinitely many deviations")
    }

    @Test("the window is the last 50 points: older ones leave the baseline")
    func window() {
        var detector = SeedDetector(settings: settings)
        // Eleven huge values first; had they stayed, the mean would be over 2000 and 124.8 stable.
        _ = feed(&detector, Array(repeating: 10_000, count: 11) + Self.baseline)
        let report = detector.judge(Observation(value: 124.8), settings: settings)
        #expect(report.baselineCount == 49)
        #expect(report.mean == 100)
        #expect(report.verdict == .degrading)
    }

    @Test("a simulated latest is judged against the real points only")
    func simulatedBaseline() {
        var detector = SeedDetector(settings: settings)
        // Ten real points of 100 and five simulated ones of 700; then a simulated 650.
        // Real baseline: mean 100, stddev 0, so 650 > 100 + 2.5 × 0 and > 100 + 500: degrading.
        // Had the simulated points counted: mean (1000 + 3500) / 15 = 300.
        let values: [Double] = Array(repeating: 100, count: 10) + Array(repeating: 700, count: 5)
        _ = feed(&detector, values, simulated: Set(10..<15))
        let report = detector.judge(Observation(value: 650, simulated: true), settings: settings)
        #expect(report.baselineCount == 10)
        #expect(report.mean == 100)
        #expect(report.verdict == .degrading)
    }

    @Test("a real latest is judged against every previous point, simulated ones included (as the seed)")
    func realLatestKeepsSimulated() {
        var detector = SeedDetector(settings: settings)
        let values: [Double] = Array(repeating: 100, count: 10) + Array(repeating: 700, count: 5)
        _ = feed(&detector, values, simulated: Set(10..<15))
        let report = detector.judge(Observation(value: 650), settings: settings)
        // Baseline of 15: mean 4500 / 15 = 300; variance (10 × 200² + 5 × 400²) / 15 = 1,200,000 / 15 = 80,000;
        // stddev 282.84...; threshold 300 + 707.1 = 1007.1: 650 is stable.
        #expect(report.baselineCount == 15)
        #expect(report.mean == 300)
        #expect(abs(report.stddev! - 80_000.0.squareRoot()) < 1e-9)
        #expect(report.verdict == .stable)
    }

    @Test("simulated with no real baseline: the fallback, degrading at 1800 ms or more, else unknown")
    func fallback() {
        for (latest, verdict) in [(1800.0, AnomalyVerdict.degrading), (1799.9, .unknown), (5000, .degrading)] {
            // With no previous point at all.
            var empty = SeedDetector(settings: settings)
            let first = empty.judge(Observation(value: latest, simulated: true), settings: settings)
            #expect(first.verdict == verdict, "first point \(latest)")
            #expect(first.baselineCount == 0 && first.mean == nil && first.threshold == 1800)
            // With 20 previous points, all simulated: still no real baseline, even past 10 points.
            var allSimulated = SeedDetector(settings: settings)
            _ = feed(&allSimulated, Array(repeating: 100, count: 20), simulated: Set(0..<20))
            #expect(
                allSimulated.judge(Observation(value: latest, simulated: true), settings: settings).verdict == verdict,
                "after simulated points, \(latest)")
        }
    }

    @Test("simulated under 10 points can still be degrading by the +500 rule; otherwise unknown")
    func simulatedFewPoints() {
        for (latest, verdict) in [(601.0, AnomalyVerdict.degrading), (600.0, .unknown)] {
            var detector = SeedDetector(settings: settings)
            // Three real points of 100: mean 100, stddev 0; recent holds 4 < 10.
            _ = feed(&detector, [100, 100, 100])
            let report = detector.judge(Observation(value: latest, simulated: true), settings: settings)
            #expect(report.verdict == verdict, "latest \(latest): 100 + 500 = 600, the rule is >")
            #expect(report.baselineCount == 3)
        }
        // A real latest under 10 points is unknown however far out it is.
        var detector = SeedDetector(settings: settings)
        _ = feed(&detector, [100, 100, 100])
        #expect(detector.judge(Observation(value: 100_000), settings: settings).verdict == .unknown)
    }

    @Test("simulated with enough points: degrading above mean + 500 even inside mean + 2.5 sd")
    func simulatedAbsolute() {
        // Baseline alternating 0 and 1000, 10 points: mean 500, stddev 500; 2.5 sd threshold 1750,
        // absolute threshold 1000.
        let baseline: [Double] = Array(repeating: [0.0, 1000.0], count: 5).flatMap { $0 }
        var simulated = SeedDetector(settings: settings)
        _ = feed(&simulated, baseline)
        let report = simulated.judge(Observation(value: 1001, simulated: true), settings: settings)
        #expect(report.mean == 500 && report.stddev == 500)
        #expect(report.verdict == .degrading)
        #expect(report.threshold == 1000, "the tighter of 1750 and 1000")
        var real = SeedDetector(settings: settings)
        _ = feed(&real, baseline)
        let realReport = real.judge(Observation(value: 1001), settings: settings)
        #expect(realReport.verdict == .stable)
        #expect(realReport.threshold == 1750)
        // 1001 is 501 / 500 = 1.002 deviations above the mean: score 1.002 / (1.002 + 2.5).
        #expect(abs(realReport.score - 1.002 / 3.502) < 1e-12)
    }

    @Test("--direction low mirrors the rule; the simulated rules judge the high side only")
    func lowDirection() {
        var low = settings
        low.direction = .low
        func judged(_ latest: Double) -> SeedDetector.Report {
            var detector = SeedDetector(settings: low)
            for value in Self.baseline { _ = detector.judge(Observation(value: value), settings: low) }
            return detector.judge(Observation(value: latest), settings: low)
        }
        // Lower threshold 100 - 24.7436 = 75.2564.
        #expect(judged(75.3).verdict == .stable)
        #expect(judged(124.8).verdict == .stable, "high values are fine on the low side")
        let report = judged(75.2)
        #expect(report.verdict == .degrading)
        #expect(abs(report.threshold! - (100 - 2.5 * (4800.0 / 49).squareRoot())) < 1e-12)
        // A simulated first point has no fallback on the low side.
        var fresh = SeedDetector(settings: low)
        #expect(fresh.judge(Observation(value: 5000, simulated: true), settings: low).verdict == .unknown)
    }

    @Test("state saved and restored continues exactly")
    func stateRoundTrip() throws {
        let values: [Double] = (0..<120).map { Double(($0 * 37) % 101) + 50 }
        let simulated = Set(stride(from: 3, to: 120, by: 7))
        var continuous = SeedDetector(settings: settings)
        let expected = feed(&continuous, values, simulated: simulated)
        var restored = SeedDetector(settings: settings)
        var got: [SeedDetector.Report] = []
        for (index, value) in values.enumerated() {
            got.append(restored.judge(Observation(value: value, simulated: simulated.contains(index)), settings: settings))
            restored = try roundTrip(restored, settings: settings)
        }
        #expect(got == expected)
    }
}

/// Encodes a detector's state as the state file does and reads it back.
func roundTrip<D: MonitorDetector>(_ detector: D, settings: DetectorSettings) throws -> D {
    var bytes = Array("{\"monitor\":\"m\"".utf8)
    detector.encodeState(to: &bytes)
    bytes.append(UInt8(ascii: "}"))
    let value = try JSONParser.parse(bytes)
    return try D(state: value.objectValue!, settings: settings)
}

/// The reports of `values` judged by one detector, and by one saved and restored after every value;
/// `(continuous, restored)`, equal when the state keeps everything.
func reportsWithRoundTrips<D: MonitorDetector>(
    _: D.Type, _ observations: [Observation],
    settings: DetectorSettings
) throws -> ([D.Report], [D.Report]) {
    var continuous = D(settings: settings)
    let expected = observations.map { continuous.judge($0, settings: settings) }
    var restored = D(settings: settings)
    var got: [D.Report] = []
    for observation in observations {
        got.append(restored.judge(observation, settings: settings))
        restored = try roundTrip(restored, settings: settings)
    }
    return (expected, got)
}

import Foundation
import Testing
import VitalsKit
@testable import DetectAnomalyCore

@Suite("envelope detector: far from the median and beyond the range shown")
struct EnvelopeDetectorTests {
    let settings = DetectorSettings()

    /// Feeds `values` to a new detector (no `at`: the detector does not read it).
    func feed(_ values: [Double], simulated: Set<Int> = [], settings: DetectorSettings? = nil) -> [EnvelopeDetector.Report] {
        let settings = settings ?? self.settings
        var detector = EnvelopeDetector(settings: settings)
        return values.enumerated().map { index, value in
            detector.judge(Observation(value: value, simulated: simulated.contains(index)), settings: settings)
        }
    }

    /// 200 values alternating 95 and 105.
    let calm: [Double] = (0..<200).map { $0 % 2 == 0 ? 95 : 105 }

    @Test("the defaults: window 100, threshold 6, the default detector")
    func defaults() {
        #expect(settings.detector == .envelope)
        #expect(settings.window == 100)
        #expect(settings.threshold == 6)
        #expect(DetectorSettings(detector: .seed).window == 50)
    }

    @Test("one sample far out is degrading on that sample, held 3 more, then stable; its score is over 0.5")
    func point() {
        let reports = feed(calm + [400] + Array(calm.prefix(10)))
        #expect(reports[..<200].allSatisfy { $0.verdict != .degrading })
        #expect(reports[200].verdict == .degrading)
        #expect(reports[200].score > 0.5)
        #expect(reports[201...203].allSatisfy { $0.verdict == .degrading }, "the hold")
        #expect(reports[204...].allSatisfy { $0.verdict == .stable })
        #expect(reports[199].score < 0.5)
    }

    @Test("a value at the envelope is not new: a second spike of the same size soon after is stable")
    func envelopeRemembers() {
        let reports = feed(calm + [400] + Array(calm.prefix(20)) + [400])
        #expect(reports[200].verdict == .degrading)
        #expect(reports[221].verdict == .stable)
        #expect(reports[221].upper! > 380, "400 drawn back 0.2% of the way to the median per sample")
    }

    @Test("a sustained shift is caught on its first sample; the score falls back as the envelope follows")
    func shift() {
        let reports = feed(calm + Array(repeating: 300, count: 40))
        #expect(reports[200].verdict == .degrading)
        #expect(reports[200].score > 0.7)
        #expect(reports[230].score < 0.5)
    }

    /// 0, 1, ..., 199: a smooth ramp, every change +1.
    let ramp: [Double] = (0..<200).map(Double.init)

    // On the ramp, by hand: the mean absolute change is 1 (every change is 1), the envelope of
    // changes is [0.9998^197, 1] (the fall decays 0.02% per nonzero change from the first 1), so its
    // spread is below the scale 1 and the margin is 0.2 x 1; the change limit is 10/6 x 6 = 10 mean
    // changes. The value channel sees the median 150 of 101...199, the MAD 25 (scale at least 37), so
    // a value up to 230 is less than 2.2 scales out: evidence below 0.37, never the larger one.
    @Test("a step 11 times the usual change is degrading on a smooth ramp the value channel finds ordinary")
    func changeStep() {
        let step = feed(ramp + [230])
        #expect(step[..<200].allSatisfy { $0.verdict != .degrading })
        // change 31: evidence min(31 / 10, (31 - 1) / 0.2) = 3.1, score 3.1 / 4.1.
        #expect(step[200].verdict == .degrading)
        #expect(abs(step[200].score - 3.1 / 4.1) < 1e-9)
        // change 9: evidence 0.9, stable, score 0.9 / 1.9; change 11: 1.1, degrading, 1.1 / 2.1.
        let nine = feed(ramp + [208])[200]
        #expect(nine.verdict == .stable)
        #expect(abs(nine.score - 0.9 / 1.9) < 1e-9)
        let eleven = feed(ramp + [210])[200]
        #expect(eleven.verdict == .degrading)
        #expect(abs(eleven.score - 1.1 / 2.1) < 1e-9)
    }

    @Test("a fall of 30 on the ramp is judged with --direction both, not with high")
    func changeFall() {
        var both = settings
        both.direction = .both
        // change -30: evidence min(30 / 10, (0.9998^197 + 30) / 0.2) = 3, score 3 / 4.
        let fall = feed(ramp + [169], settings: both)[200]
        #expect(fall.verdict == .degrading)
        #expect(abs(fall.score - 0.75) < 1e-9)
        #expect(feed(ramp + [169])[200].verdict == .stable)
    }

    @Test("a step like one seen before is not new: the envelope of changes remembers it")
    func changeRemembered() {
        // +31 at 200, the ramp again, +31 at 250: the rise is then 31 x 0.9998^49 = 30.70, so the
        // second step is 0.3 beyond it, about 0.05 of the margin 0.2 x (30.70 - 0.95).
        let values = ramp + (0..<50).map { 230 + Double($0) } + [310]
        let reports = feed(values)
        #expect(reports[200].verdict == .degrading)
        #expect(reports[250].verdict == .stable)
        #expect(reports[250].score < 0.5)
    }

    @Test("mostly zeros: the MAD is 0, yet values like the occasional ones are stable and one far beyond is not")
    func mostlyZeros() {
        var values: [Double] = []
        for index in 0..<600 { values.append(index % 7 == 5 ? Double(10 + (index / 7) % 3) : 0) }
        values.append(150)
        let reports = feed(values)
        #expect(reports[100..<600].allSatisfy { $0.verdict != .degrading }, "the occasional 10-12 are normal")
        #expect(reports[600].verdict == .degrading)
    }

    @Test("negative and [0, 1] values are ordinary numbers; --direction both judges the low side")
    func negativeAndLow() {
        var both = settings
        both.direction = .both
        let negative = calm.map { ($0 - 100) / 1000 } + [-0.5]
        #expect(feed(negative, settings: both).last?.verdict == .degrading)
        #expect(feed(negative).last?.verdict == .stable, "high only: a fall is not judged")
        let rate = calm.map { $0 / 200 } + [0.95]
        #expect(feed(rate).last?.verdict == .degrading)
    }

    @Test("simulated samples are judged, degrading 500 above the median, and not learned")
    func simulated() {
        let reports = feed(calm + [650, 100], simulated: [200])
        #expect(reports[200].verdict == .degrading)
        #expect(reports[201].baselineCount == 99, "the window did not take the simulated value")
        #expect(reports[201].upper! < 200)
    }

    @Test("fewer than 10 points is unknown")
    func minimum() {
        let reports = feed(Array(calm.prefix(10)))
        #expect(reports[..<9].allSatisfy { $0.verdict == .unknown && $0.score == 0 })
        #expect(reports[9].verdict == .stable)
    }

    @Test("state saved and restored continues exactly")
    func stateRoundTrip() throws {
        var random = TestRandom(state: 11)
        let values = (0..<400).map { _ in random.uniform() < 0.03 ? 0 : 50 + random.uniform() * (random.uniform() < 0.05 ? 2000 : 40) }
        let (expected, got) = try reportsWithRoundTrips(EnvelopeDetector.self, values.map { Observation(value: $0) }, settings: settings)
        #expect(got == expected)
        #expect(got.contains { $0.verdict == .degrading })
    }
}

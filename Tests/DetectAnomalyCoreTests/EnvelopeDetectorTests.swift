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

    @Test("the defaults: window 100, threshold 5.7, the default detector, episodes ending after 11 quiet samples")
    func defaults() {
        #expect(settings.detector == .envelope)
        #expect(settings.window == 100)
        #expect(settings.threshold == 5.7)
        #expect(DetectorKind.envelope.episodeEnd == 11)
        #expect(DetectorKind.seed.episodeEnd == 1)
        #expect(DetectorSettings(detector: .seed).window == 50)
    }

    // By hand: the window holds 99 values, 50 of 105 and 49 of 95 before an even-numbered sample
    // (the other way round before an odd one), so the median is 105 there and the MAD 0. Sample i
    // (from 1; the first only starts the window) lies 10 from the median it is judged against,
    // except while the window fills with an even count (i = 2, 4, ..., 98), where the median is 100
    // and the distance 5. The mean deviation, weights 0.01 x 0.99^(199 - i), is then
    // 10 - 5 x 0.99^101 (1 - 0.99^98) / (1 - 0.99^2) / ((1 - 0.99^199) / 0.01) = 9.3403, and the
    // scale 1.8 x 9.3403 = 16.812: 400 is z = 295 / 16.812 = 17.55, the value channel's evidence
    // 17.55 / 5.7 = 3.0783 (the envelope is 105, far below). The change from 105 is 295, 29.5
    // mean changes of 10: the change channel's evidence 29.5 / (1.7 x 5.7) = 3.0444. The larger:
    // score 3.0783 / 4.0783.
    @Test("one sample far out is degrading on that sample alone (the episode, not the detector, keeps the verdict after it)")
    func point() {
        let reports = feed(calm + [400] + Array(calm.prefix(20)))
        #expect(reports[..<200].allSatisfy { $0.verdict != .degrading })
        #expect(reports[200].verdict == .degrading)
        let evidence = 295 / (1.8 * 9.340266501985798) / 5.7
        #expect(abs(reports[200].score - evidence / (evidence + 1)) < 1e-9)
        #expect(reports[201...].allSatisfy { $0.verdict == .stable })
        #expect(reports[199].score < 0.5)
    }

    @Test("a value at the envelope is not new: a second spike of the same size soon after is stable")
    func envelopeRemembers() {
        let reports = feed(calm + [400] + Array(calm.prefix(20)) + [400])
        #expect(reports[200].verdict == .degrading)
        #expect(reports[221].verdict == .stable)
        #expect(reports[221].upper! > 380, "400 drawn back 0.23% of the way to the median per sample")
    }

    // By hand, as above: 300 is z = 195 / 16.812 = 11.60, evidence 11.60 / 5.7 = 2.0348 (the change
    // channel's 19.5 / 9.69 = 2.0124 is smaller): score 2.0348 / 3.0348.
    @Test("a sustained shift is caught on its first sample; the score falls back as the envelope follows")
    func shift() {
        let reports = feed(calm + Array(repeating: 300, count: 40))
        #expect(reports[200].verdict == .degrading)
        let evidence = 195 / (1.8 * 9.340266501985798) / 5.7
        #expect(abs(reports[200].score - evidence / (evidence + 1)) < 1e-9)
        #expect(reports[201...].allSatisfy { $0.verdict == .stable }, "the new level is inside the envelope it raised")
        #expect(reports[230].score < 0.5)
    }

    /// 0, 1, ..., 199: a smooth ramp, every change +1.
    let ramp: [Double] = (0..<200).map(Double.init)

    // On the ramp, by hand: the mean absolute change is 1 (every change is 1), the envelope of
    // changes is [1, 1] (without times it does not fade), so its spread is below the scale 1 and the
    // margin is 0.53 x 1; the change limit is 1.7 x 5.7 = 9.69 mean changes. The value channel sees
    // the median 150 of 101...199, the MAD 25 (scale at least 37), so a value up to 230 is less than
    // 2.2 scales out: evidence below 0.38, never the larger one.
    @Test("a step 10 times the usual change is degrading on a smooth ramp the value channel finds ordinary")
    func changeStep() {
        let step = feed(ramp + [230])
        #expect(step[..<200].allSatisfy { $0.verdict != .degrading })
        // change 31: evidence min(31 / 9.69, (31 - 1) / 0.53) = 3.1992, score 3.1992 / 4.1992.
        #expect(step[200].verdict == .degrading)
        #expect(abs(step[200].score - (31 / 9.69) / (31 / 9.69 + 1)) < 1e-9)
        // change 9: evidence 0.9288, stable; change 10: 1.0320, degrading.
        let nine = feed(ramp + [208])[200]
        #expect(nine.verdict == .stable)
        #expect(abs(nine.score - (9 / 9.69) / (9 / 9.69 + 1)) < 1e-9)
        let ten = feed(ramp + [209])[200]
        #expect(ten.verdict == .degrading)
        #expect(abs(ten.score - (10 / 9.69) / (10 / 9.69 + 1)) < 1e-9)
    }

    @Test("a fall of 30 on the ramp is judged with --direction both, not with high")
    func changeFall() {
        var both = settings
        both.direction = .both
        // change -30: evidence min(30 / 9.69, (1 + 30) / 0.53) = 3.0960, score 3.0960 / 4.0960.
        let fall = feed(ramp + [169], settings: both)[200]
        #expect(fall.verdict == .degrading)
        #expect(abs(fall.score - (30 / 9.69) / (30 / 9.69 + 1)) < 1e-9)
        #expect(feed(ramp + [169])[200].verdict == .stable)
    }

    @Test("a step like one seen lately is not new: the envelope of changes remembers it")
    func changeRemembered() {
        // +31 at 200, the ramp again, +31 at 250: without times the rise is still 31, so the second
        // step is not beyond it.
        let values = ramp + (0..<50).map { 230 + Double($0) } + [310]
        let reports = feed(values)
        #expect(reports[200].verdict == .degrading)
        #expect(reports[250].verdict == .stable)
        #expect(reports[250].score < 0.5)
    }

    // With times a minute apart, each nonzero change draws the envelope of changes back toward 0 by
    // 1 - exp(-60 / (1.8 x 86400)) = 0.0386%: after a day of changes (1,440) it keeps
    // exp(-1440 x 60 / 155520) = 57.4% of a step, after two days 33.0%. The ramp here rises 0.01 a
    // minute (mean change 0.01); a step of +1 (100 mean changes) two days after one of +1 is 0.67
    // beyond the remembered rise of 0.33, in margins of 0.53 x (0.33 - 0.01): evidence
    // min(100 / 9.69, 0.67 / 0.170) = 3.95, degrading; an hour after it (60 changes) the rise is
    // 0.977 and the same step is not beyond it by a margin (0.023 / 0.513): stable.
    @Test("the envelope of changes forgets in time: a step like one two days before is new again, one an hour before is not")
    func changeForgotten() {
        func run(gapMinutes: Int) -> [EnvelopeDetector.Report] {
            var detector = EnvelopeDetector(settings: settings)
            var value = 0.0
            var reports: [EnvelopeDetector.Report] = []
            for minute in 0..<(200 + gapMinutes + 1) {
                value += minute == 199 || minute == 199 + gapMinutes ? 1 : 0.01
                reports.append(detector.judge(Observation(value: value, atMs: Int64(minute) * 60_000), settings: settings))
            }
            return reports
        }
        let twoDays = run(gapMinutes: 2 * 1440)
        #expect(twoDays[199].verdict == .degrading)
        #expect(twoDays[199 + 2 * 1440].verdict == .degrading)
        let anHour = run(gapMinutes: 60)
        #expect(anHour[199].verdict == .degrading)
        #expect(anHour[259].verdict == .stable)
    }

    /// Hourly samples for `days` days: 98 at even hours (UTC), 102 at odd ones, then `last` at `lastHour`
    /// of the next day.
    func daily(days: Int, last: Double, lastHour: Int, withTime: Bool = true) -> [EnvelopeDetector.Report] {
        var settings = self.settings
        settings.window = 101  // 100 values: 50 of each, so the median is 100 and the MAD 2
        var detector = EnvelopeDetector(settings: settings)
        var reports: [EnvelopeDetector.Report] = []
        for hour in 0..<(days * 24) {
            let value: Double = hour % 2 == 0 ? 98 : 102
            reports.append(detector.judge(Observation(value: value, atMs: withTime ? Int64(hour) * 3_600_000 : nil), settings: settings))
        }
        let at = Int64(days * 24 + lastHour) * 3_600_000
        reports.append(detector.judge(Observation(value: last, atMs: withTime ? at : nil), settings: settings))
        return reports
    }

    // By hand, after 200 days: the median is 100 and the MAD 2 (1.4826 x 2 = 2.965); the mean
    // absolute deviation from the median is 2, so the scale is 1.8 x 2 = 3.6; each even hour's mean
    // residual is -2 and each odd one's +2 (the first days, while the window filled and the median
    // was sometimes 98 or 102, weigh 0.97^196 = 0.3%), their own deviation near 0, so the profile's
    // deviation is its floor, 0.8 x the mean deviation = 1.6, and its limit 1.3 x 5.7 x 1.6 = 11.856.
    // 113 at an even hour: the profile's evidence (113 - 98) / 11.856 = 1.2652 (score 0.5585); the
    // value channel's (113 - 100) / 3.6 / 5.7 = 0.6335; the change channel's (113 - 102) / 4 / 9.69
    // = 0.2838.
    @Test("the daily profile: a value usual at other hours but 9.4 deviations over its own hour's is degrading")
    func profile() {
        let even = daily(days: 200, last: 113, lastHour: 4)
        #expect(even[..<(200 * 24)].allSatisfy { $0.verdict != .degrading })
        #expect(even.last?.verdict == .degrading)
        #expect(abs(even.last!.score - 1.2652 / 2.2652) < 0.002)
        // At an odd hour, where 102 is usual: (113 - 102) / 11.856 = 0.9278, stable.
        let odd = daily(days: 200, last: 113, lastHour: 5)
        #expect(odd.last?.verdict == .stable)
        #expect(abs(odd.last!.score - 0.9278 / 1.9278) < 0.002)
        // Without `at` there is no profile: the same value at the same place is stable, the value
        // channel's 0.6335 the largest.
        let untimed = daily(days: 200, last: 113, lastHour: 4, withTime: false)
        #expect(untimed.last?.verdict == .stable)
        #expect(abs(untimed.last!.score - 0.6335 / 1.6335) < 0.002)
    }

    @Test("the daily profile judges only after 3 visits of an hour, and not a window that is mostly one value")
    func profileGates() {
        // Two days: every hour visited twice (the first day's first hours not at all), so no profile.
        let early = daily(days: 2, last: 116, lastHour: 4)
        #expect(early.last?.verdict == .stable)
        // Mostly zeros (MAD 0): an occasional 10 at one hour of the day is not judged by the profile.
        var detector = EnvelopeDetector(settings: settings)
        var last = EnvelopeDetector.unjudged
        for hour in 0..<(40 * 24) {
            let value: Double = hour % 24 == 7 ? 10 : 0
            last = detector.judge(Observation(value: value, atMs: Int64(hour) * 3_600_000), settings: settings)
        }
        #expect(last.verdict == .stable)
        last = detector.judge(Observation(value: 10, atMs: Int64(40 * 24 + 3) * 3_600_000), settings: settings)
        #expect(last.verdict == .stable, "10 at 03:00 is unusual for that hour, but the window is mostly 0")
    }

    /// The daily profile's numbers in the detector's state (five per hour of the day).
    func profileNumbers(_ detector: EnvelopeDetector) throws -> [Double] {
        var bytes = Array("{\"monitor\":\"m\"".utf8)
        detector.encodeState(to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        let items = try #require(try JSONParser.parse(bytes).objectValue?["profile"]?.arrayValue)
        return items.compactMap(\.doubleValue)
    }

    @Test("the profile is daily at any cadence: an hour of minute samples is one day's visit, weighing about one")
    func profileCadence() throws {
        var detector = EnvelopeDetector(settings: settings)
        // Minute samples 00:00-00:59: the first starts the window, the 59 others are learned in phase
        // 0. By hand: the first learned (00:01) weighs 0.03 and starts the day; the one j minutes
        // later weighs 0.03 x j / 1440, so the weights' sum W follows W = (1 - w) W + w: about 0.03 +
        // 0.95 x 0.03 x (1 + ... + 58) / 1440 = 0.03 + 0.95 x 0.03 x 1711 / 1440 = 0.0639 (1 - W falls
        // from 0.97 to 0.94 on the way).
        for minute in 0..<60 {
            _ = detector.judge(Observation(value: Double(100 + minute % 2), atMs: Int64(minute) * 60_000), settings: settings)
        }
        let profile = try profileNumbers(detector)
        #expect(profile.count == 120)
        #expect(profile[3] == 1, "one day visited")
        #expect(profile[4] == 60_000, "the day started at 00:01")
        #expect(abs(profile[2] - 0.0639) < 0.0005)
        #expect(profile[5...].allSatisfy { $0 == 0 }, "no other hour visited")
        // An `at` at the day's start or before it (time repeated or stepping back): no weight, no day.
        _ = detector.judge(Observation(value: 500, atMs: 60_000), settings: settings)
        _ = detector.judge(Observation(value: 500, atMs: 0), settings: settings)
        #expect(try profileNumbers(detector)[0..<5] == profile[0..<5])
        // The next day's 00:00, 23 h 59 min after the day began: a second day, weight 0.03 x 1439 / 1440.
        _ = detector.judge(Observation(value: 100, atMs: 86_400_000), settings: settings)
        let next = try profileNumbers(detector)
        #expect(next[3] == 2)
        #expect(next[4] == 86_400_000)
        let w = 0.03 * 1439 / 1440
        #expect(abs(next[2] - ((1 - w) * profile[2] + w)) < 1e-12)
    }

    /// 200 values of a sawtooth 100, 101, ..., 109, 100, ...: never the same twice in a row.
    let sawtooth: [Double] = (0..<200).map { 100 + Double($0 % 10) }

    // By hand: 104.5 is the sawtooth's median, so neither the value channel nor the change channel
    // (a change of -4.5 where -9 is usual) finds it unusual. The series has not repeated itself
    // (repeat rate 0); the 2nd 104.5 is its 1st repeat (rate then 0.01, under 0.02), the 4th its
    // 3rd: evidence 3 / 2.5 = 1.2, score 1.2 / 2.2; from the 4th repeat 1.5 (score 0.6), up to the
    // 10th; the 11th is the new normal (the episode it began stays open through 10 quiet samples).
    @Test(
        "a value stuck on one number, on a series that seldom repeats, is degrading with --direction both from its 3rd repeat to its 10th")
    func stuck() throws {
        var both = settings
        both.direction = .both
        let values = sawtooth + Array(repeating: 104.5, count: 30)
        let reports = feed(values, settings: both)
        // (The sawtooth's first falls, in its first cycles, are new changes: judge from sample 100.)
        #expect(reports[100..<203].allSatisfy { $0.verdict != .degrading })
        #expect(reports[203].verdict == .degrading)
        #expect(abs(reports[203].score - 1.2 / 2.2) < 1e-9)
        #expect(reports[204...210].allSatisfy { $0.verdict == .degrading && abs($0.score - 0.6) < 1e-9 })
        #expect(reports[211...].allSatisfy { $0.verdict == .stable && $0.score < 0.5 })
        // Judged on neither side alone: --direction high and low do not look at repeats.
        #expect(feed(values)[100...].allSatisfy { $0.verdict != .degrading })
        var low = settings
        low.direction = .low
        #expect(feed(values, settings: low)[100...].allSatisfy { $0.verdict != .degrading })
        // A series that repeats itself often (every value twice: a run begins every other sample)
        // is not judged by repeats.
        let doubled = (0..<200).map { 100 + Double(($0 / 2) % 10) } + Array(repeating: 104.5, count: 30)
        #expect(feed(doubled, settings: both)[100...].allSatisfy { $0.verdict != .degrading })
        // The repeat count and rate are in the state: split runs give the same reports.
        let observations = values.map { Observation(value: $0) }
        let (expected, got) = try reportsWithRoundTrips(EnvelopeDetector.self, observations, settings: both)
        #expect(got == expected)
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

    @Test("a series that has not varied 5 times has no scale to judge by: its first departures are learned, not judged")
    func firstDepartures() {
        // 150 zeros, then five single values of 6 to 9 twenty zeros apart: each is unknown (the
        // series has varied 0, 1, 2, 3 and 4 times before it); then 500 is judged, far beyond.
        var values = Array(repeating: 0.0, count: 150)
        for value in [7.0, 8, 6, 7, 9] { values += [value] + Array(repeating: 0, count: 20) }
        values.append(500)
        let reports = feed(values)
        #expect(reports[9..<150].allSatisfy { $0.verdict == .unknown && $0.score == 0 }, "all zeros: nothing varied yet")
        let departures = (0..<5).map { 150 + 21 * $0 }
        #expect(departures.allSatisfy { reports[$0].verdict == .unknown })
        #expect(reports[255].verdict == .degrading)
        #expect(reports[254].verdict == .stable, "zeros after five departures are judged, and ordinary")
    }

    @Test("negative and [0, 1] values are ordinary numbers; --direction both judges the low side")
    func negativeAndLow() {
        var both = settings
        both.direction = .both
        let negative = calm.map { ($0 - 100) / 1000 } + [-0.5]
        #expect(feed(negative, settings: both).last?.verdict == .degrading)
        #expect(feed(negative).last?.verdict == .stable, "high only: a fall is not judged")
        // 0.2375 and 0.2625: the scale is 1.8 x 0.0234 = 0.042, so 0.95 is 16 scales above the median.
        let rate = calm.map { $0 / 400 } + [0.95]
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
        // Ten minutes apart, so every hour of the daily profile is learned and judges.
        let observations = values.enumerated().map { Observation(value: $1, atMs: Int64($0) * 600_000) }
        let (expected, got) = try reportsWithRoundTrips(EnvelopeDetector.self, observations, settings: settings)
        #expect(got == expected)
        #expect(got.contains { $0.verdict == .degrading })
    }
}

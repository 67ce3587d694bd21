import Foundation
import Testing
import VitalsKit

/// One real series excerpt (Fixtures/anomaly, see its README) run through detect-anomaly, its
/// episodes judged by the labels people made, with the rule of scripts/eval/detect-anomaly.
struct RealSeries {
    /// The excerpt's values and times (seconds), in order.
    let values: [Double]
    let times: [Int64]
    /// Each sample's anomaly object, as emitted.
    let anomalies: [JSONObject]
    /// The episodes, as emitted: [onset, end) in sample positions (end: the sample marked end, or
    /// the excerpt's length when one is still open).
    let episodes: [Range<Int>]
    /// The labelled windows, first and last sample positions.
    let windows: [ClosedRange<Int>]

    /// Runs `detect-anomaly --direction DIRECTION` on Fixtures/anomaly/NAME.ndjson.gz.
    init(_ name: String, direction: String = "both") throws {
        let folder = Binaries.fixtures.appendingPathComponent("anomaly")
        let file = folder.appendingPathComponent(name + ".ndjson.gz").path
        let result = try shell("gzip -dc '\(file)' | detect-anomaly --keep-status --direction \(direction)")
        guard result.status == 0 else { throw TestFailure("detect-anomaly exited \(result.status): \(result.stderr)") }
        let records = try result.records()
        values = records.compactMap { $0["latency_ms"]?.doubleValue }
        times = try records.map { record in
            guard let text = record["at"]?.stringValue, let ms = Timestamp.parse(text) else { throw TestFailure("no time in \(record)") }
            return ms / 1000
        }
        anomalies = try records.map { record in
            guard let anomaly = record["anomaly"]?.objectValue else { throw TestFailure("no anomaly object in \(record)") }
            return anomaly
        }
        var episodes: [Range<Int>] = []
        var open: Int?
        for (index, anomaly) in anomalies.enumerated() {
            switch anomaly["episode"]?.objectValue?["state"]?.stringValue {
            case "onset": open = index
            case "end":
                guard let start = open else { throw TestFailure("an end at \(index) with no onset") }
                episodes.append(start..<index)
                open = nil
            default: break
            }
        }
        if let start = open { episodes.append(start..<anomalies.count) }
        self.episodes = episodes
        let labels = try JSONParser.parse(Array(try Data(contentsOf: folder.appendingPathComponent("labels.json"))))
        let monitor = try #require(records.first?["monitor"]?.stringValue)
        let times = self.times
        windows = try (labels.objectValue?[monitor]?.arrayValue ?? []).map { window in
            guard let pair = window.arrayValue, pair.count == 2, let from = pair[0].stringValue.flatMap(Timestamp.parse),
                let to = pair[1].stringValue.flatMap(Timestamp.parse),
                let first = times.firstIndex(where: { $0 * 1000 >= from }), let last = times.lastIndex(where: { $0 * 1000 <= to })
            else { throw TestFailure("a window of \(monitor) that is not in its excerpt: \(window)") }
            return first...last
        }
        #expect(values.count == records.count, "every sample has its value")
    }

    /// The slack after a window: max(3, 5% of the excerpt), as the eval counts it.
    var slack: Int { max(3, values.count / 20) }

    /// The labelled windows an episode reaches (with the slack after each).
    var caught: [ClosedRange<Int>] {
        windows.filter { window in
            episodes.contains { $0.lowerBound <= min(values.count - 1, window.upperBound + slack) && $0.upperBound > window.lowerBound }
        }
    }

    /// The episodes that reach no window (with its slack): false alarms.
    var falseEpisodes: [Range<Int>] {
        episodes.filter { episode in
            !windows.contains { episode.lowerBound <= min(values.count - 1, $0.upperBound + slack) && episode.upperBound > $0.lowerBound }
        }
    }

    /// Event F1 of the excerpt: caught windows against false episodes.
    var f1: Double {
        let precision = caught.isEmpty ? 0 : Double(caught.count) / Double(caught.count + falseEpisodes.count)
        let recall = windows.isEmpty ? 1 : Double(caught.count) / Double(windows.count)
        return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0
    }

    /// Weeks from the first sample to the last.
    var weeks: Double { Double(times.last! - times.first!) / (7 * 86_400) }

    /// The gaps: positions after which the next sample comes later than `cadence` seconds.
    func gaps(over cadence: Int64) -> [Int] {
        (0..<(times.count - 1)).filter { times[$0 + 1] - times[$0] > cadence }
    }
}

// The figures each test holds the detector to are the labels' (every labelled window caught, no
// episode elsewhere) or issue 29's goals (event F1 of 0.8; at most 1 false episode per series per
// week), never the detector's own output.
@Suite("detect-anomaly on real series: the behaviours real monitoring brings", .serialized, .timeLimit(.minutes(5)))
struct DetectAnomalyRealDataTests {
    @Test("long zero runs, hourly: a latency that is 0 for 99% of a month, unlabelled on purpose, raises no episode")
    func zerosHourly() throws {
        let series = try RealSeries("outbound-16")
        #expect(series.values.count == 720)
        #expect(Double(series.values.filter { $0 == 0 }.count) / 720 > 0.98, "the fixture is the series described")
        #expect(series.values.contains { $0 > 0 }, "its occasional values are there too")
        #expect(series.windows.isEmpty)
        #expect(series.episodes.isEmpty, "false episodes: \(series.episodes)")
    }

    @Test("long zero runs, one a minute: the labelled bursts after hours of zeros are caught, nothing else")
    func zerosMinute() throws {
        let series = try RealSeries("57051487")
        let firstBurst = try #require(series.windows.first?.lowerBound)
        #expect(series.values[..<firstBurst].contains { $0 > 0 }, "a few values before the bursts")
        #expect(Double(series.values[..<firstBurst].filter { $0 == 0 }.count) / Double(firstBurst) > 0.98)
        #expect(series.windows.count == 2)
        #expect(series.caught.count == 2, "caught \(series.caught) of \(series.windows); episodes \(series.episodes)")
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
    }

    @Test("a rate in [0, 1] (an hourly crash rate): its labelled spikes are caught, event F1 0.8 or more, at most 1 false episode a week")
    func rateInUnitInterval() throws {
        let series = try RealSeries("app2-08")
        #expect(series.values.allSatisfy { (0...1).contains($0) })
        #expect(series.caught.count == series.windows.count, "caught \(series.caught) of \(series.windows)")
        #expect(series.f1 >= 0.8, "F1 \(series.f1): episodes \(series.episodes)")
        #expect(Double(series.falseEpisodes.count) <= series.weeks, "\(series.falseEpisodes) in \(series.weeks) weeks")
    }

    @Test("hourly with missing hours: the samples after each gap are judged, event F1 0.8 or more, no false episode")
    func hourlyWithGaps() throws {
        let series = try RealSeries("app1-05")
        let gaps = series.gaps(over: 3600)
        #expect(gaps.count == 4, "the fixture's four missing hours: \(gaps)")
        for gap in gaps {
            #expect(series.anomalies[gap + 1]["verdict"]?.stringValue != "unknown", "the sample after the gap at \(gap) is judged")
        }
        #expect(series.f1 >= 0.8, "F1 \(series.f1): caught \(series.caught.count) of \(series.windows.count), episodes \(series.episodes)")
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
    }

    @Test("one a minute with missing minutes: the labelled windows are caught, nothing else")
    func minuteWithGaps() throws {
        let series = try RealSeries("05f10d3a")
        #expect(series.gaps(over: 60).count == 7)
        #expect(series.caught.count == series.windows.count, "caught \(series.caught) of \(series.windows); episodes \(series.episodes)")
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
    }

    @Test(
        "daily and weekly seasonality (hourly requests): the daily peaks and the weekends raise nothing; the spikes at the peak are caught")
    func seasonality() throws {
        let series = try RealSeries("api-01")
        #expect(series.weeks > 3.5, "four weeks of days and weekends")
        #expect(series.caught.count == series.windows.count, "caught \(series.caught) of \(series.windows); episodes \(series.episodes)")
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
    }

    @Test("a level shift that persists (a drop that stays): an anomaly at first, then the new normal")
    func persistentShift() throws {
        let series = try RealSeries("431a8542")
        let drop = try #require(series.windows.last)
        // The data: the 200 samples after the labelled drop sit well below the 200 before it.
        let before = series.values[(drop.lowerBound - 200)..<drop.lowerBound].sorted()[100]
        let after = series.values[(drop.upperBound + 1)...].sorted()
        #expect(after.count > 200)
        #expect(after[after.count / 2] < before - 0.5, "median \(after[after.count / 2]) after, \(before) before")
        // One episode begins in the drop's window, and ends while the new level goes on.
        let episode = try #require(series.episodes.first { drop.contains($0.lowerBound) }, "episodes \(series.episodes)")
        #expect(episode.upperBound < series.values.count, "the episode ends")
        #expect(series.anomalies[episode.lowerBound]["score"]?.doubleValue ?? 0 >= 0.5)
        #expect(!series.episodes.contains { $0.lowerBound > episode.lowerBound }, "no episode after it: the new level is normal")
        #expect(series.anomalies[episode.upperBound...].allSatisfy { $0["verdict"]?.stringValue == "stable" })
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
    }

    @Test("a sudden drop (an hourly latency falls to 0): caught on the drop itself with --direction both, not with high")
    func suddenDrop() throws {
        let series = try RealSeries("outbound-14")
        let window = try #require(series.windows.first)
        #expect(series.windows.count == 1)
        #expect(series.values[window].contains(0))
        let before = series.values[..<window.lowerBound].sorted()[window.lowerBound / 2]
        #expect(before > 30, "the usual latency, \(before), before the drop")
        #expect(series.caught.count == 1, "episodes \(series.episodes)")
        #expect(series.falseEpisodes.isEmpty, "false episodes: \(series.falseEpisodes)")
        let onset = try #require(series.episodes.first).lowerBound
        #expect(series.values[onset] < before / 2, "the onset is the drop itself")
        // With --direction high the fall itself is not judged (the climb back may be).
        let high = try RealSeries("outbound-14", direction: "high")
        #expect(!high.episodes.contains { high.values[$0.lowerBound] < before / 2 }, "episodes \(high.episodes)")
    }
}

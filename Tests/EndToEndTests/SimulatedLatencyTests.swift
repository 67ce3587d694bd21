import FixtureServer
import Foundation
import Testing
import VitalsKit

/// isitup's simulated-latency rules (issue 15): a simulated latency is degrading at 1800 ms or more
/// when the monitor has no real latency yet, and when more than 500 ms above the real latencies'
/// mean otherwise, whatever the detector.
@Suite("detect-anomaly: isitup's simulated-latency rules, every detector")
struct SimulatedLatencyTests {
    static let detectors = ["envelope", "robust", "mad", "seed"]

    @Test(
        "the default detector honours isitup's simulated-latency rules: probe-http --simulate-latency 2000 | detect-anomaly is degrading",
        arguments: [nil] + detectors.map(Optional.some))
    func defaultDetectorHonoursSimulatedLatency(detector: String?) throws {
        let server = try FixtureServer()
        let option = detector.map { "--detector \($0)" } ?? ""
        let result = try shell(
            "probe-http --simulate-latency 2000 | detect-anomaly \(option)",
            stdin: #"{"id":"api","url":"\#(server.baseURL)/ok"}"# + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let sample = try #require(result.records().first)
        // 2000 ms and more (the fixture answers in a few ms) against no real baseline: 1800 decides.
        #expect(sample["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading", "\(result.stdout)")
        #expect(sample.string("status") == "degraded")
    }

    /// One monitor's line: `latency` ms at minute `minute`, simulated or not.
    static func line(_ minute: Int, _ latency: Double, simulated: Bool) -> String {
        let at = String(format: "2026-01-05T00:%02d:00.000Z", minute)
        return #"{"type":"sample","monitor":"api","at":"\#(at)","status":"up","latency_ms":\#(latency)"#
            + (simulated ? #","simulated":true}"# : "}")
    }

    @Test("the 1800 ms fallback with no real baseline: 1800 is degrading, 1799.9 is not", arguments: detectors)
    func fallback(detector: String) throws {
        for (latency, verdict) in [(1800.0, "degrading"), (1799.9, "unknown")] {
            let result = try run("detect-anomaly", ["--detector", detector], stdin: Self.line(0, latency, simulated: true) + "\n")
            let record = try #require(result.records().first)
            #expect(record["anomaly"]?.objectValue?["verdict"]?.stringValue == verdict, "\(detector) at \(latency)")
        }
    }

    @Test(
        "+500 ms over the real mean: real latencies of 90 and 110 (mean 100), then simulated 600.1 and 600",
        arguments: ["robust", "mad"])
    func marginOverTheRealMean(detector: String) throws {
        // 20 real samples alternating 90 and 110: mean 100, so the simulated threshold is 600 ms.
        // (envelope and seed also judge a simulated value by their own statistics, where 600 against
        // values of 90 to 110 is far out; robust and mad judge it by isitup's rules alone.)
        var lines = (0..<20).map { Self.line($0, $0 % 2 == 0 ? 90 : 110, simulated: false) }
        lines.append(Self.line(20, 600.1, simulated: true))
        lines.append(Self.line(21, 600, simulated: true))
        let result = try run("detect-anomaly", ["--detector", detector], stdin: lines.joined(separator: "\n") + "\n")
        let records = try result.records()
        try #require(records.count == 22)
        #expect(records[20]["anomaly"]?.objectValue?["verdict"]?.stringValue == "degrading", "\(detector): 600.1 > 100 + 500")
        // The simulated 600.1 was not learned: the mean is still 100 for the next one.
        #expect(records[21]["anomaly"]?.objectValue?["verdict"]?.stringValue == "stable", "\(detector): 600 is not above 600")
    }

    @Test("threshold_ms for a simulated sample under --min-samples is the threshold that decided it (mean + 500)")
    func thresholdUnderMinSamples() throws {
        // Three real samples of 100 ms (mean 100, stddev 0), then a simulated 700 ms: under the
        // default --min-samples only isitup's +500 rule can decide, so the threshold is 600, not the
        // mean + 2.5 stddev = 100 the statistical rule would give.
        var lines = (0..<3).map { Self.line($0, 100, simulated: false) }
        lines.append(Self.line(3, 700, simulated: true))
        let result = try run("detect-anomaly", ["--detector", "seed"], stdin: lines.joined(separator: "\n") + "\n")
        let anomaly = try #require(result.records().last?["anomaly"]?.objectValue)
        #expect(anomaly["verdict"]?.stringValue == "degrading")
        #expect(anomaly["threshold_ms"] == .number("600"), "\(anomaly)")
    }
}

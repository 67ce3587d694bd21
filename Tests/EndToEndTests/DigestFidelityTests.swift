import Foundation
import Testing
import VitalsKit

/// digest against isitup's words (issue 15): a trend over the day, and a cache that can be cleared.
@Suite("digest: seed fidelity", .hangGuard(minutes: 2))
struct DigestFidelityTests {
    /// One sample line every 5 minutes from `start`, with the latencies given.
    static func fiveMinuteSamples(_ monitor: String, start: String, latencies: [Double]) -> String {
        let base = Timestamp.parse(start)!
        return latencies.enumerated().map { index, latency in
            let at = Timestamp.format(milliseconds: base + Int64(index) * 300_000)
            return
                #"{"type":"sample","monitor":"\#(monitor)","at":"\#(at)","status":"up","latency_ms":\#(String(format: "%.3f", latency))}"#
        }.joined(separator: "\n") + "\n"
    }

    func service(_ input: String) throws -> JSONObject {
        let result = try run("digest", ["-f", "json", "--tz", "UTC"], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(result.records().first?["services"]?.arrayValue?.first?.objectValue)
    }

    @Test("digest trend over the day: a latency climbing from 70 ms to 330 ms over seven hours of 5-minute samples is increasing")
    func digestTrendOverTheDay() throws {
        // The issue's service: 5-minute samples for seven hours (84 of them, 03:00 to 09:55), the latency
        // climbing evenly from 70 to 330 ms. The newest 10 against the 10 before differ by 10%: "stable" today.
        let count = 84
        let latencies = (0..<count).map { 70 + 260 * Double($0) / Double(count - 1) }
        let api = try service(Self.fiveMinuteSamples("api", start: "2026-01-27T03:00:00Z", latencies: latencies))
        #expect(api.string("trend") == "increasing")
        // The rule of digest(1): the median of the last quarter of the service's span (the newest 21 of 84
        // five-minute bins, median the 74th sample) against the median of the whole span (the 42nd and
        // 43rd samples' mean): 298.7 ms against 200 ms, +49%.
        let recent = try #require(api.double("trend_recent_ms"))
        let typical = try #require(api.double("trend_earlier_ms"))
        #expect(abs(recent - (70 + 260 * 73.0 / 83)) < 0.01, "\(recent)")
        #expect(abs(typical - 200) < 0.01, "\(typical)")
    }

    @Test("digest trend over the day: noise around a steady level stays stable")
    func digestTrendOverTheDayNoiseStaysStable() throws {
        // A day of 5-minute samples at 100 ms ± 20 ms (a fixed pattern, so the test is deterministic),
        // and a steady 40 ms service with one 900 ms spike in its last hour.
        let noisy = (0..<288).map { 100 + Double(($0 * 37) % 41 - 20) }
        var spiky = [Double](repeating: 40, count: 288)
        spiky[280] = 900
        let noisyFacts = try service(Self.fiveMinuteSamples("noisy", start: "2026-01-27T00:00:00Z", latencies: noisy))
        #expect(noisyFacts.string("trend") == "stable")
        let spikyFacts = try service(Self.fiveMinuteSamples("spiky", start: "2026-01-27T00:00:00Z", latencies: spiky))
        #expect(spikyFacts.string("trend") == "stable")
    }

    @Test("clearing: digest --clear-cache removes the daily cache, as isitup's clear history does")
    func clearingDigestCache() throws {
        let scratch = try ScratchDirectory()
        let cache = scratch.path("digest.cache")
        let first = Self.fiveMinuteSamples("api", start: "2026-01-27T09:00:00Z", latencies: [40, 42, 44])
        let second = Self.fiveMinuteSamples("web", start: "2026-01-27T09:00:00Z", latencies: [20, 20, 20])
        let made = try run("digest", ["--cache", cache, "--tz", "UTC", "-f", "json"], stdin: first)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("\"api\""))
        // Same day, same options: the cached digest, whatever the input.
        #expect(try run("digest", ["--cache", cache, "--tz", "UTC", "-f", "json"], stdin: second).stdout == made.stdout)
        let cleared = try run("digest", ["--cache", cache, "--clear-cache"])
        #expect(cleared.status == 0, "\(cleared.stderr)")
        #expect(cleared.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: cache))
        // Cleared: the next digest is made from its own input.
        let fresh = try run("digest", ["--cache", cache, "--tz", "UTC", "-f", "json"], stdin: second)
        #expect(fresh.stdout.contains("\"web\"") && !fresh.stdout.contains("\"api\""), "\(fresh.stdout)")
        // Clearing an absent cache is not an error; --clear-cache needs --cache; a file that is not a cache is left alone.
        #expect(try run("digest", ["--cache", scratch.path("none"), "--clear-cache"]).status == 0)
        #expect(try run("digest", ["--clear-cache"]).status == 64)
        let other = try scratch.write("notes.txt", "my notes\n")
        let refused = try run("digest", ["--cache", other, "--clear-cache"])
        #expect(refused.status == 2)
        #expect(FileManager.default.fileExists(atPath: other))
    }
}

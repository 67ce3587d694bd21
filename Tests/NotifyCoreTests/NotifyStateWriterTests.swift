import Foundation
import Testing
import VitalsKit

@testable import NotifyCore

/// The state's hand-written monitors against JSONEncoder's: what one writes, JSONDecoder reads
/// back as the same state, and a state JSONEncoder wrote (as notify did before) reads the same.
@Suite("notify state: the hand-written tracks")
struct NotifyStateWriterTests {
    /// A track with every field drawn from `random`: nils, escapes, negative times, places.
    static func track(_ random: inout SplitMix, depth: Int = 0) -> MonitorTrack {
        let words = ["web", "a\"b\\c", "tab\there", "é ✓ 🙂", "/api/x?y=1", "", "line\nbreak", "\u{1}"]
        func maybe<T>(_ value: T, _ random: inout SplitMix) -> T? { random.next() % 3 == 0 ? nil : value }
        var track = MonitorTrack(
            name: words[Int(random.next() % UInt64(words.count))],
            confirmed: ["up", "down", "degraded", "error", "new"][Int(random.next() % 5)],
            lastAt: Int64(bitPattern: random.next()) >> 20)
        track.failStreak = Int(random.next() % 1000)
        track.badStreak = Int(random.next() % 1000)
        track.upStreak = Int(random.next() % 1000)
        track.notFailingStreak = Int(random.next() % 1000)
        track.failStart = maybe(Int64(random.next() % 2_000_000_000_000), &random)
        track.badStart = maybe(-Int64(random.next() % 1000), &random)
        track.since = maybe(Int64(random.next() % 2_000_000_000_000), &random)
        track.endedSince = maybe(Int64.max, &random)
        track.message = maybe(words[Int(random.next() % UInt64(words.count))], &random)
        track.reason = maybe("partial", &random)
        track.target = maybe("https://example.com/\u{7f}", &random)
        track.monitorID = maybe(Int(random.next() % 100_000), &random)
        track.settleUntil = maybe(Int64.min, &random)
        track.intervalMs = maybe(60_000, &random)
        track.kind = maybe("heartbeat", &random)
        track.dependsOn = maybe(Array(words.prefix(Int(random.next() % 3))), &random)
        track.checks = maybe(EpisodeChecks(failed: 14, notUp: 15), &random)
        track.endedChecks = maybe(EpisodeChecks(failed: 0, notUp: 3), &random)
        if depth == 0, random.next() % 2 == 0 {
            var places: [String: MonitorTrack] = [:]
            for place in ["", "tokyo", "paris", "a\"b"].prefix(Int(random.next() % 4) + 1) {
                places[place] = Self.track(&random, depth: 1)
            }
            track.places = places
        }
        return track
    }

    @Test("500 random states: written by hand, read back equal; written by JSONEncoder, read the same")
    func roundTrip() throws {
        var random = SplitMix(seed: 20_261_128)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("notify-writer-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for round in 0..<500 {
            var state = NotifyState()
            for index in 0..<Int(random.next() % 6) {
                state.monitors["m\(index)\(["", "\"", "é", "\\"][index % 4])"] = Self.track(&random)
            }
            if round % 7 == 0 { state.agents = ["tokyo": PlaceClock(lastAt: 5, intervalMs: 60_000)] }
            if round % 5 == 0 { state.fallbackTold = ["mail": ["a", "b"]] }
            state.nextDeviceID = round
            let path = scratch.appendingPathComponent("state.json").path
            let file = try NotifyStateFile(path: path, lock: false)
            try file.save(state)
            #expect(try file.load() == state, "round \(round)")
            // A state JSONEncoder wrote whole, as notify did before, reads the same.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let old = try encoder.encode(state)
            #expect(try JSONDecoder().decode(NotifyState.self, from: old) == state, "round \(round)")
            // And the hand-written file is JSON any parser takes, with each monitor once.
            let parsed = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            #expect(parsed.objectValue?["monitors"]?.objectValue?.fields.count == state.monitors.count)
        }
    }

    @Test("a state with no monitors is an object with an empty monitors map")
    func empty() throws {
        let bytes = try NotifyStateWriter.encode(NotifyState())
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasSuffix(#","monitors":{}}"# + "\n"), "\(text)")
        #expect(try JSONDecoder().decode(NotifyState.self, from: Data(bytes)) == NotifyState())
    }
}

/// A small seeded generator (SplitMix64), so a failure names a round that can be run again.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

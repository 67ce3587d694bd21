import Foundation
import Testing
import VitalsKit

@testable import DetectAnomalyCore

@Suite("episodes: one onset, the samples inside it, one end")
struct EpisodeTests {
    /// One judged sample: over the limit or not, its score (samples are a minute apart).
    struct Step {
        var over = false
        var score = 0.1
    }

    /// Feeds `steps` (minute `i` at i x 60 s) to a new tracker ending episodes after `endAfter` quiet samples.
    func marks(_ steps: [Step], endAfter: Int, tracker: inout EpisodeTracker) -> [EpisodeMark?] {
        steps.enumerated().map { index, step in
            tracker.advance(over: step.over, score: step.score, atMs: Int64(index) * 60_000, endAfter: endAfter)
        }
    }

    let quiet = Step()
    let spike = Step(over: true, score: 0.8)

    @Test("a sample over the limit starts an episode; it stays open through endAfter - 1 quiet samples; the next quiet one ends it")
    func onsetOngoingEnd() {
        var tracker = EpisodeTracker()
        let steps = [quiet, spike, quiet, quiet, quiet, quiet]
        let got = marks(steps, endAfter: 3, tracker: &tracker)
        #expect(got[0] == nil, "no episode before the spike")
        #expect(got[1] == EpisodeMark(state: .onset, id: 1, startedAtMs: 60_000, samples: 1, durationMs: 0, peak: 0.8))
        #expect(got[2] == EpisodeMark(state: .ongoing, id: 1, startedAtMs: 60_000, samples: 2, durationMs: 60_000, peak: 0.8))
        #expect(got[3] == EpisodeMark(state: .ongoing, id: 1, startedAtMs: 60_000, samples: 3, durationMs: 120_000, peak: 0.8))
        // The third quiet sample in a row ends it: it is not counted in the episode's samples.
        #expect(got[4] == EpisodeMark(state: .end, id: 1, startedAtMs: 60_000, samples: 3, durationMs: 180_000, peak: 0.8))
        #expect(got[5] == nil)
        #expect(!tracker.isOpen)
    }

    @Test("a sample over the limit inside an episode is no new one: it starts the quiet count again; the peak is the highest score")
    func overInsideAndPeak() {
        var tracker = EpisodeTracker()
        let higher = Step(over: true, score: 0.93)
        let got = marks([spike, quiet, quiet, higher, quiet, quiet, quiet], endAfter: 3, tracker: &tracker)
        #expect(got.map { $0?.state } == [.onset, .ongoing, .ongoing, .ongoing, .ongoing, .ongoing, .end])
        #expect(got.allSatisfy { $0?.id == 1 })
        #expect(got[2]?.peak == 0.8)
        #expect(got[3]?.peak == 0.93)
        #expect(got[6]?.samples == 6)
    }

    @Test("the next episode after an end gets the next id; endAfter 1 makes an episode of each run of samples over the limit")
    func runsAndIds() {
        var tracker = EpisodeTracker()
        let got = marks([spike, spike, quiet, quiet, spike, quiet, spike], endAfter: 1, tracker: &tracker)
        #expect(got.map { $0?.state } == [.onset, .ongoing, .end, nil, .onset, .end, .onset])
        #expect(got.map { $0?.id } == [1, 1, 1, nil, 2, 2, 3])
        #expect(got[2]?.samples == 2)
        #expect(tracker.count == 3)
    }

    @Test("time stepping back gives a duration of 0, not a negative one")
    func backwardTime() {
        var tracker = EpisodeTracker()
        _ = tracker.advance(over: true, score: 0.7, atMs: 600_000, endAfter: 3)
        let back = tracker.advance(over: false, score: 0, atMs: 0, endAfter: 3)
        #expect(back?.durationMs == 0)
    }

    @Test("saved and restored, open or closed, the tracker goes on exactly")
    func stateRoundTrip() throws {
        let steps = [quiet, spike, quiet, spike, quiet, quiet, quiet, spike, quiet]
        var continuous = EpisodeTracker()
        let expected = marks(steps, endAfter: 3, tracker: &continuous)
        var restored = EpisodeTracker()
        var got: [EpisodeMark?] = []
        for (index, step) in steps.enumerated() {
            got.append(restored.advance(over: step.over, score: step.score, atMs: Int64(index) * 60_000, endAfter: 3))
            var bytes = Array("{\"monitor\":\"m\"".utf8)
            restored.encodeState(to: &bytes)
            bytes.append(UInt8(ascii: "}"))
            restored = try EpisodeTracker(state: try #require(try JSONParser.parse(bytes).objectValue), endAfter: 3)
        }
        #expect(got == expected)
        #expect(restored == continuous)
    }

    @Test("a state whose open episode does not fit is refused with the reason")
    func badState() throws {
        func load(_ text: String) throws -> EpisodeTracker {
            try EpisodeTracker(state: try #require(try JSONParser.parse(Array(text.utf8)).objectValue), endAfter: 3)
        }
        #expect(throws: StateError.self) { try load("{\"episodes\":-1,\"episode\":null}") }
        #expect(throws: StateError.self) {
            try load("{\"episodes\":0,\"episode\":{\"started_at_ms\":0,\"samples\":1,\"peak\":0.5,\"quiet\":0}}")
        }
        #expect(throws: StateError.self) {
            try load("{\"episodes\":2,\"episode\":{\"started_at_ms\":0,\"samples\":1,\"peak\":0.5,\"quiet\":3}}")
        }
        #expect(throws: StateError.self) {
            try load("{\"episodes\":2,\"episode\":{\"started_at_ms\":0,\"samples\":0,\"peak\":0.5,\"quiet\":0}}")
        }
        #expect(throws: StateError.self) { try load("{\"episodes\":2}") }
        let open = try load("{\"episodes\":2,\"episode\":{\"started_at_ms\":120000,\"samples\":4,\"peak\":0.5,\"quiet\":2}}")
        #expect(open.isOpen && open.count == 2 && open.samples == 4 && open.quiet == 2)
    }
}

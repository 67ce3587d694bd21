import Testing
import VitalsKit

@testable import DetectAnomalyCore

/// A mark of episode `id` in state `state`, begun at minute `id`.
private func mark(_ state: EpisodeState, _ id: Int64) -> EpisodeMark {
    EpisodeMark(state: state, id: id, startedAtMs: id * 60_000, samples: 1, durationMs: 0, peak: 0.5)
}

/// Evidence with the high value lane at `value`, the high change lane at `change` and the low value lane at `low`.
private func lanes(value: Double = 0, change: Double = 0, low: Double = 0) -> ChannelEvidence {
    ChannelEvidence(value, change, 0, 0, low, 0, 0, 0)
}

@Suite("the user's verdicts: a hand-worked trace of one monitor's memory")
struct FeedbackTests {
    @Test(
        "a normal verdict mutes onsets like its episode, same lane and at most 1.5 times its peak; an anomaly verdict keeps its size raised"
    )
    func suppression() throws {
        var memory = FeedbackMemory()
        // Episode 1: its onset has value 1.2 and change 0.3; a sample inside it value 1.6 and change
        // 1.1004 (rounded up to 1.101); the peaks are the larger of each lane.
        memory.record(mark(.onset, 1), lanes(value: 1.2, change: 0.3))
        memory.record(mark(.ongoing, 1), lanes(value: 1.6, change: 1.1004))
        memory.record(mark(.end, 1), lanes(value: 0.1))
        #expect(memory.episodes == [EpisodeSignature(id: 1, startedAtMs: 60_000, peak: lanes(value: 1.6, change: 1.101))])
        #expect(memory.mutes(lanes(value: 1.3)) == false, "no verdict yet: everything over the limit is raised")
        #expect(memory.take(.normal, id: 1, startedAtMs: nil, started: 1) == .used)
        // The bars are the peaks: 1.6 and 1.101, so the limits are 2.4 and 1.6515.
        #expect(memory.mutes(lanes(value: 2.4, change: 0.5)) == true, "value 2.4 = 1.5 x 1.6; the change lane is not over 1")
        #expect(memory.mutes(lanes(value: 2.41)) == false, "larger than 1.5 times the normal one")
        #expect(memory.mutes(lanes(value: 1.2, change: 1.66)) == false, "the change lane over 1.6515")
        #expect(memory.mutes(lanes(value: 1.2, change: 1.65)) == true)
        #expect(memory.mutes(lanes(low: 1.3)) == false, "the other side: never called normal")
        #expect(memory.mutes(lanes(value: 0.9)) == false, "not over the limit: nothing to mute")
        // Episode 2 (value 3) is called an anomaly: its floor is 3, so 2 (= 3 / 1.5) and more is raised.
        memory.record(mark(.onset, 2), lanes(value: 3))
        #expect(memory.take(.anomaly, id: 2, startedAtMs: nil, started: 2) == .used)
        #expect(memory.anomaly == lanes(value: 3))
        #expect(memory.mutes(lanes(value: 2)) == false, "as large as two thirds of a real anomaly")
        #expect(memory.mutes(lanes(value: 1.99)) == true)
        // Using a verdict again changes nothing; naming it by its start too.
        let before = memory
        #expect(memory.take(.normal, id: 1, startedAtMs: 60_000, started: 2) == .used)
        #expect(memory.take(.normal, id: nil, startedAtMs: 60_000, started: 2) == .used)
        #expect(memory == before)
        #expect(memory.take(.normal, id: 5, startedAtMs: nil, started: 2) == .refused("it has had 2 episodes, not 5"))
        #expect(
            memory.take(.normal, id: 1, startedAtMs: 120_000, started: 2)
                == .refused("its episode 1 began at 1970-01-01T00:01:00.000Z (was the state started afresh?)"))
    }

    @Test("the last 8 episodes are remembered; an older one is already used when it had a verdict, else refused")
    func forgetting() throws {
        var memory = FeedbackMemory()
        memory.record(mark(.onset, 1), lanes(value: 1.5))
        #expect(memory.take(.normal, id: 1, startedAtMs: nil, started: 1) == .used)
        for id in Int64(2)...10 { memory.record(mark(.onset, id), lanes(value: 1.1)) }
        #expect(memory.episodes.map(\.id) == Array(3...10))
        #expect(memory.take(.anomaly, id: 1, startedAtMs: nil, started: 10) == .alreadyUsed)
        #expect(memory.take(.normal, id: 2, startedAtMs: nil, started: 10) == .refused("it remembers episodes 3 to 10"))
        #expect(memory.take(.normal, id: 3, startedAtMs: nil, started: 10) == .used)
        // The state file keeps all of it, exactly.
        var out: [UInt8] = [
            UInt8(ascii: "{"), UInt8(ascii: "\""), UInt8(ascii: "m"), UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "1"),
        ]
        memory.encodeState(to: &out)
        out.append(UInt8(ascii: "}"))
        let state = try #require(try JSONParser.parse(out).objectValue)
        #expect(try FeedbackMemory(state: state) == memory)
    }

    @Test("a feedback line names the episode by id or by time, gives a verdict or a sensitivity; anything else is refused in words")
    func lines() throws {
        func parse(_ text: String) -> String {
            do { return try FeedbackEntry.parse(Array(text.utf8)).line } catch { return "error: \(error.message)" }
        }
        #expect(parse(#"{"monitor":"api","episode":7,"verdict":"normal"}"#) == #"{"monitor":"api","episode":7,"verdict":"normal"}"#)
        #expect(
            parse(#"{"verdict":"anomaly","episode":"2026-01-05T00:01:00Z","monitor":"api"}"#)
                == #"{"monitor":"api","episode":"2026-01-05T00:01:00.000Z","verdict":"anomaly"}"#)
        #expect(
            parse(#"{"monitor":"api","episode":7,"started_at":"2026-01-05T00:01:00Z","verdict":"normal"}"#)
                == #"{"monitor":"api","episode":7,"started_at":"2026-01-05T00:01:00.000Z","verdict":"normal"}"#)
        #expect(parse(#"{"monitor":"api","sensitivity":"low"}"#) == #"{"monitor":"api","sensitivity":"low"}"#)
        #expect(parse(#"{"monitor":"api","episode":0,"verdict":"normal"}"#) == "error: \"episode\" is not a whole number of 1 or more")
        #expect(parse(#"{"monitor":"api","episode":7,"verdict":"fine"}"#) == "error: \"verdict\" is not \"normal\" or \"anomaly\"")
        #expect(parse(#"{"monitor":"api","sensitivity":"max"}"#) == "error: \"sensitivity\" is not \"low\", \"normal\", \"high\"")
        #expect(parse("[]") == "error: not a JSON object")
    }
}

import VitalsKit

/// Where a sample stands in its monitor's anomaly episodes.
enum EpisodeState: Sendable, Equatable {
    /// The sample that starts an episode: the one new detection.
    case onset
    /// A sample inside an episode after its onset.
    case ongoing
    /// The sample that closes an episode: the `endAfter`-th quiet sample in a row. It is not part
    /// of the episode (its verdict is the detector's own, stable).
    case end
}

/// What the anomaly object says of a sample's episode.
struct EpisodeMark: Sendable, Equatable {
    var state: EpisodeState
    /// The monitor's episode number: 1 for its first, counted over runs that share a state file.
    var id: Int64
    /// The onset's `at` (milliseconds since the epoch).
    var startedAtMs: Int64
    /// Samples in the episode so far, the onset included (at the end: all of them, the end
    /// sample not counted).
    var samples: Int
    /// From the onset's `at` to this sample's (0 when time stepped back).
    var durationMs: Int64
    /// The highest score of the episode's samples so far (each sample's own score).
    var peak: Double
}

/// One monitor's episodes: an episode starts on a sample the detector finds over its limit (its
/// own verdict is degrading), lasts while samples over the limit keep coming, and ends on the
/// `endAfter`-th sample in a row that is not (a quiet sample); the next sample over the limit after
/// that starts a new one. Samples the detector does not judge (down, no value, too few points)
/// leave the episode as it is. Memory: six numbers.
struct EpisodeTracker: Sendable, Equatable {
    /// Episodes started so far: the last one's id.
    private(set) var count: Int64 = 0
    /// Whether an episode is open.
    private(set) var isOpen = false
    private(set) var startedAtMs: Int64 = 0
    private(set) var samples = 0
    private(set) var peak = 0.0
    /// Quiet samples in a row in the open episode.
    private(set) var quiet = 0

    init() {}

    /// Takes one judged sample: `over` its limit or not, its own score and `at`; returns its place
    /// in an episode, or nil when it is in none.
    mutating func advance(over: Bool, score: Double, atMs: Int64, endAfter: Int) -> EpisodeMark? {
        if !isOpen {
            guard over else { return nil }
            count += 1
            isOpen = true
            startedAtMs = atMs
            samples = 1
            peak = score
            quiet = 0
            return mark(.onset, atMs: atMs)
        }
        quiet = over ? 0 : quiet + 1
        if quiet >= endAfter {
            isOpen = false
            quiet = 0
            return mark(.end, atMs: atMs)
        }
        samples += 1
        peak = max(peak, score)
        return mark(.ongoing, atMs: atMs)
    }

    private func mark(_ state: EpisodeState, atMs: Int64) -> EpisodeMark {
        EpisodeMark(
            state: state, id: count, startedAtMs: startedAtMs, samples: samples,
            durationMs: max(0, atMs &- startedAtMs), peak: peak)
    }

    // MARK: - State

    /// Appends the tracker's fields to a monitor's state object.
    func encodeState(to out: inout [UInt8]) {
        StateText.optionalInteger("episodes", count, to: &out)
        if isOpen {
            JSONText.appendLiteral(",\"episode\":{\"started_at_ms\":", to: &out)
            JSONText.appendInt(startedAtMs, to: &out)
            StateText.optionalInteger("samples", Int64(samples), to: &out)
            StateText.number("peak", peak, to: &out)
            StateText.optionalInteger("quiet", Int64(quiet), to: &out)
            out.append(UInt8(ascii: "}"))
        } else {
            JSONText.appendLiteral(",\"episode\":null", to: &out)
        }
    }

    /// Restores a tracker from a monitor's state object.
    init(state: JSONObject, endAfter: Int) throws(StateError) {
        guard let started = try state.optionalStateInteger("episodes"), started >= 0 else {
            throw StateError("'episodes' is not a whole number of 0 or more")
        }
        count = started
        guard let value = state["episode"] else { throw StateError("'episode' is missing") }
        if value == .null { return }
        guard let open = value.objectValue, count > 0 else {
            throw StateError("'episode' is neither null nor an open episode of one of the 'episodes'")
        }
        guard let at = try open.optionalStateInteger("started_at_ms"),
            let length = try open.optionalStateInteger("samples"), length >= 1,
            let run = try open.optionalStateInteger("quiet"), (0..<Int64(endAfter)).contains(run)
        else {
            throw StateError("'episode' needs started_at_ms, samples (1 or more) and quiet (0 to \(endAfter - 1))")
        }
        let top = try open.stateNumber("peak")
        guard (0...1).contains(top) else { throw StateError("the episode's 'peak' is not from 0 to 1") }
        isOpen = true
        startedAtMs = at
        samples = Int(length)
        peak = top
        quiet = Int(run)
    }
}

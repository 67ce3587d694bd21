import VitalsKit

/// The evidence of one sample on each of the envelope detector's channels, each side apart: lanes 0-3
/// are the high side's value, change, profile and repeat channels, lanes 4-7 the low side's (the
/// repeat channel judges no side and is in lane 3 only). A lane over 1 is a channel over its limit.
typealias ChannelEvidence = SIMD8<Double>

/// How readily a monitor's episodes are raised, the user's setting per monitor: each channel's
/// evidence is multiplied by the factor before it is held to the limit of 1.
enum Sensitivity: String, Sendable, CaseIterable {
    /// Evidence times 0.8: as a threshold 1.25 times the default.
    case low
    /// Evidence as it is.
    case normal
    /// Evidence times 1.15: as a threshold 0.87 times the default.
    case high

    /// The factor on the evidence.
    var factor: Double {
        switch self {
        case .low: return Self.lowFactor
        case .normal: return 1
        case .high: return Self.highFactor
        }
    }

    /// Low's factor: chosen on the tuning halves among 2/3, 0.8 (and high's 1.11, 1.15, 1.25).
    static let lowFactor = 0.8
    /// High's factor.
    static let highFactor = 1.15
}

/// The user's word on an episode.
enum EpisodeVerdict: String, Sendable, CaseIterable {
    /// Not an anomaly: episodes like it are not raised again.
    case normal
    /// A real anomaly: episodes like it keep being raised, whatever normal verdicts say.
    case anomaly
}

/// What a monitor remembers of one of its recent episodes, so a verdict given later can be used.
struct EpisodeSignature: Equatable {
    /// The monitor's episode number.
    var id: Int64
    /// The onset's `at` (ms).
    var startedAtMs: Int64
    /// The highest evidence of each lane over the episode's samples, rounded up to 3 decimals.
    var peak: ChannelEvidence
}

/// One monitor's memory for the user's verdicts: its last episodes' signatures, and what the
/// verdicts taught, as a bar per lane (an onset whose firing lanes are all under the bar of a normal
/// episode is not raised) and a floor per lane (one at the size of a real anomaly always is).
///
/// Memory: nothing until the monitor's first episode, then at most `remembered` signatures and
/// three numbers a lane.
struct FeedbackMemory: Equatable {
    /// Episodes whose signatures are kept, the latest ones.
    static let remembered = 8
    /// Episodes back whose verdicts are tracked (one bit each), so a verdict used once is known as used.
    static let tracked: Int64 = 64
    /// How much larger than the episode called normal an onset may be, per lane, and still be taken as like it.
    static let likeness = 0.5

    /// The last episodes, oldest first (the last one may be open).
    private(set) var episodes: [EpisodeSignature] = []
    /// Bit i: the episode `latest - i` has had a verdict used.
    private(set) var verdicts: UInt64 = 0
    /// The largest peak of an episode called normal, per lane (0: none).
    private(set) var normal = ChannelEvidence(repeating: 0)
    /// The smallest peak over the limit of an episode called an anomaly, per lane (0: none).
    private(set) var anomaly = ChannelEvidence(repeating: 0)

    /// An empty memory: a monitor with no episode yet.
    init() {}

    /// The id of the latest episode remembered, 0 when none.
    var latest: Int64 { episodes.last?.id ?? 0 }

    /// Whether a sample over the limit, with no episode open, is like an episode called normal: each
    /// lane over the limit is within `likeness` of a normal peak and under any anomaly's.
    func mutes(_ evidence: ChannelEvidence) -> Bool {
        let firing = evidence .> 1
        guard any(firing) else { return false }
        let covered = evidence .<= normal * (1 + Self.likeness)
        let real = (anomaly .> 0) .& (evidence .>= anomaly / (1 + Self.likeness))
        return all(covered .| .!firing) && !any(real .& firing)
    }

    /// Records a sample placed in an episode: an onset starts a signature, a sample inside it raises the peaks.
    mutating func record(_ mark: EpisodeMark, _ evidence: ChannelEvidence) {
        switch mark.state {
        case .onset:
            let shift = mark.id - latest
            verdicts = shift >= Self.tracked ? 0 : verdicts << UInt64(shift)
            if episodes.count == Self.remembered { episodes.removeFirst() }
            episodes.append(EpisodeSignature(id: mark.id, startedAtMs: mark.startedAtMs, peak: Self.rounded(evidence)))
        case .ongoing:
            guard let last = episodes.indices.last, episodes[last].id == mark.id else { return }
            episodes[last].peak = pointwiseMax(episodes[last].peak, Self.rounded(evidence))
        case .end:
            break
        }
    }

    /// Lanes rounded up to 3 decimals, at least 0: what a state file keeps, exactly.
    private static func rounded(_ evidence: ChannelEvidence) -> ChannelEvidence {
        var out = ChannelEvidence(repeating: 0)
        for lane in 0..<8 where evidence[lane] > 0 { out[lane] = (min(evidence[lane], 1e6) * 1000).rounded(.up) / 1000 }
        return out
    }

    /// What became of a verdict.
    enum Outcome: Equatable {
        /// Used now.
        case used
        /// Used in an earlier run (or more than `tracked` episodes back, and taken as such).
        case alreadyUsed
        /// Not usable; the reason, in words.
        case refused(String)
    }

    /// Uses a verdict on the episode `id` (when given) or the one that began at `startedAtMs`.
    /// `started` is the number of episodes the monitor has had.
    mutating func take(_ verdict: EpisodeVerdict, id: Int64?, startedAtMs: Int64?, started: Int64) -> Outcome {
        let index: Int?
        if let id {
            guard id >= 1, id <= started else {
                return .refused(
                    started == 0 ? "it has had no episode" : "it has had \(started) episode\(started == 1 ? "" : "s"), not \(id)")
            }
            index = episodes.firstIndex { $0.id == id }
            if let index, let startedAtMs, episodes[index].startedAtMs != startedAtMs {
                let began = Timestamp.format(milliseconds: episodes[index].startedAtMs)
                return .refused("its episode \(id) began at \(began) (was the state started afresh?)")
            }
            if index == nil {
                let back = latest - id
                if back >= Self.tracked || (back >= 0 && verdicts & (1 << UInt64(back)) != 0) { return .alreadyUsed }
                return .refused(forgotten)
            }
        } else if let startedAtMs {
            index = episodes.firstIndex { $0.startedAtMs == startedAtMs }
            if index == nil { return .refused("no episode it remembers began then (" + forgotten + ")") }
        } else {
            index = nil
        }
        guard let index else { return .refused("no episode named") }
        let peak = episodes[index].peak
        switch verdict {
        case .normal: normal = pointwiseMax(normal, peak)
        case .anomaly:
            // Only the lanes over the limit say what made it an anomaly.
            let firing = peak .> 1
            let lower = anomaly.replacing(with: peak, where: (anomaly .== 0) .| (peak .< anomaly))
            anomaly = anomaly.replacing(with: lower, where: firing)
        }
        verdicts |= 1 << UInt64(latest - episodes[index].id)
        return .used
    }

    /// Words for an episode the memory no longer holds.
    private var forgotten: String {
        guard let first = episodes.first else { return "it remembers no episode" }
        return first.id == latest ? "it remembers only episode \(latest)" : "it remembers episodes \(first.id) to \(latest)"
    }

    // MARK: - State

    /// Whether there is anything to save.
    var isEmpty: Bool { episodes.isEmpty && verdicts == 0 }

    /// Appends `,"feedback":{...}` (or null when empty) to a monitor's state object.
    func encodeState(to out: inout [UInt8]) {
        guard !isEmpty else {
            JSONText.appendLiteral(",\"feedback\":null", to: &out)
            return
        }
        JSONText.appendLiteral(",\"feedback\":{\"episodes\":[", to: &out)
        for (position, episode) in episodes.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "["))
            JSONText.appendInt(episode.id, to: &out)
            out.append(UInt8(ascii: ","))
            JSONText.appendInt(episode.startedAtMs, to: &out)
            for lane in 0..<8 {
                out.append(UInt8(ascii: ","))
                StateText.exact(episode.peak[lane], to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "]"))
        StateText.optionalInteger("verdicts", Int64(bitPattern: verdicts), to: &out)
        StateText.numbers("normal", (0..<8).map { normal[$0] }, to: &out)
        StateText.numbers("anomaly", (0..<8).map { anomaly[$0] }, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// Restores the memory from a monitor's state object (absent or null: empty, as in a version 4 file).
    init(state: JSONObject) throws(StateError) {
        guard let value = state["feedback"], value != .null else { return }
        guard let object = value.objectValue, let items = object["episodes"]?.arrayValue, items.count <= Self.remembered else {
            throw StateError("'feedback' is not an object with at most \(Self.remembered) episodes")
        }
        for item in items {
            guard let fields = item.arrayValue, fields.count == 10, case .number(let idText) = fields[0], let id = Int64(idText),
                case .number(let atText) = fields[1], let at = Int64(atText), id > (episodes.last?.id ?? 0)
            else {
                throw StateError("'feedback' has an episode that is not [id, started_at_ms, 8 lanes] in order")
            }
            var peak = ChannelEvidence(repeating: 0)
            for lane in 0..<8 {
                guard let number = fields[2 + lane].doubleValue, number.isFinite, number >= 0 else {
                    throw StateError("'feedback' has an episode lane that is not a number of 0 or more")
                }
                peak[lane] = number
            }
            episodes.append(EpisodeSignature(id: id, startedAtMs: at, peak: peak))
        }
        guard let mask = try object.optionalStateInteger("verdicts") else { throw StateError("'feedback' has no verdicts") }
        verdicts = UInt64(bitPattern: mask)
        for (key, target) in [("normal", 0), ("anomaly", 1)] {
            let lanes = try object.stateNumbers(key, limit: 8)
            guard lanes.count == 8, lanes.allSatisfy({ $0 >= 0 }) else {
                throw StateError("'feedback' \(key) is not 8 numbers of 0 or more")
            }
            let vector = ChannelEvidence(lanes)
            if target == 0 { normal = vector } else { anomaly = vector }
        }
    }
}

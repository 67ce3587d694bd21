import VitalsKit

/// One place a monitor was checked from (an agent, or the samples naming none: local), as the
/// service table keeps it: its newest sample, what `PlaceRule.judge` reads of it at the end.
struct PlaceState {
    /// The agent's bytes; empty for the samples that name none (local).
    let agent: [UInt8]
    /// The place as `PlaceRule.Vote` spells it: the agent, '' for local.
    let key: String
    /// The newest sample's time (within `--now`).
    var latestAt = Int64.min
    /// The newest sample's status.
    var latestStatus = SampleStatus.unknown
    /// The newest sample's reason (raw bytes of the string), empty when null.
    var latestReason: [UInt8] = []
    /// The newest sample's message, as a decoded string's bytes.
    var latestMessage: [UInt8] = []

    /// A place that has not reported yet.
    init(agent: [UInt8]) {
        self.agent = agent
        key = String(decoding: agent, as: UTF8.self)
    }

    /// The place's name in words: its agent, or "local".
    var name: String { PlaceRule.name(key.isEmpty ? nil : key) }

    /// The newest sample as `PlaceRule.judge` reads it.
    var report: PlaceReport {
        PlaceReport(
            agent: key.isEmpty ? nil : key, at: latestAt, status: latestStatus,
            reason: latestReason.isEmpty ? nil : String(decoding: latestReason, as: UTF8.self),
            message: latestMessage.isEmpty ? nil : String(decoding: latestMessage, as: UTF8.self))
    }
}

/// A monitor's places with each one's newest sample: what the place rule's verdict on the
/// monitor now reads. Memory grows with the places, not with the samples.
struct MonitorPlaces {
    /// The places, in order of first appearance (a row's `place` indexes them).
    private(set) var places: [PlaceState] = []

    /// The index of the place whose agent is `agent` (empty: local), added when new.
    mutating func index<Agent: Collection<UInt8>>(of agent: Agent) -> Int {
        for index in places.indices where places[index].agent.elementsEqual(agent) { return index }
        places.append(PlaceState(agent: Array(agent)))
        return places.count - 1
    }

    /// Notes the newest sample of place `index` when a sample at `at` is it (ties go to the later line).
    mutating func noteLatest<Reason: Collection<UInt8>>(
        _ index: Int, at: Int64, status: SampleStatus, reason: Reason?, message: [UInt8]
    ) {
        guard at >= places[index].latestAt else { return }
        places[index].latestAt = at
        places[index].latestStatus = status
        if let reason {
            if !places[index].latestReason.elementsEqual(reason) { places[index].latestReason = Array(reason) }
        } else {
            places[index].latestReason.removeAll(keepingCapacity: true)
        }
        if places[index].latestMessage != message { places[index].latestMessage = message }
    }

    /// The rule's verdict on the monitor from each place's newest sample, with a check interval of `intervalMs`.
    func verdict(intervalMs: Int64, quorum: Quorum) -> PlaceVerdict {
        PlaceRule.judge(places.map(\.report), intervalMs: intervalMs, quorum: quorum)
    }
}

/// The sweep that judges a service's samples by the place rule in time order: each place's
/// newest vote so far (one a place), the check interval last stated, and the newest partial
/// check's words. `ServiceAccumulator` keeps one.
struct PlaceSweep {
    /// One place's newest vote (a sample that was not unknown) so far.
    struct Vote {
        /// The place as the rule spells it ('' for local); nil until the sweep meets the place.
        var key: String?
        /// The vote's time; Int64.min before the place's first vote.
        var at = Int64.min
        /// The vote's status.
        var status = SampleStatus.unknown
    }

    /// By place index (a row's `place`).
    private(set) var votes: [Vote] = []
    /// The check interval (ms) the samples swept last stated; 0 for none yet.
    private(set) var statedIntervalMs: Int64 = 0
    /// The places' words at the newest partial check: "down from tokyo; up from paris".
    private(set) var partialWords: String?

    /// The check interval the rule uses at the newest sample swept: the last stated, else 60 s.
    var intervalMs: Int64 { statedIntervalMs > 0 ? statedIntervalMs : PlaceRule.defaultIntervalMs }

    /// Judges the next sample (time order) of the row's place: the monitor's status at its time by
    /// `PlaceRule.verdict(place:at:...)` from each other place's newest vote so far within two
    /// check intervals (the row's `check_interval` when stated, else the last stated, else 60 s),
    /// the sample voting for its place; then keeps its vote. `key` names the place when it is new.
    mutating func judge(_ row: SampleRow, key: () -> String, quorum: Quorum) -> (consensus: SampleStatus, partial: Bool) {
        let place = meet(row, key: key)
        let status = row.sampleStatus
        var judged = (consensus: status, partial: false)
        if votes.count > 1 {
            var others: [PlaceRule.Vote] = []
            for index in votes.indices where index != place && votes[index].at != Int64.min {
                others.append(PlaceRule.Vote(place: votes[index].key!, at: votes[index].at, status: votes[index].status))
            }
            if !others.isEmpty,
                let verdict = PlaceRule.verdict(
                    place: votes[place].key!, at: row.at, status: status, others: others,
                    intervalMs: intervalMs, quorum: quorum)
            {
                judged = (verdict.status, verdict.isPartial)
                if verdict.isPartial { partialWords = verdict.message }
            }
        }
        keep(row, place: place)
        return judged
    }

    /// Keeps the vote of a sample that is no check (one from before the window).
    mutating func vote(_ row: SampleRow, key: () -> String) { keep(row, place: meet(row, key: key)) }

    /// Notes the row's stated interval and its place (named by `key` when new); returns the place.
    private mutating func meet(_ row: SampleRow, key: () -> String) -> Int {
        let place = Int(row.place)
        if row.intervalMs > 0 { statedIntervalMs = row.intervalMs }
        if place >= votes.count { votes.append(contentsOf: repeatElement(Vote(), count: place - votes.count + 1)) }
        if votes[place].key == nil { votes[place].key = key() }
        return place
    }

    /// Keeps the row's vote as its place's newest (unknown does not vote).
    private mutating func keep(_ row: SampleRow, place: Int) {
        guard PlaceRule.severity(row.sampleStatus) != nil else { return }
        votes[place].at = row.at
        votes[place].status = row.sampleStatus
    }
}

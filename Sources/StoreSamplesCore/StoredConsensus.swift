import VitalsKit

/// The consensus a store keeps with each sample: `PlaceRule` applied at the sample's own time to
/// each place's latest sample at or before it, among the samples stored before it (its batch's
/// earlier samples included), the sample itself voting for its place. Uptime and the history's
/// buckets count a sample as up when this was up (store-samples(1), PLACES). It is judged once,
/// when the sample is stored: a sample that arrives later (an agent's spool catching up) is judged
/// among those stored before it, and does not change what was judged of the others.
///
/// Both stores judge with this one function, from the rows they read, so they store the same
/// consensus for the same samples in the same order.
enum StoredConsensus {
    /// A sample of one of the monitor's places, as judging reads it.
    struct Vote: Equatable {
        /// Its identity agent ('' for the local place).
        var place: String
        var at: Int64
        var status: SampleStatus
    }

    /// The oldest time a vote may have to count beside a sample at `at`.
    static func windowStart(_ at: Int64, intervalMs: Int64) -> Int64 { at &- PlaceRule.freshIntervals &* intervalMs }

    /// The consensus of a sample at `at` with status `status`, from place `place`, given `others`:
    /// samples of the monitor's other places at or before `at` and from `windowStart` on (any order;
    /// samples of `place` itself, or outside the window, are ignored).
    static func judge(place: String, at: Int64, status: SampleStatus, others: [Vote], intervalMs: Int64, quorum: Quorum) -> SampleStatus {
        let start = windowStart(at, intervalMs: intervalMs)
        var latest: [String: Vote] = [:]
        for vote in others where vote.place != place && vote.at <= at && vote.at >= start && PlaceRule.severity(vote.status) != nil {
            if let known = latest[vote.place], known.at >= vote.at { continue }
            latest[vote.place] = vote
        }
        if latest.isEmpty { return status }
        var reports = [PlaceReport(agent: place.isEmpty ? nil : place, at: at, status: status)]
        for vote in latest.values { reports.append(PlaceReport(agent: vote.place.isEmpty ? nil : vote.place, at: vote.at, status: vote.status)) }
        return PlaceRule.judge(reports, intervalMs: intervalMs, quorum: quorum).status
    }
}

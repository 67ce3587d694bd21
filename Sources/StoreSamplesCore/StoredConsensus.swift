import VitalsKit

/// The consensus a store keeps with each sample: `PlaceRule.status(place:at:...)` at the sample's
/// own time, from each place's latest sample at or before it among the samples stored before it
/// (its batch's earlier samples included), the sample itself voting for its place. Uptime and the
/// history's buckets count a sample as up when this was up (store-samples(1), PLACES). It is judged
/// once, when the sample is stored: a sample that arrives later (an agent's spool catching up) is
/// judged among those stored before it, and does not change what was judged of the others.
///
/// Both stores judge with this one function, from the rows they read, so they store the same
/// consensus for the same samples in the same order.
enum StoredConsensus {
    typealias Vote = PlaceRule.Vote

    /// The oldest time a vote may have to count beside a sample at `at`.
    static func windowStart(_ at: Int64, intervalMs: Int64) -> Int64 { PlaceRule.windowStart(at, intervalMs: intervalMs) }

    /// The consensus of a sample (see `PlaceRule.status(place:at:status:others:intervalMs:quorum:)`).
    static func judge(place: String, at: Int64, status: SampleStatus, others: [Vote], intervalMs: Int64, quorum: Quorum) -> SampleStatus {
        PlaceRule.status(place: place, at: at, status: status, others: others, intervalMs: intervalMs, quorum: quorum)
    }
}

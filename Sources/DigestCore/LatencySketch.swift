import Foundation

/// The 95th percentile of a service's latencies in bounded memory.
///
/// Up to `exactLimit` values are kept as they are and the percentile is exact (nearest rank:
/// the value at rank ⌈0.95·n⌉ in ascending order). Past that the values move into a
/// logarithmic histogram (buckets of ratio γ = 1.02, as in DDSketch): the reported value is
/// within 1% of the exact nearest-rank value, and the histogram holds at most a few thousand
/// counters whatever the number of samples.
struct LatencySketch {
    /// Values kept exactly before the histogram takes over.
    static let exactLimit = 512
    /// The bucket ratio; the relative error of an estimate is at most (γ−1)/(γ+1) < 1%.
    static let gamma = 1.02
    static let logGamma = log(gamma)
    /// Values at or below this (ms) share the lowest bucket.
    static let floorValue = 0.001

    private var exact: [Double] = []
    private var counts: [UInt32] = []
    private var lowestIndex = 0
    private var zeroCount = 0
    private var minimum = Double.infinity
    private var maximum = -Double.infinity
    /// The number of values added.
    private(set) var count = 0
    /// Whether `percentile` is still exact.
    var isExact: Bool { counts.isEmpty && zeroCount == 0 }

    /// Creates an empty sketch.
    init() {}

    /// Adds a latency in milliseconds (not negative).
    mutating func add(_ value: Double) {
        count += 1
        minimum = min(minimum, value)
        maximum = max(maximum, value)
        if isExact && exact.count < Self.exactLimit {
            exact.append(value)
            return
        }
        if !exact.isEmpty {
            let kept = exact
            exact = []
            for old in kept { addToHistogram(old) }
        }
        addToHistogram(value)
    }

    private mutating func addToHistogram(_ value: Double) {
        guard value > Self.floorValue else {
            zeroCount += 1
            return
        }
        let index = Int((log(value) / Self.logGamma).rounded(.up))
        if counts.isEmpty {
            lowestIndex = index
            counts = [0]
        } else if index < lowestIndex {
            counts.insert(contentsOf: repeatElement(0, count: lowestIndex - index), at: 0)
            lowestIndex = index
        } else if index - lowestIndex >= counts.count {
            counts.append(contentsOf: repeatElement(0, count: index - lowestIndex - counts.count + 1))
        }
        counts[index - lowestIndex] += 1
    }

    /// The value at quantile `q` (0 < q ≤ 1) by nearest rank, or nil when empty.
    func percentile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((q * Double(count)).rounded(.up)))
        if isExact {
            return exact.sorted()[rank - 1]
        }
        var seen = zeroCount
        if rank <= seen { return minimum }
        for (offset, bucketCount) in counts.enumerated() {
            seen += Int(bucketCount)
            if rank <= seen {
                // Bucket i holds (γ^(i−1), γ^i]; its midpoint in the relative sense is 2γ^i/(γ+1).
                let estimate = 2 * pow(Self.gamma, Double(lowestIndex + offset)) / (Self.gamma + 1)
                return min(max(estimate, minimum), maximum)
            }
        }
        return maximum
    }
}

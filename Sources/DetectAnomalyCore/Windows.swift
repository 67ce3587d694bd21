/// The last `capacity` values in arrival order: a fixed-size ring, constant memory.
struct Ring<Element> {
    /// The most values kept.
    let capacity: Int
    private var storage: [Element] = []
    private var head = 0  // index of the oldest once full

    /// Creates an empty ring.
    init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        storage.reserveCapacity(capacity)
    }

    /// The number of values held.
    var count: Int { storage.count }
    /// Whether the ring holds `capacity` values.
    var isFull: Bool { storage.count == capacity }

    /// Adds `value` as the newest; returns the oldest, evicted, when the ring was full.
    @discardableResult
    mutating func append(_ value: Element) -> Element? {
        if storage.count < capacity {
            storage.append(value)
            return nil
        }
        let evicted = storage[head]
        storage[head] = value
        head = head + 1 == capacity ? 0 : head + 1
        return evicted
    }

    /// The value `offset` places after the oldest.
    subscript(offset: Int) -> Element {
        let index = head + offset
        return storage[index < storage.count ? index : index - storage.count]
    }

    /// The values, oldest first.
    var inOrder: [Element] { (0..<count).map { self[$0] } }
}

/// A window of numbers kept twice: in arrival order (to know which leaves) and sorted
/// (for the median and the MAD).
///
/// Adding a value costs O(log n) comparisons and a move of at most n numbers in memory (the
/// sorted array's insert and remove); the median costs O(1) and the MAD O(log n), found as the
/// middle of two sorted runs of distances without sorting them.
struct SortedWindow {
    private(set) var ring: Ring<Double>
    private(set) var sorted: [Double] = []

    /// Creates an empty window of at most `capacity` values.
    init(capacity: Int) {
        ring = Ring(capacity: capacity)
        sorted.reserveCapacity(capacity)
    }

    /// The number of values held.
    var count: Int { sorted.count }

    /// The value added last; the window must not be empty.
    var newest: Double { ring[ring.count - 1] }

    /// Adds `value` as the newest, dropping the oldest when full.
    mutating func append(_ value: Double) {
        if let evicted = ring.append(value) {
            sorted.remove(at: lowerBound(evicted))
        }
        sorted.insert(value, at: upperBound(value))
    }

    /// The median (the mean of the two middle values for an even count); the window must not be empty.
    var median: Double {
        let n = sorted.count
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }

    /// The median absolute deviation from the median (not scaled); the window must not be empty.
    var mad: Double {
        let n = sorted.count
        let center = median
        let split = lowerBound(center)
        let runs = DistanceRuns(sorted: sorted, center: center, split: split)
        if n % 2 == 1 { return runs.kth(n / 2) }
        return (runs.kth(n / 2 - 1) + runs.kth(n / 2)) / 2
    }

    private func lowerBound(_ value: Double) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func upperBound(_ value: Double) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] <= value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}

/// The distances of sorted values from a center, as two ascending runs: leftwards from the
/// split (center minus the values below it) and rightwards (the values from the split on,
/// minus the center). The k-th smallest distance is found by binary search over both.
private struct DistanceRuns {
    let sorted: [Double]
    let center: Double
    let split: Int

    private var leftCount: Int { split }
    private var rightCount: Int { sorted.count - split }
    private func left(_ i: Int) -> Double { center - sorted[split - 1 - i] }
    private func right(_ j: Int) -> Double { sorted[split + j] - center }

    /// The k-th smallest distance, 0-based.
    func kth(_ k: Int) -> Double {
        // i values are taken from the left run and k + 1 - i from the right; find the smallest
        // i where the next left value is not below the last right value taken.
        var low = max(0, k + 1 - rightCount)
        var high = min(leftCount, k + 1)
        while low < high {
            let i = (low + high) / 2
            let j = k + 1 - i
            if j > 0, left(i) < right(j - 1) { low = i + 1 } else { high = i }
        }
        let i = low
        let j = k + 1 - low
        let fromLeft = i > 0 ? left(i - 1) : -Double.infinity
        let fromRight = j > 0 ? right(j - 1) : -Double.infinity
        return max(fromLeft, fromRight)
    }
}

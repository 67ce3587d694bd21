/// A binary min-heap of (deadline, value) pairs: timers of many probes on one thread.
/// Equal deadlines come out in no particular order.
public struct DeadlineHeap {
    private var deadlines: [Int64] = []
    private var values: [Int] = []

    /// An empty heap.
    public init() {}

    /// The number of entries.
    public var count: Int { deadlines.count }

    /// The earliest entry, or nil.
    public var peek: (deadline: Int64, value: Int)? {
        deadlines.isEmpty ? nil : (deadlines[0], values[0])
    }

    /// Adds an entry.
    public mutating func push(_ deadline: Int64, _ value: Int) {
        deadlines.append(deadline)
        values.append(value)
        var child = deadlines.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if deadlines[parent] <= deadlines[child] { break }
            deadlines.swapAt(parent, child)
            values.swapAt(parent, child)
            child = parent
        }
    }

    /// Removes the earliest entry.
    @discardableResult
    public mutating func pop() -> (deadline: Int64, value: Int)? {
        guard let top = peek else { return nil }
        let last = deadlines.count - 1
        deadlines.swapAt(0, last)
        values.swapAt(0, last)
        deadlines.removeLast()
        values.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            if left >= deadlines.count { break }
            let right = left + 1
            let smaller = right < deadlines.count && deadlines[right] < deadlines[left] ? right : left
            if deadlines[parent] <= deadlines[smaller] { break }
            deadlines.swapAt(parent, smaller)
            values.swapAt(parent, smaller)
            parent = smaller
        }
        return top
    }
}

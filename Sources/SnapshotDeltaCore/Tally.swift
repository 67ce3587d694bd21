import VitalsKit

// Unsafe pointers here are C interop (a RawSample's text fields are views of libxml2's attribute values, read in place
// during its callback, and compared with memcmp(3)): kept.

/// One health record as a reader found it. Text fields point into the reader's buffers and
/// are valid only during the call that hands the sample on.
struct RawSample {
    /// The type identifier's bytes.
    var type = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
    /// Start, ms since the epoch (UTC).
    var start: Int64 = 0
    /// End, ms since the epoch (UTC).
    var end: Int64 = 0
    /// When the sample was created on the device, ms (nil when not given).
    var created: Int64?
    /// The value as written (`72`, `22.5312`, `HKCategoryValueSleepAnalysisAsleepCore`).
    var value: UnsafeBufferPointer<UInt8>?
    /// The unit (`count/min`).
    var unit: UnsafeBufferPointer<UInt8>?
    /// The source's name (`Apple Watch`).
    var source: UnsafeBufferPointer<UInt8>?
    /// The source's version.
    var sourceVersion: UnsafeBufferPointer<UInt8>?
    /// The device, with HealthKit's memory address already removed.
    var device: UnsafeBufferPointer<UInt8>?
    /// The sample's UUID, when the collector knows it.
    var uuid: UnsafeBufferPointer<UInt8>?
    /// For a calendar day without a time (an activity summary): the day's own year.
    var calendarYear: Int?

    /// An empty sample.
    init() {}
}

/// Per-type tallies of one take: count, date range and yearly counts, plus what collectors
/// said about each type's quality, and the registry that decides which types count.
final class Tally {
    private struct Accumulator {
        var identifier: String
        var count: Int64 = 0
        var earliest = Int64.max
        var latest = Int64.min
        var years: [(year: Int, count: Int64, approximate: Bool)] = []
        var lastYear = 0

        init(identifier: String) { self.identifier = identifier }

        @inline(__always)
        mutating func add(start: Int64, end: Int64, year: Int, spansDays: Bool) {
            count += 1
            if start < earliest { earliest = start }
            let last = max(start, end)
            if last > latest { latest = last }
            if lastYear < years.count, years[lastYear].year == year {
                years[lastYear].count += 1
                if spansDays { years[lastYear].approximate = true }
                return
            }
            if let index = years.firstIndex(where: { $0.year == year }) {
                lastYear = index
                years[index].count += 1
                if spansDays { years[index].approximate = true }
            } else {
                years.append((year, 1, spansDays))
                lastYear = years.count - 1
            }
        }
    }

    /// What a collector said about one type (`type_status`).
    struct Status: Sendable {
        /// The quality it stated.
        var quality: Quality
        /// It said the type is unsupported.
        var unsupported: Bool
    }

    /// A count corrected by the coherence rule, for a warning.
    struct Correction: Sendable {
        /// The type.
        var typeIdentifier: String
        /// Records that were read for it and are not counted.
        var recordsRead: Int64
        /// The quality that made the count unavailable.
        var quality: Quality
    }

    /// The calendar the yearly counts use.
    let calendar: YearCalendar
    /// The monitored types, or nil for every type.
    let registry: [String]?
    private let registrySet: Set<String>?
    private var accumulators: [Accumulator] = []
    private var indexByName: [String: Int] = [:]
    private var lastType: [UInt8] = []
    private var lastIndex = -1
    private var statuses: [String: Status] = [:]
    /// Records of types outside the registry, which are not counted.
    private(set) var ignoredRecords: Int64 = 0
    /// Types outside the registry that records named.
    private(set) var ignoredTypes: Set<String> = []
    /// Every counted record.
    private(set) var recordCount: Int64 = 0

    /// Creates an empty tally.
    init(calendar: YearCalendar, registry: [String]?) {
        self.calendar = calendar
        self.registry = registry
        self.registrySet = registry.map(Set.init)
    }

    /// The identifier of a type index.
    func identifier(_ index: Int) -> String { accumulators[index].identifier }

    /// The index of a type, creating it; nil when the registry does not monitor it.
    @inline(__always)
    func index(of type: UnsafeBufferPointer<UInt8>) -> Int? {
        if lastIndex >= 0, type.count == lastType.count, let base = type.baseAddress,
            lastType.withUnsafeBufferPointer({ memcmp($0.baseAddress!, base, type.count) == 0 })
        {
            return lastIndex
        }
        return slowIndex(of: type)
    }

    private func slowIndex(of type: UnsafeBufferPointer<UInt8>) -> Int? {
        let name = String(decoding: type, as: UTF8.self)
        if let registrySet, !registrySet.contains(name) {
            ignoredTypes.insert(name)
            return nil
        }
        let index: Int
        if let known = indexByName[name] {
            index = known
        } else {
            index = accumulators.count
            accumulators.append(Accumulator(identifier: name))
            indexByName[name] = index
        }
        lastType = Array(type)
        lastIndex = index
        return index
    }

    /// Counts one sample of the type at `index`.
    @inline(__always)
    func add(_ index: Int, _ sample: RawSample) {
        recordCount += 1
        let year = sample.calendarYear ?? calendar.year(of: sample.start)
        accumulators[index].add(
            start: sample.start, end: sample.end, year: year,
            spansDays: sample.end - sample.start > 86_400_000)
    }

    /// Notes a record of a type outside the registry.
    func ignore() { ignoredRecords += 1 }

    /// Records what a collector said about a type (the last statement wins).
    func setStatus(_ typeIdentifier: String, _ status: Status) -> Bool {
        if let registrySet, !registrySet.contains(typeIdentifier) {
            ignoredTypes.insert(typeIdentifier)
            return false
        }
        statuses[typeIdentifier] = status
        return true
    }

    /// The snapshot's type counts, in identifier order, with the coherence rule applied.
    func typeCounts() -> (types: [TypeCount], corrections: [Correction]) {
        var names = Set(accumulators.map(\.identifier)).union(statuses.keys)
        if let registry { names.formUnion(registry) }
        var types: [TypeCount] = []
        var corrections: [Correction] = []
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let status = statuses[name] ?? Status(quality: .complete, unsupported: false)
            let quality: Quality = status.unsupported ? .failed : status.quality
            var type: TypeCount
            if let index = indexByName[name] {
                let tally = accumulators[index]
                let yearly = tally.years.sorted { $0.year < $1.year }
                    .map { YearlyCount(year: $0.year, count: $0.count, isApproximate: $0.approximate) }
                type = TypeCount(
                    typeIdentifier: name, count: tally.count,
                    earliest: tally.count > 0 ? tally.earliest : nil, latest: tally.count > 0 ? tally.latest : nil,
                    quality: quality, isUnsupported: status.unsupported, yearly: yearly)
            } else {
                let unavailable = quality == .failed || quality == .unauthorized || status.unsupported
                type = TypeCount(
                    typeIdentifier: name, count: unavailable ? -1 : 0, earliest: nil, latest: nil,
                    quality: quality, isUnsupported: status.unsupported)
            }
            let (coherent, corrected) = type.coherent()
            if corrected { corrections.append(Correction(typeIdentifier: name, recordsRead: type.count, quality: quality)) }
            types.append(coherent)
        }
        return (types, corrections)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

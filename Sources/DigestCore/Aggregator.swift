import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (mkstemp(3), read(2) and write(2) of the spool's rows): kept.

/// The time axis of the charts: one step for every service, the smallest of a fixed list
/// (1s, 5s, 10s, 30s, 1m, 5m, 10m, 30m, 1h, 2h, 6h, 12h, 1d, 7d, then doubling) that puts
/// the samples in at most `maxBins` bins. Each step divides the next, so bins merge cleanly
/// when it grows.
struct ChartScale {
    /// The most bins a chart has.
    static let maxBins: Int64 = 160
    static let steps: [Int64] = [
        1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000,
        7_200_000, 21_600_000, 43_200_000, 86_400_000, 604_800_000,
    ]
    /// The bin width in milliseconds.
    private(set) var step: Int64 = steps[0]
    /// The earliest and latest sample seen.
    private(set) var minAt = Int64.max
    private(set) var maxAt = Int64.min

    /// Notes a sample time; returns the factor the step grew by, if it did.
    mutating func observe(_ at: Int64) -> Int64? {
        if at >= minAt && at <= maxAt { return nil }
        minAt = min(minAt, at)
        maxAt = max(maxAt, at)
        let old = step
        while floorDivide(maxAt, step) - floorDivide(minAt, step) + 1 > Self.maxBins {
            if let next = Self.steps.first(where: { $0 > step }) { step = next } else { step *= 2 }
        }
        return step == old ? nil : step / old
    }

    /// The first and last bin numbers, or nil before any sample.
    var binRange: ClosedRange<Int64>? {
        minAt <= maxAt ? floorDivide(minAt, step)...floorDivide(maxAt, step) : nil
    }
}

/// Outage starts by correlation bucket: which services began failing in each.
struct CorrelationBuckets {
    /// The bucket width in milliseconds.
    let bucket: Int64
    /// Per bucket number, each service once with its first outage start in the bucket.
    private(set) var starts: [Int64: [(service: UInt32, at: Int64)]] = [:]

    init(bucket: Int64) { self.bucket = bucket }

    mutating func note(service: UInt32, at: Int64) {
        let index = floorDivide(at, bucket)
        if let position = starts[index]?.firstIndex(where: { $0.service == service }) {
            starts[index]![position].at = min(starts[index]![position].at, at)
        } else {
            starts[index, default: []].append((service, at))
        }
    }
}

/// What one pass over the samples of the window produced.
struct Aggregate {
    /// Every monitor read (some may have no sample in the window).
    let services: ServiceTable
    /// Per monitor (by index), its accumulator; nil when it had no sample in the window.
    let accumulators: [ServiceAccumulator?]
    /// The window; nil bounds when there were no samples and no `--now`.
    let windowStart: Int64?
    let windowEnd: Int64?
    /// The chart axis.
    let scale: ChartScale
    /// Outage starts by bucket.
    let correlation: CorrelationBuckets
    /// Valid samples read, and how many fell in the window.
    let samplesRead: Int
    let samplesInWindow: Int
    /// Whether a second pass was needed (out-of-order samples, or more than a window of input).
    let secondPass: Bool
}

/// Summarizes samples in one pass with memory fixed per service.
///
/// The window ends at `--now`, or at the newest sample, which is known only at the end. So the
/// first pass keeps the samples no older than the newest so far minus the window, feeding each
/// service's accumulator in arrival order, and writes them, 48 bytes each, to an unlinked
/// temporary file. At the end, if every kept sample is inside the final window and every
/// service's samples came in time order (the usual case: `store-samples export`, or
/// probe-http's output), the result stands. Otherwise the kept samples are read back from the
/// file, filtered by the final window, sorted by service and time when needed, and summarized
/// again: the same answer as sorted input would give.
final class Aggregator {
    let window: Int64
    let now: Int64?
    let trendSamples: Int
    let bucket: Int64
    /// How many of a monitor's fresh places must agree (`--quorum`).
    let quorum: Quorum
    /// The monitors seen, shared with the scanner.
    let services: ServiceTable

    private var accumulators: [ServiceAccumulator?] = []
    private var lastAccepted: [Int64] = []
    private var scale = ChartScale()
    private var correlation: CorrelationBuckets
    private var fastPathValid = true
    private var outOfOrder = false
    private var samplesRead = 0
    private var maxAt = Int64.min
    /// The oldest sample counted (in the window as it stood then).
    private var minCounted = Int64.max
    /// The longest check interval a sample stated (ms), at least the default: how far before the
    /// window a sample may still vote is two of them (`voteMargin`).
    private var longestIntervalMs = PlaceRule.defaultIntervalMs
    private var spool: Spool?
    private var spoolProblem: String?

    /// Creates an aggregator for a window of `window` ms ending at `now` (or the newest sample).
    init(
        services: ServiceTable, window: Int64, now: Int64?, trendSamples: Int, bucket: Int64, quorum: Quorum = .majority,
        temporaryDirectory: String? = nil
    ) {
        self.services = services
        self.quorum = quorum
        self.window = window
        self.now = now
        self.trendSamples = trendSamples
        self.bucket = bucket
        self.correlation = CorrelationBuckets(bucket: bucket)
        do {
            spool = try Spool(directory: temporaryDirectory.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
        } catch {
            spoolProblem = error.message
        }
    }

    /// How far before the window's start a sample still votes for the checks in it: two of the
    /// longest check intervals stated (a year at most).
    private var voteMargin: Int64 { PlaceRule.freshIntervals * min(longestIntervalMs, 366 * 86_400_000) }

    /// Takes one valid sample: counted when in the window (as it stands), a vote only when just
    /// before it (`voteMargin`), else left out.
    func add(_ row: SampleRow) {
        samplesRead += 1
        if row.at > maxAt { maxAt = row.at }
        if row.intervalMs > longestIntervalMs { longestIntervalMs = row.intervalMs }
        if let now, row.at > now { return }
        let start = (now ?? maxAt) - window
        if row.at < start - voteMargin { return }
        let counted = row.at >= start
        if counted && row.at < minCounted { minCounted = row.at }
        let service = Int(row.service)
        if service >= lastAccepted.count {
            lastAccepted.append(contentsOf: repeatElement(Int64.min, count: service - lastAccepted.count + 1))
        }
        if row.at < lastAccepted[service] {
            outOfOrder = true
            if fastPathValid {
                fastPathValid = false
                accumulators = []
            }
        }
        lastAccepted[service] = row.at
        if spool != nil {
            do {
                try spool!.append(row)
            } catch {
                spoolProblem = error.message
                spool = nil
            }
        }
        if fastPathValid { counted ? feed(row) : feedVote(row) }
    }

    /// Gives a sample from before the window to its service's place rule, as a vote only.
    private func feedVote(_ row: SampleRow) {
        let service = Int(row.service)
        if service >= accumulators.count {
            accumulators.append(contentsOf: repeatElement(nil, count: service - accumulators.count + 1))
        }
        if accumulators[service] == nil { accumulators[service] = ServiceAccumulator(trendSamples: trendSamples, quorum: quorum) }
        accumulators[service]!.vote(row, placeKey: { services.placeKey(row.service, Int(row.place)) })
    }

    private func feed(_ row: SampleRow) {
        if let factor = scale.observe(row.at) {
            for index in accumulators.indices where accumulators[index] != nil {
                accumulators[index]!.rebin(factor: factor)
            }
        }
        let service = Int(row.service)
        if service >= accumulators.count {
            accumulators.append(contentsOf: repeatElement(nil, count: service - accumulators.count + 1))
        }
        if accumulators[service] == nil { accumulators[service] = ServiceAccumulator(trendSamples: trendSamples, quorum: quorum) }
        if accumulators[service]!.add(row, binStep: scale.step, placeKey: { services.placeKey(row.service, Int(row.place)) }) {
            correlation.note(service: row.service, at: row.at)
        }
    }

    /// Ends the input and returns the summary, making the second pass when needed.
    func finish() throws -> Aggregate {
        let end = now ?? (samplesRead > 0 ? maxAt : nil)
        let start = end.map { $0 - window }
        var secondPass = false
        if let start, !fastPathValid || minCounted < start {
            secondPass = true
            guard var spool else {
                throw ToolError("cannot keep samples on disk for a second pass: \(spoolProblem ?? "no temporary file")")
            }
            accumulators = []
            scale = ChartScale()
            correlation = CorrelationBuckets(bucket: bucket)
            fastPathValid = true
            let end = end!
            let votesFrom = start - voteMargin
            if outOfOrder {
                var rows: [SampleRow] = []
                try spool.readBack { row in
                    if row.at >= votesFrom && row.at <= end { rows.append(row) }
                }
                rows.sort { a, b in
                    a.service != b.service ? a.service < b.service : (a.at != b.at ? a.at < b.at : a.sequence < b.sequence)
                }
                for row in rows { row.at >= start ? feed(row) : feedVote(row) }
            } else {
                try spool.readBack { row in
                    if row.at >= start && row.at <= end {
                        feed(row)
                    } else if row.at >= votesFrom && row.at < start {
                        feedVote(row)
                    }
                }
            }
        }
        spool = nil
        if let end {
            for index in accumulators.indices where accumulators[index] != nil {
                accumulators[index]!.finish(windowEnd: end)
            }
        }
        let inWindow = accumulators.reduce(0) { $0 + ($1?.checks ?? 0) }
        var padded = accumulators
        if padded.count < services.count { padded.append(contentsOf: repeatElement(nil, count: services.count - padded.count)) }
        return Aggregate(
            services: services, accumulators: padded, windowStart: start, windowEnd: end, scale: scale,
            correlation: correlation, samplesRead: samplesRead, samplesInWindow: inWindow, secondPass: secondPass)
    }
}

/// Rows written to an unlinked temporary file and read back once.
struct Spool {
    private let fd: Int32
    private var buffer: [SampleRow] = []
    private static let batch = 4096

    init(directory: String) throws(ToolError) {
        var template = Array((directory + "/digest-spool.XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw ToolError("cannot create a temporary file in \(directory): \(String(cString: strerror(errno)))") }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.fd = fd
        buffer.reserveCapacity(Self.batch)
    }

    mutating func append(_ row: SampleRow) throws(ToolError) {
        buffer.append(row)
        if buffer.count == Self.batch { try flush() }
    }

    private mutating func flush() throws(ToolError) {
        let ok = buffer.withUnsafeBytes { Streams.writeAll(fd, $0) }
        buffer.removeAll(keepingCapacity: true)
        if !ok { throw ToolError("cannot write the temporary file: \(String(cString: strerror(errno)))") }
    }

    /// Calls `body` with every row in the order written, then closes the file.
    mutating func readBack(_ body: (SampleRow) -> Void) throws {
        try flush()
        defer { close(fd) }
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw ToolError("cannot rewind the temporary file") }
        var rows = [SampleRow](
            repeating: SampleRow(at: 0, latencyMicros: 0, speedMilli: 0, sequence: 0, service: 0, status: 0),
            count: Self.batch)
        var carry = 0  // bytes of a partial row at the start of the buffer
        let stride = MemoryLayout<SampleRow>.stride
        while true {
            let count = rows.withUnsafeMutableBytes { raw -> Int in
                read(fd, raw.baseAddress! + carry, raw.count - carry)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw ToolError("cannot read the temporary file: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            let bytes = carry + count
            let whole = bytes / stride
            for index in 0..<whole { body(rows[index]) }
            carry = bytes - whole * stride
            if carry > 0 {
                rows.withUnsafeMutableBytes { raw in
                    raw.baseAddress!.copyMemory(from: raw.baseAddress! + whole * stride, byteCount: carry)
                }
            }
        }
    }
}

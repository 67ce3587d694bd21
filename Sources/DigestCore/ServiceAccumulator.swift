import VitalsKit

/// One time bin of a service's chart: its checks, failures, degraded checks and latency.
struct ChartBin: Equatable {
    /// The bin's number: its start is `index × step`.
    var index: Int64
    /// Checks in the bin.
    var checks: UInt32 = 0
    /// Checks that were down or error.
    var failed: UInt32 = 0
    /// Checks that were degraded.
    var degraded: UInt32 = 0
    /// Checks with a latency, and their sum in microseconds.
    var latencyCount: UInt32 = 0
    var latencySumMicros: Int64 = 0
    /// Whether the bin's last check failed (an outage then goes on into the next bins).
    var endsFailed = false

    mutating func merge(_ other: ChartBin) {
        endsFailed = other.endsFailed
        checks += other.checks
        failed += other.failed
        degraded += other.degraded
        latencyCount += other.latencyCount
        latencySumMicros += other.latencySumMicros
    }
}

/// An outage: from a failing sample after a sample that was not failing (or the service's
/// first sample in the window) to the next sample that is not failing.
struct Outage: Equatable {
    /// Its first failing sample.
    var start: Int64
    /// The first sample after it that was not failing; nil while it goes on.
    var end: Int64?
    /// Milliseconds from start to end (to the window's end while it goes on).
    var duration: Int64
}

/// Everything digest learns about one service, fed its samples in time order.
///
/// Status figures (checks by status, outages, partial outages, chart bins' failed and degraded
/// checks) count each sample's consensus, the monitor's status by the place rule at its time;
/// latency, speed and anomaly figures count every sample as it is, each place's measurement.
///
/// Memory is fixed per service: counters, a `LatencySketch`, the last 2N latencies for the
/// trend, and at most `ChartScale.maxBins` chart bins.
struct ServiceAccumulator {
    /// Checks by consensus status, indexed like `SampleStatus.allCases`.
    private(set) var statusCounts = [Int](repeating: 0, count: SampleStatus.allCases.count)
    /// Checks in the window.
    private(set) var checks = 0
    /// Checks up (or degraded) by the consensus that passed only on a retry (`attempts`, probe-http --confirm): flaky.
    private(set) var flakyChecks = 0
    /// Checks with a latency; their sum, least and most (microseconds).
    private(set) var latencyCount = 0
    private(set) var latencySumMicros: Int64 = 0
    private(set) var latencyMinMicros = Int64.max
    private(set) var latencyMaxMicros = Int64.min
    /// The 95th percentile structure.
    private(set) var sketch = LatencySketch()
    /// Checks with a speed, and their sum (thousandths of Mbit/s).
    private(set) var speedCount = 0
    private(set) var speedSumMilli: Int64 = 0
    /// The first and the last sample's time.
    private(set) var firstAt = Int64.max
    private(set) var lastAt = Int64.min
    /// The last sample's latency (`SampleRow.none` when it had none).
    private(set) var lastLatencyMicros = SampleRow.none
    /// Outages that began in the window, their total and the longest (ongoing ones count to the window's end).
    private(set) var outageCount = 0
    private(set) var outageTotal: Int64 = 0
    private(set) var longestOutage: Outage?
    /// The outage going on after the last sample, if any (its start).
    private(set) var openOutageStart: Int64?
    /// Checks that were partial outages (degraded by the consensus because fewer than a quorum of
    /// places failed), partial outages that began in the window and their total time (ongoing
    /// ones to the window's end).
    private(set) var partialChecks = 0
    private(set) var partialCount = 0
    private(set) var partialTotal: Int64 = 0
    /// The partial outage going on after the last sample, if any (its start).
    private(set) var openPartialStart: Int64?
    /// Anomaly episodes (detect-anomaly's): those that began in the window, and one that began
    /// before it and goes on into it.
    private(set) var anomalies = 0
    /// Chart bins, in time order, only those with checks.
    private(set) var bins: [ChartBin] = []
    /// The newest latencies, oldest first once `trendValues` is full (a ring).
    private var trendValues: [Int64] = []
    private var trendNext = 0
    private let trendCapacity: Int
    /// The place rule's sweep over the samples, and the quorum it judges with.
    private(set) var sweep = PlaceSweep()
    private let quorum: Quorum

    /// Creates an accumulator keeping `2 × trendSamples` latencies for the trend, judging places with `quorum`.
    init(trendSamples: Int, quorum: Quorum = .majority) {
        trendCapacity = max(2, 2 * trendSamples)
        self.quorum = quorum
    }

    /// Adds the next sample (in time order), judged by the place rule at its time; `placeKey`
    /// names its place (the agent, '' for local) the first time it is met. Returns true when an
    /// outage begins with it.
    @discardableResult
    mutating func add(_ row: SampleRow, binStep: Int64, placeKey: () -> String = { "" }) -> Bool {
        let judged = sweep.judge(row, key: placeKey, quorum: quorum)
        let consensus = judged.consensus == row.sampleStatus ? row.status : StatusIndex.of(judged.consensus)
        checks += 1
        statusCounts[Int(consensus)] += 1
        if row.attempts > 1, consensus == StatusIndex.up || consensus == StatusIndex.degraded { flakyChecks += 1 }
        if checks == 1 { firstAt = row.at }
        lastAt = row.at
        lastLatencyMicros = row.latencyMicros
        if row.latencyMicros != SampleRow.none {
            latencyCount += 1
            latencySumMicros += row.latencyMicros
            latencyMinMicros = min(latencyMinMicros, row.latencyMicros)
            latencyMaxMicros = max(latencyMaxMicros, row.latencyMicros)
            sketch.add(Double(row.latencyMicros) / 1000)
            if trendValues.count < trendCapacity {
                trendValues.append(row.latencyMicros)
            } else {
                trendValues[trendNext] = row.latencyMicros
                trendNext = (trendNext + 1) % trendCapacity
            }
        }
        if row.speedMilli != SampleRow.none {
            speedCount += 1
            speedSumMilli += row.speedMilli
        }
        if row.episode == AnomalyEpisodeState.onset.rawValue || (row.episode == AnomalyEpisodeState.ongoing.rawValue && checks == 1) {
            anomalies += 1
        }
        let failing = judged.consensus.isFailure
        var began = false
        if failing, openOutageStart == nil {
            openOutageStart = row.at
            outageCount += 1
            began = true
        } else if !failing, let start = openOutageStart {
            closeOutage(Outage(start: start, end: row.at, duration: row.at - start))
            openOutageStart = nil
        }
        // A partial outage: from a partial check after one that was not to the next that is not.
        if judged.partial {
            partialChecks += 1
            if openPartialStart == nil {
                openPartialStart = row.at
                partialCount += 1
            }
        } else if let start = openPartialStart {
            partialTotal += row.at - start
            openPartialStart = nil
        }
        // Chart bin.
        let index = floorDivide(row.at, binStep)
        if bins.last?.index != index { bins.append(ChartBin(index: index)) }
        let last = bins.count - 1
        bins[last].checks += 1
        if failing { bins[last].failed += 1 }
        bins[last].endsFailed = failing
        if consensus == StatusIndex.degraded { bins[last].degraded += 1 }
        if row.latencyMicros != SampleRow.none {
            bins[last].latencyCount += 1
            bins[last].latencySumMicros += row.latencyMicros
        }
        return began
    }

    private mutating func closeOutage(_ outage: Outage) {
        outageTotal += outage.duration
        if longestOutage == nil || outage.duration > longestOutage!.duration { longestOutage = outage }
    }

    /// Ends the window at `end`: an outage (or partial outage) still going on lasts until then.
    mutating func finish(windowEnd end: Int64) {
        if let start = openOutageStart {
            closeOutage(Outage(start: start, end: nil, duration: max(0, end - start)))
        }
        if let start = openPartialStart { partialTotal += max(0, end - start) }
    }

    /// Takes a sample from before the window as a vote for the place rule only: it is no check.
    mutating func vote(_ row: SampleRow, placeKey: () -> String) { sweep.vote(row, key: placeKey) }

    /// Re-bins the chart when the step grows `factor` times (steps divide each other, bins stay aligned).
    mutating func rebin(factor: Int64) {
        var merged: [ChartBin] = []
        merged.reserveCapacity(bins.count)
        for var bin in bins {
            bin.index = floorDivide(bin.index, factor)
            if merged.last?.index == bin.index {
                merged[merged.count - 1].merge(bin)
            } else {
                merged.append(bin)
            }
        }
        bins = merged
    }

    /// The newest latencies in time order (at most 2N).
    var trendLatencies: [Int64] {
        if trendValues.count < trendCapacity { return trendValues }
        return Array(trendValues[trendNext...] + trendValues[..<trendNext])
    }
}

/// Floor division for times before 1970 too.
@inline(__always)
func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
    let quotient = value / divisor
    return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
}

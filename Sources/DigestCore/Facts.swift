import VitalsKit

/// The trend of a service's latency over the day: the last quarter of the service's span
/// against its typical level; for a short history, the newest N latencies against the N before them.
struct Trend: Equatable {
    /// `increasing`, `decreasing` or `stable`.
    enum Label: String, Sendable { case increasing, decreasing, stable }
    /// The label.
    var label: Label
    /// The recent and the earlier (or typical) level, ms (nil with fewer than two latencies):
    /// over the day, the medians of the last quarter and of the whole span; for a short history,
    /// the means of the newer and the older half.
    var recentMs: Double?
    var earlierMs: Double?
    /// Latencies in each half (over the day: in the last quarter).
    var samples: Int

    /// The relative change that counts, and the least absolute change (ms).
    static let relativeThreshold = 0.20
    static let absoluteThresholdMs = 5.0

    /// Chart bins with latencies a span needs for the trend over the day, and the time it must cover.
    static let dayMinimumBins = 8
    static let dayMinimumSpanMs: Int64 = 3_600_000

    /// The trend over the day, from a service's chart bins (time order, `step` ms wide), or nil
    /// for a history too short (fewer than 8 bins with latencies, or under an hour from the
    /// first to the last of them). Each bin's level is its mean latency. The span runs from the
    /// first bin with latencies to the last; its last quarter (by time) is the recent level's,
    /// and the median of its bins' levels is compared with the median over the whole span, the
    /// typical level. Increasing when the recent level is at least 20% and 5 ms above the typical
    /// one, decreasing when at least 20% and 5 ms below it, stable otherwise. Medians, so one
    /// slow bin does not move the trend.
    static func overDay(_ bins: [ChartBin], step: Int64) -> Trend? {
        let levels = bins.filter { $0.latencyCount > 0 }
        guard levels.count >= dayMinimumBins, let first = levels.first?.index, let last = levels.last?.index,
            (last - first + 1) * step >= dayMinimumSpanMs
        else { return nil }
        func level(_ bin: ChartBin) -> Double { Double(bin.latencySumMicros) / 1000 / Double(bin.latencyCount) }
        let quarterStart = first + (last - first + 1) * 3 / 4
        let recentBins = levels.filter { $0.index >= quarterStart }
        let recent = median(recentBins.map(level))
        let typical = median(levels.map(level))
        let label: Label
        if recent >= typical * (1 + relativeThreshold) && recent - typical >= absoluteThresholdMs {
            label = .increasing
        } else if recent <= typical * (1 - relativeThreshold) && typical - recent >= absoluteThresholdMs {
            label = .decreasing
        } else {
            label = .stable
        }
        return Trend(
            label: label, recentMs: recent, earlierMs: typical,
            samples: recentBins.reduce(0) { $0 + Int($1.latencyCount) })
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// Compares the newest `n` latencies (µs, time order) with the `n` before them; with fewer
    /// than `2n`, the newer and the older half of what there is (the oldest left out when odd).
    /// Increasing when the newer mean is at least 20% and at least 5 ms above the older one,
    /// decreasing when at least 20% and 5 ms below it, stable otherwise.
    static func compute(_ latencies: [Int64], n: Int) -> Trend {
        let half = min(n, latencies.count / 2)
        guard half >= 1 else { return Trend(label: .stable, recentMs: nil, earlierMs: nil, samples: 0) }
        let recent = latencies.suffix(half).reduce(Int64(0), +)
        let earlier = latencies.dropLast(half).suffix(half).reduce(Int64(0), +)
        let floor = Int64(absoluteThresholdMs * 1000) * Int64(half)
        let label: Label
        if recent * 10 >= earlier * 12 && recent - earlier >= floor {
            label = .increasing
        } else if recent * 10 <= earlier * 8 && earlier - recent >= floor {
            label = .decreasing
        } else {
            label = .stable
        }
        return Trend(
            label: label, recentMs: Double(recent) / 1000 / Double(half),
            earlierMs: Double(earlier) / 1000 / Double(half), samples: half)
    }
}

/// One outage as the facts report it.
struct OutageFact: Equatable {
    /// The monitor and its name.
    var monitor: String
    var name: String
    /// When it began and ended (nil while it goes on), and how long it lasted.
    var start: Int64
    var end: Int64?
    var durationMs: Int64
}

/// One of a service's places as the facts report it: its newest sample's status and time.
struct PlaceFact: Equatable {
    /// The place: its agent, or "local".
    var place: String
    var status: SampleStatus
    var at: Int64
    /// Whether it voted in the service's status now (fresh, and not unknown).
    var fresh: Bool
}

/// The facts about one service over the window.
struct ServiceFacts: Equatable {
    var monitor: String
    var name: String
    /// The status now by the place rule, from each place's newest sample (with one place, the
    /// newest sample's), its reason and words; the newest check's time.
    var status: SampleStatus
    var lastAt: Int64
    var lastReason: String?
    var lastMessage: String?
    /// Checks, by their consensus status.
    var checks: Int
    var counts: [SampleStatus: Int]
    /// Share of checks that were up or degraded by the consensus, a partial outage not counted, percent.
    var uptimePercent: Double
    /// Latency figures, ms (nil without latencies).
    var latencyAvgMs: Double?
    var latencyLatestMs: Double?
    var latencyP95Ms: Double?
    var p95Exact: Bool
    var latencyMinMs: Double?
    var latencyMaxMs: Double?
    var latencyChecks: Int
    var trend: Trend
    /// Outages that began in the window, their total time, the longest, and whether one goes on.
    var outages: Int
    var outageMs: Int64
    var longestOutage: OutageFact?
    var ongoingOutage: Bool { outageSince != nil }
    /// When the outage going on at the end of the window began.
    var outageSince: Int64?
    /// detect-anomaly's episodes: begun in the window, or going on at its start.
    var anomalies: Int = 0
    /// Average speed over the checks that measured one (Mbit/s).
    var speedAvgMbps: Double?
    var speedChecks: Int
    /// The chart: per bin of the digest's axis, mean latency (nil when none), checks, failed, degraded.
    var seriesLatencyMs: [Double?]
    var seriesChecks: [Int]
    var seriesFailed: [Int]
    var seriesDegraded: [Int]
    /// Per bin, whether an outage covers part of it (from a failed check to the next check that did not fail).
    var seriesOutage: [Bool]
    /// Each place's newest sample, by name, when the service was seen from more than one place (else empty).
    var places: [PlaceFact] = []
    /// Checks that were partial outages; partial outages that began in the window, their total time,
    /// and when the one going on at the end began.
    var partialChecks = 0
    var partialOutages = 0
    var partialMs: Int64 = 0
    var partialSince: Int64?
    /// The places' words at the newest partial check ("down from tokyo; up from paris").
    var partialWords: String?
    /// Whether the status now is a partial outage (its words are `lastMessage`).
    var partialNow = false
    /// Checks that passed only on a retry (flaky): counted up, and here.
    var flakyChecks = 0

    /// Checks that were up or degraded, a partial outage not counted.
    var available: Int { (counts[.up] ?? 0) + (counts[.degraded] ?? 0) - partialChecks }
    /// Whether the service was seen from more than one place (the facts then name them).
    var hasPlaces: Bool { places.count > 1 }
    /// Whether anything at all was wrong in the window.
    var hadTrouble: Bool { status != .up || outages > 0 || (counts[.up] ?? 0) < checks }
}

/// A correlation bucket where two or more services began failing.
struct CorrelatedFailure: Equatable {
    /// The bucket's start and end.
    var start: Int64
    var end: Int64
    /// The services, by when they began failing in the bucket, then by monitor id.
    var monitors: [String]
    var names: [String]
}

/// What the services beyond `--max-services` add up to.
struct GroupSummary: Equatable {
    var services: Int
    var byStatus: [SampleStatus: Int]
    var checks: Int
    var available: Int
    var outages: Int
    var outageMs: Int64
    var anomalies: Int
    /// Partial outages and their total time.
    var partialOutages: Int
    var partialMs: Int64
    /// Whether any of the services was seen from more than one place.
    var hasPlaces: Bool
    /// Share of checks up or degraded, a partial outage not counted, percent (nil without checks).
    var uptimePercent: Double? { checks > 0 ? Double(available) * 100 / Double(checks) : nil }

    /// Sums up `services`.
    init(_ services: ArraySlice<ServiceFacts>) {
        self.services = services.count
        var byStatus: [SampleStatus: Int] = [:]
        for service in services { byStatus[service.status, default: 0] += 1 }
        self.byStatus = byStatus
        checks = services.reduce(0) { $0 + $1.checks }
        available = services.reduce(0) { $0 + $1.available }
        outages = services.reduce(0) { $0 + $1.outages }
        outageMs = services.reduce(0) { $0 + $1.outageMs }
        anomalies = services.reduce(0) { $0 + $1.anomalies }
        partialOutages = services.reduce(0) { $0 + $1.partialOutages }
        partialMs = services.reduce(0) { $0 + $1.partialMs }
        hasPlaces = services.contains { $0.hasPlaces }
    }
}

/// The digest's facts: what `--format json` writes and every other format is made from.
struct DigestFacts: Equatable {
    var windowMs: Int64
    var bucketMs: Int64
    var trendSamples: Int
    var windowStart: Int64?
    var windowEnd: Int64?
    /// `--quorum`, and the one place read (`--agent`), nil for all.
    var quorum: Quorum = .majority
    var agent: String?
    var samplesRead: Int
    var samplesInWindow: Int
    /// Every service with a sample in the window, worst first.
    var services: [ServiceFacts]
    /// How many of them are shown (`--max-services`).
    var shown: Int
    var correlated: [CorrelatedFailure]
    /// The worst service (nil when none had any trouble) and the longest outage.
    var worst: ServiceFacts?
    var longestOutage: OutageFact?
    /// The chart axis: first bin's start, bin width, number of bins.
    var seriesStart: Int64?
    var seriesStepMs: Int64
    var seriesBins: Int

    /// The services shown, and a summary of the rest (nil when none are hidden).
    var shownServices: ArraySlice<ServiceFacts> { services.prefix(shown) }
    var hidden: GroupSummary? { shown < services.count ? GroupSummary(services[shown...]) : nil }
    /// Every service together.
    var overall: GroupSummary { GroupSummary(services[...]) }
    /// Whether there was no sample in the window.
    var isEmpty: Bool { services.isEmpty }

    /// The worst-first order: current status (error, down, degraded, unknown, up), then more
    /// outages, more outage time, lower uptime, more checks not up, then monitor id.
    static func worstFirst(_ a: ServiceFacts, _ b: ServiceFacts) -> Bool {
        if a.status.severity != b.status.severity { return a.status.severity > b.status.severity }
        if a.outages != b.outages { return a.outages > b.outages }
        if a.outageMs != b.outageMs { return a.outageMs > b.outageMs }
        // Compare shares exactly: a.available/a.checks < b.available/b.checks.
        let uptimeA = a.available * b.checks
        let uptimeB = b.available * a.checks
        if uptimeA != uptimeB { return uptimeA < uptimeB }
        let notUpA = (a.checks - (a.counts[.up] ?? 0)) * b.checks
        let notUpB = (b.checks - (b.counts[.up] ?? 0)) * a.checks
        if notUpA != notUpB { return notUpA > notUpB }
        return Array(a.monitor.utf8).lexicographicallyPrecedes(Array(b.monitor.utf8))
    }

    /// Builds the facts from an aggregate; each service's status now by the place rule with `quorum`.
    static func build(
        _ aggregate: Aggregate, window: Int64, bucket: Int64, trendSamples: Int, maxServices: Int, quorum: Quorum = .majority,
        agent: String? = nil
    ) -> DigestFacts {
        let table = aggregate.services
        let bins = aggregate.scale.binRange
        let step = aggregate.scale.step
        var services: [ServiceFacts] = []
        for (index, slot) in aggregate.accumulators.enumerated() {
            guard let acc = slot, acc.checks > 0 else { continue }
            var counts: [SampleStatus: Int] = [:]
            for (position, status) in SampleStatus.allCases.enumerated() where acc.statusCounts[position] > 0 {
                counts[status] = acc.statusCounts[position]
            }
            let entry = table.entries[index]
            let ms = { (micros: Int64) -> Double in Double(micros) / 1000 }
            let hasLatency = acc.latencyCount > 0
            var latency: [Double?] = []
            var checks: [Int] = []
            var failed: [Int] = []
            var degraded: [Int] = []
            var outage: [Bool] = []
            if let bins {
                let width = Int(bins.upperBound - bins.lowerBound + 1)
                latency = Array(repeating: nil, count: width)
                checks = Array(repeating: 0, count: width)
                failed = checks
                degraded = checks
                outage = Array(repeating: false, count: width)
                var carried = false
                var next = 0
                for slot in 0..<width {
                    while next < acc.bins.count && acc.bins[next].index - bins.lowerBound < Int64(slot) { next += 1 }
                    if next < acc.bins.count && acc.bins[next].index - bins.lowerBound == Int64(slot) {
                        outage[slot] = acc.bins[next].failed > 0 || carried
                        carried = acc.bins[next].endsFailed
                    } else {
                        outage[slot] = carried
                    }
                }
                for bin in acc.bins {
                    let slot = Int(bin.index - bins.lowerBound)
                    guard slot >= 0 && slot < width else { continue }
                    if bin.latencyCount > 0 { latency[slot] = Double(bin.latencySumMicros) / 1000 / Double(bin.latencyCount) }
                    checks[slot] = Int(bin.checks)
                    failed[slot] = Int(bin.failed)
                    degraded[slot] = Int(bin.degraded)
                }
            }
            let monitor = table.monitor(index)
            let name = table.name(index)
            let verdict = entry.places.verdict(intervalMs: acc.sweep.intervalMs, quorum: quorum)
            var places: [PlaceFact] = []
            if entry.places.places.count > 1 {
                let voted = Set(verdict.fresh.map(\.name))
                places = entry.places.places.map {
                    PlaceFact(place: $0.name, status: $0.latestStatus, at: $0.latestAt, fresh: voted.contains($0.name))
                }
                .sorted { $0.place.utf8.lexicographicallyPrecedes($1.place.utf8) }
            }
            let available = acc.statusCounts[Int(StatusIndex.up)] + acc.statusCounts[Int(StatusIndex.degraded)] - acc.partialChecks
            var facts = ServiceFacts(
                monitor: monitor, name: name,
                status: verdict.status,
                lastAt: acc.lastAt,
                lastReason: verdict.reason,
                lastMessage: verdict.message,
                checks: acc.checks, counts: counts,
                uptimePercent: Double(available) * 100 / Double(acc.checks),
                latencyAvgMs: hasLatency ? ms(acc.latencySumMicros) / Double(acc.latencyCount) : nil,
                latencyLatestMs: acc.lastLatencyMicros == SampleRow.none ? nil : ms(acc.lastLatencyMicros),
                latencyP95Ms: acc.sketch.percentile(0.95),
                p95Exact: acc.sketch.isExact,
                latencyMinMs: hasLatency ? ms(acc.latencyMinMicros) : nil,
                latencyMaxMs: hasLatency ? ms(acc.latencyMaxMicros) : nil,
                latencyChecks: acc.latencyCount,
                trend: Trend.overDay(acc.bins, step: step) ?? Trend.compute(acc.trendLatencies, n: trendSamples),
                outages: acc.outageCount, outageMs: acc.outageTotal,
                longestOutage: acc.longestOutage.map {
                    OutageFact(monitor: monitor, name: name, start: $0.start, end: $0.end, durationMs: $0.duration)
                },
                outageSince: acc.openOutageStart,
                anomalies: acc.anomalies,
                speedAvgMbps: acc.speedCount > 0 ? Double(acc.speedSumMilli) / 1000 / Double(acc.speedCount) : nil,
                speedChecks: acc.speedCount,
                seriesLatencyMs: latency, seriesChecks: checks, seriesFailed: failed, seriesDegraded: degraded, seriesOutage: outage)
            facts.places = places
            facts.partialChecks = acc.partialChecks
            facts.partialOutages = acc.partialCount
            facts.partialMs = acc.partialTotal
            facts.partialSince = acc.openPartialStart
            facts.partialWords = acc.partialChecks > 0 ? acc.sweep.partialWords : nil
            facts.partialNow = verdict.isPartial
            facts.flakyChecks = acc.flakyChecks
            services.append(facts)
        }
        services.sort(by: worstFirst)
        // Correlated failures: buckets where two or more services began failing.
        var correlated: [CorrelatedFailure] = []
        for (index, starts) in aggregate.correlation.starts where starts.count >= 2 {
            let ordered = starts.sorted { a, b in
                a.at != b.at
                    ? a.at < b.at
                    : table.entries[Int(a.service)].monitor.lexicographicallyPrecedes(table.entries[Int(b.service)].monitor)
            }
            correlated.append(
                CorrelatedFailure(
                    start: index * bucket, end: (index + 1) * bucket,
                    monitors: ordered.map { table.monitor(Int($0.service)) },
                    names: ordered.map { table.name(Int($0.service)) }))
        }
        correlated.sort { $0.start < $1.start }
        // The longest outage: longest, then earliest, then first in worst-first order.
        var longest: OutageFact?
        for service in services {
            guard let outage = service.longestOutage else { continue }
            if longest == nil || outage.durationMs > longest!.durationMs
                || (outage.durationMs == longest!.durationMs && outage.start < longest!.start)
            {
                longest = outage
            }
        }
        let shown = maxServices == 0 ? services.count : min(maxServices, services.count)
        return DigestFacts(
            windowMs: window, bucketMs: bucket, trendSamples: trendSamples,
            windowStart: aggregate.windowStart, windowEnd: aggregate.windowEnd, quorum: quorum, agent: agent,
            samplesRead: aggregate.samplesRead, samplesInWindow: aggregate.samplesInWindow,
            services: services, shown: shown, correlated: correlated,
            worst: services.first.flatMap { $0.hadTrouble ? $0 : nil },
            longestOutage: longest,
            seriesStart: bins.map { $0.lowerBound * step }, seriesStepMs: step,
            seriesBins: bins.map { Int($0.upperBound - $0.lowerBound + 1) } ?? 0)
    }
}

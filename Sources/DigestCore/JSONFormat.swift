import VitalsKit

/// `--format json`: the facts as one `digest` record (vitals-records(7), DIGEST).
enum JSONFormat {
    /// The record, one line without its newline.
    static func render(_ facts: DigestFacts) -> String {
        var fields: [JSONField] = [
            JSONField("type", .string("digest")),
            JSONField("window_start", time(facts.windowStart)),
            JSONField("window_end", time(facts.windowEnd)),
            JSONField("window_ms", int(facts.windowMs)),
            JSONField("bucket_ms", int(facts.bucketMs)),
            JSONField("trend_samples", int(facts.trendSamples)),
        ]
        // The place rule's settings, when they mattered: a service seen from several places, or --agent.
        if facts.overall.hasPlaces { fields.append(JSONField("quorum", .string(facts.quorum.description))) }
        if let agent = facts.agent { fields.append(JSONField("agent", .string(agent))) }
        fields += [
            JSONField("samples_read", int(facts.samplesRead)),
            JSONField("samples_in_window", int(facts.samplesInWindow)),
            JSONField("services_total", int(facts.services.count)),
            JSONField("services_shown", int(facts.shown)),
        ]
        fields.append(JSONField("services", .array(facts.shownServices.map(service))))
        fields.append(JSONField("hidden", facts.hidden.map { group($0) } ?? .null))
        fields.append(
            JSONField(
                "correlated",
                .array(
                    facts.correlated.map { failure in
                        .object(
                            JSONObject([
                                JSONField("bucket_start_at", time(failure.start)),
                                JSONField("bucket_end_at", time(failure.end)),
                                JSONField("monitors", .array(failure.monitors.map { .string($0) })),
                                JSONField("names", .array(failure.names.map { .string($0) })),
                            ]))
                    })))
        var overall = group(facts.overall).objectValue!
        overall["worst_service"] =
            facts.worst.map { worst in
                .object(
                    JSONObject([
                        JSONField("monitor", .string(worst.monitor)),
                        JSONField("name", .string(worst.name)),
                        JSONField("status", .string(worst.status.rawValue)),
                        JSONField("uptime_percent", fixed(worst.uptimePercent)),
                        JSONField("outages", int(worst.outages)),
                    ]))
            } ?? .null
        overall["longest_outage"] = facts.longestOutage.map { outage($0, withMonitor: true) } ?? .null
        fields.append(JSONField("overall", .object(overall)))
        fields.append(JSONField("series_start_at", time(facts.seriesStart)))
        fields.append(JSONField("series_step_ms", int(facts.seriesStepMs)))
        fields.append(JSONField("series_bins", int(facts.seriesBins)))
        return JSONValue.object(JSONObject(fields)).jsonText
    }

    /// One service's facts; a service seen from several places adds its places and partial outages.
    static func service(_ s: ServiceFacts) -> JSONValue {
        let facts = JSONValue.object(
            JSONObject([
                JSONField("monitor", .string(s.monitor)),
                JSONField("name", .string(s.name)),
                JSONField("status", .string(s.status.rawValue)),
                JSONField("last_at", time(s.lastAt)),
                JSONField("last_reason", s.lastReason.map { .string($0) } ?? .null),
                JSONField("last_message", s.lastMessage.map { .string($0) } ?? .null),
                JSONField("checks", int(s.checks)),
                JSONField("by_status", byStatus(s.counts)),
                JSONField("uptime_percent", fixed(s.uptimePercent)),
                JSONField("latency_avg_ms", fixed(s.latencyAvgMs)),
                JSONField("latency_latest_ms", fixed(s.latencyLatestMs)),
                JSONField("latency_p95_ms", fixed(s.latencyP95Ms)),
                JSONField("latency_p95_exact", .bool(s.p95Exact)),
                JSONField("latency_min_ms", fixed(s.latencyMinMs)),
                JSONField("latency_max_ms", fixed(s.latencyMaxMs)),
                JSONField("latency_checks", int(s.latencyChecks)),
                JSONField("trend", .string(s.trend.label.rawValue)),
                JSONField("trend_recent_ms", fixed(s.trend.recentMs)),
                JSONField("trend_earlier_ms", fixed(s.trend.earlierMs)),
                JSONField("trend_samples", int(s.trend.samples)),
                JSONField("outages", int(s.outages)),
                JSONField("outage_ms", int(s.outageMs)),
                JSONField("outage_ongoing", .bool(s.ongoingOutage)),
                JSONField("outage_since", time(s.outageSince)),
                JSONField("longest_outage", s.longestOutage.map { outage($0, withMonitor: false) } ?? .null),
                JSONField("anomalies", int(s.anomalies)),
                JSONField("speed_avg_mbps", fixed(s.speedAvgMbps)),
                JSONField("speed_checks", int(s.speedChecks)),
                JSONField(
                    "series",
                    .object(
                        JSONObject([
                            JSONField("latency_ms", .array(s.seriesLatencyMs.map { fixed($0) })),
                            JSONField("checks", .array(s.seriesChecks.map { int($0) })),
                            JSONField("failed", .array(s.seriesFailed.map { int($0) })),
                            JSONField("degraded", .array(s.seriesDegraded.map { int($0) })),
                            JSONField("outage", .array(s.seriesOutage.map { .bool($0) })),
                        ]))),
            ]))
        guard s.hasPlaces || s.flakyChecks > 0, var fields = facts.objectValue?.fields else { return facts }
        if s.flakyChecks > 0 {
            // After the checks by status: those that passed only on a retry.
            fields.insert(JSONField("flaky_checks", int(s.flakyChecks)), at: fields.firstIndex { $0.key == "checks" }! + 1)
        }
        guard s.hasPlaces else { return .object(JSONObject(fields)) }
        // Before the checks: each place's newest sample; after the outages: the partial ones.
        let places = s.places.map { place in
            JSONValue.object(
                JSONObject([
                    JSONField("place", .string(place.place)),
                    JSONField("status", .string(place.status.rawValue)),
                    JSONField("at", time(place.at)),
                    JSONField("fresh", .bool(place.fresh)),
                ]))
        }
        fields.insert(JSONField("places", .array(places)), at: fields.firstIndex { $0.key == "checks" }!)
        let partial = [
            JSONField("partial_checks", int(s.partialChecks)),
            JSONField("partial_outages", int(s.partialOutages)),
            JSONField("partial_ms", int(s.partialMs)),
            JSONField("partial_ongoing", .bool(s.partialSince != nil)),
            JSONField("partial_since", time(s.partialSince)),
            JSONField("partial_words", s.partialWords.map { .string($0) } ?? .null),
        ]
        fields.insert(contentsOf: partial, at: fields.firstIndex { $0.key == "anomalies" }!)
        return .object(JSONObject(fields))
    }

    /// A group of services summed up; with a service seen from several places, its partial outages too.
    static func group(_ g: GroupSummary) -> JSONValue {
        let summary = JSONValue.object(
            JSONObject([
                JSONField("services", int(g.services)),
                JSONField("by_status", byStatus(g.byStatus)),
                JSONField("checks", int(g.checks)),
                JSONField("uptime_percent", fixed(g.uptimePercent)),
                JSONField("outages", int(g.outages)),
                JSONField("outage_ms", int(g.outageMs)),
                JSONField("anomalies", int(g.anomalies)),
            ]))
        guard g.hasPlaces, let fields = summary.objectValue?.fields else { return summary }
        return .object(
            JSONObject(fields + [JSONField("partial_outages", int(g.partialOutages)), JSONField("partial_ms", int(g.partialMs))]))
    }

    static func outage(_ o: OutageFact, withMonitor: Bool) -> JSONValue {
        var fields: [JSONField] = []
        if withMonitor {
            fields.append(JSONField("monitor", .string(o.monitor)))
            fields.append(JSONField("name", .string(o.name)))
        }
        fields.append(JSONField("start_at", time(o.start)))
        fields.append(JSONField("end_at", time(o.end)))
        fields.append(JSONField("duration_ms", int(o.durationMs)))
        fields.append(JSONField("ongoing", .bool(o.end == nil)))
        return .object(JSONObject(fields))
    }

    static func byStatus(_ counts: [SampleStatus: Int]) -> JSONValue {
        .object(JSONObject(SampleStatus.allCases.map { JSONField($0.rawValue, int(counts[$0] ?? 0)) }))
    }

    static func time(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null }
    static func int(_ value: Int) -> JSONValue { .number(String(value)) }
    static func int(_ value: Int64) -> JSONValue { .number(String(value)) }
    static func fixed(_ value: Double?, decimals: Int = 3) -> JSONValue {
        guard let value else { return .null }
        var bytes: [UInt8] = []
        JSONText.appendFixed(value, decimals: decimals, to: &bytes)
        return .number(String(decoding: bytes, as: UTF8.self))
    }
}

import VitalsKit

/// `--format text`: a short digest in plain sentences, written from the facts alone.
///
/// Deterministic: the same facts give the same words. Every number in it is a fact, rounded
/// for reading (latencies to whole ms from 10 ms, percentages to one decimal, durations to
/// minutes from a minute).
enum DigestText {
    /// The digest, lines ending in newlines.
    static func render(_ facts: DigestFacts, zone: Zone) -> String {
        let words = Words(zone: zone, reference: facts.windowEnd)
        guard !facts.isEmpty else { return noData(facts, words) + "\n" }
        var lines: [String] = []
        let overall = facts.overall
        lines.append(
            "Digest of \(words.window(facts)): \(Words.count(overall.services, "service")), "
                + "\(Words.count(overall.checks, "check")), \(Words.percent(overall.uptimePercent ?? 0)) up.")
        lines.append(statusSentence(facts, words))
        if let correlated = correlationSentence(facts, words) { lines.append(correlated) }
        lines.append(trendSentence(facts))
        if let speed = speedSentence(facts) { lines.append(speed) }
        if let longest = facts.longestOutage,
            overall.outages > 1 || !facts.shownServices.contains(where: { $0.monitor == longest.monitor })
        {
            lines.append(
                "The longest outage: \(longest.name), \(Words.outage(longest.durationMs)) from \(words.time(longest.start))"
                    + (longest.end == nil ? ", still going on." : "."))
        }
        if let flaky = FlakyWords.sentence(facts) { lines.append(flaky) }
        if let hidden = facts.hidden {
            var sentence =
                "Not listed: \(Words.grouped(hidden.services)) more "
                + (hidden.services == 1 ? "service" : "services") + " (\(Words.statusCounts(hidden.byStatus))"
            if hidden.outages > 0 { sentence += "; \(Words.count(hidden.outages, "outage")), \(Words.outage(hidden.outageMs)) in total" }
            if hidden.partialOutages > 0 {
                sentence += "; \(Words.count(hidden.partialOutages, "partial outage")), \(Words.outage(hidden.partialMs)) in total"
            }
            lines.append(sentence + ").")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// "No data: ...": what the input held when no sample falls in the window.
    static func noData(_ facts: DigestFacts, _ words: Words) -> String {
        if facts.samplesRead == 0 {
            return "No data: the input held no samples" + (facts.agent.map { " from \($0)" } ?? "") + ", so there is nothing to summarize."
        }
        return "No data for \(words.window(facts)): none of the \(Words.count(facts.samplesRead, "sample")) read "
            + "falls in it."
    }

    /// Services described one by one; the rest that had trouble are named in one line.
    static let detailed = 5

    /// "All 5 services were up except checkout, which ...", or one sentence per troubled service.
    static func statusSentence(_ facts: DigestFacts, _ words: Words) -> String {
        let shown = Array(facts.shownServices)
        let troubled = shown.filter(\.hadTrouble)
        let scope = facts.hidden == nil ? "" : " listed"
        let all = shown.count == 1 ? "The\(scope) service" : "All \(Words.grouped(shown.count))\(scope) services"
        if troubled.isEmpty {
            return "\(all) \(shown.count == 1 ? "was" : "were") up at every check, with no outages."
        }
        if troubled.count == 1 && shown.count > 1 {
            return "\(all) were up except \(troubled[0].name), which " + clause(troubled[0], words) + "."
        }
        var sentences = [
            troubled.count == shown.count
                ? "\(all) had trouble."
                : "\(Words.grouped(troubled.count)) of the \(Words.grouped(shown.count))\(scope) services had trouble."
        ]
        for service in troubled.prefix(detailed) { sentences.append("\(service.name) " + clause(service, words) + ".") }
        if troubled.count > detailed {
            let rest = troubled.dropFirst(detailed)
            sentences.append("Also: " + names(rest.map(\.name), limit: 4) + ".")
        }
        return sentences.joined(separator: " ")
    }

    /// `a, b, c and 4 more`.
    static func names(_ items: [String], limit: Int) -> String {
        if items.count <= limit { return Words.list(items) }
        return items.prefix(limit).joined(separator: ", ") + " and \(Words.grouped(items.count - limit)) more"
    }

    /// What went wrong with one service: "was down twice for 15m in total (33.3% up) and has been
    /// failing since 10:20 (Request timeout after 5s)"; a service seen from several places adds its
    /// partial outages: "has been partly unreachable since 10:00 (down from tokyo; up from paris)".
    static func clause(_ s: ServiceFacts, _ words: Words) -> String {
        var parts: [String] = []
        let message = s.lastMessage.map { " (\($0))" } ?? ""
        let failing = s.status == .error ? "failing" : "down"
        let uptime = Words.percent(s.uptimePercent) + " up"
        if s.outages > 0 {
            if let since = s.outageSince, s.outages == 1 {
                guard s.partialOutages > 0 else {
                    return "has been \(failing) since \(words.time(since)) (" + uptime + (s.lastMessage.map { "; " + $0 } ?? "") + ")"
                }
                parts.append(contentsOf: partialClause(s, words, uptime: uptime))
                parts.append("has been \(failing) since \(words.time(since))" + message)
                return Words.list(parts)
            }
            parts.append(
                s.outages == 1
                    ? "was down once for \(Words.outage(s.outageMs)) (\(uptime))"
                    : "was down \(Words.times(s.outages)) for \(Words.outage(s.outageMs)) in total (\(uptime))")
            if let since = s.outageSince {
                if s.partialOutages > 0 { parts.append(contentsOf: partialClause(s, words, uptime: nil)) }
                parts.append("has been \(failing) again since \(words.time(since))" + message)
                return Words.list(parts)
            }
            if s.partialOutages > 0 { parts.append(contentsOf: partialClause(s, words, uptime: nil)) }
        } else if s.partialOutages > 0 {
            parts.append(contentsOf: partialClause(s, words, uptime: uptime))
        } else if s.anomalies > 0 {
            parts.append(
                "had \(Words.count(s.anomalies, "latency anomaly", "latency anomalies")) (degraded at "
                    + "\(Words.grouped(s.counts[.degraded] ?? 0)) of \(Words.count(s.checks, "check")))")
        } else if let degraded = s.counts[.degraded], degraded > 0 {
            parts.append("was degraded at \(Words.grouped(degraded)) of \(Words.count(s.checks, "check"))")
        } else if let unknown = s.counts[.unknown], unknown > 0 {
            parts.append("had no known status at \(Words.grouped(unknown)) of \(Words.count(s.checks, "check"))")
        }
        // A partial outage going on says the status now already.
        if s.partialSince != nil { return Words.list(parts) }
        switch s.status {
        case .down, .error: parts.append("is \(failing) now" + message)
        case .degraded: parts.append((s.partialNow ? "is partly unreachable now" : "is degraded now") + message)
        case .unknown: parts.append("has no known status now")
        case .up: if parts.isEmpty { parts.append("is up now") }
        }
        return Words.list(parts)
    }

    /// A service's partial outages (fewer than a quorum of its places failing), with the places'
    /// words at the newest partial check and the uptime when not said yet: "was partly unreachable
    /// once for 5m (58.3% up; down from tokyo; up from paris)", "has been partly unreachable since
    /// 10:00 (down from tokyo; up from paris)".
    static func partialClause(_ s: ServiceFacts, _ words: Words, uptime: String?) -> [String] {
        let places = s.partialWords ?? ""
        let both = "(" + (uptime.map { $0 + "; " } ?? "") + places + ")"
        guard let since = s.partialSince else {
            return [
                s.partialOutages == 1
                    ? "was partly unreachable once for \(Words.outage(s.partialMs)) " + both
                    : "was partly unreachable \(Words.times(s.partialOutages)) for \(Words.outage(s.partialMs)) in total " + both
            ]
        }
        if s.partialOutages == 1 { return ["has been partly unreachable since \(words.time(since)) " + both] }
        return [
            "was partly unreachable \(Words.times(s.partialOutages)) for \(Words.outage(s.partialMs)) in total"
                + (uptime.map { " (\($0))" } ?? ""),
            "has been partly unreachable again since \(words.time(since)) (\(places))",
        ]
    }

    /// "Failed together (...): checkout and login at 03:15."
    static func correlationSentence(_ facts: DigestFacts, _ words: Words) -> String? {
        guard !facts.correlated.isEmpty else { return nil }
        let limit = 3
        var items = facts.correlated.prefix(limit).map { names($0.names, limit: 4) + " between " + words.bucket($0) }
        if facts.correlated.count > limit { items.append("and \(Words.times(facts.correlated.count - limit)) more") }
        return "Failed together (outages beginning in the same \(Words.unit(facts.bucketMs))): "
            + items.joined(separator: "; ") + "."
    }

    /// "Latency rose for search (from 120 ms to 340 ms); the others were stable."
    static func trendSentence(_ facts: DigestFacts) -> String {
        let shown = facts.shownServices.filter { $0.latencyChecks > 0 }
        guard !shown.isEmpty else { return "No latency was measured." }
        func describe(_ s: ServiceFacts) -> String {
            "\(s.name) (from \(Words.latency(s.trend.earlierMs ?? 0)) to \(Words.latency(s.trend.recentMs ?? 0)))"
        }
        let rising = shown.filter { $0.trend.label == .increasing }
        let falling = shown.filter { $0.trend.label == .decreasing }
        if rising.isEmpty && falling.isEmpty {
            return shown.count == 1
                ? "Latency was stable (\(Words.latency(shown[0].latencyAvgMs ?? 0)) on average)."
                : "Latency was stable for every service."
        }
        var parts: [String] = []
        if !rising.isEmpty { parts.append("rose for " + Words.list(rising.map(describe))) }
        if !falling.isEmpty { parts.append("fell for " + Words.list(falling.map(describe))) }
        let stable = shown.count - rising.count - falling.count
        let rest = stable == 0 ? "" : stable == 1 ? "; it was stable for the other" : "; it was stable for the others"
        return "Latency " + Words.list(parts) + rest + "."
    }

    /// "Average download speed: home 93.2 Mbit/s."
    static func speedSentence(_ facts: DigestFacts) -> String? {
        let measured = facts.shownServices.filter { $0.speedAvgMbps != nil }
        guard !measured.isEmpty else { return nil }
        return "Average download speed: " + Words.list(measured.map { "\($0.name) \(Words.speed($0.speedAvgMbps!))" }) + "."
    }
}

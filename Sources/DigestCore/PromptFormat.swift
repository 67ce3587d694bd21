import VitalsKit

/// `--format prompt`: what isitup gives its language model, for any model: an instruction,
/// one line per service (status, uptime, average and latest latency, trend, outages), the
/// summary of the services not listed, and the correlated failures.
enum PromptFormat {
    /// The prompt, lines ending in newlines.
    static func render(_ facts: DigestFacts, zone: Zone) -> String {
        let words = Words(zone: zone, reference: facts.windowEnd)
        var lines = [
            "Write a short daily digest of the health of these services for the people who run them:",
            "two to four plain sentences, the most important first. Use only the facts below;",
            "do not invent numbers, causes or services.",
            "",
            "Window: \(words.window(facts)).",
        ]
        if facts.isEmpty {
            lines.append("No samples fall in the window (\(Words.count(facts.samplesRead, "sample")) read).")
            return lines.joined(separator: "\n") + "\n"
        }
        let overall = facts.overall
        lines.append(
            "Overall: \(Words.count(overall.services, "service")), \(Words.count(overall.checks, "check")), "
                + "\(Words.percent(overall.uptimePercent ?? 0)) up; now \(Words.statusCounts(overall.byStatus)).")
        lines.append("")
        lines.append("Services (worst first):")
        for s in facts.shownServices {
            var line = "- \(s.name): status \(s.status.rawValue)"
            if s.partialNow { line += " (partial: \(s.lastMessage ?? ""))" }
            line += "; uptime \(Words.percent(s.uptimePercent))"
            line += "; average latency " + (s.latencyAvgMs.map(Words.latency) ?? "none")
            line += "; latest latency " + (s.latencyLatestMs.map(Words.latency) ?? "none")
            line += "; trend \(s.trend.label.rawValue)"
            line += "; outages \(s.outages)" + (s.outages > 0 ? " (\(Words.outage(s.outageMs)) in total)" : "")
            if s.partialOutages > 0 {
                line += "; partial outages \(s.partialOutages) (\(Words.outage(s.partialMs)) in total; \(s.partialWords ?? ""))"
            }
            if let speed = s.speedAvgMbps { line += "; average speed \(Words.speed(speed))" }
            lines.append(line)
        }
        if let hidden = facts.hidden {
            lines.append(
                "- \(Words.grouped(hidden.services)) more services not listed: \(Words.statusCounts(hidden.byStatus)); "
                    + "outages \(hidden.outages)" + (hidden.partialOutages > 0 ? "; partial outages \(hidden.partialOutages)" : ""))
        }
        lines.append("")
        lines.append("Correlated failures (services that began failing in the same \(Words.unit(facts.bucketMs))):")
        if facts.correlated.isEmpty {
            lines.append("- none")
        } else {
            for failure in facts.correlated { lines.append("- \(words.bucketRange(failure)): " + failure.names.joined(separator: ", ")) }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

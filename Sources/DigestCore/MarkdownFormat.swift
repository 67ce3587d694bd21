import VitalsKit

/// `--format markdown`: the digest for chat and issue bodies: the plain-text summary, a table
/// of the services, the correlated failures and the overall figures.
enum MarkdownFormat {
    /// The document, lines ending in newlines.
    static func render(_ facts: DigestFacts, zone: Zone, summary: String) -> String {
        let words = Words(zone: zone, reference: facts.windowEnd)
        var lines = ["# Service digest: \(escape(words.window(facts)))", ""]
        lines.append(contentsOf: summary.split(separator: "\n").map { escape(String($0)) })
        guard !facts.isEmpty else { return lines.joined(separator: "\n") + "\n" }
        lines.append("")
        lines.append("| " + (["Service", "Now"] + Words.tableTitles).joined(separator: " | ") + " |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
        for s in facts.shownServices {
            let monitor = s.monitor.replacingOccurrences(of: "`", with: "'")
            let name = escape(s.name) + (s.name == s.monitor ? "" : " (`" + monitor + "`)")
            let now = s.status == .up ? "up" : "**" + s.status.rawValue + "**"
            let cells = [name, now] + Words.tableCells(s)
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        if let hidden = facts.hidden {
            lines.append("")
            lines.append(
                "_and \(Words.grouped(hidden.services)) more services: \(Words.statusCounts(hidden.byStatus)); "
                    + "\(Words.count(hidden.outages, "outage"))._")
        }
        if !facts.correlated.isEmpty {
            lines.append("")
            lines.append("## Failed together")
            lines.append("")
            for failure in facts.correlated {
                lines.append("- \(words.bucketRange(failure)): " + failure.names.map(escape).joined(separator: ", "))
            }
        }
        let overall = facts.overall
        lines.append("")
        lines.append("## Overall")
        lines.append("")
        lines.append("- Services: \(Words.grouped(overall.services)) (\(Words.statusCounts(overall.byStatus)))")
        lines.append("- Checks: \(Words.grouped(overall.checks)), \(Words.percent(overall.uptimePercent ?? 0)) up")
        lines.append(
            "- Outages: \(Words.grouped(overall.outages))" + (overall.outages > 0 ? ", \(Words.outage(overall.outageMs)) in total" : ""))
        if overall.hasPlaces {
            lines.append(
                "- Partial outages: \(Words.grouped(overall.partialOutages))"
                    + (overall.partialOutages > 0 ? ", \(Words.outage(overall.partialMs)) in total" : ""))
        }
        if overall.anomalies > 0 { lines.append("- Latency anomalies: \(Words.grouped(overall.anomalies))") }
        lines.append(
            "- Worst service: "
                + (facts.worst.map { "\(escape($0.name)) (\($0.status.rawValue), \(Words.percent($0.uptimePercent)) up)" } ?? "none"))
        lines.append(
            "- Longest outage: "
                + (facts.longestOutage.map {
                    "\(escape($0.name)), \(Words.outage($0.durationMs)) from \(words.time($0.start))" + ($0.end == nil ? " (ongoing)" : "")
                } ?? "none"))
        return lines.joined(separator: "\n") + "\n"
    }

    /// Escapes the characters Markdown would read as formatting or a table cell's end.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            if "\\`*_[]<>|#".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }
}

import VitalsKit

/// `--format html`: one self-contained page (inline CSS and SVG, no scripts, nothing fetched):
/// the summary, a table of the services, one latency chart per service with failed time
/// shaded red and degraded time amber, the correlated failures and the overall figures.
enum HTMLFormat {
    /// OnlineTracker's status colours (its Color Scheme: up green, down red, degraded amber,
    /// unknown gray), as the chat channels use them: the badges, and the chart's shading at
    /// `shadeOpacity` (the rendering test looks for them).
    static let upColour = "#22C55E"
    static let downColour = "#EF4444"
    static let degradedColour = "#F59E0B"
    static let unknownColour = "#6B7280"
    /// The chart's shading: the status colour over the white chart at this opacity, so the line stays readable.
    static let shadeOpacity = "0.3"
    /// The latency line (not a status).
    static let lineColour = "#1f5fbf"

    /// Chart size in CSS pixels.
    static let chartWidth = 640.0
    static let chartHeight = 90.0

    /// The page.
    static func render(_ facts: DigestFacts, zone: Zone, summary: String) -> String {
        let words = Words(zone: zone, reference: facts.windowEnd)
        let title = "Service digest: " + words.window(facts)
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>
            body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d2129; background: #ffffff; margin: 24px; max-width: 980px; }
            h1 { font-size: 22px; margin: 0 0 12px; }
            h2 { font-size: 17px; margin: 28px 0 8px; }
            p.summary { margin: 4px 0; }
            table { border-collapse: collapse; margin: 12px 0; width: 100%; }
            th, td { border-bottom: 1px solid #d8dde3; padding: 5px 8px; text-align: right; white-space: nowrap; }
            th { background: #eef1f5; }
            th:first-child, td:first-child, td.text { text-align: left; }
            .badge { display: inline-block; min-width: 64px; text-align: center; padding: 1px 6px; border-radius: 4px; color: #111827; font-weight: 600; }
            .up { background: \(upColour); } .degraded { background: \(degradedColour); }
            .down, .error { background: \(downColour); } .unknown { background: \(unknownColour); color: #ffffff; }
            .chart { margin: 10px 0 18px; }
            .chart h3 { font-size: 15px; margin: 0 0 4px; }
            .chart svg { border: 1px solid #d8dde3; background: #ffffff; }
            .muted { color: #5f6b7a; }
            </style>
            </head>
            <body>
            <h1>\(escape(title))</h1>

            """
        for line in summary.split(separator: "\n") { html += "<p class=\"summary\">\(escape(String(line)))</p>\n" }
        guard !facts.isEmpty else { return html + "</body>\n</html>\n" }
        html += """
            <table>
            <tr>\((["Service", "Now"] + Words.tableTitles).map { "<th>\($0)</th>" }.joined())</tr>

            """
        for s in facts.shownServices {
            var name = escape(s.name)
            if s.name != s.monitor { name += " <span class=\"muted\">(" + escape(s.monitor) + ")</span>" }
            let badge = "<span class=\"badge " + s.status.rawValue + "\">" + s.status.rawValue + "</span>"
            let cells = [name, badge] + Words.tableCells(s)
            html +=
                "<tr>"
                + cells.enumerated().map { index, cell in
                    index == 0 || index == 7 ? "<td class=\"text\">\(cell)</td>" : "<td>\(cell)</td>"
                }.joined() + "</tr>\n"
        }
        html += "</table>\n"
        if let hidden = facts.hidden {
            html +=
                "<p class=\"muted\">and \(Words.grouped(hidden.services)) more services: \(Words.statusCounts(hidden.byStatus)); "
                + "\(Words.count(hidden.outages, "outage")).</p>\n"
        }
        html += "<h2>Latency</h2>\n"
        html +=
            "<p class=\"muted\">Mean latency per \(Words.span(facts.seriesStepMs)) from \(escape(words.time(facts.seriesStart ?? 0))) "
            + "to \(escape(words.time((facts.seriesStart ?? 0) + facts.seriesStepMs * Int64(facts.seriesBins)))); "
            + "red: an outage, amber: a degraded check.</p>\n"
        for s in facts.shownServices { html += chart(s, facts) }
        if !facts.correlated.isEmpty {
            html += "<h2>Failed together</h2>\n<ul>\n"
            for failure in facts.correlated {
                html += "<li>\(escape(words.bucketRange(failure))): \(failure.names.map(escape).joined(separator: ", "))</li>\n"
            }
            html += "</ul>\n"
        }
        let overall = facts.overall
        html += "<h2>Overall</h2>\n<ul>\n"
        html += "<li>Services: \(Words.grouped(overall.services)) (\(Words.statusCounts(overall.byStatus)))</li>\n"
        html += "<li>Checks: \(Words.grouped(overall.checks)), \(Words.percent(overall.uptimePercent ?? 0)) up</li>\n"
        html +=
            "<li>Outages: \(Words.grouped(overall.outages))"
            + (overall.outages > 0 ? ", \(Words.outage(overall.outageMs)) in total" : "") + "</li>\n"
        if overall.hasPlaces {
            html +=
                "<li>Partial outages: \(Words.grouped(overall.partialOutages))"
                + (overall.partialOutages > 0 ? ", \(Words.outage(overall.partialMs)) in total" : "") + "</li>\n"
        }
        if overall.anomalies > 0 { html += "<li>Latency anomalies: \(Words.grouped(overall.anomalies))</li>\n" }
        html +=
            "<li>Worst service: "
            + (facts.worst.map { "\(escape($0.name)) (\($0.status.rawValue), \(Words.percent($0.uptimePercent)) up)" } ?? "none")
            + "</li>\n"
        html +=
            "<li>Longest outage: "
            + (facts.longestOutage.map {
                "\(escape($0.name)), \(Words.outage($0.durationMs)) from \(escape(words.time($0.start)))"
                    + ($0.end == nil ? " (ongoing)" : "")
            } ?? "none") + "</li>\n</ul>\n"
        return html + "</body>\n</html>\n"
    }

    /// One service's chart: shaded bins, then the mean-latency line (broken where a bin has none).
    static func chart(_ s: ServiceFacts, _ facts: DigestFacts) -> String {
        let bins = max(1, s.seriesLatencyMs.count)
        let width = chartWidth
        let height = chartHeight
        let top = 14.0
        let bottom = 4.0
        let binWidth = width / Double(bins)
        let peak = s.seriesLatencyMs.compactMap { $0 }.max() ?? 0
        let scale = niceCeiling(peak)
        var svg =
            "<div class=\"chart\"><h3>\(escape(s.name)) <span class=\"muted\">avg \(s.latencyAvgMs.map(Words.latency) ?? "–")</span></h3>\n"
        svg +=
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"latency of \(escape(s.name))\">\n"
        // Shading: outage time red, degraded bins amber; runs of bins drawn as one rectangle.
        var index = 0
        while index < bins {
            let fill = s.seriesOutage[index] ? downColour : s.seriesDegraded[index] > 0 ? degradedColour : nil
            var end = index + 1
            while end < bins, fill != nil,
                (s.seriesOutage[end] ? downColour : s.seriesDegraded[end] > 0 ? degradedColour : nil) == fill
            { end += 1 }
            if let fill {
                let x = Double(index) * binWidth
                svg +=
                    "<rect x=\"\(f(x))\" y=\"0\" width=\"\(f(max(Double(end - index) * binWidth, 2)))\" height=\"\(Int(height))\" fill=\"\(fill)\" fill-opacity=\"\(shadeOpacity)\"/>\n"
            }
            index = end
        }
        svg +=
            "<line x1=\"0\" y1=\"\(f(height - bottom))\" x2=\"\(Int(width))\" y2=\"\(f(height - bottom))\" stroke=\"#c3cad3\" stroke-width=\"1\"/>\n"
        // The line joins the bins that have a latency; bins without checks are skipped over.
        var segments: [[String]] = [[]]
        for (index, value) in s.seriesLatencyMs.enumerated() {
            guard let value else { continue }
            let x = (Double(index) + 0.5) * binWidth
            let y = scale > 0 ? height - bottom - value / scale * (height - top - bottom) : height - bottom
            segments[0].append("\(f(x)),\(f(y))")
        }
        for points in segments where !points.isEmpty {
            if points.count == 1 {
                let xy = points[0].split(separator: ",")
                svg += "<circle cx=\"\(xy[0])\" cy=\"\(xy[1])\" r=\"2.5\" fill=\"\(lineColour)\"/>\n"
            } else {
                svg +=
                    "<polyline points=\"\(points.joined(separator: " "))\" fill=\"none\" stroke=\"\(lineColour)\" stroke-width=\"2\" stroke-linejoin=\"round\"/>\n"
            }
        }
        svg += "<text x=\"4\" y=\"11\" font-size=\"10\" fill=\"#5f6b7a\">\(scale > 0 ? Words.latency(scale) : "no latency")</text>\n"
        return svg + "</svg></div>\n"
    }

    /// The smallest 1, 2 or 5 × 10^k at or above `value`.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 0 }
        var unit = 0.001
        while true {
            for factor in [1.0, 2.0, 5.0] where unit * factor >= value { return unit * factor }
            unit *= 10
        }
    }

    static func f(_ value: Double) -> String { Words.fixed(value, decimals: 1).replacingOccurrences(of: ",", with: "") }

    /// Escapes text for HTML element content and attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

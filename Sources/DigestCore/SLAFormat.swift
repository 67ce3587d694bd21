import VitalsKit

/// The SLA report in words (text), as Markdown, as an HTML page or as one JSON `sla` record; each
/// states the report's rules (`SLAReport.rules`).
enum SLAFormat {
    /// Plain sentences: one paragraph per monitor, then the rules.
    static func text(_ report: SLAReport, zone: Zone) -> String {
        var out = heading(report, zone: zone) + "\n\n"
        if report.monitors.isEmpty { out += "No samples in the period.\n\n" }
        for monitor in report.monitors { out += sentence(monitor, report, zone: zone) + "\n\n" }
        out += "How this report counts:\n"
        for rule in report.rules { out += "- " + rule.words + "\n" }
        return out
    }

    /// `SLA report for 2026-11: 2026-11-01 00:00 to 2026-12-01 00:00 (UTC), target 99.9%.`
    static func heading(_ report: SLAReport, zone: Zone) -> String {
        "SLA report for \(report.period.label): \(time(report.period.start, zone)) to \(time(report.period.end, zone)) "
            + "(\(zone.name == "local" ? zone.label(at: report.period.start) : zone.name)), target \(number(report.slo))%."
    }

    /// One monitor's figures in words.
    static func sentence(_ monitor: SLAMonitor, _ report: SLAReport, zone: Zone) -> String {
        let title = monitor.name == monitor.monitor ? monitor.monitor : "\(monitor.monitor) (\(monitor.name))"
        guard let uptime = monitor.uptimePercent else {
            return "\(title): nothing measured in the period (no data: \(length(monitor.noDataMs)))."
        }
        var words = "\(title): \(percent(uptime)) up, target \(met(monitor, report) ? "met" : "missed"). "
        words += "Measured \(length(monitor.measuredMs)) (no data: \(length(monitor.noDataMs))"
        if report.maintenanceLeftOut { words += "; maintenance left out: \(length(monitor.maintenanceMs))" }
        words += "). "
        if monitor.outages.isEmpty {
            words += "No outage."
        } else {
            let list = monitor.outages.map { "\(time($0.start, zone)) to \(time($0.end, zone)) (\(length($0.end - $0.start)))" }
            words += "Down \(length(monitor.downMs)) in \(count(monitor.outages.count, "outage")): \(list.joined(separator: ", "))."
        }
        let budget = monitor.budgetMs(slo: report.slo)
        if monitor.partialMs > 0 { words += " Partial outages (some places failing) \(length(monitor.partialMs)), not up." }
        words += " Error budget \(length(budget)): \(length(monitor.usedMs)) used"
        if budget > 0 { words += " (\(percent(Double(monitor.usedMs) * 100 / Double(budget))))" }
        words +=
            monitor.usedMs <= budget ? ", \(length(budget - monitor.usedMs)) left." : ", overspent by \(length(monitor.usedMs - budget))."
        if monitor.degradedMs > 0 { words += " Degraded \(length(monitor.degradedMs)) (counted up)." }
        if monitor.flakyChecks > 0 {
            words += " \(count(monitor.flakyChecks, "check")) of \(monitor.checks) passed only on a retry (flaky, counted up)."
        }
        return words
    }

    /// Whether the monitor met the target.
    static func met(_ monitor: SLAMonitor, _ report: SLAReport) -> Bool { (monitor.uptimePercent ?? 0) >= report.slo }

    /// Markdown: a heading, one table row per monitor, the outages, the rules.
    static func markdown(_ report: SLAReport, zone: Zone) -> String {
        var out = "# " + heading(report, zone: zone) + "\n\n"
        out += "| monitor | uptime | target | down | outages | no data | maintenance | budget used | budget left | flaky |\n"
        out += "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n"
        for monitor in report.monitors {
            let budget = monitor.budgetMs(slo: report.slo)
            let cells = [
                MarkdownFormat.escape(monitor.monitor), monitor.uptimePercent.map(percent) ?? "-", met(monitor, report) ? "met" : "missed",
                length(monitor.downMs), "\(monitor.outages.count)", length(monitor.noDataMs),
                report.maintenanceLeftOut ? length(monitor.maintenanceMs) : "counted",
                budget > 0 ? percent(Double(monitor.usedMs) * 100 / Double(budget)) : "-",
                monitor.usedMs <= budget ? length(budget - monitor.usedMs) : "-" + length(monitor.usedMs - budget),
                "\(monitor.flakyChecks)",
            ]
            out += "| " + cells.joined(separator: " | ") + " |\n"
        }
        let outages = report.monitors.flatMap { monitor in monitor.outages.map { (monitor.monitor, $0) } }
        if !outages.isEmpty {
            out += "\n## Outages\n\n"
            for (monitor, outage) in outages {
                out +=
                    "- \(MarkdownFormat.escape(monitor)): \(time(outage.start, zone)) to \(time(outage.end, zone)) (\(length(outage.end - outage.start)))\n"
            }
        }
        out += "\n## How this report counts\n\n"
        for rule in report.rules { out += "- " + MarkdownFormat.escape(rule.words) + "\n" }
        return out
    }

    /// A self-contained HTML page with the same table and rules.
    static func html(_ report: SLAReport, zone: Zone) -> String {
        let title = HTMLFormat.escape(heading(report, zone: zone))
        var out = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>\(title)</title>\n"
        out += "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
        out += "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}"
        out += ".missed{color:#b00020;font-weight:bold}.met{color:#1b5e20}</style></head><body>\n"
        out += "<h1>\(title)</h1>\n<table><tr><th>monitor</th><th>uptime</th><th>target</th><th>down</th><th>outages</th>"
        out += "<th>no data</th><th>maintenance</th><th>budget left</th><th>flaky</th></tr>\n"
        for monitor in report.monitors {
            let budget = monitor.budgetMs(slo: report.slo)
            let verdict = met(monitor, report) ? "met" : "missed"
            out += "<tr><td>\(HTMLFormat.escape(monitor.monitor))</td><td>\(monitor.uptimePercent.map(percent) ?? "-")</td>"
            out += "<td class=\"\(verdict)\">\(verdict)</td><td>\(length(monitor.downMs))</td><td>\(monitor.outages.count)</td>"
            out += "<td>\(length(monitor.noDataMs))</td><td>\(report.maintenanceLeftOut ? length(monitor.maintenanceMs) : "counted")</td>"
            out += "<td>\(monitor.usedMs <= budget ? length(budget - monitor.usedMs) : "-" + length(monitor.usedMs - budget))</td>"
            out += "<td>\(monitor.flakyChecks)</td></tr>\n"
        }
        out += "</table>\n"
        for monitor in report.monitors { out += "<p>\(HTMLFormat.escape(sentence(monitor, report, zone: zone)))</p>\n" }
        out += "<h2>How this report counts</h2>\n<ul>\n"
        for rule in report.rules { out += "<li>\(HTMLFormat.escape(rule.words))</li>\n" }
        out += "</ul>\n</body></html>\n"
        return out
    }

    /// One `sla` record (vitals-records(7), SLA).
    static func json(_ report: SLAReport) -> String {
        var record = JSONObject()
        record["type"] = .string("sla")
        record["period"] = .string(report.period.label)
        record["start"] = .string(Timestamp.format(milliseconds: report.period.start))
        record["end"] = .string(Timestamp.format(milliseconds: report.period.end))
        record["slo_percent"] = .number(number(report.slo))
        var rules = JSONObject()
        for rule in report.rules { rules[rule.key] = .string(rule.words) }
        record["rules"] = .object(rules)
        record["monitors"] = .array(
            report.monitors.map { monitor in
                let budget = monitor.budgetMs(slo: report.slo)
                var object = JSONObject()
                object["monitor"] = .string(monitor.monitor)
                object["name"] = .string(monitor.name)
                object["uptime_percent"] = monitor.uptimePercent.map { .number(String($0)) } ?? .null
                object["met"] = .bool(met(monitor, report))
                object["measured_ms"] = .integer(Int(monitor.measuredMs))
                object["up_ms"] = .integer(Int(monitor.upMs))
                object["down_ms"] = .integer(Int(monitor.downMs))
                object["degraded_ms"] = .integer(Int(monitor.degradedMs))
                object["partial_ms"] = .integer(Int(monitor.partialMs))
                object["no_data_ms"] = .integer(Int(monitor.noDataMs))
                object["maintenance_ms"] = .integer(Int(monitor.maintenanceMs))
                object["checks"] = .integer(monitor.checks)
                object["flaky_checks"] = .integer(monitor.flakyChecks)
                object["budget_ms"] = .integer(Int(budget))
                object["budget_used_ms"] = .integer(Int(monitor.usedMs))
                object["budget_left_ms"] = .integer(Int(budget - monitor.usedMs))
                object["outages"] = .array(
                    monitor.outages.map { outage in
                        var item = JSONObject()
                        item["start"] = .string(Timestamp.format(milliseconds: outage.start))
                        item["end"] = .string(Timestamp.format(milliseconds: outage.end))
                        item["duration_ms"] = .integer(Int(outage.end - outage.start))
                        return .object(item)
                    })
                return .object(object)
            })
        return JSONValue.object(record).jsonText + "\n"
    }

    /// `99.9004%`: four decimals, so a figure near a target is never rounded onto it.
    static func percent(_ value: Double) -> String {
        let scaled = (value * 10_000).rounded(.down)
        let whole = Int64(scaled) / 10_000
        let fraction = Int64(scaled) % 10_000
        return "\(whole)." + String(repeating: "0", count: 4 - String(fraction).count) + "\(fraction)%"
    }

    /// `29d 23h 50m`, `43m 11.4s`, `0s`: every part, seconds to the tenth.
    static func length(_ ms: Int64) -> String {
        var parts: [String] = []
        let days = ms / 86_400_000
        let hours = ms / 3_600_000 % 24
        let minutes = ms / 60_000 % 60
        let tenths = (ms % 60_000 + 50) / 100
        if days > 0 { parts.append("\(days)d") }
        if hours > 0 { parts.append("\(hours)h") }
        if minutes > 0 { parts.append("\(minutes)m") }
        if tenths > 0 || parts.isEmpty { parts.append(tenths % 10 == 0 ? "\(tenths / 10)s" : "\(tenths / 10).\(tenths % 10)s") }
        return parts.joined(separator: " ")
    }

    /// `2026-11-14 09:17`, with seconds when they are not 0.
    static func time(_ ms: Int64, _ zone: Zone) -> String {
        let p = zone.parts(of: ms)
        let seconds = Int((ms + Int64(p.offset) * 1000) / 1000 % 60 + 60) % 60
        return "\(p.year)-\(Zone.two(p.month))-\(Zone.two(p.day)) \(Zone.two(p.hour)):\(Zone.two(p.minute))"
            + (seconds == 0 ? "" : ":" + Zone.two(seconds))
    }

    /// `99.9`, `99`: the target as written.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// `1 outage`, `2 outages`.
    static func count(_ value: Int, _ noun: String) -> String { value == 1 ? "1 \(noun)" : "\(value) \(noun)s" }
}

/// The digest's words for checks that passed only on a retry (probe-http --confirm).
enum FlakyWords {
    /// "Passed only on a retry (flaky, counted up): web at 1 of 1,440 checks, api at 3 of 1,440." for
    /// the listed services that had some; nil when none had.
    static func sentence(_ facts: DigestFacts) -> String? {
        let flaky = facts.shownServices.filter { $0.flakyChecks > 0 }
        guard !flaky.isEmpty else { return nil }
        let parts = flaky.enumerated().map { index, s in
            "\(s.name) at \(Words.grouped(s.flakyChecks)) of \(index == 0 ? Words.count(s.checks, "check") : Words.grouped(s.checks))"
        }
        return "Passed only on a retry (flaky, counted up): " + Words.list(parts) + "."
    }
}

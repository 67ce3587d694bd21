import Foundation
import VitalsKit

/// `digest --period` (or `--since`/`--until`): the SLA report instead of the digest (digest(1),
/// SLA REPORTS). Reads the samples once, keeps those of the period (and a day before it, whose
/// checks may cover its start), and accounts each monitor's time.
enum SLACommand {
    /// The options of the daily digest that mean nothing for a report.
    static let digestOnly = [
        "window", "now", "bucket", "max-services", "trend-samples", "llm-command", "llm-timeout", "cache", "force", "clear-cache",
    ]

    /// Runs the report.
    static func run(
        _ options: ParsedOptions, _ context: ToolContext, format: String, zone: Zone, quorum: Quorum, agent: String?
    ) throws -> ExitStatus {
        for option in digestOnly where options.has(option) { throw UsageError("--\(option) does not apply to an SLA report") }
        guard format != "prompt" else { throw UsageError("an SLA report is text, markdown, html or json, not prompt") }
        let period = try readPeriod(options, zone: zone)
        let sloText = options.valueOrDefault("slo") ?? "99.9"
        guard let slo = Double(sloText), slo > 0, slo < 100 else {
            throw UsageError("--slo takes a percentage above 0 and below 100, such as 99.9, not '\(sloText)'")
        }
        var maintenance: [MaintenanceWindow]?
        if let path = options.value("maintenance") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UsageError("cannot read the maintenance file \(path)")
            }
            maintenance = MaintenanceWindow.read(String(decoding: data, as: UTF8.self)) { line, problem in
                context.diagnostics.error(problem, source: path, line: line)
            }
        }
        let services = ServiceTable()
        var reader = SampleRowReader(services: services, notAfter: nil, onlyPlace: agent)
        var rows: [[SampleRow]] = []
        let earliest = period.start - 86_400_000
        let diagnostics = context.diagnostics
        DigestCommand.readRows(options, context, &reader) { row in
            guard row.at >= earliest, row.at < period.end else { return }
            while rows.count <= Int(row.service) { rows.append([]) }
            rows[Int(row.service)].append(row)
        }
        if let stop = Signals.stopStatus { return stop }
        let report = SLAReport.build(services: services, rows: rows, period: period, slo: slo, quorum: quorum, maintenance: maintenance)
        let output: String
        switch format {
        case "json": output = SLAFormat.json(report)
        case "markdown": output = SLAFormat.markdown(report, zone: zone)
        case "html": output = SLAFormat.html(report, zone: zone)
        default: output = SLAFormat.text(report, zone: zone)
        }
        try context.output.write(String(output.dropLast()))
        try context.output.flush()
        return diagnostics.errorCount > 0 ? .failure : .success
    }

    /// The period of --period, or of --since and --until.
    static func readPeriod(_ options: ParsedOptions, zone: Zone) throws -> SLAPeriod {
        if let text = options.value("period") {
            guard !options.has("since"), !options.has("until") else { throw UsageError("give --period, or --since and --until, not both") }
            guard let period = SLAPeriod.parse(text, zone: zone) else {
                throw UsageError("--period takes a month (2026-11), an ISO week (2026-W47) or a day (2026-11-28), not '\(text)'")
            }
            return period
        }
        guard let sinceText = options.value("since"), let untilText = options.value("until") else {
            throw UsageError("an SLA report over a range needs both --since and --until")
        }
        guard let since = SLAPeriod.instant(sinceText, zone: zone) else {
            throw UsageError("--since takes an RFC 3339 time or a date (2026-11-01), not '\(sinceText)'")
        }
        guard let until = SLAPeriod.instant(untilText, zone: zone), until > since else {
            throw UsageError("--until takes an RFC 3339 time or a date after --since, not '\(untilText)'")
        }
        return SLAPeriod(start: since, end: until, label: "\(sinceText) to \(untilText)")
    }
}

import VitalsKit

/// `digest`: summarize a window of `sample` records per service, in words, tables, a page,
/// facts or a prompt for a language model.
public enum DigestCommand: VitalsCommand {
    /// The formats `--format` takes.
    static let formats = ["text", "markdown", "html", "json", "prompt"]

    /// The option table: parsing, `--help` and the man-page test all read it.
    public static let spec = CommandSpec(
        name: "digest",
        summary: "Summarize the last day of sample records per service: status, uptime, latency, trends, outages and correlated failures.",
        usage: ["[OPTIONS] [FILE...]"],
        description: """
            Samples are read from the FILEs (or standard input; - is standard input), in any order; records of \
            other types are skipped. The window ends at the newest sample (or --now) and is --window long. \
            The digest is written in plain sentences (text), as Markdown, as one self-contained HTML page, as \
            the facts (one JSON digest record) or as the prompt a language model would be given; \
            --llm-command pipes that prompt to a local model and prints its answer instead of the built-in text. \
            See digest(1) for every rule and vitals-records(7) for the digest record.
            """,
        options: [
            OptionSpec(
                "format", short: "f", value: "FORMAT", default: "text", choices: formats, help: "text, markdown, html, json or prompt"),
            .duration("window", default: "24h", range: 1...366 * 86_400_000, help: "how far back the digest looks from its end"),
            .now("end the window at TIME (RFC 3339, or 'now') instead of at the newest sample"),
            .duration(
                "bucket", short: "b", default: "5m", range: 1...86_400_000,
                help: "outages beginning in the same bucket this wide are correlated"),
            OptionSpec(
                "quorum", value: "N", default: "majority",
                help: "how many of a monitor's fresh places must agree on its status (majority, all, any, or a number)"),
            OptionSpec(
                "agent", value: "NAME",
                help: "only the samples of this place (an agent, or local for samples that name none), with their own statuses"),
            OptionSpec(
                "period", value: "PERIOD",
                help: "an SLA report over a calendar month (2026-11), an ISO week (2026-W47) or a day (2026-11-28) instead of the digest"),
            OptionSpec("since", value: "TIME", help: "an SLA report from TIME (RFC 3339, or a date: its midnight); with --until"),
            OptionSpec("until", value: "TIME", help: "an SLA report up to TIME (RFC 3339, or a date: its midnight); with --since"),
            OptionSpec("slo", value: "PERCENT", default: "99.9", help: "the SLA report's uptime target, in percent"),
            OptionSpec(
                "maintenance", value: "FILE",
                help: "leave the maintenance windows in FILE (notify mute list --all) out of the SLA report's uptime"),
            OptionSpec(
                "max-services", value: "N", default: "20",
                help: "list at most N services, worst first, and summarize the rest in one line (0: all)"),
            OptionSpec(
                "trend-samples", value: "N", default: "10",
                help: "for a history under an hour, compare the newest N latencies with the N before them for the trend"),
            OptionSpec(
                "tz", value: "ZONE", default: "local", aliases: ["timezone"],
                help: "write times and decide 'today' in ZONE: local, UTC, +HH:MM or a zone name"),
            OptionSpec(
                "llm-command", value: "CMD",
                help: "with --format text, pipe the prompt to CMD (split into words, no shell) and print its answer"),
            .duration(
                "llm-timeout", default: "60s", range: 1...86_400_000,
                help: "give --llm-command this long before falling back to the built-in text"),
            OptionSpec(
                "cache", value: "FILE", help: "print the digest made today with the same options from FILE, or make one and keep it there"),
            OptionSpec("force", help: "with --cache, make the digest again even if one was made today"),
            OptionSpec("clear-cache", help: "remove the --cache FILE (isitup's clear history) and read no samples"),
        ],
        examples: [
            "digest samples.ndjson",
            "digest --format markdown --max-services 10 samples.ndjson",
            "digest --format html samples.ndjson > digest.html",
            "digest --format json samples.ndjson | jq '.overall'",
            "probe-http targets.ndjson | digest --window 1h --tz UTC",
            "digest --llm-command 'ollama run llama3.2' --llm-timeout 2m samples.ndjson",
            "digest --cache digest.cache samples.ndjson",
            "digest --cache digest.cache --clear-cache",
            "digest --period \"$(date -u +%Y-%m)\" --slo 99.9 --format json samples.ndjson | jq -r '.rules | keys[]'",
        ],
        exitStatuses: [
            (.success, "the digest was written (with no data, it says so)"),
            (.failure, "bad sample lines, unreadable files or an unwritable cache (the digest of the rest was still written)"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT"),
            (.terminated, "stopped by SIGTERM"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "probe-http(1)", "store-samples(1)"]
    )

    /// Runs digest.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        let format = try options.choice("format")
        let window = try options.duration("window")!
        let bucket = try options.duration("bucket")!
        let maxServices = try options.integer("max-services", in: 0...1_000_000)
        let trendSamples = try options.integer("trend-samples", in: 1...10_000)
        let now = try options.now()
        let quorumText = options.value("quorum") ?? "majority"
        guard let quorum = Quorum(quorumText) else {
            throw UsageError("--quorum takes majority, all, any or a number of places from 1, not '\(quorumText)'")
        }
        let agent = options.value("agent")
        if let agent, agent.isEmpty { throw UsageError("--agent wants a place: an agent's name, or local for samples that name none") }
        let zoneText = options.valueOrDefault("tz") ?? "local"
        guard let zone = Zone.parse(zoneText) else {
            throw UsageError("--tz wants local, UTC, an offset such as +02:00, or a zone name such as Europe/Paris, not '\(zoneText)'")
        }
        var llmWords: [String]?
        if let command = options.value("llm-command") {
            guard format == "text" else { throw UsageError("--llm-command applies to --format text only") }
            let words = try LLMCommand.split(command)
            guard !words.isEmpty else { throw UsageError("--llm-command is empty") }
            llmWords = words
        }
        let llmTimeout = try options.duration("llm-timeout")!
        if options.has("period") || options.has("since") || options.has("until") {
            return try SLACommand.run(options, context, format: format, zone: zone, quorum: quorum, agent: agent)
        }
        for slaOnly in ["slo", "maintenance"] where options.has(slaOnly) {
            throw UsageError("--\(slaOnly) applies to an SLA report: give --period, or --since and --until")
        }
        if options.has("force") && !options.has("cache") { throw UsageError("--force only applies with --cache") }
        if options.has("clear-cache") {
            guard let path = options.value("cache") else { throw UsageError("--clear-cache needs --cache FILE") }
            try DigestCache(path: path).clear()
            return .success
        }

        // The daily cache: a digest made today with the same options is printed as it is.
        let cache = options.value("cache").map(DigestCache.init(path:))
        let generatedAt = Clock.wallMilliseconds()
        let today = dayText(zone, generatedAt)
        let key = [
            "format=\(format)", "window=\(window)", "now=\(options.value("now") ?? "")", "bucket=\(bucket)",
            "max-services=\(maxServices)", "trend-samples=\(trendSamples)", "tz=\(zone.name)",
            "llm-command=\(options.value("llm-command") ?? "")", "quorum=\(quorum)", "agent=\(agent ?? "")",
        ].joined(separator: ";")
        if let cache, !options.has("force") {
            switch cache.lookup(day: today, key: key) {
            case .hit(let output):
                try context.output.write(String(output.dropLast(output.hasSuffix("\n") ? 1 : 0)))
                return .success
            case .miss:
                break
            case .unusable(let why):
                context.diagnostics.warning("\(why); making a new digest")
            }
        }

        // One pass over the samples.
        let services = ServiceTable()
        var samples = SampleRowReader(services: services, notAfter: now, onlyPlace: agent)
        let aggregator = Aggregator(
            services: services, window: window, now: now, trendSamples: trendSamples, bucket: bucket, quorum: quorum,
            temporaryDirectory: context.environment["TMPDIR"])
        let diagnostics = context.diagnostics
        readRows(options, context, &samples) { aggregator.add($0) }
        if let stop = Signals.stopStatus { return stop }
        let aggregate = try aggregator.finish()
        let facts = DigestFacts.build(
            aggregate, window: window, bucket: bucket, trendSamples: trendSamples, maxServices: maxServices, quorum: quorum, agent: agent)

        var fellBack = false
        let output: String
        switch format {
        case "json":
            output = JSONFormat.render(facts) + "\n"
        case "prompt":
            output = PromptFormat.render(facts, zone: zone)
        case "markdown":
            output = MarkdownFormat.render(facts, zone: zone, summary: DigestText.render(facts, zone: zone))
        case "html":
            output = HTMLFormat.render(facts, zone: zone, summary: DigestText.render(facts, zone: zone))
        default:
            if let llmWords {
                try context.output.flush()
                switch LLMCommand.run(llmWords, prompt: PromptFormat.render(facts, zone: zone), timeoutMs: llmTimeout) {
                case .success(let text):
                    output = text + "\n"
                case .failure(let failure):
                    if let stop = Signals.stopStatus { return stop }
                    diagnostics.warning("--llm-command gave no digest (\(failure.description)); writing digest's own text instead")
                    output = DigestText.render(facts, zone: zone)
                    fellBack = true
                }
            } else {
                output = DigestText.render(facts, zone: zone)
            }
        }
        try context.output.write(String(output.dropLast()))
        try context.output.flush()

        var status = ExitStatus.success
        if diagnostics.errorCount > 0 {
            status = .failure
        } else if let cache, !fellBack {
            do {
                try cache.store(output: output, generatedAt: generatedAt, day: today, key: key)
            } catch {
                diagnostics.error(error.message)
                status = .failure
            }
        }
        return status
    }

    /// Reads every sample of the FILEs (or standard input) through `samples`, handing each row to
    /// `take`; bad lines are reported with their file and line.
    static func readRows(_ options: ParsedOptions, _ context: ToolContext, _ samples: inout SampleRowReader, _ take: (SampleRow) -> Void) {
        let diagnostics = context.diagnostics
        Inputs(options.operands, stdin: context.streams.input).forEach(diagnostics: diagnostics) { reader in
            while let event = reader.next() {
                switch event {
                case .line(let line):
                    switch samples.read(line) {
                    case .sample(let row): take(row)
                    case .skipped: break
                    case .invalid(let problem): diagnostics.error(problem.message, source: reader.source, line: reader.lineNumber)
                    }
                case .tooLong(let length):
                    diagnostics.error(SampleProblem.lineTooLong(bytes: length).message, source: reader.source, line: reader.lineNumber)
                }
            }
        }
    }

    /// `2026-01-27`: the local date of `ms` in `zone`.
    static func dayText(_ zone: Zone, _ ms: Int64) -> String {
        let p = zone.parts(of: ms)
        return "\(p.year)-" + Zone.two(p.month) + "-" + Zone.two(p.day)
    }
}

import VitalsKit

/// `detect-anomaly`: mark latency anomalies on rolling windows per monitor.
public enum DetectAnomalyCommand: VitalsCommand {
    /// The option table: parsing, `--help` and the man-page test all read it.
    public static let spec = CommandSpec(
        name: "detect-anomaly",
        summary: "Mark latency anomalies in sample records, per monitor, on rolling windows.",
        usage: ["[OPTIONS] [FILE...]"],
        description: """
            Reads records from the FILEs (or standard input; - is standard input) and writes every valid one back \
            out, in order, every byte as it came, with an anomaly object added to each sample: verdict unknown, \
            stable or degrading, the detector's numbers, a score from 0 to 1, and its place in an anomaly episode \
            (the onset, the samples inside it, the sample that ends it). A degrading sample that is up \
            becomes degraded, with reason latency (isitup's rule). Records that are not samples pass through \
            untouched. See detect-anomaly(1) for every rule, vitals-records(7) for the records.
            """,
        options: [
            OptionSpec(
                "detector", value: "NAME", default: DetectorKind.envelope.rawValue, choices: DetectorKind.allCases.map(\.rawValue),
                help:
                    "envelope (values far from the median and beyond the range the monitor has shown), robust (sustained shifts and drifts, seasonal), mad (robust point rule) or seed (isitup's AnomalyDetector, exactly)"
            ),
            OptionSpec("field", value: "NAME", default: DetectorSettings().field, help: "the numeric sample field judged"),
            OptionSpec(
                "direction", value: "SIDE", default: Direction.high.rawValue, choices: Direction.allCases.map(\.rawValue),
                help: "which side is bad: high, low (for speeds) or both"),
            OptionSpec(
                "window", value: "N",
                help: "points kept per monitor, the current one included (default 100 for envelope, 50 for the others)"),
            OptionSpec(
                "min-samples", value: "N", default: "10",
                help: "points needed, the current one included, before a verdict other than unknown"),
            OptionSpec(
                "threshold", value: "X",
                help:
                    "seed: standard deviations above the mean (default 2.5); mad: robust deviations (default 3.5); robust: CUSUM limit (default 7); envelope: robust deviations from the median (default 5.7)"
            ),
            OptionSpec("state", value: "FILE", help: "load the monitors' windows from FILE at the start and save them there at the end"),
            .duration("checkpoint", help: "with --state, also save the state this often during a long run"),
            OptionSpec("keep-status", help: "never change status, reason or message; only add the anomaly object"),
            OptionSpec("exit-status", short: "e", help: "exit 1 when any sample was degrading"),
            OptionSpec("summary", short: "s", help: "write a one-line summary to standard error at the end"),
        ],
        examples: [
            "detect-anomaly samples.ndjson",
            "probe-http targets.ndjson | detect-anomaly --state anomaly.json",
            "detect-anomaly --detector seed --exit-status samples.ndjson >/dev/null; echo \"exit status $?\"",
            "detect-anomaly --field speed_mbps --direction low samples.ndjson",
        ],
        exitStatuses: [
            (.success, "every record was read and written (whatever the verdicts)"),
            (.verdict, "with --exit-status, some sample was degrading"),
            (.failure, "bad input lines (skipped; the rest was processed), unreadable files, an unusable state file, or unwritable output"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT (the state of what was written is saved)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "probe-http(1)"]
    )

    /// Field names detect-anomaly reads or writes for itself, which `--field` may not name.
    static let reservedFields: Set<String> = ["type", "monitor", "status", "reason", "message", "simulated", "at", "anomaly"]

    /// The validated options.
    struct Configuration {
        var settings: DetectorSettings
        var statePath: String?
        var checkpointMs: Int64?
        var keepStatus = false
        var exitStatus = false
        var summary = false
    }

    /// Validates the raw options.
    static func configure(_ options: ParsedOptions) throws(UsageError) -> Configuration {
        let detectorName = try options.choice("detector")
        var settings = DetectorSettings(detector: DetectorKind(rawValue: detectorName) ?? .envelope)
        if let field = options.value("field") {
            guard !field.isEmpty else { throw UsageError("--field wants a field name") }
            guard !reservedFields.contains(field) else {
                throw UsageError(
                    "--field cannot be '\(field)': detect-anomaly reads that field itself; name a numeric field such as latency_ms")
            }
            settings.field = field
        }
        let direction = try options.choice("direction")
        settings.direction = Direction(rawValue: direction) ?? .high
        settings.window = try options.integer("window", default: settings.detector.defaultWindow, in: 2...100_000)
        settings.minSamples = try options.integer("min-samples", in: 2...100_000)
        guard settings.minSamples <= settings.window else {
            throw UsageError(
                "--min-samples (\(settings.minSamples)) must not be more than --window (\(settings.window)): no verdict could ever be reached"
            )
        }
        settings.threshold = try options.number("threshold", default: settings.detector.defaultThreshold, in: 0...1_000_000)
        guard settings.threshold > 0 else { throw UsageError("--threshold must be more than 0") }

        var configuration = Configuration(settings: settings)
        configuration.statePath = options.value("state")
        if configuration.statePath?.isEmpty == true { throw UsageError("--state wants a file name") }
        if options.has("checkpoint") {
            guard configuration.statePath != nil else { throw UsageError("--checkpoint only applies with --state") }
            configuration.checkpointMs = try options.duration("checkpoint")
        }
        configuration.keepStatus = options.has("keep-status")
        configuration.exitStatus = options.has("exit-status")
        configuration.summary = options.has("summary")
        return configuration
    }

    /// Runs detect-anomaly.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        let configuration = try configure(options)
        switch configuration.settings.detector {
        case .seed: return try run(SeedDetector.self, configuration, options.operands, context)
        case .mad: return try run(MADDetector.self, configuration, options.operands, context)
        case .robust: return try run(RobustDetector.self, configuration, options.operands, context)
        case .envelope: return try run(EnvelopeDetector.self, configuration, options.operands, context)
        }
    }

    private static func run<Detector: MonitorDetector>(
        _: Detector.Type, _ configuration: Configuration, _ operands: [String],
        _ context: ToolContext
    ) throws -> ExitStatus {
        let settings = configuration.settings
        let monitors = MonitorTable<Detector>()
        if let path = configuration.statePath {
            try AnomalyStateFile.load(path, settings: settings, into: monitors)
        }
        let filter = AnomalyFilter(settings: settings, promotes: settings.promotes && !configuration.keepStatus, monitors: monitors)
        let output = context.output
        let diagnostics = context.diagnostics
        let checkpointNs = configuration.checkpointMs.map { UInt64($0) * 1_000_000 }
        var lastSave = Clock.monotonicNanoseconds()

        /// Saves the state; a failure is reported (exit 2 at the end) and the run goes on.
        func save() {
            guard let path = configuration.statePath else { return }
            do {
                try AnomalyStateFile.save(path, settings: settings, table: monitors)
            } catch {
                diagnostics.error(error.message)
            }
        }

        // The inputs are read and checked on a thread of their own (LineBatches.swift); this
        // thread judges and writes, in input order, and reports every problem.
        let handoff = BatchHandoff()
        BatchReader(inputs: Inputs(operands, stdin: context.streams.input), handoff: handoff, settings: settings).start()
        defer { handoff.cancel() }
        do {
            // Flush whenever the reader has nothing more yet, so records reach the pipeline
            // before we wait for input.
            reading: while let batch = try handoff.next(beforeWaiting: { try output.flush() }) {
                defer { handoff.recycle(batch) }
                for entry in batch.entries {
                    if Signals.stopRequested { break reading }
                    let line = batch.bytes(entry.start, entry.count)
                    switch entry.kind {
                    case .sample:
                        try filter.judge(
                            entry.facts, line: line, monitor: batch.bytes(entry.facts.monitorStart, entry.facts.monitorCount),
                            to: output)
                    case .otherRecord:
                        try filter.passOn(line, to: output)
                    case .blank:
                        break
                    case .problem:
                        let problem = batch.problems[entry.note]
                        if problem.lineIsRecord { try filter.passOn(line, to: output) }
                        diagnostics.error(problem.message, source: batch.source, line: entry.lineNumber)
                    case .inputError:
                        diagnostics.error(batch.messages[entry.note])
                    }
                    if let checkpointNs, Clock.monotonicNanoseconds() &- lastSave >= checkpointNs {
                        try output.flush()
                        save()
                        lastSave = Clock.monotonicNanoseconds()
                    }
                }
            }
            try output.flush()
        } catch is BrokenPipe {
            // The reader downstream has what it wanted; what was read still counts for the state.
        }
        save()

        if configuration.summary { diagnostics.note(filter.tally.line(monitors: monitors.judgedCount)) }
        if let stop = Signals.stopStatus { return stop }
        var status = ExitStatus.success
        if configuration.exitStatus, filter.tally.degrading > 0 { status = .verdict }
        if diagnostics.errorCount > 0 { status = status.worst(.failure) }
        return status
    }
}

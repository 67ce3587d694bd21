import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `detect-anomaly`: mark latency anomalies on rolling windows per monitor.
public enum DetectAnomalyCommand: VitalsCommand {
    /// The option table: parsing, `--help` and the man-page test all read it.
    public static let spec = CommandSpec(
        name: "detect-anomaly",
        summary: "Mark latency anomalies in sample records, per monitor, on rolling windows.",
        usage: ["[OPTIONS] [judge] [FILE...]", "[OPTIONS] feedback add MONITOR EPISODE VERDICT | sensitivity MONITOR LEVEL"],
        description: """
            Reads records from the FILEs (or standard input; - is standard input) and writes every valid one back \
            out, in order, every byte as it came, with an anomaly object added to each sample: verdict unknown, \
            stable or degrading, the detector's numbers, a score from 0 to 1, and its place in an anomaly episode \
            (the onset, the samples inside it, the sample that ends it). A degrading sample that is up \
            becomes degraded, with reason latency (isitup's rule). Records that are not samples pass through \
            untouched. With --feedback, the user's verdicts on past episodes (normal or anomaly) and sensitivities \
            per monitor (low, normal, high) steer what is raised; feedback add and feedback sensitivity append \
            them to that file. See detect-anomaly(1) for every rule, vitals-records(7) for the records.
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
            OptionSpec(
                "state", value: "FILE",
                help:
                    "load the monitors' windows from FILE at the start and save them there at the end; feedback add: take the episode from it, refusing one it does not remember"
            ),
            OptionSpec(
                "feedback", value: "FILE",
                help:
                    "the user's verdicts on episodes and sensitivities per monitor (NDJSON; with --state, envelope only): an onset like an episode called normal is not raised; feedback: the file a line is appended to"
            ),
            .duration("checkpoint", help: "with --state, also save the state this often during a long run"),
            OptionSpec("keep-status", help: "never change status, reason or message; only add the anomaly object"),
            OptionSpec("exit-status", short: "e", help: "exit 1 when any sample was degrading"),
            OptionSpec("summary", short: "s", help: "write a one-line summary to standard error at the end"),
        ],
        subcommands: [
            SubcommandSpec(
                "judge", operands: 0...Int.max, "[FILE...]",
                options: [
                    "detector", "field", "direction", "window", "min-samples", "threshold", "state", "feedback", "checkpoint",
                    "keep-status",
                    "exit-status", "summary",
                ],
                summary: "mark the samples of the FILEs (or standard input) and pass every record on (the default)"),
            SubcommandSpec(
                "feedback",
                actions: [
                    SubcommandAction(
                        FeedbackAction.add.rawValue, operands: 3...3, "MONITOR EPISODE VERDICT", options: ["feedback", "state"],
                        summary:
                            "append a verdict (normal or anomaly) on an episode (its id or its started_at) to the --feedback file; with --state, only on an episode the state remembers"
                    ),
                    SubcommandAction(
                        FeedbackAction.sensitivity.rawValue, operands: 2...2, "MONITOR LEVEL", options: ["feedback"],
                        summary: "append a monitor's sensitivity (low, normal or high) to the --feedback file"),
                ], requiresAction: true, summary: "append the user's word to the --feedback file"),
        ],
        defaultSubcommand: "judge",
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

    /// The subcommands.
    enum Subcommand: String, CaseIterable {
        case judge, feedback
    }

    /// What `feedback` does.
    enum FeedbackAction: String, CaseIterable {
        case add, sensitivity
    }

    /// Field names detect-anomaly reads or writes for itself, which `--field` may not name.
    static let reservedFields: Set<String> = ["type", "monitor", "status", "reason", "message", "simulated", "at", "anomaly"]

    /// The validated options.
    struct Configuration {
        var settings: DetectorSettings
        var statePath: String?
        var feedbackPath: String?
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
        if let feedback = options.value("feedback") {
            guard !feedback.isEmpty else { throw UsageError("--feedback wants a file name") }
            guard configuration.statePath != nil else {
                throw UsageError("--feedback only applies with --state: a verdict names an episode the state file remembers")
            }
            guard settings.detector == .envelope else { throw UsageError("--feedback applies to --detector envelope only") }
            configuration.feedbackPath = feedback
        }
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
        if options.subcommand(as: Subcommand.self) == .feedback { return try feedback(options, context) }
        let configuration = try configure(options)
        switch configuration.settings.detector {
        case .seed: return try run(SeedDetector.self, configuration, options.operands, context)
        case .mad: return try run(MADDetector.self, configuration, options.operands, context)
        case .robust: return try run(RobustDetector.self, configuration, options.operands, context)
        case .envelope: return try run(EnvelopeDetector.self, configuration, options.operands, context)
        }
    }

    /// `feedback add` and `feedback sensitivity`: checks the words, then appends one line to the --feedback file.
    private static func feedback(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        guard let path = options.value("feedback"), !path.isEmpty else {
            throw UsageError("feedback wants --feedback FILE: the file the verdicts are appended to")
        }
        let words = options.operands
        guard !words[0].isEmpty else { throw UsageError("MONITOR is empty: name the monitor's id") }
        var entry = FeedbackEntry(monitor: words[0])
        switch options.requiredAction(as: FeedbackAction.self) {
        case .sensitivity:
            guard let level = Sensitivity(rawValue: words[1]) else {
                throw UsageError("LEVEL is '\(words[1])': it is one of " + Sensitivity.allCases.map(\.rawValue).joined(separator: ", "))
            }
            entry.sensitivity = level
        case .add:
            guard let episode = FeedbackEntry.episode(words[1]) else {
                throw UsageError("EPISODE is '\(words[1])': name it by its id (1 or more) or its started_at (an RFC 3339 time)")
            }
            guard let verdict = EpisodeVerdict(rawValue: words[2]) else {
                throw UsageError("VERDICT is '\(words[2])': it is " + EpisodeVerdict.allCases.map(\.rawValue).joined(separator: " or "))
            }
            (entry.id, entry.startedAtMs, entry.verdict) = (episode.id, episode.startedAtMs, verdict)
            if let state = options.value("state") {
                // The state names the episode exactly: its id and when it began.
                let remembered = try AnomalyStateFile.episodes(state, of: entry.monitor)
                guard let found = remembered.first(where: { $0.id == entry.id || $0.startedAtMs == entry.startedAtMs }) else {
                    let known = remembered.isEmpty ? "none" : remembered.map { "\($0.id)" }.joined(separator: ", ")
                    throw ToolError(
                        "state file \(state) remembers no episode \(words[1]) of '\(entry.monitor)' (it remembers \(known)); nothing was written"
                    )
                }
                (entry.id, entry.startedAtMs) = (found.id, found.startedAtMs)
            }
        }
        try FeedbackFile.append(entry, to: path)
        return .success
    }

    /// Uses the verdicts of the feedback file at `path` on the monitors' memories; a line that is
    /// not a verdict, or a verdict that cannot be used, is reported (exit 2 at the end).
    private static func useFeedback<Detector: MonitorDetector>(
        _ path: String, monitors: MonitorTable<Detector>, diagnostics: Diagnostics
    ) throws(ToolError) {
        let (entries, problems) = try FeedbackFile.read(path)
        var reports = problems
        for (line, entry) in entries {
            if let sensitivity = entry.sensitivity {
                monitors.setSensitivity(sensitivity, of: entry.monitor)
                continue
            }
            guard let verdict = entry.verdict else { continue }
            let episode =
                entry.id.map { "episode \($0)" } ?? "the episode of \(entry.startedAtMs.map { Timestamp.format(milliseconds: $0) } ?? "")"
            guard let position = monitors.position(of: entry.monitor) else {
                reports.append(
                    (line, "\(verdict.rawValue) verdict on \(episode) of '\(entry.monitor)' not used: the state knows no such monitor"))
                continue
            }
            if case .refused(let why) = monitors.take(verdict, id: entry.id, startedAtMs: entry.startedAtMs, at: position) {
                reports.append((line, "\(verdict.rawValue) verdict on \(episode) of '\(entry.monitor)' not used: \(why)"))
            }
        }
        for (line, message) in reports.sorted(by: { $0.line < $1.line }) { diagnostics.error(message, source: path, line: line) }
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
        if let path = configuration.feedbackPath { try useFeedback(path, monitors: monitors, diagnostics: context.diagnostics) }
        let filter = AnomalyFilter(settings: settings, promotes: settings.promotes && !configuration.keepStatus, monitors: monitors)
        let output = context.output
        let diagnostics = context.diagnostics
        let checkpointNs = configuration.checkpointMs.map { UInt64($0) * 1_000_000 }
        var lastSave = Clock.monotonicNanoseconds()
        /// Whether a sample was judged since the state was last saved (a checkpoint saves only then).
        var judgedSinceSave = false

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
            /// With --checkpoint, saves the state when it is due and changed: at a line, or when the
            /// input pauses (a follower's lines come in bursts).
            func checkpointIfDue() throws {
                guard let checkpointNs, judgedSinceSave, Clock.monotonicNanoseconds() &- lastSave >= checkpointNs else { return }
                try output.flush()
                save()
                lastSave = Clock.monotonicNanoseconds()
                judgedSinceSave = false
            }
            reading: while let batch = try handoff.next(beforeWaiting: {
                try output.flush()
                try checkpointIfDue()
                // Changed since the last save: called again when the checkpoint is due.
                guard let checkpointNs, judgedSinceSave else { return nil }
                let elapsed = Clock.monotonicNanoseconds() &- lastSave
                return elapsed >= checkpointNs ? 0 : Int64((checkpointNs - elapsed) / 1_000_000) + 1
            }) {
                defer { handoff.recycle(batch) }
                for entry in batch.entries {
                    if Signals.stopRequested { break reading }
                    let line = batch.bytes(entry.start, entry.count)
                    switch entry.kind {
                    case .sample:
                        judgedSinceSave = true
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
                    try checkpointIfDue()
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

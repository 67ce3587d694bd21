import HTTPTransport
import ProbeKit
import VitalsKit

/// `probe-http`: probe HTTP(S) targets concurrently and write one `sample` record per probe.
public enum ProbeHTTPCommand: VitalsCommand {
    /// The option table: parsing, `--help` and the man-page test all read it.
    public static let spec = CommandSpec(
        name: "probe-http",
        summary: "Probe HTTP(S) targets concurrently and write one sample record per probe.",
        usage: ["[OPTIONS] [FILE...]", "--connectivity [OPTIONS] [URL]"],
        description: """
            Targets are read from the FILEs (or standard input; - is standard input), one per line as a bare URL \
            or a JSON target object, or as one JSON array of targets. Each probe uses a fresh connection: HEAD \
            first, GET when HEAD is refused (405, 501) or breaks the connection; GET when the body is checked. \
            Samples are written as NDJSON in the order probes finish. See probe-http(1) for every target field \
            and status rule, vitals-records(7) for the records.

            With --connectivity, check whether this machine is online instead (Online Now): fetch a success page \
            (URL, default \(ConnectivitySettings.defaultURL)) and look for its word, name the interface and link \
            type it left by, and measure the download speed (from \(ConnectivitySettings.defaultSpeedURL), --speed-url, \
            or not with --no-speed); one sample.
            """,
        options: ProbeRunOptions.limitOptions(noun: "probes", concurrency: 256, short: "c") + [
            .duration(
                "timeout", short: "t", default: DefaultText.duration(milliseconds: Int64(TargetDefaults().timeoutMs)), range: 1...3_600_000,
                help: "time budget of each probe when the target sets no timeout_seconds"),
            OptionSpec(
                "ok-ms", value: "MS",
                help: "latency above which a sample is degraded, for targets without http_ok_threshold_ms (default: none)"),
            OptionSpec(
                "degraded-ms", value: "MS",
                help: "latency above which a sample is down, for targets without http_degraded_threshold_ms (default: none)"),
            OptionSpec(
                "ssl-ok-days", value: "DAYS", default: String(TargetDefaults().sslOkDays),
                help: "certificate days left at or above which TLS is fine"),
            OptionSpec(
                "ssl-warning-days", value: "DAYS", default: String(TargetDefaults().sslWarningDays),
                help: "certificate days left below which the target is down"),
            OptionSpec(
                "ip", value: "FAMILY", default: "any", choices: IPChoice.words,
                help: "address family for targets without 'ip': 4, 6, both (one sample each) or any"),
            OptionSpec(
                "max-redirects", value: "N", default: String(TargetDefaults().maxRedirects),
                help: "redirects followed for targets without max_redirects"),
            OptionSpec("max-body", value: "SIZE", default: "1M", help: "body bytes read at most for content and hash checks"),
            OptionSpec("speed-test", help: "download speed_test_bytes (default 512000) from every target and report speed_mbps"),
            OptionSpec("speed-test-bytes", value: "SIZE", help: "bytes to download in a speed test; implies --speed-test"),
            OptionSpec("connectivity", help: "check whether this machine is online (the operand is the success page URL); one sample"),
            OptionSpec("expect", value: "TEXT", help: "with --connectivity, the text the success page must contain (default Success)"),
            OptionSpec(
                "speed-url", value: "URL", default: ConnectivitySettings.defaultSpeedURL,
                help: "with --connectivity, download --speed-test-bytes (default 512000) from URL and report speed_mbps"),
            OptionSpec("no-speed", help: "with --connectivity, measure no speed"),
            .duration(
                "page-timeout", default: DefaultText.duration(milliseconds: Int64(ConnectivitySettings.defaultPageTimeoutMs)),
                range: 1...3_600_000,
                help: "with --connectivity, time budget of the success page (Online Now's 60 s), apart from --timeout"),
            .duration(
                "speed-timeout", default: DefaultText.duration(milliseconds: Int64(ConnectivitySettings.defaultSpeedTimeoutMs)),
                range: 1...3_600_000,
                help: "with --connectivity, time budget of the speed test's download, apart from the page's"),
            OptionSpec(
                "confirm", value: "N", default: "0",
                help: "try a failing probe (down, error) again up to N more times in the same run; the sample keeps every attempt"),
            .duration("confirm-delay", default: "0s", range: 0...600_000, help: "the pause before each --confirm attempt"),
            OptionSpec("insecure", short: "k", help: "do not verify certificates (the expiry is still reported)"),
            OptionSpec("user-agent", value: "TEXT", help: "the User-Agent header (default vitals-probe-http/VERSION)"),
            OptionSpec(
                "simulate-latency", value: "MS",
                help: "add MS to each measured latency and mark the sample simulated (isitup's debug simulation)"),
        ] + ProbeRunOptions.runOptions,
        examples: [
            "probe-http targets.ndjson",
            "echo https://example.com/health | probe-http --summary",
            "probe-http --watch --interval 30s targets.ndjson | tee -a samples.ndjson",
            "probe-http --exit-status --only api targets.ndjson >/dev/null || echo 'api is not up'",
            "probe-http --connectivity 'https://example.com/content?text=Success' --speed-url https://example.com/bytes/512000",
        ],
        exitStatuses: [
            (.success, "every target was probed (whatever the verdicts)"),
            (.verdict, "with --exit-status, some sample was not up (with --connectivity: offline)"),
            (.failure, "bad target lines, unreadable files or unwritable output (the rest was still probed)"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT"),
            (.terminated, "stopped by SIGTERM"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "detect-anomaly(1)", "store-samples(1)"]
    )

    /// Runs probe-http.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        var defaults = TargetDefaults()
        var settings = ProbeSettings()
        let run = try ProbeRunOptions(options)
        settings.limits = run.limits
        settings.watch = run.watch
        defaults.intervalOverrideMs = run.intervalOverrideMs
        defaults.agent = run.agent
        defaults.timeoutMs = Int(try options.duration("timeout")!)
        if options.has("ok-ms") { defaults.okThresholdMs = try options.number("ok-ms", default: 0, in: 0...86_400_000) }
        if options.has("degraded-ms") { defaults.degradedThresholdMs = try options.number("degraded-ms", default: 0, in: 0...86_400_000) }
        if let ok = defaults.okThresholdMs, let degraded = defaults.degradedThresholdMs, degraded < ok {
            throw UsageError("--degraded-ms must not be below --ok-ms")
        }
        defaults.sslOkDays = try options.integer("ssl-ok-days", in: 0...3650)
        defaults.sslWarningDays = try options.integer("ssl-warning-days", in: 0...3650)
        if defaults.sslWarningDays > defaults.sslOkDays { throw UsageError("--ssl-warning-days must not be above --ssl-ok-days") }
        defaults.ip = IPChoice(rawValue: try options.choice("ip")) ?? .any
        defaults.maxRedirects = try options.integer("max-redirects", in: 0...50)
        settings.maxBodyBytes = try options.size("max-body", default: SizeText.parseBytes(options.valueOrDefault("max-body") ?? "") ?? 0)
        guard settings.maxBodyBytes > 0 else { throw UsageError("--max-body must be more than 0") }
        if options.has("speed-test-bytes") {
            let bytes = try options.size("speed-test-bytes", default: 512_000)
            guard bytes > 0, bytes <= 1 << 30 else { throw UsageError("--speed-test-bytes must be from 1 to 1G") }
            defaults.speedTestBytes = bytes
        } else if options.has("speed-test") {
            defaults.speedTestBytes = 512_000
        }
        defaults.insecure = options.has("insecure")
        if let agent = options.value("user-agent") { settings.userAgent = agent }
        settings.simulatedLatencyMs = try options.number("simulate-latency", default: 0, in: 0...3_600_000)
        settings.confirm = try options.integer("confirm", in: 0...10)
        settings.confirmDelayMs = try options.duration("confirm-delay")!
        if options.has("connectivity") {
            return try runConnectivity(options, context, defaults: defaults, settings: settings)
        }
        for connectivityOnly in ["expect", "speed-url", "no-speed", "page-timeout", "speed-timeout"] where options.has(connectivityOnly) {
            throw UsageError("--\(connectivityOnly) only applies with --connectivity")
        }

        var parser = TargetParser(defaults: defaults, diagnostics: context.diagnostics)
        Inputs(options.operands, stdin: context.streams.input).forEach(diagnostics: context.diagnostics) { reader in
            parser.read(reader)
        }
        parser.refuseCycles()
        if let stop = Signals.stopStatus { return stop }
        let targets = try ProbeRunOptions.only(options, parser.targets, id: \.id, name: \.name, host: \.host)
        let runner = ProbeRunner(targets: targets, settings: settings, output: context.output)
        runner.progress = ProbeProgress(context.progressLine(options), tool: spec.name, probes: runner.probeCount, watch: settings.watch)
        // Switched-off targets are not probed; the run states them once, as `monitor` records.
        let switchedOff = options.has("only") ? [] : MonitorRecord.records(parser.switchedOff, atMs: Clock.wallMilliseconds())
        let tally: () -> ProbeTally = { runner.tally }
        return try ProbeRunOptions.finish(options, context, tally: tally) {
            for record in switchedOff { try context.output.write(record) }
            try runner.run()
        }
    }

    /// `--connectivity [URL]`: Online Now's check, one sample (or one per interval with --watch).
    static func runConnectivity(
        _ options: ParsedOptions, _ context: ToolContext, defaults: TargetDefaults,
        settings: ProbeSettings
    ) throws -> ExitStatus {
        guard options.operands.count <= 1 else {
            throw UsageError("--connectivity takes one URL (the success page), not \(options.operands.count) operands")
        }
        for fileOnly in ["only", "simulate-latency", "speed-test", "per-host", "rate", "confirm", "confirm-delay"]
        where options.has(fileOnly) {
            throw UsageError("--\(fileOnly) does not apply with --connectivity")
        }
        if options.has("timeout") {
            throw UsageError(
                "--timeout is each target's budget; with --connectivity the success page's is --page-timeout (default 60s, Online Now's)")
        }
        var check = ConnectivitySettings()
        if let url = options.operands.first { check.url = url }
        if let expected = options.value("expect") {
            guard !expected.isEmpty else { throw UsageError("--expect must not be empty") }
            check.expected = expected
        }
        if options.has("no-speed") {
            guard !options.has("speed-url") else { throw UsageError("--no-speed and --speed-url contradict each other; give one") }
            check.speedURL = nil
        } else if let speedURL = options.value("speed-url") {
            check.speedURL = speedURL
        }
        check.speedTimeoutMs = Int(try options.duration("speed-timeout")!)
        if let speedURL = check.speedURL {
            let scheme = URLText(speedURL).scheme
            guard scheme == "http" || scheme == "https" else {
                throw UsageError("--speed-url must be an http:// or https:// URL, not '\(Redaction.url(speedURL))'")
            }
        }
        check.speedBytes = defaults.speedTestBytes ?? 512_000
        check.timeoutMs = Int(try options.duration("page-timeout")!)
        check.watch = settings.watch
        check.intervalMs = defaults.intervalOverrideMs ?? 60_000
        check.insecure = defaults.insecure
        check.agent = defaults.agent
        check.userAgent = settings.userAgent
        switch defaults.ip {
        case .v4: check.family = .v4
        case .v6: check.family = .v6
        case .any: check.family = .any
        case .both: throw UsageError("--ip both does not apply with --connectivity (use 4 or 6)")
        }
        let runner: ConnectivityCheck
        do {
            runner = try ConnectivityCheck(settings: check, output: context.output)
        } catch {
            throw UsageError(error.message)
        }
        runner.progress = ProbeProgress(context.progressLine(options), tool: spec.name, probes: 1, watch: check.watch)
        let tally: () -> ProbeTally = { runner.tally }
        return try ProbeRunOptions.finish(options, context, tally: tally) { try runner.run() }
    }
}

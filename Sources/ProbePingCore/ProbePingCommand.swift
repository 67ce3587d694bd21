import ProbeKit
import VitalsKit

/// `probe-ping`: ICMP echo and TCP connect probes, one `sample` record per target.
public enum ProbePingCommand: VitalsCommand {
    /// The option table: parsing, `--help` and the man-page test all read it.
    public static let spec = CommandSpec(
        name: "probe-ping",
        summary: "Ping hosts (ICMP echo) and time TCP connections, many at once; one sample record per target.",
        usage: ["[OPTIONS] [FILE...]"],
        description: """
            Targets are read from the FILEs (or standard input; - is standard input), one per line as a bare host \
            (192.0.2.1, ::1, db.example), host:port or tcp://host:port, or a JSON target object. A ping sample sends \
            ping_count echo requests (default 5) one period apart and reports the round trips as ping(8) does; a tcp \
            sample times the connection (and a TLS handshake with tls: true). Without root, ICMP needs datagram \
            sockets allowed by net.ipv4.ping_group_range, or CAP_NET_RAW. Samples are written as NDJSON in the \
            order they finish. See probe-ping(1) for every field and rule, vitals-records(7) for the records.
            """,
        options: [
            OptionSpec(
                "count", value: "N", default: String(PingDefaults().count),
                help: "echo requests per sample for targets without ping_count (at most 10)"),
            .duration(
                "period", default: DefaultText.duration(milliseconds: Int64(PingDefaults().periodMs)), range: 10...3_600_000,
                help: "time between the echo requests of one sample"),
            .duration(
                "timeout", short: "t", default: DefaultText.duration(milliseconds: Int64(PingDefaults().timeoutMs)), range: 1...3_600_000,
                help: "wait for each reply, or for a tcp connection, when the target sets no timeout_seconds"),
            OptionSpec(
                "ok-ms", value: "MS", default: DefaultText.number(PingDefaults().okThresholdMs),
                help: "average round trip above which a sample is degraded, for targets without ping_ok_threshold_ms"),
            OptionSpec(
                "degraded-ms", value: "MS", default: DefaultText.number(PingDefaults().degradedThresholdMs),
                help: "average round trip above which a sample is down, for targets without ping_degraded_threshold_ms"),
            OptionSpec(
                "max-loss", value: "PERCENT", default: DefaultText.number(PingDefaults().maxLossPercent),
                help: "loss above which a sample is down, for targets without max_loss_percent"),
            OptionSpec(
                "ip", value: "FAMILY", default: "any", choices: IPChoice.words,
                help: "address family for names without 'ip': 4, 6, both (one sample each) or any"),
            OptionSpec(
                "socket", value: "KIND", default: "auto", choices: ICMPSocketChoice.allCases.map(\.rawValue),
                help: "ICMP sockets: auto (datagram where allowed, else raw), datagram or raw"),
            OptionSpec(
                "ssl-ok-days", value: "DAYS", default: String(PingDefaults().sslOkDays),
                help: "for tls targets, certificate days left at or above which TLS is fine"),
            OptionSpec(
                "ssl-warning-days", value: "DAYS", default: String(PingDefaults().sslWarningDays),
                help: "for tls targets, certificate days left below which the target is down"),
        ] + ProbeRunOptions.limitOptions(noun: "samples", concurrency: 1024, short: nil) + ProbeRunOptions.runOptions,
        examples: [
            "echo 127.0.0.1 | probe-ping",
            "probe-ping --count 3 --period 200ms --summary hosts.ndjson",
            "echo '{\"target\":\"tcp://example.com:443\",\"tls\":true}' | probe-ping",
            "probe-ping --watch --interval 30s hosts.ndjson | store-samples --db vitals.db --quiet",
        ],
        exitStatuses: [
            (.success, "every target was probed (whatever the verdicts)"),
            (.verdict, "with --exit-status, some sample was not up"),
            (.failure, "bad target lines, unreadable files, unwritable output, or ICMP not allowed (the rest was still probed)"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT"),
            (.terminated, "stopped by SIGTERM"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "probe-http(1)", "store-samples(1)", "ping(8)"]
    )

    /// Runs probe-ping.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> ExitStatus {
        var defaults = PingDefaults()
        var settings = PingSettings()
        defaults.count = try options.integer("count", in: PingDefaults.countRange)
        defaults.periodMs = Int(try options.duration("period")!)
        defaults.timeoutMs = Int(try options.duration("timeout")!)
        defaults.okThresholdMs = try options.number("ok-ms", in: 0...86_400_000)
        defaults.degradedThresholdMs = try options.number("degraded-ms", in: 0...86_400_000)
        if defaults.degradedThresholdMs < defaults.okThresholdMs {
            throw UsageError("--degraded-ms must not be below --ok-ms")
        }
        defaults.maxLossPercent = try options.number("max-loss", in: 0...100)
        defaults.ip = IPChoice(rawValue: try options.choice("ip")) ?? .any
        settings.socketChoice = ICMPSocketChoice(rawValue: try options.choice("socket")) ?? .auto
        defaults.sslOkDays = try options.integer("ssl-ok-days", in: 0...3650)
        defaults.sslWarningDays = try options.integer("ssl-warning-days", in: 0...3650)
        if defaults.sslWarningDays > defaults.sslOkDays { throw UsageError("--ssl-warning-days must not be above --ssl-ok-days") }
        let run = try ProbeRunOptions(options)
        settings.limits = run.limits
        settings.watch = run.watch
        defaults.intervalOverrideMs = run.intervalOverrideMs
        defaults.agent = run.agent

        var parser = PingTargetParser(defaults: defaults, diagnostics: context.diagnostics)
        Inputs(options.operands, stdin: context.streams.input).forEach(diagnostics: context.diagnostics) { reader in
            parser.read(reader)
        }
        parser.refuseCycles()
        if let stop = Signals.stopStatus { return stop }
        let targets = try ProbeRunOptions.only(options, parser.targets, id: \.id, name: \.name, host: \.host)
        let runner = PingRunner(targets: targets, settings: settings, output: context.output, diagnostics: context.diagnostics)
        runner.progress = ProbeProgress(context.progressLine(options), tool: spec.name, probes: runner.probeCount, watch: settings.watch)
        // Switched-off targets are not probed; the run states them once, as `monitor` records.
        let switchedOff = options.has("only") ? [] : MonitorRecord.records(parser.switchedOff, atMs: Clock.wallMilliseconds())
        let tally: () -> ProbeTally = { runner.tally }
        return try ProbeRunOptions.finish(options, context, tally: tally) {
            for record in switchedOff { try context.output.write(record) }
            try runner.run()
        }
    }
}

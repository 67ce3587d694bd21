import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The options every probe shares: how many at once (`--concurrency`, `--per-host`, `--rate`),
/// `--watch` and `--interval`, `--only`, `--summary`, `--exit-status` and `--agent`.
public struct ProbeRunOptions: Sendable {
    /// The limits on starting probes.
    public var limits: ProbeLimits
    /// Probe forever, each target every `check_interval`.
    public var watch: Bool
    /// `--interval`: overrides every target's `check_interval`.
    public var intervalOverrideMs: Int64?
    /// `--agent`: the agent every sample names; nil without it (or with `--agent ''`): the
    /// machine that probes is no agent (OnlineTracker's own monitors have `agent_id: null`).
    public var agent: String?

    /// `--concurrency`, `--per-host` and `--rate`, for a tool whose probes are `noun`
    /// (`probes`, `samples`); `short` gives `--concurrency` a short form.
    public static func limitOptions(noun: String, concurrency: Int, short: Character?) -> [OptionSpec] {
        [
            OptionSpec("concurrency", short: short, value: "N", default: String(concurrency), help: "\(noun) in flight at once"),
            OptionSpec("per-host", value: "N", help: "\(noun) in flight at once against one host (default: no limit)"),
            OptionSpec("rate", value: "R", help: "new \(noun) started per second at most, overall (default: no limit)"),
        ]
    }

    /// `--only`, `--watch`, `--interval`, `--exit-status`, `--summary`, `--agent`, `--progress` and `--no-progress`.
    public static let runOptions: [OptionSpec] =
        [
            OptionSpec(
                "only", value: "NAME", repeatable: true,
                help:
                    "probe only the target whose id is NAME, else the one best matching it (exact name, exact host, partial name, partial host); repeatable"
            ),
            OptionSpec("watch", short: "w", help: "probe each target every check_interval seconds until interrupted"),
            .duration("interval", short: "i", help: "with --watch, probe every target this often instead of its check_interval"),
            OptionSpec("exit-status", short: "e", help: "exit 1 when any sample is not up"),
            OptionSpec("summary", short: "s", help: "write a one-line summary to standard error at the end"),
            OptionSpec(
                "agent", value: "NAME",
                help: "the agent the samples come from, written as each sample's agent (default: none; a target's own agent wins)"),
        ] + OptionSpec.progress(nil, "a status line")

    /// Reads the shared options (the defaults are the option table's).
    public init(_ options: ParsedOptions) throws(UsageError) {
        limits = ProbeLimits(concurrency: try options.integer("concurrency", in: 1...65_536))
        if options.has("per-host") { limits.perHost = try options.integer("per-host", default: 0, in: 1...65_536) }
        if options.has("rate") { limits.ratePerSecond = try options.number("rate", default: 0, in: 0.001...1_000_000) }
        watch = options.has("watch")
        if options.has("interval") {
            guard watch else { throw UsageError("--interval only applies with --watch") }
            intervalOverrideMs = try options.duration("interval")
        }
        let agent = options.value("agent") ?? ""
        self.agent = agent.isEmpty ? nil : agent
    }

    /// `--only NAME`, repeatable: for each NAME the target whose id it is (a monitor id as samples
    /// and notifications carry it, isitup's UUIDs in any case, `ID/ipv4` or `ID/ipv6` naming the target
    /// `ID`), else the one best matching it by isitup's "check one service" order; all of them without
    /// the option. The targets keep their order in the input, each once. A NAME that matches
    /// nothing is a usage error listing the closest names.
    public static func only<Item>(
        _ options: ParsedOptions, _ items: [Item], id: (Item) -> String, name: (Item) -> String, host: (Item) -> String
    ) throws(UsageError) -> [Item] {
        let queries = options.all("only")
        guard !queries.isEmpty else { return items }
        let ids = items.map(id)
        let names = items.map { (name: name($0), host: host($0)) }
        var chosen = Set<Int>()
        for query in queries {
            if let index = NameMatcher.idMatch(query, in: ids) ?? NameMatcher.bestMatch(query, in: names) {
                chosen.insert(index)
                continue
            }
            let near = NameMatcher.closestNames(query, among: items.map(name))
            let hint = near.isEmpty ? "there are no targets" : "closest: " + near.joined(separator: ", ")
            throw UsageError("no target matches '\(query)' (\(hint))")
        }
        return chosen.sorted().map { items[$0] }
    }

    /// Runs `body` (a probe run) to its end; a reader that went away (`| head`) ends it cleanly.
    /// Then the exit status from what was written: `--summary` on standard error, 1 for a sample
    /// not up with `--exit-status`, 2 after errors.
    public static func finish(
        _ options: ParsedOptions, _ context: ToolContext, tally: () -> ProbeTally,
        running body: () throws -> Void
    ) throws -> ExitStatus {
        do {
            try body()
        } catch is BrokenPipe {
            // The reader downstream has what it wanted.
        }
        var status = ExitStatus.success
        if options.has("summary") { context.diagnostics.note(tally().line) }
        if options.has("exit-status"), tally().anyNotUp { status = .verdict }
        if context.diagnostics.errorCount > 0 { status = status.worst(.failure) }
        return status
    }
}

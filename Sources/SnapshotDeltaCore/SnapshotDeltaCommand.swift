import Foundation
import VitalsKit

/// `snapshot-delta`: HealthProbe's integrity chain for health records, on the command line.
public enum SnapshotDeltaCommand: VitalsCommand {
    /// The subcommands, with their operands and the options each accepts (beyond --db and --now).
    static let subcommands: [(name: String, operands: String, options: Set<String>)] = [
        ("take", "[FILE...]", ["format", "registry", "device-id-file", "timezone", "trigger", "post-restore", "no-samples",
                               "exit-status", "sync-types", "sync-change", "duplication-change", "duplication-window",
                               "deletion-warning", "deletion-critical", "restore-records"]),
        ("list", "", ["format"]),
        ("show", "ID", ["format"]),
        ("diff", "A B", ["format", "exit-status", "sync-types", "sync-change", "duplication-change", "duplication-window",
                         "deletion-warning", "deletion-critical"]),
        ("verify", "", []),
        ("delete", "ID", ["preview", "force", "sync-types", "sync-change", "duplication-change", "duplication-window",
                          "deletion-warning", "deletion-critical"]),
        ("log", "", []),
        ("samples", "", ["type", "from", "to", "offset", "limit", "format"]),
        ("disappeared", "A B", ["format"]),
    ]

    /// The option table.
    public static let spec = CommandSpec(
        name: "snapshot-delta",
        summary: "Integrity snapshots of health records: a hash chain of per-type counts, deltas, anomaly rules and the samples themselves.",
        usage: ["[OPTIONS] take [FILE...]", "[OPTIONS] list | show ID | diff A B | verify | log",
                "[OPTIONS] delete ID [--preview]", "[OPTIONS] samples --type TYPE | disappeared A B"],
        description: """
        take reads an Apple Health export.xml (streamed with libxml2, its DTD ignored) or NDJSON health_record \
        and type_status lines, counts the records per type, and adds a snapshot to the chain in the archive: \
        type hashes, a checksum over the complete types, the delta from the previous snapshot with a reason per \
        type, and HealthProbe's anomaly rules. Any error in the input means no snapshot. The other subcommands \
        read and check the chain, delete a snapshot from any position, and query the archived samples. \
        See snapshot-delta(1) for every rule, vitals-records(7) for the records.
        """,
        options: [
            OptionSpec("db", short: "d", value: "PATH", help: "the archive (default $VITALS_HEALTH_DB, else health.db)"),
            OptionSpec("format", short: "f", value: "FORMAT", help: "take: auto (default), apple-health or ndjson; list, show, diff: ndjson (default) or text; samples, disappeared: ndjson (default) or csv"),
            OptionSpec("registry", short: "r", value: "FILE", help: "take: the monitored types, one identifier a line (default: every type in the input)"),
            OptionSpec("device-id-file", value: "FILE", help: "take: the stable device id, kept outside the archive (default $XDG_CONFIG_HOME/vitals/device-id)"),
            OptionSpec("timezone", value: "ZONE", help: "take: the time zone of the yearly counts (default $TZ, else the system's)"),
            OptionSpec("trigger", value: "WORD", help: "take: what asked for the snapshot, recorded with it (default manual)"),
            OptionSpec("post-restore", help: "take: mark the snapshot as a baseline after a restore"),
            OptionSpec("no-samples", help: "take: count and chain only; do not archive the samples themselves"),
            OptionSpec("exit-status", short: "e", help: "take, diff: exit 1 when an anomaly is found"),
            OptionSpec("now", value: "TIME", help: "the time taken as now, RFC 3339 (default: the clock)"),
            OptionSpec("preview", help: "delete: say what deleting would do, change nothing"),
            OptionSpec("force", help: "delete: delete even when the chain will not verify afterwards"),
            OptionSpec("type", short: "t", value: "TYPE", help: "samples: the type identifier (required)"),
            OptionSpec("from", value: "WHEN", help: "samples: from this time (RFC 3339) or this long ago (7d); default the beginning"),
            OptionSpec("to", value: "WHEN", help: "samples: before this time or this long ago; default no end"),
            OptionSpec("offset", value: "N", help: "samples: skip the N newest (default 0)"),
            OptionSpec("limit", short: "n", value: "N", help: "samples: at most N samples (default 1000)"),
            OptionSpec("sync-types", value: "N", help: "a sync anomaly needs N types changing at once (default 4)"),
            OptionSpec("sync-change", value: "PCT", help: "the change of a type that counts towards a sync anomaly, percent (default 10)"),
            OptionSpec("duplication-change", value: "PCT", help: "growth above which a type with unchanged dates is a duplication, percent (default 50)"),
            OptionSpec("duplication-window", value: "DURATION", help: "how far the date range may move for a duplication (default 1d)"),
            OptionSpec("deletion-warning", value: "PCT", help: "share lost from which a deletion is a warning, percent (default 10)"),
            OptionSpec("deletion-critical", value: "PCT", help: "share lost from which a deletion is critical, percent (default 50)"),
            OptionSpec("restore-records", value: "N", help: "take: a chain start with more records is a post-restore baseline (default 1000)"),
        ],
        examples: [
            "snapshot-delta --db health.db take export.xml",
            "unzip -p export.zip apple_health_export/export.xml | snapshot-delta take -",
            "snapshot-delta list --format text",
            "snapshot-delta verify || echo 'the chain is broken'",
            "snapshot-delta disappeared 1 2 --format csv",
        ],
        exitStatuses: [
            (.success, "done (verify: the chain is intact)"),
            (.verdict, "verify found a fault; take or diff with --exit-status found an anomaly"),
            (.failure, "an error: the input had errors (no snapshot was taken), an unknown snapshot, an archive that cannot be read or written"),
            (.usage, "the command line was wrong"),
            (.interrupted, "stopped by SIGINT (no snapshot was taken)"),
            (.terminated, "stopped by SIGTERM (likewise)"),
        ],
        seeAlso: ["vitals(7)", "vitals-records(7)", "store-samples(1)", "xmllint(1)"]
    )

    /// Runs snapshot-delta.
    public static func run(_ options: ParsedOptions, _ context: ToolContext) throws -> VitalsKit.ExitStatus {
        var operands = options.operands
        guard let first = operands.first else {
            throw UsageError("name a subcommand: " + subcommands.map(\.name).joined(separator: ", "))
        }
        guard let entry = subcommands.first(where: { $0.name == first }) else {
            let near = ArgumentParser.closest(first, among: subcommands.map(\.name)).map { " (did you mean '\($0)'?)" } ?? ""
            throw UsageError("unknown subcommand '\(first)'\(near)")
        }
        operands.removeFirst()
        for option in spec.options.map(\.long) where option != "db" && option != "now" && options.has(option)
            && !entry.options.contains(option) {
            throw UsageError("--\(option) does not apply to \(entry.name)")
        }
        let path = options.value("db") ?? context.environment["VITALS_HEALTH_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "health.db"
        var fixedNow: Int64?
        if let text = options.value("now") {
            guard let parsed = Timestamp.parse(text) else { throw UsageError("--now wants an RFC 3339 time such as 2026-01-27T10:30:00Z, not '\(text)'") }
            fixedNow = parsed
        }
        let now: () -> Int64 = { fixedNow ?? Clock.wallMilliseconds() }
        let rules = try anomalyRules(options)
        let run = Run(options: options, context: context, path: path, now: now, rules: rules)

        func count(_ wanted: Int) throws {
            guard operands.count == wanted else {
                throw UsageError("\(entry.name) wants \(entry.operands.isEmpty ? "no operands" : entry.operands)"
                                 + (operands.count > wanted ? ", not '\(operands[wanted])'" : ""))
            }
        }
        switch entry.name {
        case "take": return try run.take(operands)
        case "list": try count(0); return try run.list()
        case "show": try count(1); return try run.show(operands[0])
        case "diff": try count(2); return try run.diff(operands[0], operands[1])
        case "verify": try count(0); return try run.verify()
        case "delete": try count(1); return try run.delete(operands[0])
        case "log": try count(0); return try run.log()
        case "samples": try count(0); return try run.samples()
        default: try count(2); return try run.disappeared(operands[0], operands[1])
        }
    }

    static func anomalyRules(_ options: ParsedOptions) throws -> AnomalyRules {
        var rules = AnomalyRules()
        rules.syncMinTypes = try options.integer("sync-types", default: rules.syncMinTypes, in: 1...100_000)
        rules.syncChangePercent = try options.number("sync-change", default: rules.syncChangePercent, in: 0...1_000_000)
        rules.duplicationChangePercent = try options.number("duplication-change", default: rules.duplicationChangePercent, in: 0...1_000_000)
        rules.duplicationWindowMs = try options.duration("duplication-window", default: rules.duplicationWindowMs) ?? rules.duplicationWindowMs
        rules.deletionWarningPercent = try options.number("deletion-warning", default: rules.deletionWarningPercent, in: 0...100)
        rules.deletionCriticalPercent = try options.number("deletion-critical", default: rules.deletionCriticalPercent, in: 0...100)
        if rules.deletionCriticalPercent < rules.deletionWarningPercent {
            throw UsageError("--deletion-critical must not be below --deletion-warning")
        }
        return rules
    }
}

/// One invocation's shared state and the subcommands' bodies.
struct Run {
    let options: ParsedOptions
    let context: ToolContext
    let path: String
    let now: () -> Int64
    let rules: AnomalyRules

    var writer: RecordWriter { context.output }

    func write(_ object: JSONObject) throws { try writer.write(JSONValue.object(object).encoded()) }

    func outputFormat(_ choices: [String]) throws -> String {
        try options.choice("format", of: choices, default: choices[0])
    }

    // MARK: take

    func take(_ operands: [String]) throws -> VitalsKit.ExitStatus {
        var settings = TakeSettings()
        switch try options.choice("format", of: ["auto", "apple-health", "ndjson"], default: "auto") {
        case "apple-health": settings.format = .appleHealth
        case "ndjson": settings.format = .ndjson
        default: settings.format = .auto
        }
        if let file = options.value("registry") { settings.registry = try Run.readRegistry(file) }
        settings.timezone = options.value("timezone") ?? YearCalendar.defaultIdentifier(environment: context.environment)
        guard YearCalendar(identifier: settings.timezone) != nil else {
            throw UsageError("--timezone wants a time zone name such as UTC or Europe/Paris, not '\(settings.timezone)'")
        }
        if let trigger = options.value("trigger") {
            guard !trigger.isEmpty, trigger.utf8.count <= 64, trigger.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw UsageError("--trigger wants a word (letters, digits, _ and -), not '\(trigger)'")
            }
            settings.trigger = trigger
        }
        settings.postRestore = options.has("post-restore")
        settings.archiveSamples = !options.has("no-samples")
        settings.rules = rules
        settings.restoreRecords = Int64(try options.integer("restore-records", default: 1000, in: 0...Int(Int32.max)))
        guard let devicePath = options.value("device-id-file") ?? DeviceIdentity.defaultPath(environment: context.environment) else {
            throw UsageError("no place for the device id: set HOME or name a file with --device-id-file")
        }
        settings.deviceIDPath = devicePath
        settings.now = now
        if operands.filter({ $0 == "-" }).count > 1 { throw UsageError("standard input (-) can be read once") }

        let archive = try Archive(path: path, create: true)
        let taker = Taker(archive: archive, settings: settings, diagnostics: context.diagnostics)
        guard let result = try taker.take(operands, stdin: context.streams.input) else {
            return Signals.stopStatus ?? .failure
        }
        try write(Records.snapshot(result.snapshot, types: true))
        if let delta = result.delta { try write(Records.delta(delta)) }
        for anomaly in result.anomalies { try write(Records.anomaly(anomaly)) }
        if context.diagnostics.errorCount > 0 { return .failure }
        return options.has("exit-status") && !result.anomalies.isEmpty ? .verdict : .success
    }

    /// Reads a registry file: one type identifier a line; blank lines and `#` comments ignored.
    static func readRegistry(_ file: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ToolError("cannot read the registry \(file): \(String(cString: strerror(errno)))")
        }
        var names: [String] = []
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let name = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        if names.isEmpty { throw ToolError("the registry \(file) names no type") }
        return names
    }

    // MARK: reading the chain

    func list() throws -> VitalsKit.ExitStatus {
        let format = try outputFormat(["ndjson", "text"])
        let archive = try Archive(path: path, create: false)
        let snapshots = try archive.snapshots(types: true)
        if format == "text" {
            try writer.write(SnapshotText.list(snapshots, anomalies: try snapshots.map { try anomalyCount(archive, into: $0) }))
        } else {
            for snapshot in snapshots { try write(Records.snapshot(snapshot, types: false)) }
        }
        return .success
    }

    private func anomalyCount(_ archive: Archive, into snapshot: Snapshot) throws -> Int {
        guard let delta = try archive.storedDelta(to: snapshot.id) else { return 0 }
        return try archive.anomalies(deltaID: delta.delta.id).count
    }

    func show(_ reference: String) throws -> VitalsKit.ExitStatus {
        let format = try outputFormat(["ndjson", "text"])
        let archive = try Archive(path: path, create: false)
        let snapshot = try archive.resolve(reference)
        let delta = try archive.storedDelta(to: snapshot.id)?.delta
        let anomalies = try delta.map { try archive.anomalies(deltaID: $0.id) } ?? []
        if format == "text" {
            try writer.write(SnapshotText.show(snapshot, delta: delta, anomalies: anomalies))
            return .success
        }
        try write(Records.snapshot(snapshot, types: true))
        if let delta { try write(Records.delta(delta)) }
        for anomaly in anomalies { try write(Records.anomaly(anomaly)) }
        return .success
    }

    func diff(_ first: String, _ second: String) throws -> VitalsKit.ExitStatus {
        let format = try outputFormat(["ndjson", "text"])
        let archive = try Archive(path: path, create: false)
        let a = try archive.resolve(first)
        let b = try archive.resolve(second)
        let time = now()
        let delta = DeltaBuilder.delta(id: UUID().uuidString.lowercased(), from: a, to: b, at: time)
        let detection = AnomalyDetector.detect(previous: a, current: b, delta: delta, rules: rules, at: time,
                                               newID: { UUID().uuidString.lowercased() })
        if format == "text" {
            try writer.write(SnapshotText.delta(delta, anomalies: detection.anomalies))
        } else {
            try write(Records.delta(delta, ephemeral: true))
            for anomaly in detection.anomalies { try write(Records.anomaly(anomaly)) }
        }
        return options.has("exit-status") && !detection.anomalies.isEmpty ? .verdict : .success
    }

    // MARK: verify, delete, log

    func verify() throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: false)
        let result = try Integrity.validate(archive)
        let time = now()
        let detail = JSONObject([JSONField("status", .string(result.status.rawValue)), JSONField("checked", .integer(result.checked)),
                                 JSONField("message", .string(result.message))])
        _ = try archive.withLoggedChange("verify", snapshotIDs: result.snapshotID.map { [$0] } ?? [], at: time,
                                         diagnostics: context.diagnostics) { ((), detail) }
        try write(JSONObject([
            JSONField("type", .string("verification")), JSONField("at", Records.time(time)),
            JSONField("status", .string(result.status.rawValue)), JSONField("snapshot_id", Records.string(result.snapshotID)),
            JSONField("checked", .integer(result.checked)), JSONField("message", .string(result.message)),
        ]))
        if result.status != .valid {
            context.diagnostics.note("verify: \(result.message)")
            return .verdict
        }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    func delete(_ reference: String) throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: false)
        let snapshot = try archive.resolve(reference)
        let time = now()
        let plan = try Lifecycle.plan(snapshot, in: archive, rules: rules, at: time)
        let preview = options.has("preview")
        if !preview, plan.willBreakChain, !options.has("force") {
            throw ToolError("deleting snapshot \(snapshot.id) would leave a chain that does not verify (\(plan.integrity.message)); see it with --preview, or delete anyway with --force")
        }
        var removedAnomalies: [String] = []
        var samplesRemoved: Int64?
        if !preview {
            let outcome = try Lifecycle.execute(plan, in: archive, forced: options.has("force"), at: time, diagnostics: context.diagnostics)
            removedAnomalies = outcome.removedAnomalyIDs
            samplesRemoved = outcome.samplesRemoved
        } else {
            for id in plan.removedDeltaIDs { removedAnomalies += try archive.anomalies(deltaID: id).map(\.id) }
        }
        try write(JSONObject([
            JSONField("type", .string("deletion")), JSONField("at", Records.time(time)), JSONField("preview", .bool(preview)),
            JSONField("snapshot_id", .string(snapshot.id)), JSONField("position", .string(plan.position.rawValue)),
            JSONField("previous_snapshot_id", Records.string(plan.previous?.id)),
            JSONField("next_snapshot_id", Records.string(plan.next?.id)),
            JSONField("will_break_chain", .bool(plan.willBreakChain)),
            JSONField("integrity", .string(plan.integrity.status.rawValue)),
            JSONField("removed_delta_ids", Records.strings(plan.removedDeltaIDs)),
            JSONField("removed_anomaly_ids", Records.strings(removedAnomalies)),
            JSONField("merged_delta_id", Records.string(plan.merged?.id)),
            JSONField("rearms_post_restore_token", .bool(plan.rearmsPostRestoreToken)),
            JSONField("samples_removed", Records.int(samplesRemoved)),
        ]))
        if let merged = plan.merged {
            try write(Records.delta(merged))
            for anomaly in plan.mergedAnomalies { try write(Records.anomaly(anomaly)) }
        }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    func log() throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: false)
        for entry in try archive.operations() { try write(Records.operation(entry)) }
        return .success
    }

    // MARK: samples

    func when(_ option: String) throws -> Int64? {
        guard let text = options.value(option) else { return nil }
        if let time = Timestamp.parse(text) { return time }
        if let ago = DurationText.parseMilliseconds(text) { return now() - ago }
        throw UsageError("--\(option) wants an RFC 3339 time or a duration such as 7d, not '\(text)'")
    }

    func samples() throws -> VitalsKit.ExitStatus {
        guard let type = options.value("type"), !type.isEmpty else { throw UsageError("samples wants --type TYPE") }
        let format = try outputFormat(["ndjson", "csv"])
        let from = try when("from") ?? Int64.min / 2
        let to = try when("to") ?? Int64.max / 2
        let offset = try options.integer("offset", default: 0, in: 0...Int(Int32.max))
        let limit = try options.integer("limit", default: 1000, in: 1...1_000_000)
        let archive = try Archive(path: path, create: false)
        if format == "csv" { try writer.write(Records.csvColumns.joined(separator: ",")) }
        var detail = JSONObject([
            JSONField("type_identifier", .string(type)), JSONField("from", options.has("from") ? Records.time(from) : .null),
            JSONField("to", options.has("to") ? Records.time(to) : .null), JSONField("offset", .integer(offset)),
            JSONField("limit", .integer(limit)),
        ])
        // The access is logged with what it returned (Health Sync's audit log).
        let returned = try archive.samples(type: type, from: from, to: to, offset: offset, limit: limit) { sample in
            if format == "csv" { try writer.write(Records.csvRow(sample)) } else { try write(Records.sample(sample)) }
        }
        detail["returned"] = .integer(returned)
        _ = try archive.withLoggedChange("samples", snapshotIDs: [], at: now(), diagnostics: context.diagnostics) { ((), detail) }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    func disappeared(_ first: String, _ second: String) throws -> VitalsKit.ExitStatus {
        let format = try outputFormat(["ndjson", "csv"])
        let archive = try Archive(path: path, create: false)
        let a = try archive.resolve(first)
        let b = try archive.resolve(second)
        guard a.seq < b.seq else { throw ToolError("disappeared wants the older snapshot first (\(a.id) is not older than \(b.id))") }
        for snapshot in [a, b] where !snapshot.samplesArchived {
            throw ToolError("snapshot \(snapshot.id) was taken with --no-samples: its samples are not in the archive")
        }
        if format == "csv" { try writer.write(Records.csvColumns.joined(separator: ",")) }
        let returned = try archive.disappeared(from: a.seq, to: b.seq) { sample in
            if format == "csv" { try writer.write(Records.csvRow(sample)) } else { try write(Records.sample(sample)) }
        }
        let detail = JSONObject([JSONField("from_snapshot_id", .string(a.id)), JSONField("to_snapshot_id", .string(b.id)),
                                 JSONField("returned", .integer(returned))])
        _ = try archive.withLoggedChange("disappeared", snapshotIDs: [a.id, b.id], at: now(), diagnostics: context.diagnostics) { ((), detail) }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }
}

import Foundation
import VitalsKit

/// `take`: count an export and add a snapshot to the chain.
extension Run {
    func take(_ operands: [String]) throws -> VitalsKit.ExitStatus {
        var settings = TakeSettings()
        switch try options.choice("format") {
        case "apple-health": settings.format = .appleHealth
        case "ndjson": settings.format = .ndjson
        default: settings.format = .auto
        }
        if let file = options.value("registry") { settings.registry = try Run.readRegistry(file) }
        settings.timezone = options.value("tz") ?? YearCalendar.defaultIdentifier(environment: context.environment)
        guard YearCalendar(identifier: settings.timezone) != nil else {
            throw UsageError("--tz wants a time zone name such as UTC or Europe/Paris, not '\(settings.timezone)'")
        }
        if let trigger = options.valueOrDefault("trigger") {
            guard !trigger.isEmpty, trigger.utf8.count <= 64, trigger.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
            else {
                throw UsageError("--trigger wants a word (letters, digits, _ and -), not '\(trigger)'")
            }
            settings.trigger = trigger
        }
        settings.debounceMs = try options.duration("debounce")
        settings.postRestore = options.has("post-restore")
        settings.archiveSamples = !options.has("no-samples")
        settings.rules = rules
        settings.restoreRecords = Int64(try options.integer("restore-records", in: 0...Int(Int32.max)))
        guard let devicePath = options.value("device-id-file") ?? DeviceIdentity.defaultPath(environment: context.environment) else {
            throw UsageError("no place for the device id: set HOME or name a file with --device-id-file")
        }
        settings.deviceIDPath = devicePath
        settings.now = now
        settings.progress = context.progressLine(options)
        if operands.filter({ $0 == "-" }).count > 1 { throw UsageError("standard input (-) can be read once") }

        let archive = try Archive(path: path, create: true)
        let taker = Taker(archive: archive, settings: settings, diagnostics: context.diagnostics)
        let taken: TakeResult?
        do {
            taken = try taker.take(operands, stdin: context.streams.input)
        } catch let skip as TakeDebounced {
            context.diagnostics.note(
                "no snapshot taken: the latest, \(skip.latest.id) (\(skip.latest.trigger)), is younger than "
                    + "--debounce \(DefaultText.duration(milliseconds: skip.windowMs)); a manual take is never skipped")
            return .success
        }
        guard let result = taken else {
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
            let name =
                line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)?
                .trimmingCharacters(in: .whitespaces) ?? ""
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        if names.isEmpty { throw ToolError("the registry \(file) names no type") }
        return names
    }
}

import VitalsKit

/// `share`, `unshare` and `shared`: which health data types Health Sync serves (the seed's
/// `SyncConfiguration.enabledTypes`, its `HealthDataTypeToggle` on a command line).
extension Run {
    /// Shares types (or, with `--all`, every type, including those later takes bring), logged;
    /// then lists the types as `shared` does.
    func share(_ operands: [String], share: Bool) throws -> VitalsKit.ExitStatus {
        let all = options.has("all")
        let verb = share ? "share" : "unshare"
        guard all != !operands.isEmpty else {
            throw UsageError(
                all ? "\(verb) --all takes no type" : "\(verb) wants type identifiers (such as HKQuantityTypeIdentifierHeartRate), or --all"
            )
        }
        var types: [String] = []
        for type in operands where !types.contains(type) {
            guard HealthTypeIdentifier.isValid(type) else {
                throw UsageError(
                    "'\(type)' is not a type identifier (letters, digits, '_', '.', '-'; such as HKQuantityTypeIdentifierHeartRate)")
            }
            types.append(type)
        }
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let before = try archive.sharedTypes()
        let counted = Set(try archive.latestTypeCounts().map(\.type))
        for type in types where share && !counted.contains(type) {
            context.diagnostics.note("\(type) is in no snapshot yet; shared from when it is (check its spelling)")
        }
        let after = try archive.changeSharing(share: share, types: types, all: all, at: now(), diagnostics: context.diagnostics)
        if before.everything && !after.everything {
            context.diagnostics.note(
                "every type was shared by default; from now on only the types listed as shared are, and a type a later take brings is not shared until you share it"
            )
        }
        try listShared(archive, format: format)
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    /// Lists every type the latest snapshot counted and every chosen type, shared or not.
    func shared() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        try listShared(try Archive(path: path, create: false), format: format)
        return .success
    }

    private func listShared(_ archive: Archive, format: String) throws {
        let state = try archive.sharedTypes()
        let since = try archive.sharedSince()
        var counts: [String: Int64] = [:]
        for (type, count) in try archive.latestTypeCounts() { counts[type] = count }
        let types = Set(counts.keys).union(state.chosen).sorted()
        if format == "text" {
            try writer.write(
                state.everything
                    ? "Every type is shared, including those later takes bring (the default, or share --all)."
                    : "Only the types marked shared are shared (\(state.chosen.count) of them).")
            for type in types {
                let count = counts[type].map { $0 < 0 ? "unavailable" : $0 == 1 ? "1 sample" : "\($0) samples" } ?? "in no snapshot"
                let mark = state.allows(type) ? "shared    " : "not shared"
                try writer.write("  \(mark)  \(type)  (\(count))")
            }
            return
        }
        for type in types {
            try write(
                JSONObject([
                    JSONField("type", .string("shared_type")), JSONField("type_identifier", .string(type)),
                    JSONField("shared", .bool(state.allows(type))), JSONField("sharing", .string(state.word)),
                    JSONField("count", counts[type].map { .integer(Int($0)) } ?? .null),
                    JSONField("shared_at", Records.time(since[type])),
                ]))
        }
    }
}

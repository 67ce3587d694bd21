import SQLiteStore
import VitalsKit

/// Which health data types Health Sync serves: the seed's `SyncConfiguration.enabledTypes`, kept in
/// the archive. Until the user chooses, every type is shared (the seed's default,
/// `HealthDataType.allCases`, and what this server did before the choice existed); from the first
/// `share` or `unshare` on, exactly the chosen types are, and a type that first appears in a later
/// take is not shared until it is shared by name.
struct SharedTypes: Sendable, Equatable {
    /// Every type, including those that appear later (no choice made, or `share --all`).
    var everything: Bool
    /// The chosen types, when not `everything`.
    var chosen: Set<String>

    /// Whether a request may read `type`.
    func allows(_ type: String) -> Bool { everything || chosen.contains(type) }

    /// The word for the state: `all` or `chosen`.
    var word: String { everything ? "all" : "chosen" }
}

extension Archive {
    /// The `meta` key that says a choice was made (its value `chosen`); absent, every type is shared.
    static let sharingKey = "sharing"

    /// What is shared now. Read fresh on every call (the responder asks on every request, so a
    /// change from the command line holds from the very next request).
    func sharedTypes() throws -> SharedTypes {
        guard try meta(Archive.sharingKey) == "chosen" else { return SharedTypes(everything: true, chosen: []) }
        let statement = try db.prepare("SELECT type_identifier FROM shared_types")
        var chosen: Set<String> = []
        while try statement.step() { if let type = statement.text(0) { chosen.insert(type) } }
        return SharedTypes(everything: false, chosen: chosen)
    }

    /// When each chosen type was shared.
    func sharedSince() throws -> [String: Int64] {
        let statement = try db.prepare("SELECT type_identifier, shared_at FROM shared_types")
        var since: [String: Int64] = [:]
        while try statement.step() { if let type = statement.text(0) { since[type] = statement.int64(1) } }
        return since
    }

    /// The types the latest snapshot counted, with their counts (-1: unavailable), by identifier.
    func latestTypeCounts() throws -> [(type: String, count: Int64)] {
        let statement = try db.prepare(
            """
            SELECT type_identifier, count FROM type_counts
            WHERE snapshot_seq = (SELECT max(seq) FROM snapshots WHERE quality <> 'loading') ORDER BY type_identifier
            """)
        var counts: [(String, Int64)] = []
        while try statement.step() { counts.append((statement.text(0) ?? "", statement.int64(1))) }
        return counts
    }

    /// Shares `types` (with `all`: every type, from now on including those that appear later) or
    /// stops sharing them (with `all`: every type), in one transaction with its operation log entry
    /// (`share` or `unshare`). The first choice on an archive that shared everything starts from
    /// every type the latest snapshot counted. Returns the new state.
    func changeSharing(share: Bool, types: [String], all: Bool, at time: Int64, diagnostics: Diagnostics) throws -> SharedTypes {
        try withLoggedChange(share ? "share" : "unshare", snapshotIDs: [], at: time, diagnostics: diagnostics) {
            let before = try sharedTypes()
            if share && all {
                try db.execute("DELETE FROM shared_types", context: "share --all")
                try db.execute("DELETE FROM meta WHERE key = '\(Archive.sharingKey)'", context: "share --all")
            } else {
                if before.everything {
                    // The first choice: what was shared by default becomes the chosen list.
                    for (type, _) in try latestTypeCounts() { try insertShared(type, at: time) }
                    try setMeta(Archive.sharingKey, "chosen")
                }
                if all {
                    try db.execute("DELETE FROM shared_types", context: "unshare --all")
                } else {
                    for type in types {
                        if share {
                            try insertShared(type, at: time)
                        } else {
                            let delete = try db.prepare("DELETE FROM shared_types WHERE type_identifier = ?")
                            delete.bind(type)
                            try delete.step()
                        }
                    }
                }
            }
            let after = try sharedTypes()
            var detail = JSONObject([
                JSONField("types", .array(types.map { .string($0) })), JSONField("all", .bool(all)),
                JSONField("sharing", .string(after.word)),
            ])
            detail["shared"] = after.everything ? .null : .array(after.chosen.sorted().map { .string($0) })
            return (after, detail)
        }
    }

    /// Adds a chosen type (kept with its first time when it is there already).
    private func insertShared(_ type: String, at time: Int64) throws {
        let insert = try db.prepare("INSERT INTO shared_types (type_identifier, shared_at) VALUES (?, ?) ON CONFLICT DO NOTHING")
        insert.bind(type, time)
        try insert.step()
    }
}

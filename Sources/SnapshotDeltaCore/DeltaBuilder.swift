/// HealthProbe's DeltaService: the delta between two snapshots, and the merge of the two
/// deltas around a deleted intermediate snapshot.
enum DeltaBuilder {
    /// The reason for one type's delta, by priority:
    /// authorizationChanged > unsupported > registryChanged > unknown > normal.
    static func reason(before: TypeCount?, after: TypeCount?, registryChanged: Bool) -> DeltaReason {
        if before?.quality == .unauthorized || after?.quality == .unauthorized { return .authorizationChanged }
        if before?.isUnsupported == true || after?.isUnsupported == true { return .unsupported }
        if registryChanged { return .registryChanged }
        if let quality = before?.quality, quality != .complete { return .unknown }
        if let quality = after?.quality, quality != .complete { return .unknown }
        return .normal
    }

    /// Whether a side may be compared: absent (no samples of a type that was not there) or complete.
    private static func comparable(_ side: TypeCount?) -> Bool { side == nil || side!.quality == .complete }

    /// The transition of a type between two sides.
    static func transition(_ before: TypeCount?, _ after: TypeCount?) -> Transition {
        guard let before else { return .appeared }
        guard let after else { return .disappeared }
        if before.count < 0 || after.count < 0 { return .unavailable }
        if after.count > before.count { return .increased }
        if after.count < before.count { return .decreased }
        return .unchanged
    }

    /// The note set on every type's yearly deltas when the time zone changed.
    static func timezoneNote(_ before: String, _ after: String) -> String {
        "time zone changed from \(before) to \(after): yearly counts are bucketed differently and their deltas are not losses"
    }

    /// One type's delta between two sides, with the unavailable-count and time-zone guards.
    static func typeDelta(
        _ identifier: String, before: TypeCount?, after: TypeCount?, registryChanged: Bool,
        timezoneNote: String?
    ) -> TypeDelta {
        let guarded = !comparable(before) || !comparable(after)
        let countBefore = before?.count
        let countAfter = after?.count
        // The time-zone guard, as HealthProbe has it: a changed time zone sets the count change to 0.
        let delta = guarded || timezoneNote != nil ? 0 : (countAfter ?? 0) - (countBefore ?? 0)
        var years: [Int: (Int64, Int64)] = [:]
        for year in before?.yearly ?? [] { years[year.year, default: (0, 0)].0 = year.count }
        for year in after?.yearly ?? [] { years[year.year, default: (0, 0)].1 = year.count }
        let yearly = years.keys.sorted().map { year -> YearlyDelta in
            let (b, a) = years[year]!
            return YearlyDelta(year: year, before: b, after: a, delta: guarded || timezoneNote != nil ? 0 : a - b)
        }
        return TypeDelta(
            typeIdentifier: identifier, transition: transition(before, after),
            reason: reason(before: before, after: after, registryChanged: registryChanged),
            countBefore: countBefore, countAfter: countAfter, countDelta: delta,
            qualityBefore: before?.quality, qualityAfter: after?.quality,
            hashBefore: before?.typeHash, hashAfter: after?.typeHash, yearly: yearly,
            yearlyCountNote: timezoneNote)
    }

    /// The delta from `before` to `after`: one entry per type on either side, in identifier order.
    /// Checksums are recomputed from the type counts, never copied from the snapshots.
    static func delta(id: String, from before: Snapshot, to after: Snapshot, at time: Int64) -> Delta {
        let note = before.timezone == after.timezone ? nil : timezoneNote(before.timezone, after.timezone)
        var types: [TypeDelta] = []
        for identifier in identifiers(before, after) {
            let b = before.type(identifier)
            let a = after.type(identifier)
            types.append(
                typeDelta(
                    identifier, before: b, after: a,
                    registryChanged: before.monitors(identifier) != after.monitors(identifier),
                    timezoneNote: note))
        }
        return Delta(
            id: id, fromSnapshotID: before.id, toSnapshotID: after.id, createdAt: time,
            checksumBefore: Hashing.checksum(before.types), checksumAfter: Hashing.checksum(after.types),
            timezoneBefore: before.timezone, timezoneAfter: after.timezone, mergedFrom: nil,
            detection: before.quality == .complete && after.quality == .complete ? .ran : .qualityGate,
            postRestoreSuppressed: false, types: types)
    }

    /// Merges `first` (A→B) and `second` (B→C) into one delta A→C when B is deleted.
    ///
    /// Counts, qualities and hashes come from A and C; checksums are recomputed from their
    /// type counts (never carried over). A type that existed only in B (appeared in `first`,
    /// disappeared in `second`) is left out; one that disappeared in `first` and appeared
    /// again in `second` is compared between A and C. The unavailable-count guard applies to
    /// the result, counting B's side too (a count unavailable in B makes the merged delta 0),
    /// and its reason is the strongest of the two deltas' and A→C's own, so an impairment seen
    /// in B is not lost. The time-zone note is set if either delta had it.
    static func merge(
        _ first: Delta, _ second: Delta, id: String, from a: Snapshot, to c: Snapshot,
        at time: Int64
    ) -> Delta {
        let timezoneChanged =
            a.timezone != c.timezone || first.types.contains { $0.yearlyCountNote != nil }
            || second.types.contains { $0.yearlyCountNote != nil }
        let note = timezoneChanged ? timezoneNote(first.timezoneBefore, second.timezoneAfter) : nil
        var types: [TypeDelta] = []
        for identifier in identifiers(a, c) {
            let before = a.type(identifier)
            let after = c.type(identifier)
            var merged = typeDelta(
                identifier, before: before, after: after,
                registryChanged: a.monitors(identifier) != c.monitors(identifier), timezoneNote: note)
            let sources = [
                first.types.first { $0.typeIdentifier == identifier },
                second.types.first { $0.typeIdentifier == identifier },
            ].compactMap { $0 }
            merged.reason = (sources.map(\.reason) + [merged.reason]).min()!
            // A count unavailable in the deleted snapshot leaves the merged delta unavailable too.
            let impaired = sources.contains { source in
                [source.qualityBefore, source.qualityAfter].contains { $0 != nil && $0 != .complete }
            }
            if impaired {
                merged.countDelta = 0
                merged.yearly = merged.yearly.map { YearlyDelta(year: $0.year, before: $0.before, after: $0.after, delta: 0) }
            }
            types.append(merged)
        }
        return Delta(
            id: id, fromSnapshotID: a.id, toSnapshotID: c.id, createdAt: time,
            checksumBefore: Hashing.checksum(a.types), checksumAfter: Hashing.checksum(c.types),
            timezoneBefore: a.timezone, timezoneAfter: c.timezone,
            mergedFrom: (first.mergedFrom ?? [first.id]) + (second.mergedFrom ?? [second.id]),
            detection: a.quality == .complete && c.quality == .complete ? .ran : .qualityGate,
            postRestoreSuppressed: false, types: types)
    }

    private static func identifiers(_ a: Snapshot, _ b: Snapshot) -> [String] {
        Set(a.types.map(\.typeIdentifier)).union(b.types.map(\.typeIdentifier))
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

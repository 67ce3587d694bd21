import Foundation
import SQLiteStore
import VitalsKit

/// The deltas between snapshots in the archive, with their per-type changes.
extension Archive {
    /// Writes a delta and its type deltas.
    func saveDelta(_ delta: Delta) throws {
        let row = try db.prepare(
            """
            INSERT INTO deltas (id, from_snapshot_id, to_snapshot_id, created_at, checksum_before, checksum_after,
                timezone_before, timezone_after, merged_from, detection, post_restore_suppressed, type_count)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        row.bind(
            delta.id, delta.fromSnapshotID, delta.toSnapshotID, delta.createdAt, delta.checksumBefore, delta.checksumAfter,
            delta.timezoneBefore, delta.timezoneAfter, delta.mergedFrom.map { JSONValue.array($0.map { .string($0) }).jsonText },
            delta.detection.rawValue, delta.postRestoreSuppressed, Int64(delta.types.count))
        try row.step()
        let typeRow = try db.prepare(
            """
            INSERT INTO type_deltas (delta_id, type_identifier, transition, reason, count_before, count_after, count_delta,
                quality_before, quality_after, hash_before, hash_after, yearly, yearly_count_note)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for type in delta.types {
            typeRow.bind(
                delta.id, type.typeIdentifier, type.transition.rawValue, type.reason.rawValue, type.countBefore, type.countAfter,
                type.countDelta, type.qualityBefore?.rawValue, type.qualityAfter?.rawValue, type.hashBefore, type.hashAfter,
                JSONValue.array(
                    type.yearly.map {
                        .array([.integer($0.year), .number(String($0.before)), .number(String($0.after)), .number(String($0.delta))])
                    }
                ).jsonText,
                type.yearlyCountNote)
            try typeRow.step()
            typeRow.reset()
        }
    }

    /// A delta as stored (nil when absent), with how many type deltas its row declares.
    func storedDelta(to snapshotID: String) throws -> (delta: Delta, declaredTypes: Int)? {
        let statement = try db.prepare(
            """
            SELECT id, from_snapshot_id, to_snapshot_id, created_at, checksum_before, checksum_after, timezone_before,
                timezone_after, merged_from, detection, post_restore_suppressed, type_count
            FROM deltas WHERE to_snapshot_id = ? ORDER BY created_at DESC LIMIT 1
            """)
        statement.bind(snapshotID)
        guard try statement.step() else { return nil }
        let id = statement.text(0) ?? ""
        let merged: [String]? = statement.text(8).flatMap { (try? JSONParser.parse($0))?.arrayValue?.compactMap(\.stringValue) }
        var delta = Delta(
            id: id, fromSnapshotID: statement.text(1) ?? "", toSnapshotID: statement.text(2) ?? "",
            createdAt: statement.int64(3), checksumBefore: statement.text(4) ?? "",
            checksumAfter: statement.text(5) ?? "", timezoneBefore: statement.text(6) ?? "",
            timezoneAfter: statement.text(7) ?? "", mergedFrom: merged,
            detection: Delta.Detection(rawValue: statement.text(9) ?? "") ?? .ran,
            postRestoreSuppressed: statement.int64(10) != 0, types: [])
        let declared = Int(statement.int64(11))
        let types = try db.prepare(
            """
            SELECT type_identifier, transition, reason, count_before, count_after, count_delta, quality_before, quality_after,
                hash_before, hash_after, yearly, yearly_count_note
            FROM type_deltas WHERE delta_id = ? ORDER BY type_identifier
            """)
        types.bind(id)
        while try types.step() {
            let yearly: [YearlyDelta] = ((try? JSONParser.parse(types.text(10) ?? "[]"))?.arrayValue ?? []).compactMap { item in
                guard let values = item.arrayValue, values.count == 4, let year = values[0].intValue, let before = values[1].intValue,
                    let after = values[2].intValue, let change = values[3].intValue
                else { return nil }
                return YearlyDelta(year: year, before: Int64(before), after: Int64(after), delta: Int64(change))
            }
            delta.types.append(
                TypeDelta(
                    typeIdentifier: types.text(0) ?? "", transition: Transition(rawValue: types.text(1) ?? "") ?? .unavailable,
                    reason: DeltaReason(rawValue: types.text(2) ?? "") ?? .unknown, countBefore: types.optionalInt64(3),
                    countAfter: types.optionalInt64(4), countDelta: types.int64(5),
                    qualityBefore: types.text(6).flatMap(Quality.init(rawValue:)),
                    qualityAfter: types.text(7).flatMap(Quality.init(rawValue:)),
                    hashBefore: types.text(8), hashAfter: types.text(9), yearly: yearly, yearlyCountNote: types.text(11)))
        }
        delta.types.sort { $0.typeIdentifier.utf8.lexicographicallyPrecedes($1.typeIdentifier.utf8) }
        return (delta, declared)
    }

    /// Removes a delta, its type deltas and its anomalies; returns the anomalies' ids.
    @discardableResult
    func deleteDelta(id: String) throws -> [String] {
        let anomalyIDs = try anomalies(deltaID: id).map(\.id)
        for sql in [
            "DELETE FROM anomalies WHERE delta_id = ?", "DELETE FROM type_deltas WHERE delta_id = ?",
            "DELETE FROM deltas WHERE id = ?",
        ] {
            let statement = try db.prepare(sql)
            statement.bind(id)
            try statement.step()
        }
        return anomalyIDs
    }
}

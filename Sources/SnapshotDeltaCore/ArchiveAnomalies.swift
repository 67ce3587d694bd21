import Foundation
import SQLiteStore
import VitalsKit

/// The anomalies found in deltas, as the archive keeps them.
extension Archive {
    /// Writes anomaly records.
    func saveAnomalies(_ anomalies: [AnomalyRecord]) throws {
        let row = try db.prepare("""
            INSERT INTO anomalies (id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
                count_before, count_after, count_delta, change_percent, types, message)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for anomaly in anomalies {
            row.bind(1, anomaly.id)
            row.bind(2, anomaly.deltaID)
            row.bind(3, anomaly.snapshotID)
            row.bind(4, anomaly.previousSnapshotID)
            row.bind(5, anomaly.detectedAt)
            row.bind(6, anomaly.kind.rawValue)
            row.bind(7, anomaly.severity.rawValue)
            row.bind(8, anomaly.typeIdentifier)
            row.bind(9, anomaly.countBefore)
            row.bind(10, anomaly.countAfter)
            row.bind(11, anomaly.countDelta)
            row.bind(12, anomaly.changePercent)
            row.bind(13, JSONValue.array(anomaly.types.map { .string($0) }).jsonText)
            row.bind(14, anomaly.message)
            try row.step()
            row.reset()
        }
    }

    /// The anomalies found in a delta.
    func anomalies(deltaID: String) throws -> [AnomalyRecord] {
        let statement = try db.prepare("""
            SELECT id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
                count_before, count_after, count_delta, change_percent, types, message
            FROM anomalies WHERE delta_id = ? ORDER BY rowid
            """)
        statement.bind(1, deltaID)
        var result: [AnomalyRecord] = []
        while try statement.step() {
            let types = ((try? JSONParser.parse(statement.text(12) ?? "[]"))?.arrayValue ?? []).compactMap(\.stringValue)
            result.append(AnomalyRecord.stored(
                id: statement.text(0) ?? "", deltaID: statement.text(1) ?? "", snapshotID: statement.text(2) ?? "",
                previousSnapshotID: statement.text(3) ?? "", detectedAt: statement.int64(4),
                kind: AnomalyKind(rawValue: statement.text(5) ?? "") ?? .deletion,
                severity: Severity(rawValue: statement.text(6) ?? "") ?? .warning, typeIdentifier: statement.text(7),
                countBefore: statement.optionalInt64(8), countAfter: statement.optionalInt64(9),
                countDelta: statement.optionalInt64(10), changePercent: statement.optionalDouble(11), types: types,
                message: statement.text(13) ?? ""))
        }
        return result
    }
}

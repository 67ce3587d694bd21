import Foundation
import SQLiteStore
import VitalsKit

/// The anomalies found in deltas, as the archive keeps them.
extension Archive {
    /// Writes anomaly records.
    func saveAnomalies(_ anomalies: [AnomalyRecord]) throws {
        let row = try db.prepare(
            """
            INSERT INTO anomalies (id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
                count_before, count_after, count_delta, change_percent, types, message)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for anomaly in anomalies {
            row.bind(
                anomaly.id, anomaly.deltaID, anomaly.snapshotID, anomaly.previousSnapshotID, anomaly.detectedAt, anomaly.kind.rawValue,
                anomaly.severity.rawValue, anomaly.typeIdentifier, anomaly.countBefore, anomaly.countAfter, anomaly.countDelta,
                anomaly.changePercent, JSONValue.array(anomaly.types.map { .string($0) }).jsonText, anomaly.message)
            try row.step()
            row.reset()
        }
    }

    /// The anomalies found in a delta.
    func anomalies(deltaID: String) throws -> [AnomalyRecord] {
        let statement = try db.prepare(
            """
            SELECT \(Archive.anomalyColumns) FROM anomalies WHERE delta_id = ? ORDER BY rowid
            """)
        statement.bind(deltaID)
        var result: [AnomalyRecord] = []
        while try statement.step() { result.append(anomaly(statement)) }
        return result
    }

    static let anomalyColumns = """
        id, delta_id, snapshot_id, previous_snapshot_id, detected_at, kind, severity, type_identifier,
        count_before, count_after, count_delta, change_percent, types, message, resolved_at
        """

    /// Every anomaly (or the unresolved ones) with when it was resolved, as the seed's dashboard
    /// shows them: critical first, then warning, then info; newest first within a severity.
    func listAnomalies(unresolved: Bool) throws -> [(anomaly: AnomalyRecord, resolvedAt: Int64?)] {
        let statement = try db.prepare(
            """
            SELECT \(Archive.anomalyColumns) FROM anomalies \(unresolved ? "WHERE resolved_at IS NULL" : "")
            ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, detected_at DESC, rowid
            """)
        var result: [(AnomalyRecord, Int64?)] = []
        while try statement.step() { result.append((anomaly(statement), statement.optionalInt64(14))) }
        return result
    }

    /// Marks the anomaly with id (or unique id prefix of 4 characters or more) `reference`
    /// resolved at `time`, unless it already is; returns it with its resolution time.
    func resolveAnomaly(_ reference: String, at time: Int64) throws -> (anomaly: AnomalyRecord, resolvedAt: Int64) {
        guard reference.count >= 4 else { throw ToolError("name an anomaly by its id or an id prefix of 4 characters or more") }
        let select = try db.prepare("SELECT \(Archive.anomalyColumns) FROM anomalies WHERE substr(id, 1, ?) = ? LIMIT 2")
        select.bind(Int64(reference.utf8.count), reference)
        var found: [(AnomalyRecord, Int64?)] = []
        while try select.step() { found.append((anomaly(select), select.optionalInt64(14))) }
        guard let first = found.first else { throw ToolError("no anomaly '\(reference)' in \(path)") }
        guard found.count == 1 else { throw ToolError("'\(reference)' names more than one anomaly; give more of the id") }
        if let resolved = first.1 { return (first.0, resolved) }
        let update = try db.prepare("UPDATE anomalies SET resolved_at = ? WHERE id = ? AND resolved_at IS NULL")
        update.bind(time, first.0.id)
        try update.step()
        return (first.0, time)
    }

    private func anomaly(_ statement: SQLiteStatement) -> AnomalyRecord {
        let types = ((try? JSONParser.parse(statement.text(12) ?? "[]"))?.arrayValue ?? []).compactMap(\.stringValue)
        return AnomalyRecord.stored(
            id: statement.text(0) ?? "", deltaID: statement.text(1) ?? "", snapshotID: statement.text(2) ?? "",
            previousSnapshotID: statement.text(3) ?? "", detectedAt: statement.int64(4),
            kind: AnomalyKind(rawValue: statement.text(5) ?? "") ?? .deletion,
            severity: Severity(rawValue: statement.text(6) ?? "") ?? .warning, typeIdentifier: statement.text(7),
            countBefore: statement.optionalInt64(8), countAfter: statement.optionalInt64(9),
            countDelta: statement.optionalInt64(10), changePercent: statement.optionalDouble(11), types: types,
            message: statement.text(13) ?? "")
    }
}

import VitalsKit

/// `--format text`: the chain for a person to read. A count of -1 is written `unavailable`,
/// or `unsupported` for a type the collector said does not exist, with no delta needed.
enum SnapshotText {
    static func countWord(_ type: TypeCount) -> String {
        if type.isUnsupported { return "unsupported" }
        if type.count < 0 { return "unavailable" }
        return String(type.count)
    }

    static func day(_ milliseconds: Int64?) -> String {
        milliseconds.map { String(Timestamp.format(milliseconds: $0).prefix(10)) } ?? "-"
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func table(_ rows: [[String]], rightAligned: Set<Int> = []) -> String {
        guard let first = rows.first else { return "" }
        let widths = (0..<first.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 && !rightAligned.contains(column)
                    ? text
                    : rightAligned.contains(column) ? padLeft(text, widths[column]) : pad(text, widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    static func marks(_ snapshot: Snapshot) -> String {
        var marks: [String] = []
        if snapshot.isChainStart { marks.append("chain start") }
        if snapshot.recoveredDeviceID { marks.append("archive reset, device id recovered") }
        if snapshot.isPostRestore {
            marks.append(
                snapshot.isPostRestoreForwarded
                    ? "post-restore (forwarded)"
                    : snapshot.isPostRestoreInferred ? "post-restore baseline (inferred)" : "post-restore baseline")
        }
        if snapshot.trigger != "manual" { marks.append("trigger: \(snapshot.trigger)") }
        if snapshot.quality != .complete { marks.append("incomplete") }
        return marks.joined(separator: ", ")
    }

    static func list(_ snapshots: [Snapshot], anomalies: [Int]) -> String {
        var rows = [["#", "ID", "CREATED", "QUALITY", "RECORDS", "TYPES", "ANOMALIES", "NOTES"]]
        for (index, snapshot) in snapshots.enumerated() {
            rows.append([
                String(snapshot.seq), String(snapshot.id.prefix(8)),
                String(Timestamp.format(milliseconds: snapshot.createdAt).prefix(19)) + "Z", snapshot.quality.rawValue,
                String(snapshot.recordCount), String(snapshot.types.count), String(anomalies[index]), marks(snapshot),
            ])
        }
        return table(rows, rightAligned: [0, 4, 5, 6])
    }

    static func show(_ snapshot: Snapshot, delta: Delta?, anomalies: [AnomalyRecord]) -> String {
        var lines = [
            "snapshot \(snapshot.seq)  \(snapshot.id)",
            "created   \(Timestamp.format(milliseconds: snapshot.createdAt))  (\(snapshot.trigger), \(snapshot.source))",
            "quality   \(snapshot.quality.rawValue)    records \(snapshot.recordCount)    time zone \(snapshot.timezone)",
            "checksum  \(snapshot.checksum)",
            "previous  \(snapshot.previousSnapshotID ?? "none")",
        ]
        let notes = marks(snapshot)
        if !notes.isEmpty { lines.append("notes     \(notes)") }
        lines.append("")
        var rows = [["TYPE", "COUNT", "QUALITY", "EARLIEST", "LATEST"] + (delta == nil ? [] : ["DELTA"])]
        for type in snapshot.types {
            var row = [type.typeIdentifier, countWord(type), type.quality.rawValue, day(type.earliest), day(type.latest)]
            if let delta {
                let change = delta.types.first { $0.typeIdentifier == type.typeIdentifier }
                row.append(change.map { $0.countDelta > 0 ? "+\($0.countDelta)" : String($0.countDelta) } ?? "")
            }
            rows.append(row)
        }
        // Types the delta says are gone are not in the snapshot: listed so the loss shows.
        for gone in delta?.types.filter({ $0.transition == .disappeared }) ?? [] {
            rows.append([gone.typeIdentifier, "gone", "-", "-", "-", String(gone.countDelta)])
        }
        lines.append(table(rows, rightAligned: delta == nil ? [1] : [1, 5]))
        for anomaly in anomalies { lines.append("\(anomaly.severity.rawValue): \(anomaly.kind.rawValue): \(anomaly.message)") }
        return lines.joined(separator: "\n")
    }

    /// `anomalies --format text`: one row per anomaly, critical first, with its id's first
    /// eight characters (enough for `anomalies resolve`) and when it was resolved, if it was.
    static func anomalies(_ listed: [(anomaly: AnomalyRecord, resolvedAt: Int64?)]) -> String {
        var rows = [["ID", "SEVERITY", "KIND", "TYPE", "DETECTED", "RESOLVED", "MESSAGE"]]
        for (anomaly, resolvedAt) in listed {
            rows.append([
                String(anomaly.id.prefix(8)), anomaly.severity.rawValue, anomaly.kind.rawValue, anomaly.typeIdentifier ?? "-",
                String(Timestamp.format(milliseconds: anomaly.detectedAt).prefix(19)) + "Z",
                resolvedAt.map { String(Timestamp.format(milliseconds: $0).prefix(19)) + "Z" } ?? "-", anomaly.message,
            ])
        }
        return table(rows)
    }

    /// `anomalies --counts --format text`: the dashboard's line, "3 unresolved anomalies: 1
    /// critical, 2 warning, 0 info", or that there are none (where the dashboard shows nothing).
    static func anomalyCounts(_ counts: [(Severity, Int)]) -> String {
        let total = counts.reduce(0) { $0 + $1.1 }
        guard total > 0 else { return "no unresolved anomalies" }
        let parts = counts.reversed().map { "\($0.1) \($0.0.rawValue)" }
        return "\(total) unresolved \(total == 1 ? "anomaly" : "anomalies"): " + parts.joined(separator: ", ")
    }

    static func delta(_ delta: Delta, anomalies: [AnomalyRecord]) -> String {
        var lines = ["delta \(delta.fromSnapshotID) -> \(delta.toSnapshotID)  (detection: \(delta.detection.rawValue))", ""]
        var rows = [["TYPE", "TRANSITION", "BEFORE", "AFTER", "DELTA", "REASON"]]
        for type in delta.types {
            rows.append([
                type.typeIdentifier, type.transition.rawValue, type.countBefore.map { $0 < 0 ? "unavailable" : String($0) } ?? "-",
                type.countAfter.map { $0 < 0 ? "unavailable" : String($0) } ?? "-",
                type.countDelta > 0 ? "+\(type.countDelta)" : String(type.countDelta), type.reason.rawValue,
            ])
        }
        lines.append(table(rows, rightAligned: [2, 3, 4]))
        for anomaly in anomalies { lines.append("\(anomaly.severity.rawValue): \(anomaly.kind.rawValue): \(anomaly.message)") }
        return lines.joined(separator: "\n")
    }
}

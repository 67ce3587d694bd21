import Foundation
import VitalsKit

/// The records snapshot-delta writes, field by field in the order `vitals-records(7)` gives.
enum Records {
    static func time(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null
    }

    static func string(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }

    static func int(_ value: Int64?) -> JSONValue { value.map { .number(String($0)) } ?? .null }

    static func strings(_ values: [String]) -> JSONValue { .array(values.map { .string($0) }) }

    /// A `snapshot` record; `types` adds the per-type counts.
    static func snapshot(_ snapshot: Snapshot, types: Bool) -> JSONObject {
        var object = JSONObject([
            JSONField("type", .string("snapshot")),
            JSONField("id", .string(snapshot.id)),
            JSONField("seq", int(snapshot.seq)),
            JSONField("created_at", time(snapshot.createdAt)),
            JSONField("trigger", .string(snapshot.trigger)),
            JSONField("quality", .string(snapshot.quality.rawValue)),
            JSONField("checksum", .string(snapshot.checksum)),
            JSONField("type_set_hash", .string(snapshot.typeSetHash)),
            JSONField("registry", snapshot.registry.map(strings) ?? .null),
            JSONField("timezone", .string(snapshot.timezone)),
            JSONField("export_version", string(snapshot.exportVersion)),
            JSONField("export_date", time(snapshot.exportDate)),
            JSONField("source", .string(snapshot.source)),
            JSONField("previous_snapshot_id", string(snapshot.previousSnapshotID)),
            JSONField("is_chain_start", .bool(snapshot.isChainStart)),
            JSONField("is_post_restore", .bool(snapshot.isPostRestore)),
            JSONField("is_post_restore_inferred", .bool(snapshot.isPostRestoreInferred)),
            JSONField("is_post_restore_forwarded", .bool(snapshot.isPostRestoreForwarded)),
            JSONField("post_restore_suppressed_delta_id", string(snapshot.postRestoreSuppressedDeltaID)),
            JSONField("device_id", .string(snapshot.deviceID)),
            JSONField("recovered_device_id", .bool(snapshot.recoveredDeviceID)),
            JSONField("samples_archived", .bool(snapshot.samplesArchived)),
            JSONField("record_count", int(snapshot.recordCount)),
            JSONField("type_count", .integer(snapshot.types.count)),
        ])
        if types { object["types"] = .array(snapshot.types.map { .object(typeCount($0)) }) }
        return object
    }

    /// One entry of a snapshot's `types`.
    static func typeCount(_ type: TypeCount) -> JSONObject {
        JSONObject([
            JSONField("type_identifier", .string(type.typeIdentifier)),
            JSONField("count", int(type.count)),
            JSONField("earliest", time(type.earliest)),
            JSONField("latest", time(type.latest)),
            JSONField("quality", .string(type.quality.rawValue)),
            JSONField("type_hash", .string(type.typeHash)),
            JSONField("is_unsupported", .bool(type.isUnsupported)),
            JSONField(
                "yearly",
                .array(
                    type.yearly.map { year in
                        .object(
                            JSONObject([
                                JSONField("year", .integer(year.year)), JSONField("count", int(year.count)),
                                JSONField("is_approximate", .bool(year.isApproximate)),
                            ]))
                    })),
        ])
    }

    /// A `delta` record.
    static func delta(_ delta: Delta, ephemeral: Bool = false) -> JSONObject {
        var object = JSONObject([
            JSONField("type", .string("delta")),
            JSONField("id", .string(delta.id)),
            JSONField("from_snapshot_id", .string(delta.fromSnapshotID)),
            JSONField("to_snapshot_id", .string(delta.toSnapshotID)),
            JSONField("created_at", time(delta.createdAt)),
            JSONField("checksum_before", .string(delta.checksumBefore)),
            JSONField("checksum_after", .string(delta.checksumAfter)),
            JSONField("timezone_before", .string(delta.timezoneBefore)),
            JSONField("timezone_after", .string(delta.timezoneAfter)),
            JSONField("merged_from", delta.mergedFrom.map(strings) ?? .null),
            JSONField("detection", .string(delta.detection.rawValue)),
            JSONField("post_restore_suppressed", .bool(delta.postRestoreSuppressed)),
        ])
        if ephemeral { object["ephemeral"] = .bool(true) }
        object["types"] = .array(
            delta.types.map { type in
                .object(
                    JSONObject([
                        JSONField("type_identifier", .string(type.typeIdentifier)),
                        JSONField("transition", .string(type.transition.rawValue)),
                        JSONField("reason", .string(type.reason.rawValue)),
                        JSONField("count_before", int(type.countBefore)),
                        JSONField("count_after", int(type.countAfter)),
                        JSONField("count_delta", int(type.countDelta)),
                        JSONField("quality_before", string(type.qualityBefore?.rawValue)),
                        JSONField("quality_after", string(type.qualityAfter?.rawValue)),
                        JSONField("hash_before", string(type.hashBefore)),
                        JSONField("hash_after", string(type.hashAfter)),
                        JSONField(
                            "yearly",
                            .array(
                                type.yearly.map { year in
                                    .object(
                                        JSONObject([
                                            JSONField("year", .integer(year.year)), JSONField("before", int(year.before)),
                                            JSONField("after", int(year.after)), JSONField("delta", int(year.delta)),
                                        ]))
                                })),
                        JSONField("yearly_count_note", string(type.yearlyCountNote)),
                    ]))
            })
        return object
    }

    /// An `anomaly` record.
    static func anomaly(_ anomaly: AnomalyRecord) -> JSONObject {
        JSONObject([
            JSONField("type", .string("anomaly")),
            JSONField("id", .string(anomaly.id)),
            JSONField("delta_id", .string(anomaly.deltaID)),
            JSONField("snapshot_id", .string(anomaly.snapshotID)),
            JSONField("previous_snapshot_id", .string(anomaly.previousSnapshotID)),
            JSONField("detected_at", time(anomaly.detectedAt)),
            JSONField("kind", .string(anomaly.kind.rawValue)),
            JSONField("severity", .string(anomaly.severity.rawValue)),
            JSONField("type_identifier", string(anomaly.typeIdentifier)),
            JSONField("count_before", int(anomaly.countBefore)),
            JSONField("count_after", int(anomaly.countAfter)),
            JSONField("count_delta", int(anomaly.countDelta)),
            JSONField(
                "change_pct",
                anomaly.changePercent.map { value in
                    var out: [UInt8] = []
                    JSONText.appendFixed(value, decimals: 2, to: &out)
                    return .number(String(decoding: out, as: UTF8.self))
                } ?? .null),
            JSONField("types", strings(anomaly.types)),
            JSONField("message", .string(anomaly.message)),
        ])
    }

    /// An `anomaly` record as `anomalies` lists it: with `resolved_at` (null while unresolved).
    static func anomaly(_ anomaly: AnomalyRecord, resolvedAt: Int64?) -> JSONObject {
        var object = self.anomaly(anomaly)
        object["resolved_at"] = time(resolvedAt)
        return object
    }

    /// The `anomaly_counts` record of `anomalies --counts`: how many anomalies are unresolved, in
    /// all and per severity, critical first.
    static func anomalyCounts(_ counts: [(Severity, Int)]) -> JSONObject {
        var object = JSONObject([
            JSONField("type", .string("anomaly_counts")),
            JSONField("unresolved", .integer(counts.reduce(0) { $0 + $1.1 })),
        ])
        for (severity, count) in counts.reversed() { object[severity.rawValue] = .integer(count) }
        return object
    }

    /// An `operation` record (one entry of the log).
    static func operation(_ entry: Archive.Operation) -> JSONObject {
        JSONObject([
            JSONField("type", .string("operation")),
            JSONField("id", .number(String(entry.id))),
            JSONField("at", time(entry.at)),
            JSONField("operation", .string(entry.operation)),
            JSONField("snapshot_ids", strings(entry.snapshotIDs)),
            JSONField("detail", .object(entry.detail)),
            JSONField("critical", .bool(entry.critical)),
        ])
    }

    /// A `health_record` record of the sample archive.
    static func sample(_ sample: Archive.ArchivedSample) -> JSONObject {
        var value: JSONValue = .null
        if let text = sample.value {
            if case .number(let literal)? = try? JSONParser.parse(text) { value = .number(literal) } else { value = .string(text) }
        }
        return JSONObject([
            JSONField("type", .string("health_record")),
            JSONField("type_identifier", .string(sample.typeIdentifier)),
            JSONField("start", time(sample.start)),
            JSONField("end", time(sample.end)),
            JSONField("value", value),
            JSONField("unit", string(sample.unit)),
            JSONField("source", string(sample.source)),
            JSONField("source_version", string(sample.sourceVersion)),
            JSONField("device", string(sample.device)),
            JSONField("uuid", string(sample.uuid)),
            JSONField("created", time(sample.created)),
            JSONField("first_seen_snapshot_id", string(sample.firstSeenSnapshotID)),
            JSONField("verified_at", time(sample.verifiedAt)),
            JSONField("disappeared_snapshot_id", string(sample.disappearedSnapshotID)),
            JSONField("disappeared_at", time(sample.disappearedAt)),
            JSONField("metadata", sample.metadata.flatMap { try? JSONParser.parse($0) } ?? .null),
        ])
    }

    /// The CSV columns of `samples --format csv`.
    static let csvColumns = [
        "type_identifier", "start", "end", "value", "unit", "source", "source_version", "device", "uuid",
        "created", "first_seen_snapshot_id", "verified_at",
    ]

    /// One CSV row (RFC 4180 quoting).
    static func csvRow(_ sample: Archive.ArchivedSample) -> String {
        let fields: [String?] = [
            sample.typeIdentifier, Timestamp.format(milliseconds: sample.start),
            Timestamp.format(milliseconds: sample.end), sample.value, sample.unit, sample.source,
            sample.sourceVersion, sample.device, sample.uuid,
            sample.created.map { Timestamp.format(milliseconds: $0) }, sample.firstSeenSnapshotID,
            Timestamp.format(milliseconds: sample.verifiedAt),
        ]
        return CSV.row(fields)
    }
}

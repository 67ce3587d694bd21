import Foundation
import VitalsKit

/// `verify`, `delete` and `log`: checking and changing the chain, and its audit log.
extension Run {
    func verify() throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: false)
        let result = try Integrity.validate(archive)
        let time = now()
        let detail = JSONObject([
            JSONField("status", .string(result.status.rawValue)), JSONField("checked", .integer(result.checked)),
            JSONField("message", .string(result.message)),
        ])
        _ = try archive.withLoggedChange(
            "verify", snapshotIDs: result.snapshotID.map { [$0] } ?? [], at: time,
            diagnostics: context.diagnostics
        ) { ((), detail) }
        try write(
            JSONObject([
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
            throw ToolError(
                "deleting snapshot \(snapshot.id) would leave a chain that does not verify (\(plan.integrity.message)); see it with --preview, or delete anyway with --force"
            )
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
        try write(
            JSONObject([
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

    /// `anomalies [--unresolved]`: the seed's dashboard list.
    func anomalies() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        if options.has("counts"), options.has("unresolved") {
            throw UsageError("--counts counts the unresolved anomalies already; give it without --unresolved")
        }
        let archive = try Archive(path: path, create: false)
        let listed = try archive.listAnomalies(unresolved: options.has("unresolved") || options.has("counts"))
        if options.has("counts") {
            // HealthProbe's dashboard: the unresolved anomalies counted by severity.
            let counts = Severity.allCases.map { severity in (severity, listed.filter { $0.anomaly.severity == severity }.count) }
            if format == "text" {
                try writer.write(SnapshotText.anomalyCounts(counts))
            } else {
                try write(Records.anomalyCounts(counts))
            }
            return .success
        }
        if format == "text" {
            if !listed.isEmpty { try writer.write(SnapshotText.anomalies(listed)) }
            return .success
        }
        for (anomaly, resolvedAt) in listed {
            try write(Records.anomaly(anomaly, resolvedAt: resolvedAt))
        }
        return .success
    }

    /// `anomalies resolve ID`: the dashboard's resolve button.
    func resolveAnomaly(_ id: String) throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: true)
        let time = now()
        let (anomaly, resolvedAt) = try archive.withLoggedChange("resolve", snapshotIDs: [], at: time, diagnostics: context.diagnostics) {
            let resolved = try archive.resolveAnomaly(id, at: time)
            return (
                resolved,
                JSONObject([
                    JSONField("anomaly_id", .string(resolved.anomaly.id)),
                    JSONField("snapshot_id", .string(resolved.anomaly.snapshotID)),
                ])
            )
        }
        try write(Records.anomaly(anomaly, resolvedAt: resolvedAt))
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    func log() throws -> VitalsKit.ExitStatus {
        let archive = try Archive(path: path, create: false)
        for entry in try archive.operations() { try write(Records.operation(entry)) }
        return .success
    }
}

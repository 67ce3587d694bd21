import Foundation
import VitalsKit

/// HealthProbe's SnapshotLifecycleService: deleting a snapshot from any position of the chain,
/// with a preview and the operation log written in the same transaction.
enum Lifecycle {
    /// Where a snapshot sits in its chain.
    enum Position: String, Sendable {
        /// The only snapshot.
        case only
        /// The chain start: the next snapshot becomes the start.
        case oldest
        /// The head: it is simply removed.
        case latest
        /// Between two: the deltas around it are merged into one.
        case intermediate
    }

    /// What deleting a snapshot will do (or did).
    struct Plan {
        /// The snapshot to delete.
        var snapshot: Snapshot
        /// Its position.
        var position: Position
        /// The snapshot before it.
        var previous: Snapshot?
        /// The snapshot after it.
        var next: Snapshot?
        /// The chain is already faulty, or a delta to merge is missing: deleting leaves a chain
        /// that `verify` will not pass (HealthProbe's willBreakChain).
        var willBreakChain: Bool
        /// The integrity check made before (advisory).
        var integrity: Verification
        /// The deltas removed.
        var removedDeltaIDs: [String]
        /// The merged delta replacing the two around an intermediate snapshot.
        var merged: Delta?
        /// Anomalies found in the merged delta.
        var mergedAnomalies: [AnomalyRecord]
        /// Whether the previous snapshot's post-restore token goes back to unused (the delta that
        /// used it is removed).
        var rearmsPostRestoreToken: Bool
    }

    /// Works out the deletion of `snapshot` without changing anything.
    static func plan(_ snapshot: Snapshot, in archive: Archive, rules: AnomalyRules, at time: Int64) throws -> Plan {
        let previous = try snapshot.previousSnapshotID.flatMap { try archive.snapshot(id: $0) }
        let next = try archive.successor(of: snapshot.id)
        let position: Position = previous == nil ? (next == nil ? .only : .oldest) : (next == nil ? .latest : .intermediate)
        let integrity = try Integrity.validate(archive)
        let incoming = try archive.storedDelta(to: snapshot.id)?.delta
        let outgoing = try next.flatMap { try archive.storedDelta(to: $0.id)?.delta }
        var plan = Plan(
            snapshot: snapshot, position: position, previous: previous, next: next,
            willBreakChain: integrity.status != .valid, integrity: integrity,
            removedDeltaIDs: [incoming?.id, outgoing?.id].compactMap { $0 }, merged: nil, mergedAnomalies: [],
            rearmsPostRestoreToken: false)
        if let previous, let incoming, previous.postRestoreSuppressedDeltaID == incoming.id { plan.rearmsPostRestoreToken = true }
        if position == .intermediate, let previous, let next {
            let id = UUID().uuidString.lowercased()
            var merged: Delta
            if let incoming, let outgoing {
                merged = DeltaBuilder.merge(incoming, outgoing, id: id, from: previous, to: next, at: time)
            } else {
                plan.willBreakChain = true
                merged = DeltaBuilder.delta(id: id, from: previous, to: next, at: time)
                merged.mergedFrom = plan.removedDeltaIDs
            }
            // Detection on the merged pair, as if B had never been taken.
            var before = previous
            if plan.rearmsPostRestoreToken { before.postRestoreSuppressedDeltaID = nil }
            let detection = AnomalyDetector.detect(
                previous: before, current: next, delta: merged, rules: rules, at: time,
                newID: { UUID().uuidString.lowercased() })
            merged.postRestoreSuppressed = detection.consumedPostRestoreToken
            plan.merged = merged
            plan.mergedAnomalies = detection.anomalies
        }
        return plan
    }

    /// Carries out a plan in one transaction with its operation log entry; returns the number
    /// of archived samples that went with the snapshot and the log entry's detail.
    static func execute(
        _ plan: Plan, in archive: Archive, forced: Bool, at time: Int64,
        diagnostics: Diagnostics
    ) throws -> (samplesRemoved: Int64, removedAnomalyIDs: [String]) {
        let ids = [plan.snapshot.id, plan.previous?.id, plan.next?.id].compactMap { $0 }
        return try archive.withLoggedChange("delete", snapshotIDs: ids, at: time, diagnostics: diagnostics) {
            var removedAnomalies: [String] = []
            for id in plan.removedDeltaIDs { removedAnomalies += try archive.deleteDelta(id: id) }
            if let previous = plan.previous, plan.rearmsPostRestoreToken {
                try archive.setSuppressionToken(snapshotID: previous.id, deltaID: nil)
            }
            switch plan.position {
            case .only, .latest:
                break
            case .oldest:
                try archive.relink(snapshotID: plan.next!.id, previous: nil)
            case .intermediate:
                try archive.relink(snapshotID: plan.next!.id, previous: plan.previous!.id)
                if let merged = plan.merged {
                    try archive.saveDelta(merged)
                    try archive.saveAnomalies(plan.mergedAnomalies)
                    if merged.postRestoreSuppressed {
                        try archive.setSuppressionToken(snapshotID: plan.previous!.id, deltaID: merged.id)
                    }
                }
            }
            try archive.deleteSnapshot(seq: plan.snapshot.seq)
            let removedSamples = try archive.forgetSamples(of: plan.snapshot.seq, previous: plan.previous?.seq, next: plan.next?.seq)
            let detail = JSONObject([
                JSONField("snapshot_id", .string(plan.snapshot.id)),
                JSONField("position", .string(plan.position.rawValue)),
                JSONField("previous_snapshot_id", Records.string(plan.previous?.id)),
                JSONField("next_snapshot_id", Records.string(plan.next?.id)),
                JSONField("removed_delta_ids", Records.strings(plan.removedDeltaIDs)),
                JSONField("removed_anomaly_ids", Records.strings(removedAnomalies)),
                JSONField("merged_delta_id", Records.string(plan.merged?.id)),
                JSONField("samples_removed", .number(String(removedSamples))),
                JSONField("will_break_chain", .bool(plan.willBreakChain)),
                JSONField("forced", .bool(forced)),
            ])
            return ((removedSamples, removedAnomalies), detail)
        }
    }
}

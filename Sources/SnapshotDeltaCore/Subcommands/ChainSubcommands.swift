import Foundation
import VitalsKit

/// `list`, `show`, `diff` and `compare`: reading the chain.
extension Run {
    func list() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let snapshots = try archive.snapshots(types: true)
        if format == "text" {
            try writer.write(SnapshotText.list(snapshots, anomalies: try snapshots.map { try anomalyCount(archive, into: $0) }))
        } else {
            for snapshot in snapshots { try write(Records.snapshot(snapshot, types: false)) }
        }
        return .success
    }

    private func anomalyCount(_ archive: Archive, into snapshot: Snapshot) throws -> Int {
        guard let delta = try archive.storedDelta(to: snapshot.id) else { return 0 }
        return try archive.anomalies(deltaID: delta.delta.id).count
    }

    func show(_ reference: String) throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let snapshot = try archive.resolve(reference)
        let delta = try archive.storedDelta(to: snapshot.id)?.delta
        let anomalies = try delta.map { try archive.anomalies(deltaID: $0.id) } ?? []
        if format == "text" {
            try writer.write(SnapshotText.show(snapshot, delta: delta, anomalies: anomalies))
            return .success
        }
        try write(Records.snapshot(snapshot, types: true))
        if let delta { try write(Records.delta(delta)) }
        for anomaly in anomalies { try write(Records.anomaly(anomaly)) }
        return .success
    }

    func diff(_ first: String, _ second: String) throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let a = try archive.resolve(first)
        let b = try archive.resolve(second)
        let time = now()
        let delta = DeltaBuilder.delta(id: UUID().uuidString.lowercased(), from: a, to: b, at: time)
        let detection = AnomalyDetector.detect(
            previous: a, current: b, delta: delta, rules: rules, at: time,
            newID: { UUID().uuidString.lowercased() })
        if format == "text" {
            try writer.write(SnapshotText.delta(delta, anomalies: detection.anomalies))
        } else {
            try write(Records.delta(delta, ephemeral: true))
            for anomaly in detection.anomalies { try write(Records.anomaly(anomaly)) }
        }
        return options.has("exit-status") && !detection.anomalies.isEmpty ? .verdict : .success
    }

    /// `compare OTHER`: HealthProbe's baseline comparison across devices. The latest snapshot of
    /// this archive (the baseline) against the latest of OTHER, another device's archive, type by
    /// type, with the deltas' reasons and guards; computed now and stored nowhere. No anomaly rule
    /// runs: they judge one device's history, and another device's archive is no later export.
    func compare(_ other: String) throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        let baseline = try archive.resolve("latest")
        let theirs = try Archive(path: other, create: false).resolve("latest")
        let delta = DeltaBuilder.delta(id: UUID().uuidString.lowercased(), from: baseline, to: theirs, at: now())
        if format == "text" {
            try writer.write(
                "\(path): device \(baseline.deviceID), snapshot \(baseline.seq) of \(Timestamp.format(milliseconds: baseline.createdAt))\n"
                    + "\(other): device \(theirs.deviceID), snapshot \(theirs.seq) of \(Timestamp.format(milliseconds: theirs.createdAt))\n"
                    + SnapshotText.delta(delta, anomalies: []))
        } else {
            var record = Records.delta(delta, ephemeral: true)
            record["from_device_id"] = .string(baseline.deviceID)
            record["to_device_id"] = .string(theirs.deviceID)
            try write(record)
        }
        let differ = delta.types.contains { $0.transition != .unchanged || $0.hashBefore != $0.hashAfter }
        return options.has("exit-status") && differ ? .verdict : .success
    }
}

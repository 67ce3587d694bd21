import Foundation
import VitalsKit

/// `list`, `show` and `diff`: reading the chain.
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
}

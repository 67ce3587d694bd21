import VitalsKit

/// The result of a strict chain validation.
struct Verification: Sendable {
    /// What was found.
    enum Status: String, Sendable {
        /// Every snapshot on the chain checks out.
        case valid
        /// A checksum or type hash does not match the counts it covers.
        case checksumMismatch = "checksum_mismatch"
        /// A snapshot that is not a chain start has no delta, or its delta lost its type deltas.
        case missingDelta = "missing_delta"
        /// The chain's shape is wrong: a fork, a missing previous snapshot, a loop, a stray snapshot.
        case corrupted
    }

    /// What was found.
    var status: Status
    /// The snapshot where the fault was found (nil when valid).
    var snapshotID: String?
    /// Snapshots checked before stopping.
    var checked: Int
    /// In words.
    var message: String
}

/// HealthProbe's IntegrityService in strict mode: walks back from the latest snapshot through
/// `previous_snapshot_id` (the sole source of chain truth), recomputing every checksum from
/// the type counts and comparing it with the snapshot's own and with the delta's
/// `checksum_after` and `checksum_before`. It stops at the first fault and repairs nothing.
enum Integrity {
    /// Validates the chain in `archive`.
    static func validate(_ archive: Archive) throws -> Verification {
        let snapshots = try archive.snapshots(types: false)
        guard let latest = snapshots.last else {
            return Verification(status: .valid, snapshotID: nil, checked: 0, message: "the archive holds no snapshot")
        }
        // Fork detection first: no two snapshots may follow the same one.
        if let fork = try archive.forks().first {
            return Verification(
                status: .corrupted, snapshotID: fork.previous, checked: 0,
                message: "chain fork detected: \(fork.snapshots.joined(separator: " and ")) all follow \(fork.previous)")
        }
        let byID = Dictionary(snapshots.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var visited: Set<String> = []
        var current = latest
        var checked = 0
        while true {
            if !visited.insert(current.id).inserted {
                return Verification(
                    status: .corrupted, snapshotID: current.id, checked: checked,
                    message: "the chain loops back to snapshot \(current.id)")
            }
            let own = try recomputed(current, archive)
            if let problem = own.problem {
                return Verification(status: .checksumMismatch, snapshotID: current.id, checked: checked, message: problem)
            }
            if own.checksum != current.checksum {
                return Verification(
                    status: .checksumMismatch, snapshotID: current.id, checked: checked,
                    message: "snapshot \(current.id): its checksum \(current.checksum) does not match its type counts (\(own.checksum))")
            }
            guard let previousID = current.previousSnapshotID else {
                if !current.isChainStart {
                    return Verification(
                        status: .corrupted, snapshotID: current.id, checked: checked,
                        message: "snapshot \(current.id) has no previous snapshot but is not marked as a chain start")
                }
                checked += 1
                break
            }
            if current.isChainStart {
                return Verification(
                    status: .corrupted, snapshotID: current.id, checked: checked,
                    message: "snapshot \(current.id) is marked as a chain start but follows \(previousID)")
            }
            guard let stored = try archive.storedDelta(to: current.id) else {
                return Verification(
                    status: .missingDelta, snapshotID: current.id, checked: checked,
                    message: "snapshot \(current.id) follows \(previousID) but there is no delta between them")
            }
            if stored.delta.types.count != stored.declaredTypes {
                return Verification(
                    status: .missingDelta, snapshotID: current.id, checked: checked,
                    message:
                        "delta \(stored.delta.id) into snapshot \(current.id) has \(stored.delta.types.count) of its \(stored.declaredTypes) type deltas"
                )
            }
            if stored.delta.fromSnapshotID != previousID {
                return Verification(
                    status: .corrupted, snapshotID: current.id, checked: checked,
                    message:
                        "delta \(stored.delta.id) into snapshot \(current.id) starts at \(stored.delta.fromSnapshotID), not at its previous snapshot \(previousID)"
                )
            }
            guard let previous = byID[previousID] else {
                return Verification(
                    status: .corrupted, snapshotID: current.id, checked: checked,
                    message: "snapshot \(current.id) follows \(previousID), which is not in the archive")
            }
            if stored.delta.checksumAfter != own.checksum {
                return Verification(
                    status: .checksumMismatch, snapshotID: current.id, checked: checked,
                    message:
                        "delta \(stored.delta.id): checksum_after \(stored.delta.checksumAfter) does not match snapshot \(current.id) (\(own.checksum))"
                )
            }
            let before = try recomputed(previous, archive)
            if let problem = before.problem {
                return Verification(status: .checksumMismatch, snapshotID: previous.id, checked: checked + 1, message: problem)
            }
            if stored.delta.checksumBefore != before.checksum {
                return Verification(
                    status: .checksumMismatch, snapshotID: previous.id, checked: checked + 1,
                    message:
                        "delta \(stored.delta.id): checksum_before \(stored.delta.checksumBefore) does not match snapshot \(previous.id) (\(before.checksum))"
                )
            }
            checked += 1
            current = previous
        }
        if let stray = snapshots.first(where: { !visited.contains($0.id) }) {
            return Verification(
                status: .corrupted, snapshotID: stray.id, checked: checked,
                message: "snapshot \(stray.id) is not on the chain that ends at the latest snapshot \(latest.id)")
        }
        return Verification(
            status: .valid, snapshotID: nil, checked: checked,
            message: "\(checked) snapshot\(checked == 1 ? "" : "s") checked: the chain is intact")
    }

    /// A snapshot's checksum recomputed from its stored counts, and any type whose stored hash
    /// does not match its count and dates.
    private static func recomputed(_ snapshot: Snapshot, _ archive: Archive) throws -> (checksum: String, problem: String?) {
        let rows = try archive.typeCounts(seq: snapshot.seq)
        for row in rows where row.type.typeHash != row.storedHash {
            return ("", "snapshot \(snapshot.id): the stored hash of \(row.type.typeIdentifier) does not match its count and dates")
        }
        return (Hashing.checksum(rows.map(\.type)), nil)
    }
}

import Foundation
import SQLiteStore
import VitalsCrypto
import VitalsKit

/// Health Sync's pairing, kept in the archive: one-time tokens (only their SHA-256 is stored)
/// and the clients paired by the SHA-256 fingerprint of their certificate. Every event goes to
/// the operation log in the same transaction as the change it records.
extension Archive {
    /// A paired client (the seed's `PairedDevice`).
    struct PairedClient: Sendable {
        var id: String
        var certificateFingerprint: String
        var pairedAt: Int64
        var lastSeen: Int64?
        var deletedAt: Int64?
    }

    /// Why a token was refused.
    enum TokenRefusal: String, Error {
        case unknown = "the pairing token is not known"
        case expired = "the pairing token has expired"
        case used = "the pairing token was already used"
    }

    /// Stores a new token's hash; returns its id.
    func issuePairingToken(sha256 hash: String, at time: Int64, expiresAt: Int64, diagnostics: Diagnostics) throws -> Int64 {
        var tokenID: Int64 = 0
        try withLoggedChange("pairing_token", snapshotIDs: [], at: time, diagnostics: diagnostics) {
            let insert = try db.prepare("INSERT INTO pairing_tokens (token_sha256, created_at, expires_at) VALUES (?, ?, ?)")
            insert.bind(hash, time, expiresAt)
            try insert.step()
            tokenID = db.lastInsertRowID
            return ((), JSONObject([JSONField("token_id", .number(String(tokenID))), JSONField("expires_at", Records.time(expiresAt))]))
        }
        return tokenID
    }

    /// Redeems a token for a client certificate: checks it is known, unexpired and unused, marks
    /// it used and pairs the fingerprint (already paired: kept, the token is still spent).
    /// The attempt is logged whatever the outcome. Returns the paired client, or why not.
    func redeemPairingToken(
        sha256 hash: String, fingerprint: String, at time: Int64,
        diagnostics: Diagnostics
    ) throws -> Result<PairedClient, TokenRefusal> {
        try withLoggedChange("pair", snapshotIDs: [], at: time, diagnostics: diagnostics) {
            var detail = JSONObject([JSONField("client_fingerprint", .string(fingerprint))])
            let lookup = try db.prepare("SELECT id, expires_at, used_at FROM pairing_tokens WHERE token_sha256 = ?")
            lookup.bind(hash)
            let refusal: TokenRefusal?
            var tokenID: Int64?
            if try lookup.step() {
                tokenID = lookup.int64(0)
                detail["token_id"] = .number(String(lookup.int64(0)))
                if lookup.optionalInt64(2) != nil {
                    refusal = .used
                } else if lookup.int64(1) <= time {
                    refusal = .expired
                } else {
                    refusal = nil
                }
            } else {
                refusal = .unknown
            }
            if let refusal {
                detail["status"] = .integer(401)
                detail["outcome"] = .string(refusal == .unknown ? "unknown_token" : refusal == .expired ? "expired_token" : "used_token")
                return (.failure(refusal), detail)
            }
            let spend = try db.prepare("UPDATE pairing_tokens SET used_at = ?, used_by = ? WHERE id = ? AND used_at IS NULL")
            spend.bind(time, fingerprint, tokenID)
            try spend.step()
            let client: PairedClient
            if let existing = try pairedClient(fingerprint) {
                client = existing
                detail["outcome"] = .string("already_paired")
            } else {
                client = PairedClient(
                    id: UUID().uuidString, certificateFingerprint: fingerprint, pairedAt: time, lastSeen: nil, deletedAt: nil)
                let insert = try db.prepare(
                    "INSERT INTO paired_clients (id, certificate_fingerprint, paired_at, token_id) VALUES (?, ?, ?, ?)")
                insert.bind(client.id, fingerprint, time, tokenID)
                try insert.step()
                detail["outcome"] = .string("paired")
            }
            detail["status"] = .integer(200)
            detail["paired_client_id"] = .string(client.id)
            return (.success(client), detail)
        }
    }

    /// The active pairing of a fingerprint, if any.
    func pairedClient(_ fingerprint: String) throws -> PairedClient? {
        let statement = try db.prepare(
            """
            SELECT id, certificate_fingerprint, paired_at, last_seen, deleted_at FROM paired_clients
            WHERE certificate_fingerprint = ? AND deleted_at IS NULL
            """)
        statement.bind(fingerprint)
        return try statement.step() ? readClient(statement) : nil
    }

    /// Every pairing, oldest first; with `all`, the unpaired ones too.
    func pairedClients(all: Bool) throws -> [PairedClient] {
        let statement = try db.prepare(
            """
            SELECT id, certificate_fingerprint, paired_at, last_seen, deleted_at FROM paired_clients
            \(all ? "" : "WHERE deleted_at IS NULL") ORDER BY paired_at, rowid
            """)
        var clients: [PairedClient] = []
        while try statement.step() { clients.append(readClient(statement)) }
        return clients
    }

    /// Unpairs a fingerprint (a soft delete); returns the client, or nil when it was not paired.
    func unpair(_ fingerprint: String, at time: Int64, diagnostics: Diagnostics) throws -> PairedClient? {
        guard let client = try pairedClient(fingerprint) else { return nil }
        try withLoggedChange("unpair", snapshotIDs: [], at: time, diagnostics: diagnostics) {
            let update = try db.prepare("UPDATE paired_clients SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL")
            update.bind(time, client.id)
            try update.step()
            return (
                (), JSONObject([JSONField("client_fingerprint", .string(fingerprint)), JSONField("paired_client_id", .string(client.id))])
            )
        }
        var unpaired = client
        unpaired.deletedAt = time
        return unpaired
    }

    /// Records that a paired client was seen (its `lastSeen`), inside the caller's transaction.
    func touch(_ client: PairedClient, at time: Int64) throws {
        let update = try db.prepare("UPDATE paired_clients SET last_seen = ? WHERE id = ?")
        update.bind(time, client.id)
        try update.step()
    }

    private func readClient(_ row: SQLiteStatement) -> PairedClient {
        PairedClient(
            id: row.text(0) ?? "", certificateFingerprint: row.text(1) ?? "", pairedAt: row.int64(2),
            lastSeen: row.optionalInt64(3), deletedAt: row.optionalInt64(4))
    }
}

/// One-time pairing tokens: random, shown once, stored as a hash.
enum PairingToken {
    /// 130 random bits as 26 lowercase Base32 characters (RFC 4648 alphabet, no padding).
    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        return String((0..<26).map { _ in alphabet[Int(generator.next(upperBound: UInt32(32)))] })
    }

    /// What the archive keeps of a token: its SHA-256, hex.
    static func hash(_ token: String) -> String { SHA256.hexDigest(Array(token.utf8)) }

    /// Whether text has the shape of a token (so nothing else is ever hashed and looked up).
    static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 26
            && text.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "2")...UInt8(ascii: "7")).contains($0)
            }
    }
}

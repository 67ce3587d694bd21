import Foundation
import VitalsKit

/// What `scan` keeps for `fetch` (the seed's CLI keeps it in the Keychain): the server's address,
/// the SHA-256 of its certificate and its key pin, this client's certificate and key files and the
/// pairing's id. A JSON object in one file written atomically with mode 0600; no token, no key.
struct ClientState: Equatable {
    var server: String
    var serverCertificateSHA256: String
    var serverPublicKeyPin: String
    /// Absolute paths of the client certificate and its key.
    var clientCertificate: String
    var clientKey: String
    var clientCertificateSHA256: String
    var pairingID: String
    var pairedAt: Int64

    /// The state as a JSON object (snake_case keys; `type` names it).
    var object: JSONObject {
        JSONObject([
            JSONField("type", .string("pairing")),
            JSONField("server", .string(server)),
            JSONField("server_certificate_sha256", .string(serverCertificateSHA256)),
            JSONField("server_public_key_pin", .string(serverPublicKeyPin)),
            JSONField("client_certificate", .string(clientCertificate)),
            JSONField("client_key", .string(clientKey)),
            JSONField("client_certificate_sha256", .string(clientCertificateSHA256)),
            JSONField("pairing_id", .string(pairingID)),
            JSONField("paired_at", .string(Timestamp.format(milliseconds: pairedAt))),
        ])
    }

    /// Writes the file (temp + fsync + rename, mode 0600).
    func save(to path: String) throws {
        try AtomicFile.write(JSONValue.object(object).jsonText + "\n", to: path)
    }

    /// Reads the file; a missing one means this client has not paired. A file another user could
    /// have changed (owned by someone else, or writable by group or others) is refused, as ssh
    /// refuses such a config: it names the server and the pins this client trusts.
    static func load(from path: String) throws -> ClientState {
        var status = stat()
        guard stat(path, &status) == 0, let data = FileManager.default.contents(atPath: path) else {
            throw ToolError(
                "not paired yet: no \(path) (run healthsync scan with the pairing text snapshot-delta pair prints on the server)")
        }
        try ClientState.checkPrivate(path, status, forbidden: 0o022, what: "the pairing")
        guard let object = try? JSONParser.parse([UInt8](data)).objectValue else {
            throw ToolError("\(path): not a healthsync state file (scan again)")
        }
        func text(_ key: String) throws(ToolError) -> String {
            guard let value = object[key]?.stringValue, !value.isEmpty else { throw ToolError("\(path): \(key) is missing (scan again)") }
            return value
        }
        guard let pairedAt = Timestamp.parse(try text("paired_at")),
            let server = PairingPayload.serverAddress(try text("server")),
            PairingPayload.isPin(try text("server_public_key_pin"))
        else {
            throw ToolError("\(path): not a healthsync state file (scan again)")
        }
        let state = ClientState(
            server: server, serverCertificateSHA256: try text("server_certificate_sha256"),
            serverPublicKeyPin: try text("server_public_key_pin"), clientCertificate: try text("client_certificate"),
            clientKey: try text("client_key"), clientCertificateSHA256: try text("client_certificate_sha256"),
            pairingID: try text("pairing_id"), pairedAt: pairedAt)
        try ClientState.checkKey(state.clientKey)
        return state
    }

    /// Refuses a client key that others can read or change, as ssh refuses an unprotected private
    /// key: whoever reads it can fetch this client's health data.
    static func checkKey(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { throw ToolError("cannot read the client key \(path) (scan again)") }
        try checkPrivate(path, status, forbidden: 0o077, what: "the client key")
    }

    /// Refuses `path` when another user owns it or its mode has any of the `forbidden` bits.
    private static func checkPrivate(_ path: String, _ status: stat, forbidden: mode_t, what: String) throws {
        switch OwnerCheck.refusal(of: status, forbidding: forbidden) {
        case nil: return
        case .foreignOwner(let owner):
            throw ToolError(
                "\(path) (\(what)) belongs to user \(owner), not to this user (\(geteuid())): refused, since its owner can change it")
        case .openMode(let mode):
            let others = forbidden == 0o022 ? "others can change it" : "others can read it"
            throw ToolError("\(path) (\(what)) has mode \(OwnerCheck.octal(mode)): refused, since \(others) (chmod 600 '\(path)')")
        }
    }
}

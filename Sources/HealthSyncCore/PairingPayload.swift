import VitalsCrypto
import VitalsKit

/// What the QR code of `snapshot-delta pair` holds: the server's pairing URL, the one-time token,
/// the SHA-256 of the server certificate and its public key pin. Read from the QR text
/// (`{"url", "token", "certificateFingerprint", "pin"}`) or from the whole `pairing_token` record
/// of `pair --format ndjson` (`pair_url`, `token`, `server_certificate_sha256`, `server_public_key_pin`).
struct PairingPayload: Equatable {
    /// The server's address, `https://HOST[:PORT]`, without the pairing path.
    var server: String
    var token: String
    /// 64 lowercase hex digits.
    var certificateSHA256: String
    /// `sha256//` and 44 Base64 characters, as curl's `--pinnedpubkey` takes it.
    var publicKeyPin: String

    /// The path the token is posted to.
    static let pairPath = "/api/v1/pair"

    /// Reads the text; the error says what is wrong with it, never repeating the token.
    static func parse(_ text: String) throws(ToolError) -> PairingPayload {
        let trimmed = text.trimmingASCIIWhitespace
        guard !trimmed.isEmpty else { throw ToolError("the pairing text is empty (paste what snapshot-delta pair printed as its QR code)") }
        guard trimmed.utf8.count <= 4096, let value = try? JSONParser.parse(trimmed), let object = value.objectValue else {
            throw ToolError("the pairing text is not the JSON object snapshot-delta pair puts in its QR code")
        }
        func field(_ names: String...) -> String? {
            for name in names { if let text = object[name]?.stringValue { return text } }
            return nil
        }
        guard let url = field("url", "pair_url"), let server = serverAddress(url) else {
            throw ToolError("the pairing text has no https:// url to pair at")
        }
        guard let token = field("token"), isToken(token) else {
            throw ToolError("the pairing text has no token of 26 letters and digits (snapshot-delta pair makes one)")
        }
        guard let fingerprint = field("certificateFingerprint", "server_certificate_sha256").flatMap(Certificate.normalizedFingerprint)
        else {
            throw ToolError("the pairing text has no certificateFingerprint (the server certificate's SHA-256, 64 hex digits)")
        }
        guard let pin = field("pin", "server_public_key_pin"), isPin(pin) else {
            throw ToolError("the pairing text has no pin (sha256// and the Base64 SHA-256 of the server's public key)")
        }
        return PairingPayload(server: server, token: token, certificateSHA256: fingerprint, publicKeyPin: pin)
    }

    /// `https://HOST[:PORT]` from a pairing URL or a server address (no credentials, no query).
    static func serverAddress(_ url: String) -> String? {
        guard url.hasPrefix("https://"), url.utf8.count <= 2048,
            !url.contains(where: { $0.isWhitespace || $0 == "@" || $0 == "?" || $0 == "#" || $0 == "\\" })
        else { return nil }
        var address = url
        if address.hasSuffix(pairPath) { address.removeLast(pairPath.count) }
        while address.hasSuffix("/") { address.removeLast() }
        let rest = address.dropFirst("https://".count)
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        return address
    }

    /// 26 lowercase Base32 characters, the shape of `snapshot-delta pair`'s tokens.
    static func isToken(_ text: String) -> Bool {
        text.utf8.count == 26
            && text.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "2") && $0 <= UInt8(ascii: "7"))
            }
    }

    /// `sha256//` and the Base64 of 32 bytes.
    static func isPin(_ text: String) -> Bool {
        guard text.hasPrefix("sha256//"), let bytes = Base64.decode(String(text.dropFirst(8))) else { return false }
        return bytes.count == 32
    }
}

extension String {
    /// The text without leading and trailing spaces, tabs and line breaks.
    var trimmingASCIIWhitespace: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else { return "" }
        return String(self[first...last])
    }
}

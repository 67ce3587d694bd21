#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A self-signed certificate and its key (EC P-256) made with openssl(1): Health Sync's server
/// certificate (`snapshot-delta cert server`) and a client's (`snapshot-delta cert client`, and
/// `healthsync scan` when the client has none yet). The key is written 0600, the certificate 0644.
public enum SelfSignedCertificate {
    /// Who the certificate is for: it decides the extended key usage.
    public enum Kind: String, Sendable {
        case server
        case client
    }

    /// Whether `name` may go into a certificate: a host name or an address (letters, digits,
    /// `.`, `-`, `_`, `:`; ASCII; 1 to 253 bytes).
    public static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 253
            && name.utf8.allSatisfy { byte in
                byte < 0x80
                    && ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                        || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":"))
            }
    }

    /// Makes the certificate at `certificatePath` and its key at `keyPath` (both replaced when
    /// they exist), for `names` (the first is also its common name), valid for `days`.
    public static func make(_ kind: Kind, names: [String], days: Int, certificatePath: String, keyPath: String) throws(ToolError) {
        guard let first = names.first, names.allSatisfy(isName) else { throw ToolError("a certificate needs host names or addresses") }
        let subjectNames = names.map { name in
            name.contains(":") || name.allSatisfy({ $0.isNumber || $0 == "." }) ? "IP:\(name)" : "DNS:\(name)"
        }
        let usage = kind == .server ? "serverAuth" : "clientAuth"
        let arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", keyPath, "-out", certificatePath, "-days", String(days), "-subj", "/CN=\(first)",
            "-addext", "subjectAltName=" + subjectNames.joined(separator: ","),
            "-addext", "extendedKeyUsage=\(usage)",
        ]
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        let result: ChildProcess.Result
        do {
            result = try ChildProcess.run(arguments, timeoutMs: 60_000)
        } catch {
            throw ToolError("cannot run openssl (install it, or bring your own certificate): \(error.reason)")
        }
        guard result.succeeded else {
            let words = String(decoding: result.error, as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
            throw ToolError("openssl could not make the certificate: " + words)
        }
        chmod(keyPath, 0o600)
        chmod(certificatePath, 0o644)
    }
}

import Foundation
import VitalsCrypto
import VitalsKit

/// `pair`, `paired`, `unpair` and `cert`: Health Sync's pairing on the command line.
extension Run {
    /// Prints a one-time token and the server certificate's fingerprints, as text and a QR code.
    func pair() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let ttl = try options.duration("ttl") ?? 600_000
        guard
            let certificatePath = options.value("server-cert")
                ?? context.environment["VITALS_SERVER_CERT"].flatMap({ $0.isEmpty ? nil : $0 })
        else {
            throw UsageError("pair wants --server-cert FILE (the certificate nginx serves), or VITALS_SERVER_CERT")
        }
        let certificate = try readCertificate(certificatePath)
        let base = try serverURL()
        let archive = try Archive(path: path, create: true)
        let token = PairingToken.generate()
        let time = now()
        let expires = time + ttl
        _ = try archive.issuePairingToken(sha256: PairingToken.hash(token), at: time, expiresAt: expires, diagnostics: context.diagnostics)
        let pairURL = base + HealthSyncAPI.pairPath
        let payload = JSONValue.object(
            JSONObject([
                JSONField("url", .string(pairURL)), JSONField("token", .string(token)),
                JSONField("certificateFingerprint", .string(certificate.sha256Fingerprint)),
                JSONField("pin", .string(certificate.publicKeyPin)),
            ])
        ).jsonText
        let curl =
            "curl --cert client.crt --key client.key --cacert server.crt --pinnedpubkey '\(certificate.publicKeyPin)' "
            + "-H 'Content-Type: application/json' --data-binary '{\"token\":\"\(token)\"}' \(pairURL)"
        if format == "ndjson" {
            try write(
                JSONObject([
                    JSONField("type", .string("pairing_token")), JSONField("token", .string(token)),
                    JSONField("expires_at", Records.time(expires)),
                    JSONField("server_certificate_sha256", .string(certificate.sha256Fingerprint)),
                    JSONField("server_public_key_pin", .string(certificate.publicKeyPin)),
                    JSONField("pair_url", .string(pairURL)), JSONField("qr_text", .string(payload)),
                ]))
            return .success
        }
        var text = """
            Pairing token:        \(token)
            Expires:              \(Timestamp.formatSeconds(milliseconds: expires)) (single use)
            Server SHA-256:       \(Certificate.colonSeparated(certificate.sha256Fingerprint))
            Server key pin:       \(certificate.publicKeyPin)
            Pairing text:         \(payload)

            On the client, give the pairing text (the QR code's) to healthsync scan, or with curl, its certificate
            and key (snapshot-delta cert client) and a copy of server.crt:
              \(curl)

            """
        if let code = qrCode(payload) {
            text += "\nOr scan:\n" + code
        }
        try writer.write(text.hasSuffix("\n") ? String(text.dropLast()) : text)
        return .success
    }

    /// Lists the paired clients (with `--all`, the unpaired ones too).
    func paired() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let archive = try Archive(path: path, create: false)
        for client in try archive.pairedClients(all: options.has("all")) {
            if format == "text" {
                let last = client.lastSeen.map { Timestamp.formatSeconds(milliseconds: $0) } ?? "never"
                let state = client.deletedAt.map { "unpaired " + Timestamp.formatSeconds(milliseconds: $0) } ?? "paired"
                try writer.write(
                    "\(client.certificateFingerprint)  paired \(Timestamp.formatSeconds(milliseconds: client.pairedAt))  last seen \(last)  \(state)"
                )
            } else {
                try write(
                    JSONObject([
                        JSONField("type", .string("paired_client")), JSONField("id", .string(client.id)),
                        JSONField("certificate_fingerprint", .string(client.certificateFingerprint)),
                        JSONField("paired_at", Records.time(client.pairedAt)), JSONField("last_seen", Records.time(client.lastSeen)),
                        JSONField("unpaired_at", Records.time(client.deletedAt)),
                    ]))
            }
        }
        return .success
    }

    /// Unpairs a client by its certificate's SHA-256 fingerprint.
    func unpair(_ operand: String) throws -> VitalsKit.ExitStatus {
        guard let fingerprint = Certificate.normalizedFingerprint(operand) else {
            throw UsageError(
                "unpair wants the SHA-256 fingerprint of the client certificate (64 hex digits, colons allowed), as paired lists it")
        }
        let archive = try Archive(path: path, create: false)
        guard try archive.unpair(fingerprint, at: now(), diagnostics: context.diagnostics) != nil else {
            throw ToolError("no paired client has the fingerprint \(fingerprint)")
        }
        return context.diagnostics.errorCount > 0 ? .failure : .success
    }

    /// Makes a self-signed server or client certificate and its key with openssl(1).
    func cert(_ certKind: SnapshotDeltaCommand.CertKind) throws -> VitalsKit.ExitStatus {
        let kind = certKind.rawValue
        guard let directory = options.value("out"), !directory.isEmpty else { throw UsageError("cert wants --out DIR") }
        let format = try options.choice("format")
        let days = try options.integer("days", in: 1...36_500)
        var names = options.all("name")
        if names.isEmpty { names = certKind == .server ? ["localhost", "127.0.0.1", "::1"] : ["vitals-client"] }
        for name in names where !SelfSignedCertificate.isName(name) {
            throw UsageError("--name '\(name)' is not a host name or an address")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificatePath = (directory as NSString).appendingPathComponent("\(kind).crt")
        let keyPath = (directory as NSString).appendingPathComponent("\(kind).key")
        if !options.has("force") {
            for file in [certificatePath, keyPath] where FileManager.default.fileExists(atPath: file) {
                throw ToolError("\(file) exists; name another --out, or --force to replace it")
            }
        }
        try SelfSignedCertificate.make(
            certKind == .server ? .server : .client, names: names, days: days,
            certificatePath: certificatePath, keyPath: keyPath)
        let certificate = try readCertificate(certificatePath)
        if format == "ndjson" {
            try write(
                JSONObject([
                    JSONField("type", .string("certificate")), JSONField("kind", .string(kind)),
                    JSONField("certificate", .string(certificatePath)), JSONField("key", .string(keyPath)),
                    JSONField("sha256", .string(certificate.sha256Fingerprint)),
                    JSONField("public_key_pin", .string(certificate.publicKeyPin)),
                ]))
        } else {
            try writer.write(
                """
                Certificate:   \(certificatePath)
                Key:           \(keyPath) (mode 0600; keep it private)
                SHA-256:       \(Certificate.colonSeparated(certificate.sha256Fingerprint))
                Key pin:       \(certificate.publicKeyPin)
                """)
        }
        return .success
    }

    private func readCertificate(_ file: String) throws -> Certificate {
        guard let data = FileManager.default.contents(atPath: file) else { throw ToolError("cannot read the certificate \(file)") }
        guard let certificate = Certificate(pem: String(decoding: data, as: UTF8.self)) else {
            throw ToolError("\(file) holds no PEM certificate")
        }
        return certificate
    }

    private func serverURL() throws -> String {
        let url = options.value("url") ?? "https://localhost:8443"
        guard url.hasPrefix("https://"), url.utf8.count > 8, !url.contains(where: { $0.isWhitespace || $0 == "'" }) else {
            throw UsageError("--url wants the server's https:// address, such as https://myhost.local:8443")
        }
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// The QR code of `text` by qrencode(1) for a terminal, or nil when qrencode is not installed.
    private func qrCode(_ text: String) -> String? {
        guard let result = try? ChildProcess.run(["qrencode", "-t", "UTF8", "-m", "2", text], timeoutMs: 10_000), result.succeeded else {
            return nil
        }
        return String(decoding: result.output, as: UTF8.self)
    }
}

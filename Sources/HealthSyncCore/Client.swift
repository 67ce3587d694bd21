import Foundation
import VitalsCrypto
import VitalsKit

/// One invocation of healthsync: its options, its files, and the subcommands' bodies.
struct Client {
    let options: ParsedOptions
    let context: ToolContext
    /// The state file.
    let statePath: String
    let timeoutMs: Int

    var writer: RecordWriter { context.output }

    init(options: ParsedOptions, context: ToolContext) throws {
        self.options = options
        self.context = context
        timeoutMs = Int(try options.duration("timeout") ?? 30_000)
        if let state = options.value("state") {
            guard !state.isEmpty else { throw UsageError("--state wants a file") }
            statePath = Client.absolute(state)
        } else {
            let environment = context.environment
            let base =
                environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
                ?? environment["HOME"].flatMap { $0.isEmpty ? nil : $0 + "/.config" }
            guard let base else { throw UsageError("no HOME to keep the pairing in: name a file with --state") }
            statePath = base + "/vitals/healthsync.json"
        }
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    func write(_ object: JSONObject) throws { try writer.write(JSONValue.object(object).encoded()) }

    // MARK: - scan

    /// Pairs: reads the pairing text, makes the client certificate when there is none, posts the
    /// token with it to the server that shows the pinned key and certificate, and keeps the pairing.
    func scan(_ operand: String?) throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let payload = try PairingPayload.parse(try pairingText(operand))
        let (certificatePath, keyPath) = try clientIdentity()
        guard let certificateText = FileManager.default.contents(atPath: certificatePath),
            let certificate = Certificate(pem: String(decoding: certificateText, as: UTF8.self))
        else {
            throw ToolError("\(certificatePath) holds no PEM certificate")
        }
        let pins = Pins(
            certificateSHA256: payload.certificateSHA256, publicKeyPin: payload.publicKeyPin, certificate: certificatePath, key: keyPath)
        let connection = options.has("discover") ? try discovered(pins) : pins.connection(payload.server, timeoutMs: timeoutMs)
        let server = connection.server
        // The server must show the key and the certificate the pairing text names before the token goes out
        // (a server Bonjour found has just shown them).
        if !options.has("discover") { try connection.checkServer() }
        let answer = try connection.request("POST", PairingPayload.pairPath, body: JSONObject([JSONField("token", .string(payload.token))]))
        guard answer.status == 200 else { throw SyncConnection.refusal(answer, server: server) }
        guard answer.object["status"]?.stringValue == "paired", let id = answer.object["id"]?.stringValue,
            answer.object["certificateFingerprint"]?.stringValue == certificate.sha256Fingerprint
        else {
            throw ToolError("\(server) answered the pairing without pairing this client's certificate: \(answer.object.fields.map(\.key))")
        }
        let pairedAt = answer.object["pairedAt"]?.stringValue.flatMap(Timestamp.parse) ?? Clock.wallMilliseconds()
        let state = ClientState(
            server: server, serverCertificateSHA256: payload.certificateSHA256,
            serverPublicKeyPin: payload.publicKeyPin, clientCertificate: certificatePath, clientKey: keyPath,
            clientCertificateSHA256: certificate.sha256Fingerprint, pairingID: id, pairedAt: pairedAt)
        try makeFolder(AtomicFile.directoryName(statePath))
        try state.save(to: statePath)
        if format == "ndjson" {
            var record = state.object
            record["state"] = .string(statePath)
            try write(record)
        } else {
            try writer.write(
                """
                Paired with \(server) (server certificate SHA-256 \(Certificate.colonSeparated(payload.certificateSHA256)))
                Client certificate: \(certificatePath) (SHA-256 \(Certificate.colonSeparated(certificate.sha256Fingerprint)))
                Kept in: \(statePath) (mode 0600)
                """)
        }
        return .success
    }

    /// The pairing text: the operand, standard input (`-`, or no operand and input that is not a
    /// terminal), or the clipboard (`--clipboard`, or no operand at a terminal).
    private func pairingText(_ operand: String?) throws -> String {
        if options.has("clipboard") {
            guard operand == nil else { throw UsageError("scan takes the pairing text from its argument or --clipboard, not both") }
            return try Clipboard.text(environment: context.environment)
        }
        if let operand, operand != "-" {
            if !operand.trimmingASCIIWhitespace.hasPrefix("{"), FileManager.default.fileExists(atPath: operand) {
                throw UsageError("scan takes the pairing text itself, not a file name: healthsync scan < \(operand)")
            }
            return operand
        }
        if operand == nil, isatty(context.streams.input) != 0 { return try Clipboard.text(environment: context.environment) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 65_536 {
            let count = read(context.streams.input, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The certificate and key this client presents: `--cert` and `--key`, or the files beside the
    /// state file, made with openssl(1) when neither exists yet.
    private func clientIdentity() throws -> (String, String) {
        let stem = statePath.hasSuffix(".json") ? String(statePath.dropLast(5)) : statePath
        let certificatePath = Client.absolute(options.value("cert") ?? stem + ".crt")
        let keyPath = Client.absolute(options.value("key") ?? stem + ".key")
        let manager = FileManager.default
        switch (manager.fileExists(atPath: certificatePath), manager.fileExists(atPath: keyPath)) {
        case (true, true):
            try ClientState.checkKey(keyPath)
            return (certificatePath, keyPath)
        case (false, false) where !options.has("cert") && !options.has("key"):
            try makeFolder(AtomicFile.directoryName(certificatePath))
            let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? ""
            let name = SelfSignedCertificate.isName("healthsync-" + host) ? "healthsync-" + host : "healthsync-client"
            try SelfSignedCertificate.make(.client, names: [name], days: 825, certificatePath: certificatePath, keyPath: keyPath)
            context.diagnostics.note("made this client's certificate \(certificatePath) and its key \(keyPath) (mode 0600)")
            return (certificatePath, keyPath)
        case (let haveCertificate, _):
            throw ToolError("cannot read \(haveCertificate ? keyPath : certificatePath) (give both --cert and --key, or neither)")
        }
    }

    /// Makes a folder (and its parents) only its owner can enter, when missing.
    private func makeFolder(_ path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { return }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ToolError("cannot make the folder \(path): \(error.localizedDescription)")
        }
    }

    // MARK: - A paired client's connection

    /// The connection to the paired server: found by Bonjour with `--discover`; else at the address
    /// kept at pairing, checked first with a handshake that sends nothing. When that address fails
    /// (the server moved: a new DHCP address, another port), the seed's way is taken: Bonjour finds
    /// the service naming the paired certificate, its pinned key and certificate are checked
    /// before anything is sent, and its address is kept in the state file for the next run. When
    /// Bonjour finds nothing, the kept address stays (a server restarting there is waited for by
    /// the retries).
    func pairedConnection() throws -> (ClientState, SyncConnection) {
        var state = try ClientState.load(from: statePath)
        let pins = Pins(state)
        if options.has("discover") { return (state, try discovered(pins)) }
        let kept = pins.connection(state.server, timeoutMs: timeoutMs)
        let failure: ToolError
        do {
            try kept.checkServer()
            return (state, kept)
        } catch let error as ToolError {
            failure = error
        }
        // Stopped during the check: what follows sees the stop and ends as a stop ends.
        guard !Signals.stopRequested else { return (state, kept) }
        let found: SyncConnection
        do {
            found = try discovered(pins)
        } catch let error as ToolError {
            context.diagnostics.note("\(failure.message); looked for by Bonjour, not found: \(error.message)")
            return (state, kept)
        }
        context.diagnostics.note(
            "the paired server no longer answers at \(state.server); Bonjour found it at \(found.server), "
                + "showing the pinned key and certificate, and \(statePath) keeps the new address")
        state.server = found.server
        try state.save(to: statePath)
        return (state, found)
    }

    /// What a connection trusts and presents: the server's certificate SHA-256 and key pin, this
    /// client's certificate and key.
    struct Pins {
        var certificateSHA256: String
        var publicKeyPin: String
        var certificate: String
        var key: String

        init(certificateSHA256: String, publicKeyPin: String, certificate: String, key: String) {
            self.certificateSHA256 = certificateSHA256
            self.publicKeyPin = publicKeyPin
            self.certificate = certificate
            self.key = key
        }

        init(_ state: ClientState) {
            self.init(
                certificateSHA256: state.serverCertificateSHA256, publicKeyPin: state.serverPublicKeyPin,
                certificate: state.clientCertificate, key: state.clientKey)
        }

        /// A connection to `server` with these pins.
        func connection(_ server: String, timeoutMs: Int) -> SyncConnection {
            SyncConnection(
                server: server, certificateSHA256: certificateSHA256, publicKeyPin: publicKeyPin, clientCertificate: certificate,
                clientKey: key, timeoutMs: timeoutMs)
        }
    }

    /// The connection to the first service Bonjour finds that names the certificate and shows the
    /// pinned key and certificate on a handshake (one that only claims them is skipped, with a note).
    private func discovered(_ pins: Pins) throws -> SyncConnection {
        var failures: [String] = []
        for found in try Discovery.servers(showing: pins.certificateSHA256, timeoutMs: timeoutMs) {
            let candidate = pins.connection(found.url, timeoutMs: timeoutMs)
            do {
                try candidate.checkServer()
            } catch let error as ToolError {
                context.diagnostics.note("Bonjour: '\(found.name)' at \(found.url) skipped: \(error.message)")
                failures.append("'\(found.name)' at \(found.url)")
                continue
            }
            context.diagnostics.note("Bonjour: '\(found.name)' at \(found.url) (\(found.host))")
            return candidate
        }
        throw ToolError("--discover: no service naming the paired certificate showed it (\(failures.joined(separator: ", ")))")
    }

    /// The seed's `GET /api/v1/health/types`.
    static let typesPath = "/api/v1/health/types"

    /// The types the server shares, from its answer to `typesPath`.
    func sharedTypes(_ answer: SyncConnection.Answer, server: String) throws -> [String] {
        guard answer.status == 200 else { throw SyncConnection.refusal(answer, server: server) }
        guard let list = answer.object["enabledTypes"]?.arrayValue else { throw ToolError("\(server) answered no enabledTypes") }
        return list.compactMap(\.stringValue)
    }

    // MARK: - types

    func types() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let policy = RetryPolicy(retries: try options.integer("retries", default: Client.defaultRetries, in: 0...100))
        let (_, connection) = try pairedConnection()
        var tally = RetryTally()
        let answer = try patiently(connection, "GET", Client.typesPath, what: "the shared types", policy: policy, tally: &tally)
        for type in try sharedTypes(answer, server: connection.server) {
            if format == "text" {
                try writer.write(type)
            } else {
                try write(
                    JSONObject([
                        JSONField("type", .string("shared_type")), JSONField("type_identifier", .string(type)),
                        JSONField("shared", .bool(true)),
                    ]))
            }
        }
        return .success
    }

    // MARK: - discover

    func discover() throws -> VitalsKit.ExitStatus {
        let format = try options.choice("format")
        let services = try Discovery.browse(timeoutMs: timeoutMs)
        if services.isEmpty { context.diagnostics.note("Bonjour found no \(Discovery.serviceType) service on the local network") }
        for service in services {
            if format == "text" {
                try writer.write(
                    "\(service.name)  \(service.url)  \(service.host)  \(service.interface) \(service.protocolName)"
                        + (service.txt("sha256").map { "  sha256 \($0)" } ?? ""))
            } else {
                try write(
                    JSONObject([
                        JSONField("type", .string("mdns_service")), JSONField("name", .string(service.name)),
                        JSONField("host", .string(service.host)), JSONField("address", .string(service.address)),
                        JSONField("port", .integer(service.port)), JSONField("url", .string(service.url)),
                        JSONField("interface", .string(service.interface)), JSONField("protocol", .string(service.protocolName)),
                        JSONField("server_certificate_sha256", service.txt("sha256").map { .string($0) } ?? .null),
                        JSONField("txt", .array(service.txt.map { .string($0) })),
                    ]))
            }
        }
        return .success
    }
}

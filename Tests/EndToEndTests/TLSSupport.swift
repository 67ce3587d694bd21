import Foundation

/// Certificates made at test time with the openssl command: a CA, server certificates with
/// known lifetimes signed by it, a self-signed one, and a client certificate.
final class TestCertificates: @unchecked Sendable {
    let directory: ScratchDirectory
    private let lock = NSLock()

    init() throws {
        directory = try ScratchDirectory()
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "3650", "-subj", "/CN=vitals-test-ca",
        ])
        try directory.write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        try directory.write("client.ext", "extendedKeyUsage=clientAuth\n")
        try directory.write("index.txt", "")
        try directory.write("serial", "1000\n")
        try directory.write(
            "ca.cnf",
            """
            [ca]
            default_ca = test
            [test]
            dir = \(directory.url.path)
            database = $dir/index.txt
            new_certs_dir = $dir
            serial = $dir/serial
            default_md = sha256
            policy = anything
            unique_subject = no
            [anything]
            commonName = supplied

            """)
    }

    func path(_ name: String) -> String { directory.path(name) }

    /// `notAfter` for a certificate with `days` whole days left plus half a day, so the
    /// expected `tls_expiry_days` (days left, rounded down) is exactly `days` whatever the
    /// test's timing. Negative `days` make an expired certificate.
    static func endDate(daysLeft days: Int) -> String {
        let seconds = Int(Date().timeIntervalSince1970) + days * 86_400 + 43_200
        return asn1(seconds)
    }

    static func asn1(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

    /// A server certificate for 127.0.0.1 signed by the test CA with `days` whole days left
    /// (and half a day more). Returns (certificate, key) paths.
    func server(named name: String, daysLeft days: Int) throws -> (cert: String, key: String) {
        try request(name, subject: "/CN=localhost")
        try sign(name, extensions: "server.ext", days: days)
        return (path("\(name).pem"), path("\(name).key"))
    }

    /// A self-signed certificate for 127.0.0.1 with `days` whole days left (trusted by no one).
    func selfSigned(named name: String, daysLeft days: Int) throws -> (cert: String, key: String) {
        try request(name, subject: "/CN=localhost")
        try sign(name, extensions: "server.ext", days: days, selfSigned: true)
        return (path("\(name).pem"), path("\(name).key"))
    }

    /// A client certificate signed by the test CA.
    func client(named name: String) throws -> (cert: String, key: String) {
        try request(name, subject: "/CN=\(name)")
        try sign(name, extensions: "client.ext", days: 30)
        return (path("\(name).pem"), path("\(name).key"))
    }

    /// curl's pin of a certificate's public key: `sha256//BASE64`.
    func pin(of certificate: String) throws -> String {
        let result = try shell(
            "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64")
        guard result.status == 0 else { throw TestFailure("pin: \(result.stderr)") }
        return "sha256//" + result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func request(_ name: String, subject: String) throws {
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("\(name).key"), "-out", path("\(name).csr"), "-subj", subject,
        ])
    }

    private func sign(_ name: String, extensions: String, days: Int, selfSigned: Bool = false) throws {
        lock.lock()
        defer { lock.unlock() }
        var arguments = [
            "ca", "-batch", "-notext", "-config", path("ca.cnf"), "-in", path("\(name).csr"),
            "-out", path("\(name).pem"), "-extfile", path(extensions),
            "-startdate", TestCertificates.asn1(Int(Date().timeIntervalSince1970) - 30 * 86_400),
            "-enddate", TestCertificates.endDate(daysLeft: days),
        ]
        if selfSigned {
            arguments += ["-selfsign", "-keyfile", path("\(name).key")]
        } else {
            arguments += ["-cert", path("ca.pem"), "-keyfile", path("ca.key")]
        }
        try openssl(arguments)
    }

    private func openssl(_ arguments: [String]) throws {
        let result = try runProcess("/usr/bin/env", ["openssl"] + arguments, stdin: "", environment: toolEnvironment())
        guard result.status == 0 else { throw TestFailure("openssl \(arguments.prefix(2).joined(separator: " ")): \(result.stderr)") }
    }
}

/// The Python TLS server of Fixtures/tls_server.py, started on a free port.
final class TLSServer {
    let process: Spawned
    let url: String

    /// Starts the server; `postAnswers` and `postLog` are files for its scripted POST answers and its log of POSTs.
    init(
        cert: String, key: String, clientCA: String? = nil, maxTLS: String? = nil, handshakeDelaySeconds: Double = 0,
        postAnswers: String? = nil, postLog: String? = nil
    ) throws {
        var arguments = [Binaries.fixtures.appendingPathComponent("tls_server.py").path, "--cert", cert, "--key", key]
        if let postAnswers { arguments += ["--post-answers", postAnswers] }
        if let postLog { arguments += ["--post-log", postLog] }
        if let clientCA { arguments += ["--client-ca", clientCA] }
        if let maxTLS { arguments += ["--max-tls", maxTLS] }
        if handshakeDelaySeconds > 0 { arguments += ["--handshake-delay", String(handshakeDelaySeconds)] }
        process = try Spawned(["/usr/bin/env", "python3"] + arguments)
        // The server prints its URL once it listens; reading that line is the wait.
        url = process.output.map(readFirstLine) ?? ""
        guard url.hasPrefix("https://") else { throw TestFailure("the TLS test server did not start (is python3 installed?)") }
    }
}

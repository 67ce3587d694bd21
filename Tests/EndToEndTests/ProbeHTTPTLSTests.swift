import Foundation
import Testing
import VitalsKit

/// probe-http against real TLS servers with certificates made at test time.
@Suite("probe-http TLS", .serialized, .hangGuard(minutes: 2))
struct ProbeHTTPTLSTests {
    static let certificates: TestCertificates? = try? TestCertificates()

    func certificates() throws -> TestCertificates {
        try #require(ProbeHTTPTLSTests.certificates, "openssl could not make the test certificates")
    }

    func probe(_ target: String, _ arguments: [String] = []) throws -> JSONObject {
        let result = try run("probe-http", arguments, stdin: target + "\n")
        let records = try result.records()
        guard records.count == 1 else { throw TestFailure("expected one sample: \(result.stdout) \(result.stderr)") }
        return records[0]
    }

    @Test("a certificate with 59.5 days left is up, with tls_expiry_days 59 (whole days left, rounded down)")
    func validCertificate() throws {
        let certs = try certificates()
        let (cert, key) = try certs.server(named: "sixty", daysLeft: 59)
        let server = try TLSServer(cert: cert, key: key)
        let sample = try probe(#"{"url":"\#(server.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#)
        #expect(sample.string("status") == "up", "\(sample.string("message") ?? "")")
        #expect(sample.string("kind") == "https")
        #expect(sample.int("tls_expiry_days") == 59)
        #expect((sample.double("tls_ms") ?? 0) > 0)
    }

    @Test("a certificate inside the warning band: 19 days left is degraded (ok ≥ 30), 10 days is down (< 14)")
    func warningBand() throws {
        let certs = try certificates()
        let (cert20, key20) = try certs.server(named: "twenty", daysLeft: 19)
        let server20 = try TLSServer(cert: cert20, key: key20)
        let degraded = try probe(#"{"url":"\#(server20.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#)
        #expect(degraded.string("status") == "degraded")
        #expect(degraded.string("reason") == "cert_expiry")
        #expect(degraded.string("message") == "Certificate expires in 19 days")
        let (cert10, key10) = try certs.server(named: "ten", daysLeft: 10)
        let server10 = try TLSServer(cert: cert10, key: key10)
        let down = try probe(#"{"url":"\#(server10.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#)
        #expect(down.string("status") == "down")
        #expect(down.string("reason") == "cert_expiry")
        let relaxed = try probe(
            #"{"url":"\#(server10.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#, ["--ssl-ok-days", "5", "--ssl-warning-days", "1"])
        #expect(relaxed.string("status") == "up")
    }

    @Test("an expired certificate is down with reason cert_expiry and a negative tls_expiry_days")
    func expiredCertificate() throws {
        let certs = try certificates()
        let (cert, key) = try certs.server(named: "expired", daysLeft: -2)
        let server = try TLSServer(cert: cert, key: key)
        let sample = try probe(#"{"url":"\#(server.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#)
        #expect(sample.string("status") == "down")
        #expect(sample.string("reason") == "cert_expiry")
        #expect(sample.int("tls_expiry_days") == -2, "expired a day and a half ago: -1.5 rounded down")
        #expect(sample.string("message")?.hasPrefix("Certificate expired at ") == true)
    }

    @Test("an untrusted (self-signed) certificate is error/tls; insecure skips verification but keeps the expiry")
    func untrusted() throws {
        let certs = try certificates()
        let (cert, key) = try certs.selfSigned(named: "self", daysLeft: 89)
        let server = try TLSServer(cert: cert, key: key)
        let failed = try probe(server.url + "/")
        #expect(failed.string("status") == "error")
        #expect(failed.string("reason") == "tls")
        #expect(failed.int("tls_expiry_days") == 89, "the certificate-only handshake still reads the expiry")
        let insecure = try probe(#"{"url":"\#(server.url)/","insecure":true}"#)
        #expect(insecure.string("status") == "up")
        #expect(insecure.int("tls_expiry_days") == 89)
        let flag = try probe(server.url + "/", ["-k"])
        #expect(flag.string("status") == "up")
    }

    @Test("mutual TLS: without a client certificate the server refuses (error/tls); with one it answers")
    func mutualTLS() throws {
        let certs = try certificates()
        let (cert, key) = try certs.server(named: "mtls", daysLeft: 60)
        let (clientCert, clientKey) = try certs.client(named: "vitals-cli")
        let server = try TLSServer(cert: cert, key: key, clientCA: certs.path("ca.pem"))
        let refused = try probe(#"{"url":"\#(server.url)/","ca_file":"\#(certs.path("ca.pem"))"}"#)
        #expect(refused.string("status") == "error")
        #expect(refused.string("reason") == "tls")
        let accepted = try probe(
            #"{"url":"\#(server.url)/","ca_file":"\#(certs.path("ca.pem"))","client_cert":"\#(clientCert)","client_key":"\#(clientKey)","expected_content":"client vitals-cli"}"#
        )
        #expect(accepted.string("status") == "up", "\(accepted.string("message") ?? "")")
    }

    @Test("public-key pinning: the right pin is up even for a self-signed server; a wrong pin is error/tls")
    func pinning() throws {
        let certs = try certificates()
        let (cert, key) = try certs.selfSigned(named: "pinned", daysLeft: 89)
        let server = try TLSServer(cert: cert, key: key)
        let pin = try certs.pin(of: cert)
        let pinned = try probe(#"{"url":"\#(server.url)/","insecure":true,"pinned_pubkey":"\#(pin)"}"#)
        #expect(pinned.string("status") == "up")
        let wrongPin = "sha256//" + String(repeating: "A", count: 43) + "="
        let mismatched = try probe(#"{"url":"\#(server.url)/","insecure":true,"pinned_pubkey":"\#(wrongPin)"}"#)
        #expect(mismatched.string("status") == "error")
        #expect(mismatched.string("reason") == "tls")
    }

    @Test("tls_min 1.3 refuses a server that offers at most TLS 1.2")
    func minimumVersion() throws {
        let certs = try certificates()
        let (cert, key) = try certs.server(named: "old", daysLeft: 60)
        let server = try TLSServer(cert: cert, key: key, maxTLS: "1.2")
        let ca = certs.path("ca.pem")
        let allowed = try probe(#"{"url":"\#(server.url)/","ca_file":"\#(ca)"}"#)
        #expect(allowed.string("status") == "up")
        let refused = try probe(#"{"url":"\#(server.url)/","ca_file":"\#(ca)","tls_min":"1.3"}"#)
        #expect(refused.string("status") == "error")
        #expect(refused.string("reason") == "tls")
    }

    @Test("kind ssl checks only the certificate (OnlineTracker's ssl monitor), trusting it or not")
    func sslKind() throws {
        let certs = try certificates()
        let (cert, key) = try certs.server(named: "sslkind", daysLeft: 19)
        let server = try TLSServer(cert: cert, key: key)
        let hostPort = server.url.replacingOccurrences(of: "https://", with: "")
        let sample = try probe(#"{"url":"ssl://\#(hostPort)","name":"cert"}"#)
        #expect(sample.string("kind") == "ssl")
        #expect(sample.string("method") == "CONNECT")
        #expect(sample.string("status") == "degraded")
        #expect(sample.int("tls_expiry_days") == 19)
        #expect(sample["code"] == .null)
        let explicit = try probe(#"{"url":"\#(server.url)","kind":"ssl","ssl_ok_threshold_days":10}"#)
        #expect(explicit.string("status") == "up")
        #expect(explicit.string("message") == "Certificate valid for 19 more days")
    }
}

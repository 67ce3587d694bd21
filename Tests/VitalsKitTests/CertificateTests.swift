import Testing
import VitalsCrypto

/// A self-signed P-256 certificate made for this test with openssl(1); the expected values were
/// computed by openssl and sha256sum, not by the code under test:
///   openssl x509 -in u.crt -outform der | sha256sum
///   openssl x509 -in u.crt -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64
private let pem = """
    -----BEGIN CERTIFICATE-----
    MIIBkzCCATmgAwIBAgIUebDP0RbTm1ikuVP2lzEOIEJ3/hEwCgYIKoZIzj0EAwIw
    FDESMBAGA1UEAwwJdW5pdC10ZXN0MB4XDTI2MTEyNjA1MzUxMVoXDTM2MTEyMzA1
    MzUxMVowFDESMBAGA1UEAwwJdW5pdC10ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
    AQcDQgAElXDLWYnWUjsrwOKYSRaZSfZcIJJNPpAuPw1s2fX2bIM51of8pYpsGhac
    jNFUekv4n4Jkla8NXxuU8nW8+F+A86NpMGcwHQYDVR0OBBYEFFuP4A4yNyA/F8Ya
    6ozzx5ouropeMB8GA1UdIwQYMBaAFFuP4A4yNyA/F8Ya6ozzx5ouropeMA8GA1Ud
    EwEB/wQFMAMBAf8wFAYDVR0RBA0wC4IJdW5pdC10ZXN0MAoGCCqGSM49BAMCA0gA
    MEUCIQDTnZ0MXwMiL2MeUwsRjFT03qzLrV9q6JtmBY1f3I/6lAIgdf9jSdKNw5Wu
    OfaS+1kqZSiCUtLW04jfguE95U4Db6g=
    -----END CERTIFICATE-----

    """
private let fingerprint = "53b0aa4acf3e65c3e84824d69c66745c73ceabd59cb66b46238a7d533e2d3c20"
private let pin = "sha256//F17tnEy6CU87kv/b+48RSaRG+vcSa/SLk5DMlZbM9Uk="

@Suite("Certificate: the fingerprint and public key pin pairing needs")
struct CertificateTests {
    @Test("a PEM certificate's SHA-256 and curl pin match openssl's")
    func fingerprints() throws {
        let certificate = try #require(Certificate(pem: pem))
        #expect(certificate.sha256Fingerprint == fingerprint)
        #expect(certificate.publicKeyPin == pin)
    }

    @Test("nginx's forms of the PEM read the same: tab-indented lines ($ssl_client_cert), text around it")
    func nginxForms() throws {
        let tabbed = pem.split(separator: "\n").enumerated().map { $0.offset == 0 ? String($0.element) : "\t" + $0.element }.joined(
            separator: "\n")
        #expect(Certificate(pem: tabbed)?.sha256Fingerprint == fingerprint)
        #expect(Certificate(pem: "subject=CN = unit-test\n" + pem + "trailer")?.publicKeyPin == pin)
    }

    @Test("what is not a certificate is nil: no markers, bad Base64, DER that is not a certificate, truncated")
    func refusals() {
        #expect(Certificate(pem: "hello") == nil)
        #expect(Certificate(pem: "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----") == nil)
        #expect(Certificate(pem: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----") == nil)
        #expect(Certificate(der: [0x30, 0x82, 0x01]) == nil)
        let der = Base64.decode(String(pem.split(separator: "\n").dropFirst().dropLast().joined()))!
        #expect(Certificate(der: der)?.sha256Fingerprint == fingerprint)
        #expect(Certificate(der: Array(der.dropLast(10))) == nil)
    }

    @Test("fingerprints as users write them: colons, capitals; anything else is nil")
    func normalized() {
        let colons = Certificate.colonSeparated(fingerprint)
        #expect(colons.hasPrefix("53:B0:AA:4A") && colons.count == 95)
        #expect(Certificate.normalizedFingerprint(colons) == fingerprint)
        #expect(Certificate.normalizedFingerprint(fingerprint.uppercased()) == fingerprint)
        #expect(Certificate.normalizedFingerprint("53b0") == nil)
        #expect(Certificate.normalizedFingerprint(String(repeating: "g", count: 64)) == nil)
    }
}

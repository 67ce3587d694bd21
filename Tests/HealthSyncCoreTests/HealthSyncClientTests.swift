import Foundation
import Testing
import VitalsKit

@testable import HealthSyncCore

@Suite("healthsync: the pairing text and avahi-browse's output")
struct HealthSyncClientTests {
    let token = "abcdefghijklmnopqrstuvwxyz"
    let fingerprint = String(repeating: "ab", count: 32)
    let pin = "sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

    @Test("the QR text and the pairing_token record both read; the server is the URL without its pairing path")
    func payloads() throws {
        let qr =
            #"{"url":"https://myhost.local:8443/api/v1/pair","token":"\#(token)","certificateFingerprint":"\#(fingerprint.uppercased())","pin":"\#(pin)"}"#
        let read = try PairingPayload.parse("  \n" + qr + "\r\n")
        #expect(
            read == PairingPayload(server: "https://myhost.local:8443", token: token, certificateSHA256: fingerprint, publicKeyPin: pin))
        let record =
            #"{"type":"pairing_token","token":"\#(token)","expires_at":"2026-01-10T08:10:00.000Z","server_certificate_sha256":"\#(fingerprint)","server_public_key_pin":"\#(pin)","pair_url":"https://[::1]:8443/api/v1/pair","qr_text":"{}"}"#
        #expect(try PairingPayload.parse(record).server == "https://[::1]:8443")
    }

    @Test(
        "a pairing text with a field missing or malformed is refused in words that never repeat the token",
        arguments: [
            (#"not json"#, "JSON object"),
            (#"{"url":"http://h/api/v1/pair","token":"TOKEN","certificateFingerprint":"FP","pin":"PIN"}"#, "https:// url"),
            (#"{"url":"https://u@h/api/v1/pair","token":"TOKEN","certificateFingerprint":"FP","pin":"PIN"}"#, "https:// url"),
            (#"{"url":"https://h/other/path","token":"TOKEN","certificateFingerprint":"FP","pin":"PIN"}"#, "https:// url"),
            (#"{"url":"https://h/api/v1/pair","token":"TOKEN1","certificateFingerprint":"FP","pin":"PIN"}"#, "token"),
            (#"{"url":"https://h/api/v1/pair","token":"TOKEN","certificateFingerprint":"abc","pin":"PIN"}"#, "certificateFingerprint"),
            (#"{"url":"https://h/api/v1/pair","token":"TOKEN","certificateFingerprint":"FP","pin":"sha256//AAAA"}"#, "pin"),
        ])
    func refused(text: String, words: String) {
        let filled = text.replacingOccurrences(of: "TOKEN1", with: token.uppercased()).replacingOccurrences(of: "TOKEN", with: token)
            .replacingOccurrences(of: "\"FP\"", with: "\"\(fingerprint)\"").replacingOccurrences(of: "\"PIN\"", with: "\"\(pin)\"")
        do {
            _ = try PairingPayload.parse(filled)
            Issue.record("accepted: \(filled)")
        } catch {
            #expect(error.message.contains(words), "\(error.message)")
            #expect(!error.message.contains(token) && !error.message.contains(token.uppercased()))
        }
    }

    /// avahi-browse --resolve --parsable --terminate _healthsync._tcp, as it printed two services
    /// published with avahi-publish on a second avahi-daemon across a veth pair (the first named
    /// `vitals Health Sync; test "q"`, the second with a TXT string holding a quote, a backslash and
    /// a semicolon).
    let recorded = #"""
        +;hsxb;IPv4;second;_healthsync._tcp;local
        +;hsxb;IPv4;vitals\032Health\032Sync\059\032test\032\034q\034;_healthsync._tcp;local
        =;hsxb;IPv4;second;_healthsync._tcp;local;hsx-a.local;10.231.7.1;9443;"x=a\"b\\c;d"
        =;hsxb;IPv4;vitals\032Health\032Sync\059\032test\032\034q\034;_healthsync._tcp;local;hsx-a.local;10.231.7.1;8443;"path=/api/v1" "fp=abc"
        """#

    @Test("avahi-browse's parsable lines: names unescaped, TXT strings read whole (a ; inside one too)")
    func browseOutput() {
        let services = Discovery.parse(recorded)
        #expect(services.count == 2)
        #expect(services.first?.name == "second" && services.first?.txt == [#"x=a"b\c;d"#] && services.first?.port == 9443)
        let named = services.last
        #expect(named?.name == #"vitals Health Sync; test "q""# && named?.host == "hsx-a.local" && named?.address == "10.231.7.1")
        #expect(named?.txt == ["path=/api/v1", "fp=abc"] && named?.txt("fp") == "abc" && named?.url == "https://10.231.7.1:8443")
    }

    @Test("an IPv6 address goes in brackets; a link-local one with its interface; IPv4 is preferred")
    func addresses() {
        let line =
            "=;eth0;IPv6;s;_healthsync._tcp;local;h.local;fe80::1;8443;\n=;eth0;IPv6;s;_healthsync._tcp;local;h.local;2001:db8::1;8443;\n"
            + "=;eth0;IPv4;s;_healthsync._tcp;local;h.local;192.0.2.1;8443;"
        let services = Discovery.parse(line)
        #expect(services.map(\.url) == ["https://[fe80::1%25eth0]:8443", "https://[2001:db8::1]:8443", "https://192.0.2.1:8443"])
        #expect(services.sorted { $0.rank < $1.rank }.first?.address == "192.0.2.1")
        #expect(Discovery.parse("=;eth0;IPv4;s;_healthsync._tcp;local;h.local;192.0.2.1;notaport;").isEmpty)
    }
}

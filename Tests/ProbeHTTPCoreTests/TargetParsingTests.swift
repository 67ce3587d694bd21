import Foundation
import HTTPTransport
import ProbeKit
import Testing
import VitalsKit

@testable import ProbeHTTPCore

func parseTargets(_ text: String, defaults: TargetDefaults = TargetDefaults()) -> ([Target], [String]) {
    let diagnostics = Diagnostics(tool: "probe-http", capture: true)
    var parser = TargetParser(defaults: defaults, diagnostics: diagnostics)
    var fds: [Int32] = [0, 0]
    pipe(&fds)
    let bytes = Array(text.utf8)
    bytes.withUnsafeBytes { _ = Streams.writeAll(fds[1], $0) }
    close(fds[1])
    parser.read(LineReader(fd: fds[0], source: "t", ownsDescriptor: true))
    return (parser.targets, diagnostics.captured.map { String($0.dropLast()) })
}

func target(_ json: String, defaults: TargetDefaults = TargetDefaults()) throws -> Target {
    let (targets, problems) = parseTargets(json, defaults: defaults)
    guard let first = targets.first, problems.isEmpty else { throw ParseFailure(problems: problems) }
    return first
}

struct ParseFailure: Error { let problems: [String] }

@Suite("target parsing")
struct TargetParsingTests {
    @Test("a bare URL gets the seeds' defaults")
    func bareURL() throws {
        let t = try target("https://Example.com/health")
        #expect(t.kind == .https)
        #expect(t.method == nil, "HEAD with GET fallback")
        #expect(t.timeoutMs == 5000)
        #expect(t.expectedStatus == StatusSet([200...399]))
        #expect(t.sslOkDays == 30 && t.sslWarningDays == 14)
        #expect(t.checkIntervalMs == 60_000)
        #expect(t.okThresholdMs == nil && t.degradedThresholdMs == nil)
        #expect(t.id == "example.com-health")
        #expect(t.name == "Example.com/health")
        #expect(t.host == "example.com")
    }

    @Test("a target array keeps each entry's line; one that is not JSON is reported at the line of the fault")
    func targetArrayLines() {
        let (targets, problems) = parseTargets("[\n\"https://a.example/\",\n{\"url\": \"https://b.example/\"},\n42\n]\n")
        #expect(targets.map(\.host) == ["a.example", "b.example"])
        #expect(problems == ["probe-http: t:4: expected a target object or a URL string in the array"])
        let (none, broken) = parseTargets("[\n\"https://a.example/\",\n{\"url\": }\n]\n")
        #expect(none.isEmpty)
        #expect(broken.count == 1 && broken[0].hasPrefix("probe-http: t:3: not a valid JSON array of targets: "), "\(broken)")
    }

    @Test("a host without a scheme is https; text that only half looks like a URL is refused")
    func schemeless() throws {
        #expect(try target("example.com").url == "https://example.com")
        #expect(try target("example.com:8443/health?x=1").url == "https://example.com:8443/health?x=1")
        #expect(try target(#"{"url":"[::1]:8080/"}"#).host == "::1")
        for bad in ["http:1//127.0.0.1/x", "http:/example.com", "//example.com", "example.com:/x", "exa mple.com", "example.com//x"] {
            let (targets, problems) = parseTargets(#"{"url":"\#(bad)"}"#)
            #expect(targets.isEmpty, "\(bad) was accepted")
            #expect(problems.first?.contains("is not a URL") == true, "\(bad): \(problems)")
        }
    }

    @Test("every field is read and validated")
    func allFields() throws {
        let t = try target(
            """
            {"id":" api ","name":" API ","url":"https://api.example/v1","method":"get","headers":{"X-A":"1"},"body":"b",\
            "expected_status":"200,204","expected_content":"ok","expected_body_hash":"SHA256:\(String(repeating: "AB", count: 32))",\
            "timeout_seconds":2.5,"http_ok_threshold_ms":80,"http_degraded_threshold_ms":200,"ssl_ok_threshold_days":20,\
            "ssl_warning_threshold_days":5,"check_interval":"5m","max_redirects":0,"ip":6,"speed_test_bytes":1000,\
            "client_cert":"c.pem","client_key":"k.pem","pinned_pubkey":"sha256//x","ca_file":"ca.pem","tls_min":1.3,"insecure":true}
            """)
        #expect(t.id == "api" && t.name == "API")
        #expect(t.method == "GET")
        #expect(t.headers == ["X-A: 1"])
        #expect(t.body == Array("b".utf8))
        #expect(t.expectedStatus.contains(204) && !t.expectedStatus.contains(201))
        #expect(t.expectedBodyHash == String(repeating: "ab", count: 32))
        #expect(t.timeoutMs == 2500)
        #expect(t.okThresholdMs == 80 && t.degradedThresholdMs == 200)
        #expect(t.sslOkDays == 20 && t.sslWarningDays == 5)
        #expect(t.checkIntervalMs == 300_000)
        #expect(t.maxRedirects == 0)
        #expect(t.ip == .v6)
        #expect(t.speedTestBytes == 1000)
        #expect(t.tls.clientCertificate == "c.pem" && t.tls.clientKey == "k.pem")
        #expect(t.tls.pinnedPublicKey == "sha256//x" && t.tls.caFile == "ca.pem")
        #expect(t.tls.minimumVersion == .v1_3)
        #expect(t.tls.verify == false)
        #expect(t.needsBody)
    }

    @Test("OnlineTracker's monitor shape is accepted: target and config")
    func onlineTrackerMonitor() throws {
        let t = try target(
            #"{"id":1,"type":"target","name":"Site","target":"https://site.example","config":{"http_ok_threshold_ms":80,"timeout_seconds":10},"check_interval":60,"enabled":true}"#
        )
        #expect(t.id == "1")
        #expect(t.okThresholdMs == 80)
        #expect(t.timeoutMs == 10_000)
        // Its monitors name their kind in `type` (http, https, ssl, ping): read as kind.
        #expect(try target(#"{"id":2,"type":"ssl","name":"Cert","target":"https://site.example"}"#).kind == .ssl)
        let (pings, pingWarnings) = parseTargets(#"{"id":3,"type":"ping","target":"8.8.8.8"}"#)
        #expect(pings.isEmpty && pingWarnings.count == 1 && pingWarnings[0].contains("probed by probe-ping"))
        let (disabled, problems) = parseTargets(#"{"url":"https://off.example","enabled":false}"#)
        #expect(disabled.isEmpty && problems.isEmpty)
    }

    @Test("kinds: inferred from the scheme, ssl:// and kind ssl, conflicts refused")
    func kinds() throws {
        #expect(try target("http://a.example").kind == .http)
        let ssl = try target("ssl://a.example:8443")
        #expect(ssl.kind == .ssl && ssl.url == "https://a.example:8443")
        #expect(try target(#"{"url":"https://a.example","kind":"ssl"}"#).kind == .ssl)
        let (_, conflict) = parseTargets(#"{"url":"http://a.example","kind":"https"}"#)
        #expect(conflict == ["probe-http: t:1: kind 'https' needs an https:// URL"])
        let (skipped, warning) = parseTargets(#"{"url":"8.8.8.8","kind":"ping"}"#)
        #expect(skipped.isEmpty)
        #expect(warning == ["probe-http: t:1: warning: kind 'ping' is probed by probe-ping; skipped"])
    }

    @Test(
        "bad fields are errors that say what is expected",
        arguments: [
            (#"{"url":"https://a","timeout_seconds":0}"#, "field 'timeout_seconds' must be a number from 0.001 to 86400, not 0"),
            (
                #"{"url":"https://a","expected_status":"abc"}"#,
                #"field 'expected_status' must look like 200, "200-299", "2xx" or "200,204", not 'abc'"#
            ),
            (
                #"{"url":"https://a","expected_body_hash":"abc"}"#,
                "field 'expected_body_hash' must be a SHA-256 in 64 hex digits or an MD5 in 32"
            ),
            (
                #"{"url":"https://a","http_ok_threshold_ms":300,"http_degraded_threshold_ms":100}"#,
                "http_degraded_threshold_ms (100) is below http_ok_threshold_ms (300)"
            ),
            (#"{"url":"https://a","headers":{"Bad Name":"x"}}"#, "header name 'Bad Name' is not a valid HTTP header name"),
            (#"{"url":"https://a","headers":{"X":"a\r\nInjected: 1"}}"#, "header 'X' has a line break in its value"),
            (#"{"url":"https://a","ip":"7"}"#, #"field 'ip' must be "4", "6", "both" or "any", not "7""#),
            (#"{"url":"https://a","client_key":"k"}"#, "field 'client_key' needs 'client_cert'"),
            (#"{"url":"http://a","pinned_pubkey":"sha256//x"}"#, "TLS fields (client_cert, pinned_pubkey) need an https:// URL"),
            (#"{"url":"gopher://a"}"#, "unsupported scheme 'gopher' in 'gopher://a' (probe-http speaks http and https)"),
            (#"{"type":"sample","url":"https://a"}"#, "a 'sample' record is not a target"),
            (#"{"url":"https://"}"#, "'https://' has no host"),
        ])
    func badFields(json: String, message: String) {
        let (targets, problems) = parseTargets(json)
        #expect(targets.isEmpty)
        #expect(problems == ["probe-http: t:1: \(message)"])
    }

    @Test(
        "status sets parse codes, ranges, classes and lists",
        arguments: [
            ("200", [200...200]), ("200-299", [200...299]), ("2xx", [200...299]), ("200, 204,300-399", [200...200, 204...204, 300...399]),
        ])
    func statusSets(text: String, ranges: [ClosedRange<Int>]) {
        #expect(StatusSet.parse(text) == StatusSet(ranges))
    }

    @Test("bad status sets are nil", arguments: ["", "99", "600", "300-200", "6xx", "abc"])
    func badStatusSets(text: String) {
        #expect(StatusSet.parse(text) == nil)
    }

    @Test("command-line defaults apply to targets without the field")
    func defaults() throws {
        var defaults = TargetDefaults()
        defaults.timeoutMs = 1234
        defaults.okThresholdMs = 10
        defaults.ip = .both
        defaults.intervalOverrideMs = 500
        let t = try target(#"{"url":"https://a.example","check_interval":60}"#, defaults: defaults)
        #expect(t.timeoutMs == 1234 && t.okThresholdMs == 10 && t.ip == .both && t.checkIntervalMs == 500)
    }
}

import FixtureServer
import Foundation
import Testing
import VitalsKit

/// probe-http against the seeds' own words (issue 15): isitup's HEAD-then-GET, OnlineTracker's
/// monitor fields, and what a hostile server's answer is called.
extension ProbeHTTPTests {
    @Test("expected_body_hash accepts MD5: OnlineTracker's servers store the body's MD5 in 32 hex digits")
    func expectedBodyHashAcceptsMD5() throws {
        // The MD5 md5sum computes for the fixture's body: the hash an OnlineTracker server would have stored.
        let digest = try shell("printf '%s' \"$BODY\" | md5sum | cut -d' ' -f1", environment: ["BODY": FixtureServer.fixedBody])
        let md5 = digest.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(md5.count == 32)
        let (match, _) = try probeOne(#"{"url":"\#(url("/fixed"))","config":{"expected_body_hash":"\#(md5.uppercased())"}}"#)
        #expect(match.string("status") == "up", "\(match.string("message") ?? "")")
        let wrong = String(repeating: "0", count: 32)
        let (mismatch, _) = try probeOne(#"{"url":"\#(url("/fixed"))","expected_body_hash":"\#(wrong)"}"#)
        #expect(mismatch.string("status") == "down")
        #expect(mismatch.string("reason") == "body_hash")
        #expect(mismatch.string("message") == "Response body changed: md5 \(md5.prefix(12))..., expected 000000000000...")
        // Neither 64 nor 32 hex digits is refused with both lengths named.
        let bad = try run("probe-http", [], stdin: #"{"url":"\#(url("/fixed"))","expected_body_hash":"abc"}"# + "\n")
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("SHA-256 in 64 hex digits or an MD5 in 32"))
    }

    @Test("the probes write the target's check_interval and its thresholds (OnlineTracker's monitor config), and enabled")
    func probesWriteCheckIntervalAndThresholds() throws {
        // An http monitor as OnlineTracker's API lists it: check_interval and config beside the target.
        let monitor =
            #"{"id":"shop","type":"http","name":"Shop","target":"\#(url("/ok"))","check_interval":300,"enabled":true,"config":{"expected_status":200,"timeout_seconds":10,"http_ok_threshold_ms":500,"http_degraded_threshold_ms":2000}}"#
        let (sample, _) = try probeOne(monitor)
        #expect(sample.string("status") == "up")
        #expect(sample.int("check_interval") == 300, "seconds, as the monitor says (not always 60)")
        #expect(sample["enabled"] == .bool(true))
        let config = try #require(sample["config"]?.objectValue)
        #expect(config.int("expected_status") == 200)
        #expect(config.int("timeout_seconds") == 10)
        #expect(config.int("http_ok_threshold_ms") == 500)
        #expect(config.int("http_degraded_threshold_ms") == 2000)
        #expect(config["ping_count"] == nil, "an http monitor has no ping fields")
        // https: the ssl thresholds, OnlineTracker's defaults of 30 and 14 days when the target has none.
        let (tls, _) = try probeOne(#"{"url":"https://127.0.0.1:1/","check_interval":"2m"}"#)
        #expect(tls.int("check_interval") == 120)
        let tlsConfig = try #require(tls["config"]?.objectValue)
        #expect(tlsConfig.int("ssl_ok_threshold_days") == 30)
        #expect(tlsConfig.int("ssl_warning_threshold_days") == 14)
        #expect(tlsConfig.int("timeout_seconds") == 5)
        // A target without check_interval: 60 s, OnlineTracker's default.
        #expect(try probeOne(url("/ok")).0.int("check_interval") == 60)
        // probe-ping: the seed's own ping monitor (Google DNS: 5 pings, 80 and 200 ms), aimed at loopback.
        guard try requireGate(runningAsRoot, "raw ICMP sockets need root") else { return }
        let ping = try run(
            "probe-ping", [],
            stdin:
                #"{"id":1,"type":"ping","name":"Google DNS","target":"127.0.0.1","config":{"ping_count":5,"ping_ok_threshold_ms":80,"ping_degraded_threshold_ms":200},"check_interval":60,"enabled":true}"#
                + "\n")
        let pingSample = try #require(try ping.records().first)
        #expect(pingSample.int("check_interval") == 60)
        #expect(pingSample["enabled"] == .bool(true))
        let pingConfig = try #require(pingSample["config"]?.objectValue)
        #expect(pingConfig.int("ping_count") == 5)
        #expect(pingConfig.int("ping_ok_threshold_ms") == 80)
        #expect(pingConfig.int("ping_degraded_threshold_ms") == 200)
        #expect(pingConfig["http_ok_threshold_ms"] == nil)
    }

    @Test("enabled reflects the target: a switched-off target is stated by a monitor record, shown disabled, never counted as a check")
    func enabledReflectsTheTarget() throws {
        let scratch = try ScratchDirectory()
        let db = scratch.path("vitals.db")
        // OnlineTracker's monitors: Shop is on; Old API is switched off (every 5 minutes, ok under 500 ms).
        let shop = #"{"id":"shop","name":"Shop","url":"\#(url("/ok"))"}"#
        let oldAPI = #"{"id":"old-api","name":"Old API","url":"\#(url("/ok"))","check_interval":300,"http_ok_threshold_ms":500,"enabled":"#
        let switchedOff = try run("probe-http", [], stdin: shop + "\n" + oldAPI + "false}\n")
        #expect(switchedOff.status == 0, "\(switchedOff.stderr)")
        let records = try switchedOff.records()
        // The monitor record comes first (stated when the run starts), then Shop's one sample.
        #expect(records.map { $0.string("type") } == ["monitor", "sample"])
        let stated = records[0]
        #expect(stated.string("monitor") == "old-api" && stated.string("name") == "Old API" && stated.string("kind") == "http")
        #expect(stated["enabled"] == .bool(false))
        #expect(stated.int("check_interval") == 300)
        #expect(stated["config"]?.objectValue?.int("http_ok_threshold_ms") == 500)
        #expect(stated["status"] == nil && stated["latency_ms"] == nil, "a monitor record is no check")
        #expect(records[1].string("monitor") == "shop" && records[1]["enabled"] == .bool(true))
        // probe-ping the same: the seed's Google DNS monitor, switched off, is stated, not pinged (no root needed).
        let ping = try run(
            "probe-ping", [],
            stdin:
                #"{"id":1,"type":"ping","name":"Google DNS","target":"127.0.0.1","config":{"ping_count":5},"check_interval":60,"enabled":false}"#
                + "\n")
        let pingRecords = try ping.records()
        #expect(ping.status == 0 && pingRecords.count == 1)
        #expect(pingRecords.first?.string("type") == "monitor" && pingRecords.first?["enabled"] == .bool(false))
        #expect(pingRecords.first?["config"]?.objectValue?.int("ping_count") == 5)
        // The sinks skip it as a record of another type.
        let notified = try run("notify", ["--dry-run"], stdin: switchedOff.stdout)
        #expect(notified.status == 0 && !notified.stdout.contains("old-api") && !notified.stdout.contains("Old API"))

        // Stored: both monitors listed; Old API disabled, with no latest status and no check.
        #expect(try run("store-samples", ["--db", db, "--quiet"], stdin: switchedOff.stdout).status == 0)
        let monitors = try decode([OTMonitor].self, try run("store-samples", ["--db", db, "monitors", "--sort", "id"]).stdout)
        #expect(monitors.map(\.name) == ["Old API", "Shop"])
        #expect(monitors[0].enabled == false && monitors[0].checkInterval == 300 && monitors[0].latestStatus == nil)
        #expect(monitors[1].enabled == true)
        let overview = try decode(OTStatusOverview.self, try run("store-samples", ["--db", db, "overview"]).stdout)
        #expect(overview.totalMonitors == 2 && overview.monitorsUp == 1 && overview.monitorsUnknown == 1)
        #expect(try decode(OTResultsPage.self, try run("store-samples", ["--db", db, "results", "old-api"]).stdout).total == 0)

        // Switched on for one run (one up check), then off again: disabled, its one check kept.
        for state in ["true}", "false}"] {
            let round = try run("probe-http", [], stdin: oldAPI + state + "\n")
            #expect(try run("store-samples", ["--db", db, "--quiet"], stdin: round.stdout).status == 0)
        }
        let again = try decode(OTMonitor.self, try run("store-samples", ["--db", db, "monitor", "old-api"]).stdout)
        #expect(again.enabled == false)
        #expect(again.latestStatus?.status == .up)
        #expect(try decode(OTResultsPage.self, try run("store-samples", ["--db", db, "results", "old-api"]).stdout).total == 1)

        // A monitor record store-samples cannot use is a line error; the rest is stored.
        let bad = try run(
            "store-samples", ["--db", db, "--quiet"],
            stdin: """
                {"type":"monitor","monitor":"old-api","enabled":true}
                {"type":"monitor","monitor":"","at":"2026-01-27T10:30:00Z"}
                {"type":"monitor","monitor":"old-api","at":"2026-01-27T10:30:00Z","enabled":true}

                """)
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("store-samples: <stdin>:1: monitor record has no 'at'"))
        #expect(bad.stderr.contains("store-samples: <stdin>:2: monitor record 'monitor' is \"\"; expected a non-empty string"))
        #expect(try decode(OTMonitor.self, try run("store-samples", ["--db", db, "monitor", "old-api"]).stdout).enabled == true)
    }

    @Test("HEAD -> GET fallback on failure, each with its own timeout: openssl s_server -www hangs on HEAD and answers GET")
    func headToGETFallbackOnFailureEachWithItsOwnTimeout() throws {
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.server(named: "www", daysLeft: 90)
        let server = try OpenSSLWWWServer(cert: cert, key: key)
        // isitup: HEAD with 5 s; on any failure, GET with 5 s. s_server -www never answers a HEAD,
        // so the HEAD takes its whole 5 s and the GET, with 5 s of its own, finds the server healthy.
        let (sample, _) = try probeOne(#"{"url":"\#(server.url)","ca_file":"\#(certificates.path("ca.pem"))"}"#)
        #expect(sample.string("status") == "up", "\(sample.string("message") ?? "")")
        #expect(sample.string("method") == "GET")
        #expect(sample.int("code") == 200)
        #expect(sample["head_failed"] == .bool(true))
        #expect(sample.string("head_reason") == "timeout")
        #expect(sample.string("message")?.hasSuffix("(GET after HEAD timed out after 5s)") == true, "\(sample.string("message") ?? "")")
        // The probe took HEAD's 5 s and then the GET: more than one budget, less than two.
        let total = try #require(sample.double("total_ms"))
        #expect(total < 5000, "total_ms is the answering GET's own time")
    }

    @Test("a response with one header line of 4 MB is too_large, in words that say what the server sent")
    func responseWithOneHeaderLineOf4MBIsTooLarge() throws {
        // The budget only ends a server that stops sending; a generous one keeps a slow machine from timing out first.
        let (sample, _) = try probeOne(#"{"url":"\#(url("/huge-header-line"))","timeout_seconds":30}"#)
        #expect(sample.string("status") == "error")
        #expect(sample.string("reason") == "too_large", "\(sample.string("message") ?? "")")
        let message = sample.string("message") ?? ""
        #expect(message.hasPrefix("The server sent a response header line longer than "), "\(message)")
        #expect(!message.contains("memory"), "\(message)")
        // Many normal lines (4096 of 1 KB each) pass the man page's 256 KiB of headers.
        let (many, _) = try probeOne(#"{"url":"\#(url("/huge-headers"))","timeout_seconds":30}"#)
        #expect(many.string("status") == "error")
        #expect(many.string("reason") == "too_large")
        #expect(
            many.string("message")?.hasPrefix("The server sent more than 256 KiB of response headers") == true,
            "\(many.string("message") ?? "")")
    }
}

/// `openssl s_server -www` on a free port: it answers `GET /` with a page and never answers a HEAD.
final class OpenSSLWWWServer {
    let process: Spawned
    let url: String

    init(cert: String, key: String) throws {
        // Its standard input stays an open pipe: s_server ends at the end of its input.
        process = try Spawned(
            ["/usr/bin/env", "openssl", "s_server", "-www", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key], input: .pipe)
        // It prints `ACCEPT 127.0.0.1:PORT` once it listens; reading that line is the wait.
        var line = process.output.map(readFirstLine) ?? ""
        while !line.isEmpty, !line.hasPrefix("ACCEPT") { line = process.output.map(readFirstLine) ?? "" }
        guard line.hasPrefix("ACCEPT "), let port = line.split(separator: ":").last else {
            throw TestFailure("openssl s_server did not start: \(line)")
        }
        url = "https://127.0.0.1:\(port)/"
    }
}

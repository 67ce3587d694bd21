import Foundation
import Testing
import VitalsKit

/// Options that had no test: each run on real input whose expected verdict was worked out by
/// hand from the man page, with the verdict flipping exactly at the option's value.
@Suite("detect-anomaly --window, --min-samples, --threshold", .hangGuard(minutes: 2))
struct DetectAnomalyOptionTests {
    /// Ten points alternating 90 and 110 (mean 100, population stddev 10), then 130:
    /// z = (130 − 100) / 10 = 3 exactly.
    static let alternatingThen130 =
        (0..<10).map { sampleLine("api", minute: $0, latency: $0 % 2 == 0 ? 90 : 110) }
        + [sampleLine("api", minute: 10, latency: 130)]

    func lastVerdict(_ arguments: [String], _ lines: [String]) throws -> String? {
        let result = try run("detect-anomaly", ["--detector", "seed"] + arguments, stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        return try result.records().last?["anomaly"]?.objectValue?["verdict"]?.stringValue
    }

    @Test("--threshold: 130 is 3 deviations above the mean; degrading under 3, stable at 3 (on the threshold is stable)")
    func threshold() throws {
        #expect(try lastVerdict([], Self.alternatingThen130) == "degrading", "the default 2.5: 130 > 125")
        #expect(try lastVerdict(["--threshold", "2.9"], Self.alternatingThen130) == "degrading", "130 > 129")
        #expect(try lastVerdict(["--threshold", "3"], Self.alternatingThen130) == "stable", "130 is not above 130")
        #expect(try lastVerdict(["--threshold", "3.5"], Self.alternatingThen130) == "stable")
    }

    @Test("--min-samples: eleven points in the window give a verdict at 11 and none at 12")
    func minSamples() throws {
        #expect(try lastVerdict(["--min-samples", "11"], Self.alternatingThen130) == "degrading")
        #expect(try lastVerdict(["--min-samples", "12"], Self.alternatingThen130) == "unknown")
        let result = try run("detect-anomaly", ["--min-samples", "120"], stdin: "")
        #expect(result.status == 64, "more than --window (100 for the default): no verdict could ever be reached")
        let seed = try run("detect-anomaly", ["--detector", "seed", "--min-samples", "60"], stdin: "")
        #expect(seed.status == 64, "more than the seed's --window (50)")
    }

    @Test("--window: a 1000 ms point twelve back is outside a window of 11 and inside one of 12")
    func window() throws {
        // With --window 11 the baseline is the ten alternating points: 130 > 100 + 2.5 × 10.
        // With --window 12 the baseline also holds 1000: mean (1000 + 1000) / 11 ≈ 181.8, so 130 is below it.
        let lines = [sampleLine("api", minute: -1, latency: 1000)] + Self.alternatingThen130
        #expect(try lastVerdict(["--window", "11"], lines) == "degrading")
        #expect(try lastVerdict(["--window", "12"], lines) == "stable")
    }
}

@Suite("digest --window and --bucket", .hangGuard(minutes: 2))
struct DigestOptionTests {
    func facts(_ arguments: [String], _ lines: [String]) throws -> JSONObject {
        let result = try run("digest", ["--format", "json"] + arguments, stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try result.records().first)
    }

    @Test("--window: with --now 12:00, samples at 10:00, 11:00 and 11:59; a sample exactly at the start is in")
    func window() throws {
        let lines = [sampleLine("api", 0, "up"), sampleLine("api", 3600, "up"), sampleLine("api", 7140, "up")]
        let now = ["--now", "2026-01-27T12:00:00Z"]
        let hour = try facts(now + ["--window", "1h"], lines)
        #expect(hour["samples_in_window"] == .number("2"))
        #expect(hour["window_ms"] == .number("3600000"))
        #expect(hour.string("window_start") == "2026-01-27T11:00:00.000Z" || hour.string("window_start") == "2026-01-27T11:00:00Z")
        #expect(try facts(now + ["--window", "59m"], lines)["samples_in_window"] == .number("1"))
        #expect(try facts(now + ["--window", "2h"], lines)["samples_in_window"] == .number("3"))
        #expect(try facts(now, lines)["window_ms"] == .number("86400000"), "the default, 24h")
        let result = try run("digest", ["--window", "0s"], stdin: "")
        #expect(result.status == 64 && result.stderr.contains("--window wants a duration from 1ms"), "\(result.stderr)")
    }

    @Test("--bucket: outages beginning at 10:04 and 10:06 fall in different 5-minute buckets and in one 10-minute bucket")
    func bucket() throws {
        let lines = [
            sampleLine("a", 0, "up"), sampleLine("b", 0, "up"), sampleLine("a", 240, "down"), sampleLine("b", 360, "down"),
            sampleLine("a", 480, "up"), sampleLine("b", 480, "up"),
        ]
        let now = ["--now", "2026-01-27T10:30:00Z"]
        // Buckets are counted from 1970-01-01 00:00 UTC: 5m buckets start at 10:00 and 10:05; the 10m one at 10:00.
        #expect(try facts(now, lines)["correlated"] == .array([]), "the default, 5m")
        #expect(try facts(now + ["--bucket", "5m"], lines)["correlated"] == .array([]))
        let wide = try facts(now + ["--bucket", "10m"], lines)
        #expect(wide["bucket_ms"] == .number("600000"))
        let correlated = try #require(wide["correlated"]?.arrayValue)
        #expect(correlated.count == 1)
        let bucket = try #require(correlated.first?.objectValue)
        #expect(bucket["monitors"] == .array([.string("a"), .string("b")]), "by when they began failing")
        #expect(bucket.string("bucket_start_at")?.hasPrefix("2026-01-27T10:00:00") == true, "\(bucket)")
        #expect(bucket.string("bucket_end_at")?.hasPrefix("2026-01-27T10:10:00") == true, "\(bucket)")
    }
}

@Suite("notify's TLS channels and their parameters", .serialized, .hangGuard(minutes: 2))
struct NotifyTLSChannelTests {
    static let outage = NotifyWebhookTests.outage

    func body(_ request: JSONObject) throws -> JSONObject { try NotifyWebhookTests().body(request) }

    /// The webhook test server over TLS, its certificate signed by a test CA; the CA's file.
    /// The certificates and the scratch directory are returned so they live as long as the server.
    func tlsServer(_ name: String) throws -> (server: PythonPeer, ca: String, keep: (TestCertificates, ScratchDirectory)) {
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.server(named: name, daysLeft: 60)
        let scratch = try ScratchDirectory()
        return (try webhookServer(scratch, tls: (cert, key)), certificates.path("ca.pem"), (certificates, scratch))
    }

    @Test("jsons:// posts over HTTPS trusting cafile=; format=alertmanager changes the body; without a trusted CA it fails")
    func jsons() throws {
        let (server, ca, keep) = try tlsServer("hooks")
        defer { withExtendedLifetime(keep) {} }
        let result = try run(
            "notify",
            [
                "--to", "jsons://\(server.hostPort)/hook?cafile=\(ca)",
                "--to", "jsons://\(server.hostPort)/am?format=alertmanager&cafile=\(ca)",
            ], stdin: Self.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let deliveries = try result.records().first?["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(deliveries.map { $0.string("result") } == ["delivered", "delivered"])
        let requests = try server.log()
        let plain = try #require(requests.first { $0.string("path") == "/hook" })
        #expect(try body(plain).string("type") == "notification")
        #expect(try body(plain).string("monitor") == "api")
        let alertmanager = try #require(requests.first { $0.string("path") == "/am" })
        #expect(try body(alertmanager).string("version") == "4")
        #expect(try body(alertmanager).string("status") == "firing")

        let untrusted = try run(
            "notify", ["--deliver-timeout", "2s", "--give-up-after", "0s", "--to", "jsons://\(server.hostPort)/hook"],
            stdin: Self.outage)
        #expect(untrusted.status == 2, "a certificate from an unknown CA is refused: \(untrusted.stderr)")
        let refused = try untrusted.records().first?["deliveries"]?.arrayValue?.first?.objectValue
        #expect(refused?.string("result") != "delivered")
        let insecure = try run("notify", ["--to", "jsons://\(server.hostPort)/insecure?insecure=yes"], stdin: Self.outage)
        #expect(insecure.status == 0, "insecure=yes skips the check: \(insecure.stderr)")
    }

    @Test("ntfys:// posts the text over HTTPS; priority=, click= and tags= set their headers")
    func ntfys() throws {
        let (server, ca, keep) = try tlsServer("ntfy")
        defer { withExtendedLifetime(keep) {} }
        let result = try run(
            "notify",
            [
                "--to", "ntfys://\(server.hostPort)/alerts?cafile=\(ca)&priority=2&click=https://status.example.com&tags=prod",
            ], stdin: Self.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let request = try #require(try server.log().first)
        #expect(request.string("path") == "/alerts")
        #expect(request.string("body") == "Api is not responding: HTTP 503, expected 200-399")
        let headers = try #require(request["headers"]?.objectValue)
        #expect(headers["title"]?.stringValue == "Monitor DOWN")
        #expect(headers["priority"]?.stringValue == "2", "priority= replaces 5 for down")
        #expect(headers["click"]?.stringValue == "https://status.example.com")
        #expect(headers["tags"]?.stringValue == "rotating_light,down,prod")
    }
}

import Foundation
import Testing
import VitalsKit

/// The digest's test traces and their expected outputs (goldens). Every number in a golden is one
/// worked out by hand from the trace (`DigestTests.handFigures`, held to the goldens by
/// `everyNumberWorkedOut`; the charts and series by `htmlCharts` and `jsonSeries`). A golden is
/// edited by hand when the output changes on purpose: there is no switch that writes it from the
/// tool's own output.
enum DigestFixtures {
    static let directory = Binaries.fixtures.appendingPathComponent("digest")
    static func trace(_ name: String) -> String { directory.appendingPathComponent(name + ".ndjson").path }
    static func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name + ".ndjson"), encoding: .utf8)
    }
    static func golden(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("golden/" + name), encoding: .utf8)
    }

    /// Compares `actual` with the golden file `name`.
    static func check(_ actual: String, golden name: String) throws {
        #expect(actual == (try golden(name)), "\(name) differs from its golden file")
    }

    /// The numbers of a text: runs of digits with `.` or `:` inside (72.2, 10:25, 2026), not part of
    /// a name (s05), a date's other parts (-01-27) or a unit (5s, 5m).
    static func numbers(in text: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: #"(?<![\w.:-])\d+(?:[.:]\d+)*(?!\w)"#)
        let range = NSRange(text.startIndex..., in: text)
        return Set(pattern.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    /// A golden without what is checked apart: the HTML's style sheet (no figures) and its charts
    /// (`htmlCharts`), the JSON's per-service series (`jsonSeries`).
    static func figureText(_ golden: String) -> String {
        var text = golden
        for pattern in [#"(?s)<style>.*?</style>"#, #"(?s)<svg.*?</svg>"#, #""series":\{.*?\]\}"#] {
            text = text.replacingOccurrences(of: pattern, with: "", options: .regularExpression)
        }
        return text
    }
}

/// The objects of a JSON array (none when it is not one).
func objects(_ value: JSONValue?) -> [JSONObject] {
    (value?.arrayValue ?? []).compactMap { $0.objectValue }
}

/// One golden case: a trace, arguments, the golden file.
struct GoldenCase: CustomStringConvertible, Sendable {
    var golden: String
    var trace: String
    var arguments: [String]
    var description: String { golden }
}

@Suite("digest end to end", .hangGuard(minutes: 3))
struct DigestTests {
    static let goldenCases = [
        GoldenCase(golden: "basic.text", trace: "basic", arguments: []),
        GoldenCase(golden: "basic.markdown", trace: "basic", arguments: ["--format", "markdown"]),
        GoldenCase(golden: "basic.html", trace: "basic", arguments: ["--format", "html"]),
        GoldenCase(golden: "basic.json", trace: "basic", arguments: ["--format", "json"]),
        GoldenCase(golden: "basic.prompt", trace: "basic", arguments: ["--format", "prompt"]),
        GoldenCase(golden: "basic-paris.text", trace: "basic", arguments: ["--tz", "Europe/Paris"]),
        GoldenCase(golden: "many.text", trace: "many", arguments: []),
        GoldenCase(golden: "many.markdown", trace: "many", arguments: ["-f", "markdown"]),
        GoldenCase(golden: "many.prompt", trace: "many", arguments: ["-f", "prompt"]),
        GoldenCase(golden: "trends.text", trace: "trends", arguments: []),
        GoldenCase(golden: "trends-5.text", trace: "trends", arguments: ["--trend-samples", "5"]),
    ]

    /// The key figures of each golden, worked out by hand from its trace (not read off the output):
    /// each must appear in the output, so a golden recorded again cannot carry a wrong figure in.
    ///
    /// basic.ndjson, 18 samples at 10:00-10:25 (the 19th line is an anomaly record):
    /// - up or degraded: api 6 + pay 2 (10:00, 10:15) + web 5 (all but the 10:05 error) = 13 of 18 = 72.2%.
    /// - pay: up, down, down, up, error, error: 2 of 6 = 33.3%; down 10:05-10:15 = 10m, and failing from
    ///   10:20 to the window's end 10:25 = 5m, ongoing: 15m in 2 outages; latencies 100 30 30 100: avg 260/4
    ///   = 65 ms, p95 rank ⌈0.95 × 4⌉ = 4 → 100 ms; latest none; older half (100, 30) = 65 and newer (30, 100)
    ///   = 65: stable; status now error.
    /// - web: error at 10:05, up at 10:10: 1 outage of 5m; 5 of 6 = 83.3%; latencies 20 20 300 20 22: avg
    ///   382/5 = 76.4 → 76 ms, p95 300 ms, latest 22 ms; odd count, oldest left out: (20 + 300)/2 = 160
    ///   against (20 + 22)/2 = 21: -87% and -139 ms: decreasing.
    /// - api: 40 42 44 46 48 50, all up: 100%, avg 270/6 = 45 ms, p95 50, latest 50; (40+42+44)/3 = 42
    ///   against (46+48+50)/3 = 48: +14%, under 20%: stable.
    /// - overall: 3 outages, 15m + 5m = 20m; longest pay's 10m from 10:05; pay and web both began failing
    ///   in the 10:05-10:10 bucket; now 2 up (web, api) and 1 error (pay).
    /// - Europe/Paris in January is UTC+1: 10:25 → 11:25, 10:20 → 11:20, 10:05 → 11:05.
    ///
    /// many.ndjson, 23 services × 2 samples (10:00, 10:01), all up but s09 and s12 down at 10:00, s05 down
    /// and s17 degraded at 10:01: 43 of 46 up or degraded = 93.478 → 93.5%; s09 and s12: down 10:00 → up
    /// 10:01, 1 outage of 1m each, 1 of 2 = 50.0%; s05: down since 10:01, the window's end, so an ongoing
    /// outage of 0 → <1m; outages 3, 1m + 1m + 0 = 2m; now 21 up, 1 degraded, 1 down; 20 listed, s21-s23
    /// (3 up) not.
    ///
    /// trends.ndjson, 4 services × 20 samples one a minute from 09:00 (so to 09:19), all up: 80 checks,
    /// 100%. rising 10 × 50 then 10 × 80 ms: +60%, +30 ms: increasing; falling 100 then 60: -40%, -40 ms:
    /// decreasing; flat 100 then 119: +19%: stable; tiny 2 then 4: +100% but only 2 ms: stable. With
    /// --trend-samples 5 the newest 5 and the 5 before them all fall in the second half: stable everywhere.
    /// In every format besides: the window is the default 24 hours ending at the newest sample (basic
    /// 10:25, so from 2026-01-26 10:25; many 10:01; trends 09:19) and failures are grouped in the
    /// default 5-minute buckets. basic: "2 of the 3 services had trouble" are pay and web (api was up at
    /// every check); the latency extremes are the trace's own (pay 30 and 100, web 20 and 300, api 40
    /// and 50); web's latest is its last sample's 22 ms and api's 50 ms; api's halves (40 + 42 + 44)/3 =
    /// 42 and (46 + 48 + 50)/3 = 48; now 2 up (web, api) and 1 error (pay): by_status 2, 0, 0, 1, 0;
    /// 6 checks each; outages 2, 1, 0. many: the 19 services without trouble have 2 checks each, both
    /// up at 10 ms: 100%, avg, p95 and latest 10 ms, stable, 0 outages.
    static let handFigures: [String: [String]] = [
        "basic.text": [
            "3 services, 18 checks, 72.2% up", "Payments was down twice for 15m in total (33.3% up)",
            "failing again since 10:20", "Web was down once for 5m (83.3% up)", "Payments and Web between 10:05 and 10:10",
            "from 160 ms to 21 ms", "The longest outage: Payments, 10m from 10:05.",
            "Digest of the 24 hours to 2026-01-27 10:25 UTC", "2 of the 3 services had trouble",
            "outages beginning in the same 5-minute bucket",
        ],
        "basic.markdown": [
            "| Payments (`pay`) | **error** | 33.3% | 6 | 65 ms | 100 ms | – | stable | 2 | 15m (ongoing) | – |",
            "| Web (`web`) | up | 83.3% | 6 | 76 ms | 300 ms | 22 ms | decreasing | 1 | 5m | – |",
            "| API (`api`) | up | 100% | 6 | 45 ms | 50 ms | 50 ms | stable | 0 | – | – |",
            "- 10:05-10:10: Payments, Web", "- Services: 3 (2 up and 1 error)", "- Checks: 18, 72.2% up",
            "- Outages: 3, 20m in total", "- Longest outage: Payments, 10m from 10:05",
            "# Service digest: the 24 hours to 2026-01-27 10:25 UTC", "2 of the 3 services had trouble",
            "has been failing again since 10:20", "same 5-minute bucket", "between 10:05 and 10:10", "from 160 ms to 21 ms",
        ],
        "basic.html": [
            "72.2% up", "<td>33.3%</td>", "<td>65 ms</td>", "<td>15m (ongoing)</td>", "<td>83.3%</td>", "<td>76 ms</td>",
            "<td>300 ms</td>", "20m in total", "Payments, 10m from 10:05",
            "<title>Service digest: the 24 hours to 2026-01-27 10:25 UTC</title>", "2 of the 3 services had trouble",
            "has been failing again since 10:20", "same 5-minute bucket", "between 10:05 and 10:10", "from 160 ms to 21 ms",
            "<td>6</td>", "<td>100 ms</td>", "<td>22 ms</td>", "<td>45 ms</td>", "<td>50 ms</td>", "<td>2</td>", "<td>1</td>", "<td>0</td>",
            "Mean latency per 10 seconds from 10:00 to 10:25", "avg 65 ms", "avg 76 ms", "avg 45 ms",
            "Services: 3 (2 up and 1 error)", "Checks: 18, 72.2% up", "Worst service: Payments (error, 33.3% up)",
        ],
        "basic.json": [
            #""checks":18,"uptime_percent":72.222,"outages":3,"outage_ms":1200000"#,
            #""uptime_percent":33.333,"latency_avg_ms":65"#, #""outage_ms":900000,"outage_ongoing":true"#,
            #""latency_avg_ms":76.4"#, #""trend_recent_ms":21,"trend_earlier_ms":160"#, #""monitors":["pay","web"]"#,
            #""window_start":"2026-01-26T10:25:00.000Z","window_end":"2026-01-27T10:25:00.000Z""#,
            #""by_status":{"up":2,"degraded":0,"down":0,"error":1,"unknown":0}"#,
            #""latency_min_ms":30,"latency_max_ms":100"#, #""latency_min_ms":20,"latency_max_ms":300"#,
            #""latency_min_ms":40,"latency_max_ms":50"#, #""latency_latest_ms":22"#, #""trend_recent_ms":48,"trend_earlier_ms":42"#,
            #""last_message":"HTTP 200 in 22ms""#, #""last_message":"HTTP 200 in 50ms""#, #""outages":0,"outage_ms":0"#,
        ],
        "basic.prompt": [
            "Overall: 3 services, 18 checks, 72.2% up; now 2 up and 1 error.",
            "- Payments: status error; uptime 33.3%; average latency 65 ms; latest latency none; trend stable; outages 2 (15m in total)",
            "- Web: status up; uptime 83.3%; average latency 76 ms; latest latency 22 ms; trend decreasing; outages 1 (5m in total)",
            "- API: status up; uptime 100%; average latency 45 ms; latest latency 50 ms; trend stable; outages 0",
            "- 10:05-10:10: Payments, Web",
            "Window: the 24 hours to 2026-01-27 10:25 UTC.", "in the same 5-minute bucket",
        ],
        "basic-paris.text": [
            "the 24 hours to 2026-01-27 11:25 +01:00: 3 services, 18 checks, 72.2% up", "failing again since 11:20",
            "Payments and Web between 11:05 and 11:10", "The longest outage: Payments, 10m from 11:05.",
            "2 of the 3 services had trouble. Payments was down twice for 15m in total (33.3% up)",
            "Web was down once for 5m (83.3% up)", "from 160 ms to 21 ms", "same 5-minute bucket",
        ],
        "many.text": [
            "23 services, 46 checks, 93.5% up", "4 of the 20 listed services had trouble", "s05 has been down since 10:01 (50.0% up)",
            "s17 was degraded at 1 of 2 checks", "s09 was down once for 1m (50.0% up)", "s12 was down once for 1m (50.0% up)",
            "s09, s12 and s05 between 10:00 and 10:05", "The longest outage: s09, 1m from 10:00.", "Not listed: 3 more services (3 up).",
            "Digest of the 24 hours to 2026-01-27 10:01 UTC", "same 5-minute bucket",
        ],
        "many.markdown": [
            "| s05 | **down** | 50.0% | 2 | 10 ms | 10 ms | 10 ms | stable | 1 | <1m (ongoing) | – |",
            "| s09 | up | 50.0% | 2 | 10 ms | 10 ms | 10 ms | stable | 1 | 1m | – |",
            "- Services: 23 (21 up, 1 degraded and 1 down)", "- Checks: 46, 93.5% up", "- Outages: 3, 2m in total",
            "# Service digest: the 24 hours to 2026-01-27 10:01 UTC", "4 of the 20 listed services had trouble",
            "s05 has been down since 10:01", "between 10:00 and 10:05", "same 5-minute bucket",
            "| s01 | up | 100% | 2 | 10 ms | 10 ms | 10 ms | stable | 0 | – | – |",
        ],
        "many.prompt": [
            "Overall: 23 services, 46 checks, 93.5% up; now 21 up, 1 degraded and 1 down.",
            "- s05: status down; uptime 50.0%;", "outages 1 (<1m in total)", "- s09: status up; uptime 50.0%;", "outages 1 (1m in total)",
            "Window: the 24 hours to 2026-01-27 10:01 UTC.", "same 5-minute bucket", "- 10:00-10:05: s09, s12, s05",
            "- s17: status degraded; uptime 100%; average latency 10 ms; latest latency 10 ms; trend stable; outages 0",
            "- s01: status up; uptime 100%; average latency 10 ms; latest latency 10 ms; trend stable; outages 0",
            "- 3 more services not listed: 3 up; outages 0",
        ],
        "trends.text": [
            "the 24 hours to 2026-01-27 09:19 UTC: 4 services, 80 checks, 100% up",
            "Latency rose for rising (from 50 ms to 80 ms) and fell for falling (from 100 ms to 60 ms); it was stable for the others.",
        ],
        "trends-5.text": [
            "4 services, 80 checks, 100% up", "Latency was stable for every service.",
            "Digest of the 24 hours to 2026-01-27 09:19 UTC",
        ],
    ]

    @Test("each format of each trace matches its golden file, and carries the figures worked out by hand", arguments: goldenCases)
    func golden(_ test: GoldenCase) throws {
        let result = try run("digest", test.arguments + [DigestFixtures.trace(test.trace)])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let figures = try #require(DigestTests.handFigures[test.golden], "\(test.golden) has no figures worked out by hand")
        for figure in figures {
            #expect(result.stdout.contains(figure), "\(test.golden): \(figure)")
        }
        try DigestFixtures.check(result.stdout, golden: test.golden)
    }

    @Test("every number in a golden is one worked out by hand", arguments: goldenCases)
    func everyNumberWorkedOut(_ test: GoldenCase) throws {
        let figures = try #require(DigestTests.handFigures[test.golden])
        let worked = DigestFixtures.numbers(in: figures.joined(separator: "\n"))
        let golden = DigestFixtures.figureText(try DigestFixtures.golden(test.golden))
        let unworked = DigestFixtures.numbers(in: golden).subtracting(worked)
        #expect(unworked.isEmpty, "\(test.golden): numbers with no hand-worked figure: \(unworked.sorted())")
    }

    @Test("the HTML charts: every coordinate worked out by hand from the basic trace")
    func htmlCharts() throws {
        let html = try run("digest", ["--format", "html", DigestFixtures.trace("basic")]).stdout
        try #require(html == (try DigestFixtures.golden("basic.html")))
        // 10:00 to 10:25 in 10-second bins: 1500 / 10 + 1 = 151 bins over 640 px, 640 / 151 = 4.2384 px
        // each; a sample at 10:MM is in bin 6 × MM, drawn at the bin's centre (bin + 0.5) × 4.2384:
        // bin 0 → 2.1, 30 → 129.3, 60 → 256.4, 90 → 383.6, 120 → 510.7, 150 → 637.9. The plot runs from
        // y 86 (0 ms) up to y 14 (the scale's top, the smallest 1, 2 or 5 × 10^k at or above the
        // largest latency): y = 86 − 72 × latency / top.
        let svgs = html.components(separatedBy: "<svg").dropFirst().map { $0.components(separatedBy: "</svg>")[0] }
        try #require(svgs.count == 3)
        // Payments: top 100 ms (its largest is 100): 100 → 14.0, 30 → 86 − 21.6 = 64.4. Outages in red:
        // down 10:05-10:15, bins 30 to 90 (61 bins): x 30 × 4.2384 = 127.2, width 61 × 4.2384 = 258.5;
        // failing from 10:20 (bin 120: x 508.6) to the right edge: 640 − 508.6 = 131.4.
        #expect(svgs[0].contains(##"<rect x="127.2" y="0" width="258.5" height="90" fill="#EF4444" fill-opacity="0.3"/>"##))
        #expect(svgs[0].contains(##"<rect x="508.6" y="0" width="131.4" height="90" fill="#EF4444" fill-opacity="0.3"/>"##))
        #expect(svgs[0].contains(#"points="2.1,14.0 129.3,64.4 256.4,64.4 383.6,14.0""#))
        #expect(svgs[0].contains(">100 ms</text>"))
        // Web: top 500 ms (its largest is 300): 20 → 86 − 2.88 = 83.1, 300 → 86 − 43.2 = 42.8, 22 →
        // 86 − 3.168 = 82.8; no point at 10:05 (an error, no latency). Its outage 10:05-10:10 is bins 30
        // to 60 (31 bins): x 127.2, width 131.4; the degraded check at 10:15 is bin 90 in amber: x
        // 90 × 4.2384 = 381.5, one bin wide, 4.2.
        #expect(svgs[1].contains(##"<rect x="127.2" y="0" width="131.4" height="90" fill="#EF4444" fill-opacity="0.3"/>"##))
        #expect(svgs[1].contains(##"<rect x="381.5" y="0" width="4.2" height="90" fill="#F59E0B" fill-opacity="0.3"/>"##))
        #expect(svgs[1].contains(#"points="2.1,83.1 256.4,83.1 383.6,42.8 510.7,83.1 637.9,82.8""#))
        #expect(svgs[1].contains(">500 ms</text>"))
        // API: top 50 ms: 40 → 86 − 57.6 = 28.4, 42 → 25.5, 44 → 22.6, 46 → 19.8, 48 → 16.9, 50 → 14.0.
        #expect(svgs[2].contains(#"points="2.1,28.4 129.3,25.5 256.4,22.6 383.6,19.8 510.7,16.9 637.9,14.0""#))
        #expect(svgs[2].contains(">50 ms</text>"))
        #expect(!svgs[2].contains("<rect"), "api had no outage and no degraded check")
        for svg in svgs {
            #expect(svg.contains(#"width="640" height="90" viewBox="0 0 640 90""#))
            #expect(svg.contains(#"<line x1="0" y1="86.0" x2="640" y2="86.0""#))
        }
    }

    @Test("the JSON series: each service's 151 ten-second bins, worked out by hand from the basic trace")
    func jsonSeries() throws {
        let record = try #require(try run("digest", ["--format", "json", DigestFixtures.trace("basic")]).records().first)
        // 10:00 to 10:25 in 10-second bins: 151; a sample at 10:MM is in bin 6 × MM.
        #expect(record.string("series_start_at") == "2026-01-27T10:00:00.000Z")
        #expect(record.int("series_step_ms") == 10_000)
        #expect(record.int("series_bins") == 151)
        struct Expected {
            var latency: [Int: Double]  // bin → ms
            var failed: Set<Int>  // bins of down and error checks
            var degraded: Set<Int>
            var outage: [ClosedRange<Int>]
        }
        let expected: [String: Expected] = [
            // up 100, down 30, down 30, up 100, error, error; down from 10:05 to the recovery at 10:15,
            // failing again from 10:20 to the end.
            "pay": Expected(
                latency: [0: 100, 30: 30, 60: 30, 90: 100], failed: [30, 60, 120, 150], degraded: [],
                outage: [30...90, 120...150]),
            // up 20, error, up 20, degraded 300, up 20, up 22; down from 10:05 to 10:10.
            "web": Expected(latency: [0: 20, 60: 20, 90: 300, 120: 20, 150: 22], failed: [30], degraded: [90], outage: [30...60]),
            // 40 to 50 by 2, all up.
            "api": Expected(latency: [0: 40, 30: 42, 60: 44, 90: 46, 120: 48, 150: 50], failed: [], degraded: [], outage: []),
        ]
        let services = objects(record["services"])
        try #require(services.count == 3)
        for service in services {
            let monitor = try #require(service.string("monitor"))
            let want = try #require(expected[monitor])
            let series = try #require(service["series"]?.objectValue)
            let latency = try #require(series["latency_ms"]?.arrayValue)
            let checks = try #require(series["checks"]?.arrayValue)
            let failed = try #require(series["failed"]?.arrayValue)
            let degraded = try #require(series["degraded"]?.arrayValue)
            let outage = try #require(series["outage"]?.arrayValue)
            try #require([latency, checks, failed, degraded, outage].allSatisfy { $0.count == 151 }, "\(monitor)")
            for bin in 0..<151 {
                let sampled = bin % 30 == 0  // a sample every 5 minutes: bins 0, 30, ..., 150
                #expect(latency[bin].doubleValue == want.latency[bin], "\(monitor) latency at bin \(bin)")
                #expect(checks[bin].doubleValue == (sampled ? 1 : 0), "\(monitor) checks at bin \(bin)")
                #expect(failed[bin].doubleValue == (want.failed.contains(bin) ? 1 : 0), "\(monitor) failed at bin \(bin)")
                #expect(degraded[bin].doubleValue == (want.degraded.contains(bin) ? 1 : 0), "\(monitor) degraded at bin \(bin)")
                #expect(outage[bin] == .bool(want.outage.contains { $0.contains(bin) }), "\(monitor) outage at bin \(bin)")
            }
        }
    }

    @Test("the basic trace in words: every number is one worked out by hand from the trace")
    func basicText() throws {
        let lines = try run("digest", [DigestFixtures.trace("basic")]).lines
        try #require(lines.count == 5, "\(lines)")
        // 18 samples, 13 of them up or degraded (api 6, pay 2, web 5): 72.2%.
        #expect(lines[0] == "Digest of the 24 hours to 2026-01-27 10:25 UTC: 3 services, 18 checks, 72.2% up.")
        // pay: down 10:05-10:15 (10m), failing from 10:20 to the window's end 10:25 (5m); 2 of 6 up.
        #expect(
            lines[1].contains(
                "Payments was down twice for 15m in total (33.3% up) and has been failing again since 10:20 (Request timeout after 5s)."))
        // web: error at 10:05, up at 10:10: one outage of 5m; 5 of 6 up or degraded.
        #expect(lines[1].contains("Web was down once for 5m (83.3% up)."))
        #expect(!lines[1].contains("API"), "api had no trouble")
        #expect(lines[2] == "Failed together (outages beginning in the same 5-minute bucket): Payments and Web between 10:05 and 10:10.")
        // web latencies 20 20 300 20 22: newer half (20, 22) = 21 ms, older half (20, 300) = 160 ms.
        #expect(lines[3] == "Latency fell for Web (from 160 ms to 21 ms); it was stable for the others.")
        #expect(lines[4] == "The longest outage: Payments, 10m from 10:05.")
    }

    @Test("samples in any order, from a pipe or a file, give the same facts")
    func anyOrder() throws {
        let scratch = try ScratchDirectory()
        let lines = try DigestFixtures.text("basic").split(separator: "\n").map(String.init)
        // Reversed, and a fixed shuffle (every 7th line first, then the rest).
        let reversed = try scratch.write("reversed.ndjson", lines.reversed().joined(separator: "\n") + "\n")
        let shuffled = lines.enumerated().sorted { ($0.offset * 7 % lines.count, $0.offset) < ($1.offset * 7 % lines.count, $1.offset) }
            .map(\.element)
        #expect(shuffled != lines)
        let expected = try run("digest", ["-f", "json", DigestFixtures.trace("basic")]).stdout
        #expect(try run("digest", ["-f", "json", reversed]).stdout == expected)
        #expect(try run("digest", ["-f", "json"], stdin: shuffled.joined(separator: "\n") + "\n").stdout == expected)
        #expect(try shell("cat '\(reversed)' | digest -f json").stdout == expected)
    }

    @Test("samples older than the window are left out, whether they come first, last or in between")
    func olderSamplesLeftOut() throws {
        let basic = try DigestFixtures.text("basic")
        // Two days earlier: outside the 24 hours that end at 10:25 on the 27th.
        let old = """
            {"type":"sample","monitor":"pay","at":"2026-01-25T10:00:00.000Z","status":"down","latency_ms":1}
            {"type":"sample","monitor":"gone","at":"2026-01-25T11:00:00.000Z","status":"up","latency_ms":1}

            """
        let expected = try #require(try run("digest", ["-f", "json", DigestFixtures.trace("basic")]).records().first)
        for input in [old + basic, basic + old] {
            let record = try #require(try run("digest", ["-f", "json"], stdin: input).records().first)
            #expect(record.int("samples_read") == 20)
            #expect(record.int("samples_in_window") == 18)
            #expect(record["services"] == expected["services"])
            #expect(record["overall"] == expected["overall"])
            #expect(record["correlated"] == expected["correlated"])
        }
    }

    @Test("--now ends the window: later samples are left out and an outage goes on to --now")
    func nowOption() throws {
        let record = try #require(
            try run("digest", ["-f", "json", "--now", "2026-01-27T10:12:00Z", DigestFixtures.trace("basic")]).records().first)
        #expect(record.string("window_end") == "2026-01-27T10:12:00.000Z")
        #expect(record.string("window_start") == "2026-01-26T10:12:00.000Z")
        #expect(record.int("samples_in_window") == 9)  // 10:00, 10:05, 10:10 for three services
        let services = objects(record["services"])
        let pay = try #require(services.first { $0.string("monitor") == "pay" })
        // pay: up 10:00, down 10:05 and 10:10: down since 10:05, 7 minutes to 10:12.
        #expect(pay.string("status") == "down")
        #expect(pay.int("outage_ms") == 420_000)
        #expect(pay.string("outage_since") == "2026-01-27T10:05:00.000Z")
        #expect(pay.string("last_message") == "HTTP 503, expected 200-399")
        #expect(services.map { $0.string("monitor") } == ["pay", "web", "api"])
    }

    // api: 200 samples a minute alternating 95 and 105 ms, a spike of 400 at minute 200 and one of
    // 2000 at minute 240 (far beyond the envelope the 400 left), 20 more; web: the same calm samples
    // only. detect-anomaly makes two episodes of api's, each an onset and 10 quiet samples
    // (DetectAnomalyTests.episodes): 22 degraded checks of 261. digest counts the episodes, not the
    // degraded checks; an episode going on at the window's start counts once.
    @Test("anomalies: detect-anomaly's episodes, counted once each, one going on at the window's start included")
    func anomalyEpisodes() throws {
        var lines: [String] = []
        for minute in 0...260 {
            let calm: Double = minute % 2 == 0 ? 95 : 105
            lines.append(sampleLine("api", minute: minute, latency: minute == 200 ? 400 : minute == 240 ? 2000 : calm))
            lines.append(sampleLine("web", minute: minute, latency: calm))
        }
        let input = lines.joined(separator: "\n") + "\n"
        let end = Timestamp.format(milliseconds: 1_767_571_200_000 + 260 * 60_000)
        func digest(_ window: String) throws -> JSONObject {
            let result = try shell("detect-anomaly | digest -f json --now \(end) --window \(window)", stdin: input)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try result.records().first)
        }
        let day = try digest("1d")
        let services = objects(day["services"])
        let api = try #require(services.first { $0.string("monitor") == "api" })
        #expect(api.int("anomalies") == 2)
        #expect(api["by_status"]?.objectValue?["degraded"] == .number("22"))
        #expect(services.first { $0.string("monitor") == "web" }?.int("anomalies") == 0)
        #expect(day["overall"]?.objectValue?["anomalies"] == .number("2"))
        // From minute 205, inside the first episode: it counts, and so does the second.
        #expect(try objects(digest("55m")["services"]).first { $0.string("monitor") == "api" }?.int("anomalies") == 2)
        // From minute 245, inside the second only; from minute 255, after both.
        #expect(try objects(digest("15m")["services"]).first { $0.string("monitor") == "api" }?.int("anomalies") == 1)
        #expect(try objects(digest("5m")["services"]).first { $0.string("monitor") == "api" }?.int("anomalies") == 0)
        // The words: the episodes, and the degraded checks they held.
        let text = try shell("detect-anomaly | digest --now \(end)", stdin: input)
        #expect(text.stdout.contains("had 2 latency anomalies (degraded at 22 of 261 checks)"), "\(text.stdout)")
    }

    @Test("no input, or no samples, is a digest that says there is no data, exit 0")
    func noData() throws {
        let empty = try run("digest", [])
        #expect(empty.status == 0)
        #expect(empty.stdout == "No data: the input held no samples, so there is nothing to summarize.\n")
        let others = try run("digest", [], stdin: #"{"type":"anomaly","monitor":"a"}"# + "\n\n")
        #expect(others.stdout == empty.stdout)
        let json = try #require(try run("digest", ["-f", "json"]).records().first)
        #expect(json.int("services_total") == 0)
        #expect(json["window_end"] == .null)
        let html = try run("digest", ["-f", "html"])
        #expect(html.status == 0 && html.stdout.contains("No data"))
    }

    @Test("malformed lines are reported with file and line, skipped, and the exit is 2 after the digest of the rest")
    func malformedLines() throws {
        let scratch = try ScratchDirectory()
        let bad = """
            {"type":"sample","monitor":"api","at":"2026-01-27T10:00:00Z","status":"up","latency_ms":40}
            not json
            {"type":"sample","at":"2026-01-27T10:00:00Z","status":"up"}
            {"type":"sample","monitor":"api","at":"yesterday","status":"up"}
            {"type":"sample","monitor":"api","at":"2026-01-27T10:01:00Z","status":"healthy"}
            {"type":"sample","monitor":"api","at":"2026-01-27T10:01:00Z","status":"up","latency_ms":-3}
            {"type":"sample","monitor":"api","at":"2026-01-27T10:02:00Z","status":"up","latency_ms":50}
            """
        let path = try scratch.write("bad.ndjson", bad + "\n")
        let result = try run("digest", ["-f", "json", path])
        #expect(result.status == 2)
        let errors = result.stderr.split(separator: "\n").map(String.init)
        try #require(errors.count == 5, "\(result.stderr)")
        #expect(errors[0] == "digest: \(path):2: not valid JSON: expected a JSON object at column 1")
        #expect(errors[1] == "digest: \(path):3: sample has no 'monitor'")
        #expect(errors[2] == "digest: \(path):4: sample 'at' is \"yesterday\"; expected an RFC 3339 time")
        #expect(errors[3] == "digest: \(path):5: sample 'status' is \"healthy\"; expected up, degraded, down, error or unknown")
        #expect(errors[4] == "digest: \(path):6: sample 'latency_ms' is -3; expected a number, 0 or more, or null")
        let record = try #require(result.records().first)
        #expect(record.int("samples_read") == 2)
        let api = try #require(record["services"]?.arrayValue?.first?.objectValue)
        #expect(api.double("latency_avg_ms") == 45)  // (40 + 50) / 2
    }

    @Test(
        "bad options are usage errors",
        arguments: [
            ["--format", "yaml"], ["--window", "0"], ["--bucket", "soon"], ["--now", "tomorrow"], ["--tz", "Mars/Olympus"],
            ["--max-services", "-1"], ["--llm-command", "model", "-f", "json"], ["--llm-command", "model 'unclosed"],
            ["--force"],
        ])
    func usageErrors(_ arguments: [String]) throws {
        let result = try run("digest", arguments)
        #expect(result.status == 64)
        #expect(result.stderr.contains("Try 'digest --help'"))
        #expect(result.stdout.isEmpty)
    }
}

/// The facts of each trace, worked out by hand from the trace files.
@Suite("digest facts", .hangGuard(minutes: 2))
struct DigestFactsTests {
    func facts(_ trace: String, _ arguments: [String] = []) throws -> (JSONObject, [JSONObject]) {
        let result = try run("digest", ["-f", "json"] + arguments + [DigestFixtures.trace(trace)])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try #require(result.records().first)
        let services = objects(record["services"])
        return (record, services)
    }

    @Test("basic: per-service figures, outages, correlation and overall")
    func basic() throws {
        let (record, services) = try facts("basic")
        #expect(record.string("type") == "digest")
        #expect(record.string("window_end") == "2026-01-27T10:25:00.000Z")
        #expect(record.int("samples_read") == 18)  // 19 lines, one an anomaly record
        // Worst first: pay is failing now; web had an outage, api none.
        #expect(services.map { $0.string("monitor") } == ["pay", "web", "api"])
        try #require(services.count == 3)
        let pay = services[0]
        let web = services[1]
        let api = services[2]
        // api: 40 42 44 46 48 50 ms, all up.
        #expect(api.int("checks") == 6)
        #expect(api.double("uptime_percent") == 100)
        #expect(api.double("latency_avg_ms") == 45)
        #expect(api.double("latency_latest_ms") == 50)
        #expect(api.double("latency_p95_ms") == 50)  // rank ⌈0.95 × 6⌉ = 6
        #expect(api.string("trend") == "stable")  // 48 vs 42 ms: +14%, under 20%
        #expect(api.double("trend_recent_ms") == 48)
        #expect(api.double("trend_earlier_ms") == 42)
        // pay: up down down up error error; latencies 100 30 30 100.
        #expect(pay.string("status") == "error")
        #expect(pay.double("uptime_percent") == 33.333)
        #expect(pay.double("latency_avg_ms") == 65)
        #expect(pay["latency_latest_ms"] == .null)
        #expect(pay.double("latency_p95_ms") == 100)  // rank ⌈0.95 × 4⌉ = 4 of 30 30 100 100
        #expect(pay.int("outages") == 2)
        #expect(pay.int("outage_ms") == 900_000)  // 10:05-10:15 and 10:20-10:25
        #expect(pay["outage_ongoing"] == .bool(true))
        let longest = try #require(pay["longest_outage"]?.objectValue)
        #expect(longest.string("start_at") == "2026-01-27T10:05:00.000Z")
        #expect(longest.string("end_at") == "2026-01-27T10:15:00.000Z")
        #expect(longest.int("duration_ms") == 600_000)
        #expect(pay.string("last_reason") == "timeout")
        let byStatus = try #require(pay["by_status"]?.objectValue)
        #expect([byStatus.int("up"), byStatus.int("down"), byStatus.int("error")] == [2, 2, 2])
        // web: up error up degraded up up; latencies 20 20 300 20 22.
        #expect(web.double("uptime_percent") == 83.333)
        #expect(web.double("latency_avg_ms") == 76.4)
        #expect(web.double("latency_p95_ms") == 300)
        #expect(web.string("trend") == "decreasing")
        #expect(web.double("trend_recent_ms") == 21)
        #expect(web.double("trend_earlier_ms") == 160)
        #expect(web.int("outages") == 1)
        #expect(web.int("outage_ms") == 300_000)
        // Correlation: pay and web both began failing at 10:05.
        let correlated = objects(record["correlated"])
        try #require(correlated.count == 1)
        #expect(correlated[0].string("bucket_start_at") == "2026-01-27T10:05:00.000Z")
        #expect(correlated[0]["monitors"] == .array([.string("pay"), .string("web")]))
        // Overall: 13 of 18 checks up or degraded; 3 outages, 20 minutes.
        let overall = try #require(record["overall"]?.objectValue)
        #expect(overall.int("services") == 3)
        #expect(overall.int("checks") == 18)
        #expect(overall.double("uptime_percent") == 72.222)
        #expect(overall.int("outages") == 3)
        #expect(overall.int("outage_ms") == 1_200_000)
        #expect(overall["worst_service"]?.objectValue?.string("monitor") == "pay")
        #expect(overall["longest_outage"]?.objectValue?.int("duration_ms") == 600_000)
        #expect(record["hidden"] == .null)
    }

    @Test("many: more than 20 services lists the 20 worst and sums up the other 3")
    func truncation() throws {
        let (record, services) = try facts("many")
        #expect(record.int("services_total") == 23)
        #expect(record.int("services_shown") == 20)
        // s05 is down now, s17 degraded now, s09 and s12 had one 1-minute outage each (monitor order breaks
        // their tie), then the healthy ones by monitor id; s21, s22 and s23 are left for the summary.
        let expected = [
            "s05", "s17", "s09", "s12", "s01", "s02", "s03", "s04", "s06", "s07", "s08", "s10", "s11",
            "s13", "s14", "s15", "s16", "s18", "s19", "s20",
        ]
        #expect(services.map { $0.string("monitor")! } == expected)
        let hidden = try #require(record["hidden"]?.objectValue)
        #expect(hidden.int("services") == 3)
        #expect(hidden.int("checks") == 6)
        #expect(hidden["by_status"]?.objectValue?.int("up") == 3)
        // s09 and s12 began failing at 10:00, s05 at 10:01: one 5-minute bucket.
        let correlated = try #require(record["correlated"]?.arrayValue?.first?.objectValue)
        #expect(correlated["monitors"] == .array([.string("s09"), .string("s12"), .string("s05")]))
        // --max-services 0 lists them all.
        let (all, _) = try facts("many", ["--max-services", "0"])
        #expect(all.int("services_shown") == 23)
        #expect(all["hidden"] == .null)
    }

    @Test("trend labels: 20% and 5 ms either way; --trend-samples moves the windows")
    func trends() throws {
        func labels(_ arguments: [String]) throws -> [String: String] {
            let (_, services) = try facts("trends", arguments)
            return Dictionary(uniqueKeysWithValues: services.map { ($0.string("monitor")!, $0.string("trend")!) })
        }
        // 10 × 50 then 10 × 80 ms: +60%, +30 ms. 100 then 60: -40%. 100 then 119: +19%. 2 then 4: +100% but 2 ms.
        #expect(try labels([]) == ["rising": "increasing", "falling": "decreasing", "flat": "stable", "tiny": "stable"])
        // With 5, the newest 5 and the 5 before them are all from the second half: no change anywhere.
        #expect(try labels(["--trend-samples", "5"]) == ["rising": "stable", "falling": "stable", "flat": "stable", "tiny": "stable"])
    }

    @Test("speed: the average of the samples that measured one")
    func speed() throws {
        let input = """
            {"type":"sample","monitor":"home","at":"2026-01-27T10:00:00Z","status":"up","latency_ms":10,"speed_mbps":90.5}
            {"type":"sample","monitor":"home","at":"2026-01-27T10:01:00Z","status":"up","latency_ms":10,"speed_mbps":null}
            {"type":"sample","monitor":"home","at":"2026-01-27T10:02:00Z","status":"up","latency_ms":10,"speed_mbps":95.5}
            """
        let result = try run("digest", ["-f", "json"], stdin: input + "\n")
        let home = try #require(result.records().first?["services"]?.arrayValue?.first?.objectValue)
        #expect(home.double("speed_avg_mbps") == 93)
        #expect(home.int("speed_checks") == 2)
        let text = try run("digest", [], stdin: input + "\n").stdout
        #expect(text.contains("Average download speed: home 93.0 Mbit/s."))
    }
}

/// --llm-command with small scripts as fake models.
@Suite("digest --llm-command", .hangGuard(minutes: 2))
struct DigestLLMTests {
    let scratch: ScratchDirectory
    init() throws { scratch = try ScratchDirectory() }

    func script(_ name: String, _ body: String) throws -> String {
        let path = try scratch.write(name, "#!/bin/sh\n" + body + "\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        return path
    }

    @Test("the model gets the prompt on its standard input and its trimmed answer is the digest")
    func answer() throws {
        let model = try script("model", #"cat > "$1"; printf '  The services were mostly fine.\n\n'"#)
        // The prompt file's name has a space and a quote, to check the word splitting.
        let promptPath = scratch.path("seen prompt's.txt")
        let command = "'\(model)' \"\(promptPath.replacingOccurrences(of: "'", with: "'"))\""
        let result = try run("digest", ["--llm-command", command, DigestFixtures.trace("basic")])
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout == "The services were mostly fine.\n")
        let prompt = try run("digest", ["--format", "prompt", DigestFixtures.trace("basic")]).stdout
        #expect(try String(contentsOfFile: promptPath, encoding: .utf8) == prompt)
    }

    // Only the model that hangs is given a short --llm-timeout: the others answer at once, and a
    // generous one keeps a slow machine's start-up from being taken for a hang.
    @Test(
        "a model that fails, says nothing, hangs or does not exist: the built-in text, and a warning",
        arguments: [
            ("exit 3", "failed", "it exited with status 3", "60s"),
            ("cat >/dev/null; printf '  \\n'", "empty", "its output was empty", "60s"),
            ("exec sleep 30", "hangs", "it gave no answer within --llm-timeout (500ms)", "500ms"),
            ("kill -9 $$", "killed", "it was killed by signal 9", "60s"),
        ])
    func fallback(body: String, name: String, reason: String, timeout: String) throws {
        let model = try script(name, body)
        let result = try run("digest", ["--llm-command", model, "--llm-timeout", timeout, DigestFixtures.trace("basic")])
        #expect(result.status == 0)
        #expect(result.stderr == "digest: warning: --llm-command gave no digest (\(reason)); writing digest's own text instead\n")
        try DigestFixtures.check(result.stdout, golden: "basic.text")
    }

    @Test("a command that cannot be run falls back too")
    func missing() throws {
        let result = try run("digest", ["--llm-command", scratch.path("no-such-model") + " --flag", DigestFixtures.trace("basic")])
        #expect(result.status == 0)
        #expect(result.stderr.contains("cannot run '\(scratch.path("no-such-model"))': No such file or directory"))
        try DigestFixtures.check(result.stdout, golden: "basic.text")
    }
}

/// --cache: a digest made today is printed again without reading the samples.
@Suite("digest --cache", .hangGuard(minutes: 2))
struct DigestCacheTests {
    /// A zone where it is now about noon, so "today" cannot change during the test.
    static var noonZone: String {
        let hour = Int(Clock.wallMilliseconds() / 3_600_000 % 24)
        let offset = 12 - hour  // -11 ... +12
        return (offset < 0 ? "-" : "+") + (abs(offset) < 10 ? "0" : "") + "\(abs(offset)):00"
    }

    @Test("made once, printed from the cache the same day, made again with --force, other options or another day")
    func dailyCache() throws {
        let scratch = try ScratchDirectory()
        let cache = scratch.path("digest.cache")
        let zone = Self.noonZone
        let first = try run("digest", ["--cache", cache, "--tz", zone, DigestFixtures.trace("basic")])
        #expect(first.status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: cache)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // Another input, same day and options: the cached digest of the first input.
        let again = try run("digest", ["--cache", cache, "--tz", zone, DigestFixtures.trace("many")])
        #expect(again.stdout == first.stdout)
        #expect(again.stderr.isEmpty)
        // --force makes it again from the new input, and keeps that.
        let forced = try run("digest", ["--cache", cache, "--tz", zone, "--force", DigestFixtures.trace("many")])
        #expect(forced.stdout.contains("23 services"))
        #expect(try run("digest", ["--cache", cache, "--tz", zone, DigestFixtures.trace("basic")]).stdout == forced.stdout)
        // Another format is another digest.
        let json = try run("digest", ["--cache", cache, "--tz", zone, "-f", "json", DigestFixtures.trace("basic")])
        #expect(json.stdout.hasPrefix("{\"type\":\"digest\""))
        // A cache from another day is not used.
        var record = try #require(JSONParser.parse(try String(contentsOfFile: cache, encoding: .utf8).trimmingSpaces).objectValue)
        #expect(record.string("type") == "digest_cache")
        record["day"] = .string("2000-01-01")
        try scratch.write("digest.cache", JSONValue.object(record).jsonText + "\n")
        let otherDay = try run("digest", ["--cache", cache, "--tz", zone, "-f", "json", DigestFixtures.trace("many")])
        #expect(otherDay.stdout.contains("\"services_total\":23"))
    }

    @Test("an unreadable cache is a warning; a bad input is not cached; a fallback is not cached")
    func notCached() throws {
        let scratch = try ScratchDirectory()
        let cache = try scratch.write("digest.cache", "not a cache\n")
        let zone = Self.noonZone
        let result = try run("digest", ["--cache", cache, "--tz", zone, DigestFixtures.trace("basic")])
        #expect(result.status == 0)
        #expect(result.stderr == "digest: warning: \(cache) is not a digest cache; making a new digest\n")
        try FileManager.default.removeItem(atPath: cache)
        let bad = try run("digest", ["--cache", cache, "--tz", zone], stdin: "oops\n")
        #expect(bad.status == 2)
        #expect(!FileManager.default.fileExists(atPath: cache))
        let failing = try scratch.write("model", "#!/bin/sh\nexit 1\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: failing)
        _ = try run("digest", ["--cache", cache, "--tz", zone, "--llm-command", failing, DigestFixtures.trace("basic")])
        #expect(!FileManager.default.fileExists(atPath: cache))
    }
}

/// The HTML page looked at in a real browser: headless Chromium takes a screenshot.
@Suite("digest --format html in a browser", .hangGuard(minutes: 3))
struct DigestBrowserTests {
    @Test("the page renders: the screenshot has the window's size, the table's badges, the outage shading and the line")
    func renders() throws {
        let scratch = try ScratchDirectory()
        let page = scratch.path("digest.html")
        let made = try shell("digest --format html '\(DigestFixtures.trace("basic"))' > '\(page)'")
        #expect(made.status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        for external in ["src=", "href=", "url(", "@import", "<script", "<link"] {
            #expect(!html.contains(external), "self-contained, yet the page has \(external)")
        }
        let shot = scratch.path("shot.png")
        let browser = try shell(
            "timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                + "--user-data-dir='\(scratch.path("profile"))' --window-size=1100,1300 --screenshot='\(shot)' 'file://\(page)'")
        #expect(FileManager.default.fileExists(atPath: shot), "chromium made no screenshot: \(browser.stderr.suffix(500))")
        // Decoded by a small PNG reader of our own (Python's zlib), not by the browser. The
        // colours are OnlineTracker's (seed 001, Color Scheme): Up #22C55E, Down #EF4444,
        // Degraded #F59E0B; the shading is the status colour at 30 % over white, worked by hand:
        // 255 - 0.3 × (255 - c) gives fac7c7 for #EF4444 and fce2b6 for #F59E0B.
        let colours = try shell(
            "python3 '\(Binaries.fixtures.appendingPathComponent("png_colors.py").path)' '\(shot)' "
                + "fac7c7~3 fce2b6~3 ef4444 22c55e 1f5fbf~60 ffffff")
        let report = try #require(JSONParser.parse(colours.stdout.trimmingSpaces).objectValue)
        #expect(report.int("width") == 1100)
        #expect(report.int("height") == 1300)
        #expect((report.int("colours") ?? 0) > 50, "not a blank page")
        let matches = try #require(report["matches"]?.objectValue)
        #expect((matches.int("fac7c7~3") ?? 0) > 1000, "outage shading (Payments and Web)")
        #expect((matches.int("fce2b6~3") ?? 0) > 50, "degraded shading (Web at 10:15)")
        #expect((matches.int("ef4444") ?? 0) > 100, "the error badge")
        #expect((matches.int("22c55e") ?? 0) > 100, "the up badges")
        #expect((matches.int("1f5fbf~60") ?? 0) > 100, "latency lines")
        #expect((matches.int("ffffff") ?? 0) > 500_000, "a white page")
    }
}

@Suite("digest record documented")
struct DigestRecordDocumentationTests {
    /// Every key in a JSON value, nested ones too.
    func keys(_ value: JSONValue) -> Set<String> {
        switch value {
        case .object(let object):
            return object.fields.reduce(into: Set<String>()) { result, field in
                result.insert(field.key)
                result.formUnion(keys(field.value))
            }
        case .array(let items): return items.reduce(into: Set<String>()) { $0.formUnion(keys($1)) }
        default: return []
        }
    }

    @Test("every field digest writes is in vitals-records(7), DIGEST")
    func fields() throws {
        var written = Set<String>()
        // basic has outages and a worst service; many has hidden services; speed has speeds.
        for trace in ["basic", "many"] {
            let record = try #require(try run("digest", ["-f", "json", DigestFixtures.trace(trace)]).records().first)
            written.formUnion(keys(.object(record)))
        }
        #expect(written.isSuperset(of: ["hidden", "worst_service", "longest_outage", "outage_since", "start_at", "bucket_start_at"]))
        let documented = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "DIGEST"))
        for key in written.sorted() {
            #expect(documented.contains(key), "\(key) is not documented in vitals-records(7) DIGEST")
        }
    }
}

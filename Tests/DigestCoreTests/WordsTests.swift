import Testing
import VitalsKit

@testable import DigestCore

/// Times in zones, numbers for reading, and the sentences of `--format text`, each worked out
/// by hand from digest(1) (FORMATS: "Latencies are rounded to whole milliseconds from 10 ms,
/// percentages to one decimal (a share under 100% is never written as 100%), durations to the
/// minute from a minute"; --tz: "Times on the window's last day are written as HH:MM, others
/// with their date").
@Suite("zones: --tz")
struct ZoneTests {
    @Test("named zones follow daylight saving time: Paris and New York on the days they change")
    func daylightSaving() throws {
        let paris = try #require(Zone.parse("Europe/Paris"))
        // The EU changes on the last Sunday of March, 2026-03-29, at 01:00 UTC: CET to CEST.
        #expect(paris.offsetSeconds(at: Timestamp.parse("2026-03-29T00:59:59Z")!) == 3_600)
        #expect(paris.offsetSeconds(at: Timestamp.parse("2026-03-29T01:00:00Z")!) == 7_200)
        // The US changes on the second Sunday of March, 2026-03-08, at 2:00 EST (07:00 UTC).
        let newYork = try #require(Zone.parse("America/New_York"))
        #expect(newYork.offsetSeconds(at: Timestamp.parse("2026-03-08T06:59:59Z")!) == -18_000)
        #expect(newYork.offsetSeconds(at: Timestamp.parse("2026-03-08T07:00:00Z")!) == -14_400)
        // 22:30 UTC on 1 July is 00:30 the next day in Paris (CEST, +02:00).
        let words = Words(zone: paris, reference: nil)
        #expect(words.fullTime(Timestamp.parse("2026-07-01T22:30:00Z")!) == "2026-07-02 00:30 +02:00")
    }

    @Test("offsets: ±HH:MM, ±HHMM or ±HH, at most 14 hours; UTC by its names")
    func offsets() {
        #expect(Zone.parse("-0530")?.offsetSeconds(at: 0) == -19_800)
        #expect(Zone.parse("-0530")?.name == "-05:30")
        #expect(Zone.parse("+14:00")?.offsetSeconds(at: 0) == 50_400)
        #expect(Zone.parse("+09")?.offsetSeconds(at: 0) == 32_400)
        for utc in ["UTC", "z", "GMT", "+00:00", "-0000"] { #expect(Zone.parse(utc)?.name == "UTC", "\(utc)") }
        for bad in ["+5", "+15:00", "+05:60", "+05:3", "05:30", "Not/AZone", "+٠٥:٠٠"] { #expect(Zone.parse(bad) == nil, "\(bad)") }
    }

    @Test("the local day: 18:29:59 UTC is still the 27th at +05:30, 18:30 is the 28th")
    func day() throws {
        let india = try #require(Zone.parse("+05:30"))
        #expect(DigestCommand.dayText(india, Timestamp.parse("2026-01-27T18:29:59Z")!) == "2026-01-27")
        #expect(DigestCommand.dayText(india, Timestamp.parse("2026-01-27T18:30:00Z")!) == "2026-01-28")
        #expect(DigestCommand.dayText(try #require(Zone.parse("-08:00")), Timestamp.parse("2026-01-27T07:59:00Z")!) == "2026-01-26")
    }

    @Test("HH:MM on the window's last day in the zone, with the date otherwise")
    func times() throws {
        // The window ends at 23:30 UTC, which is 05:00 on the 28th at +05:30.
        let end = Timestamp.parse("2026-01-27T23:30:00Z")!
        let india = Words(zone: try #require(Zone.parse("+05:30")), reference: end)
        // 18:00 UTC is 23:30 on the 27th there: another day.
        #expect(india.time(Timestamp.parse("2026-01-27T18:00:00Z")!) == "2026-01-27 23:30")
        // 18:30 UTC is midnight on the 28th: the last day.
        #expect(india.time(Timestamp.parse("2026-01-27T18:30:00Z")!) == "00:00")
        let utc = Words(zone: .utc, reference: end)
        #expect(utc.time(Timestamp.parse("2026-01-27T18:00:00Z")!) == "18:00")
        #expect(utc.fullTime(end) == "2026-01-27 23:30 UTC")
    }
}

@Suite("numbers for reading")
struct NumberWordsTests {
    @Test("latencies: one decimal under 10 ms, whole milliseconds from 10, grouped")
    func latency() {
        #expect(Words.latency(9.94) == "9.9 ms")
        #expect(Words.latency(9.95) == "10 ms", "rounds to 10.0: whole from there")
        #expect(Words.latency(0.04) == "0.0 ms")
        #expect(Words.latency(10.5) == "11 ms")
        #expect(Words.latency(1_249.5) == "1,250 ms")
    }

    @Test("percentages: one decimal, never 100% for a share under it, never 0% for one over it")
    func percent() {
        #expect(Words.percent(66.666) == "66.7%")
        #expect(Words.percent(33.333) == "33.3%")
        #expect(Words.percent(99.94) == "99.9%")
        #expect(Words.percent(99.95) == ">99.9%")
        #expect(Words.percent(0.05) == "0.1%")
        #expect(Words.percent(0.049) == "<0.1%")
        #expect(Words.percent(0) == "0%")
        #expect(Words.percent(100) == "100%")
    }

    @Test("outages to the minute from a minute; under one, <1m")
    func outage() {
        #expect(Words.outage(0) == "<1m")
        #expect(Words.outage(59_999) == "<1m")
        #expect(Words.outage(60_000) == "1m")
        #expect(Words.outage(119_999) == "1m")
        #expect(Words.outage(3_660_000) == "1h 1m")
        #expect(Words.outage(172_800_000) == "2d")
    }

    @Test("spans and buckets in whole units, odd ones short")
    func spans() {
        #expect(Words.span(3_600_000) == "1 hour")
        #expect(Words.span(5_400_000) == "90 minutes")
        #expect(Words.span(90_000) == "90 seconds")
        #expect(Words.span(1_500) == "1.5s")
        #expect(Words.unit(90_000) == "90-second bucket")
        #expect(Words.unit(3_600_000) == "1-hour bucket")
        #expect(Words.unit(1_500) == "bucket of 1.5s")
    }

    @Test("counts, times, lists and signs")
    func counts() {
        #expect(Words.times(1) == "once")
        #expect(Words.times(2) == "twice")
        #expect(Words.times(1_000) == "1,000 times")
        #expect(Words.count(1, "outage") == "1 outage")
        #expect(Words.count(2, "latency anomaly", "latency anomalies") == "2 latency anomalies")
        #expect(Words.statusCounts([.down: 1, .up: 3, .degraded: 1]) == "3 up, 1 degraded and 1 down")
        #expect(Words.grouped(Int64(-1_234_567)) == "-1,234,567")
        #expect(Words.fixed(-0.5, decimals: 1) == "-0.5")
        #expect(Words.fixed(-1.25, decimals: 1) == "-1.3")
        #expect(Words.fixed(4, decimals: 1) == "4.0")
        #expect(DigestText.names(["a", "b", "c", "d", "e", "f"], limit: 4) == "a, b, c, d and 2 more")
    }
}

@Suite("the digest in words (--format text)")
struct DigestTextTests {
    typealias In = DigestInput

    func text(_ lines: [String], now: String = "10:30", maxServices: Int = 20) throws -> String {
        DigestText.render(try In.facts(lines, now: In.at(now), maxServices: maxServices), zone: .utc)
    }

    @Test("a day with nothing wrong")
    func allUp() throws {
        let lines = ["10:00", "10:10", "10:20"].map { In.line("api", $0, "up", latency: "40") }
        #expect(
            try text(lines) == """
                Digest of the 24 hours to 2026-01-27 10:30 UTC: 1 service, 3 checks, 100% up.
                The service was up at every check, with no outages.
                Latency was stable (40 ms on average).

                """)
    }

    @Test("one service down since 10:10 among two: named, with its uptime and message")
    func oneDown() throws {
        // Payments: up, down, down: 1 of 3 up (33.3%), down since 10:10. Both: 4 of 6 (66.7%).
        let lines = [
            In.line("api", "10:00", "up", latency: "40"), In.line("api", "10:10", "up", latency: "40"),
            In.line("api", "10:20", "up", latency: "40"),
            In.line("pay", "10:00", "up", latency: "100", extra: #","name":"Payments""#),
            In.line("pay", "10:10", "down", extra: #","name":"Payments""#),
            In.line("pay", "10:20", "down", extra: #","name":"Payments","message":"HTTP 503""#),
        ]
        #expect(
            try text(lines) == """
                Digest of the 24 hours to 2026-01-27 10:30 UTC: 2 services, 6 checks, 66.7% up.
                All 2 services were up except Payments, which has been down since 10:10 (33.3% up; HTTP 503).
                Latency was stable for every service.

                """)
    }

    @Test("two outages of one service: counted, summed, and the longest named")
    func twice() throws {
        // Down 10:00-10:05 (5m) and 10:10-10:20 (10m): twice, 15m; 4 of 6 up (66.7%).
        let statuses = [("10:00", "down"), ("10:05", "up"), ("10:10", "down"), ("10:20", "up"), ("10:25", "up"), ("10:29", "up")]
        let lines = statuses.map { In.line("db", $0.0, $0.1, latency: $0.1 == "up" ? "20" : "null", extra: #","name":"DB""#) }
        #expect(
            try text(lines) == """
                Digest of the 24 hours to 2026-01-27 10:30 UTC: 1 service, 6 checks, 66.7% up.
                The service had trouble. DB was down twice for 15m in total (66.7% up).
                Latency was stable (20 ms on average).
                The longest outage: DB, 10m from 10:10.

                """)
    }

    @Test("outages that began in the same bucket are said to have failed together")
    func together() throws {
        let lines = [
            In.line("a", "10:00", "up", extra: #","name":"A""#), In.line("a", "10:01", "down", extra: #","name":"A""#),
            In.line("a", "10:02", "up", extra: #","name":"A""#),
            In.line("b", "10:00", "up", extra: #","name":"B""#), In.line("b", "10:03", "down", extra: #","name":"B""#),
            In.line("b", "10:04", "up", extra: #","name":"B""#),
        ]
        #expect(
            try text(lines) == """
                Digest of the 24 hours to 2026-01-27 10:30 UTC: 2 services, 6 checks, 66.7% up.
                All 2 services had trouble. A was down once for 1m (66.7% up). B was down once for 1m (66.7% up).
                Failed together (outages beginning in the same 5-minute bucket): A and B between 10:00 and 10:05.
                No latency was measured.
                The longest outage: A, 1m from 10:01.

                """)
    }

    @Test("what a service went through, clause by clause")
    func clauses() throws {
        let words = Words(zone: .utc, reference: In.at("10:30"))
        // Failing twice, the second still going on: 5m + 10m to the window's end; 1 of 3 up.
        let twice = try In.service(
            try In.facts(
                [
                    In.line("x", "10:00", "error"), In.line("x", "10:05", "up"),
                    In.line("x", "10:20", "error", extra: #","message":"timeout""#),
                ], now: In.at("10:30")), "x")
        #expect(
            DigestText.clause(twice, words)
                == "was down twice for 15m in total (33.3% up) and has been failing again since 10:20 (timeout)")
        // Two anomaly episodes, no outage: degraded at 3 of 10 checks.
        let episode = { (state: String) in #","anomaly":{"episode":{"state":"\#(state)"}}"# }
        let web = try In.service(
            try In.facts(
                [
                    In.line("web", "10:00", "up"), In.line("web", "10:01", "degraded", extra: episode("onset")),
                    In.line("web", "10:02", "degraded", extra: episode("ongoing")), In.line("web", "10:03", "up", extra: episode("end")),
                    In.line("web", "10:04", "up"), In.line("web", "10:05", "up"),
                    In.line("web", "10:06", "degraded", extra: episode("onset")),
                    In.line("web", "10:07", "up", extra: episode("end")), In.line("web", "10:08", "up"), In.line("web", "10:09", "up"),
                ], now: In.at("10:30")), "web")
        #expect(DigestText.clause(web, words) == "had 2 latency anomalies (degraded at 3 of 10 checks)")
        // Degraded now, without episodes.
        let slow = try In.service(try In.facts([In.line("s", "10:00", "up"), In.line("s", "10:01", "degraded")], now: In.at("10:30")), "s")
        #expect(DigestText.clause(slow, words) == "was degraded at 1 of 2 checks and is degraded now")
    }

    @Test("no data: none read, or none in the window")
    func noData() throws {
        #expect(try text([]) == "No data: the input held no samples, so there is nothing to summarize.\n")
        let old = #"{"type":"sample","monitor":"a","at":"2026-01-25T10:00:00Z","status":"up"}"#
        #expect(try text([old]) == "No data for the 24 hours to 2026-01-27 10:30 UTC: none of the 1 sample read falls in it.\n")
    }

    @Test("the services past --max-services in one sentence")
    func notListed() throws {
        let output = try text(
            [
                In.line("a", "10:00", "down"), In.line("b", "10:00", "down"), In.line("b", "10:01", "up"),
                In.line("c", "10:00", "up"), In.line("d", "10:00", "degraded"),
            ], now: "10:02", maxServices: 2)
        // Hidden: b (up, one outage of 1m) and c (up).
        #expect(output.hasSuffix("Not listed: 2 more services (2 up; 1 outage, 1m in total).\n"))
    }
}

import Foundation
import Testing
import VitalsKit

/// digest's SLA report (digest(1), SLA REPORTS) and its flaky checks: figures worked out by hand
/// from the rules the report states, before the tool ran.
@Suite("digest: SLA reports that state their accounting; flaky checks", .serialized, .hangGuard(minutes: 3))
struct DigestSLATests {
    /// November 2026 (30 days, 43,200 minutes), one check a minute (check_interval 60):
    /// api is down 2026-11-14 09:17 to 09:59 (43 checks: a 43-minute outage) and 2026-11-20 02:00 to
    /// 02:09 (10 checks, during a 10-minute maintenance window); web has no check 2026-11-10 00:00 to
    /// 05:59 (a 6-hour gap), and its check at 2026-11-15 12:00 passed on its second try.
    static let month: String = {
        let start = Timestamp.parse("2026-11-01T00:00:00Z")!
        var out = ""
        out.reserveCapacity(8_000_000)
        for minute in 0..<43_200 {
            let at = start + Int64(minute) * 60_000
            let time = Timestamp.format(milliseconds: at)
            let day = minute / 1440 + 1
            let hour = minute % 1440 / 60
            let minuteOfHour = minute % 60
            let down = (day == 14 && hour == 9 && minuteOfHour >= 17) || (day == 20 && hour == 2 && minuteOfHour < 10)
            out +=
                #"{"type":"sample","monitor":"api","name":"API","at":"\#(time)","status":"\#(down ? "down" : "up")","check_interval":60}"#
            out += "\n"
            if day == 10 && hour < 6 { continue }
            let flaky = day == 15 && hour == 12 && minuteOfHour == 0 ? #","attempts":2"# : ""
            out += #"{"type":"sample","monitor":"web","at":"\#(time)","status":"up","check_interval":60\#(flaky)}"# + "\n"
        }
        return out
    }()

    static let maintenance =
        #"{"type":"maintenance","id":"m_0a1b2c3d","monitors":["api"],"start":"2026-11-20T02:00:00.000Z","end":"2026-11-20T02:10:00.000Z","reason":"deploy 4.2","added_at":"2026-11-20T01:59:00.000Z"}"#
        + "\n"

    func report(_ arguments: [String]) throws -> RunResult {
        try run("digest", ["--tz", "UTC"] + arguments, stdin: Self.month)
    }

    func monitors(_ result: RunResult) throws -> [String: JSONObject] {
        let record = try #require(try result.records().first)
        let list = record["monitors"]?.arrayValue?.compactMap(\.objectValue) ?? []
        return Dictionary(uniqueKeysWithValues: list.map { ($0.string("monitor") ?? "", $0) })
    }

    @Test("a month with a 43-minute outage and a 10-minute maintenance window: maintenance counted, the target is missed")
    func monthCounted() throws {
        let result = try report(["--period", "2026-11", "--slo", "99.9", "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let api = try #require(try monitors(result)["api"])
        // Every minute is covered by its check: 43,200 minutes measured, 53 of them down.
        #expect(api.int("up_ms") == 43_147 * 60_000 && api.int("down_ms") == 53 * 60_000)
        #expect(api.int("no_data_ms") == 0 && api.int("maintenance_ms") == 0 && api.int("measured_ms") == 43_200 * 60_000)
        // 1 - 53 / 43,200 = 99.877315%; the budget is 0.1% of 43,200 minutes = 43.2 min = 2,592,000 ms.
        #expect(abs((api.double("uptime_percent") ?? 0) - (1 - 53.0 / 43_200) * 100) < 1e-9)
        #expect(api.int("budget_ms") == 2_592_000 && api.int("budget_left_ms") == 2_592_000 - 3_180_000)
        #expect(api["met"] == .bool(false))
        let outages = api["outages"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(outages.map { $0.string("start") ?? "" } == ["2026-11-14T09:17:00.000Z", "2026-11-20T02:00:00.000Z"])
        #expect(outages.map { $0.int("duration_ms") ?? 0 } == [43 * 60_000, 10 * 60_000])
        // web: the 6-hour gap is no data, not down; the rest is up; one flaky check.
        let web = try #require(try monitors(result)["web"])
        #expect(web.int("no_data_ms") == 6 * 3_600_000 && web.int("down_ms") == 0 && web.int("up_ms") == 42_840 * 60_000)
        #expect(web.double("uptime_percent") == 100 && web.int("flaky_checks") == 1 && web.int("checks") == 42_840)
        #expect(web.int("budget_ms") == 2_570_400)
        let record = try #require(try result.records().first)
        #expect(record.string("type") == "sla" && record.string("period") == "2026-11")
        #expect(record.string("start") == "2026-11-01T00:00:00.000Z" && record.string("end") == "2026-12-01T00:00:00.000Z")
        let rules = record["rules"]?.objectValue
        #expect(Set(rules?.fields.map(\.key) ?? []) == ["time", "gaps", "maintenance", "places", "degraded", "retries", "budget"])
        #expect(rules?.string("maintenance")?.contains("counted like any other time") == true)
    }

    @Test("the same month with its maintenance left out: 43 of 43,190 minutes down, the target met by 11.4 s")
    func monthMaintenanceLeftOut() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write("maintenance.ndjson", Self.maintenance)
        let json = try report(["--period", "2026-11", "--maintenance", file, "--format", "json"])
        let api = try #require(try monitors(json)["api"])
        // The window's 10 minutes are neither up nor down: 43,190 measured, 43 down.
        #expect(api.int("maintenance_ms") == 600_000 && api.int("down_ms") == 43 * 60_000 && api.int("measured_ms") == 43_190 * 60_000)
        #expect(abs((api.double("uptime_percent") ?? 0) - (1 - 43.0 / 43_190) * 100) < 1e-9)
        // Budget: 0.1% of 43,190 minutes = 2,591,400 ms; 2,580,000 used; 11,400 left.
        #expect(api.int("budget_ms") == 2_591_400 && api.int("budget_left_ms") == 11_400 && api["met"] == .bool(true))
        #expect(api["outages"]?.arrayValue?.count == 1, "the deploy's downtime is no outage")
        let text = try report(["--period", "2026-11", "--maintenance", file])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.hasPrefix("SLA report for 2026-11: 2026-11-01 00:00 to 2026-12-01 00:00 (UTC), target 99.9%.\n"))
        #expect(
            text.stdout.contains(
                "api (API): 99.9004% up, target met. Measured 29d 23h 50m (no data: 0s; maintenance left out: 10m). "
                    + "Down 43m in 1 outage: 2026-11-14 09:17 to 2026-11-14 10:00 (43m). Error budget 43m 11.4s: 43m used (99.5600%), 11.4s left."
            ),
            "\(text.stdout)")
        #expect(text.stdout.contains("web: 100.0000% up, target met. Measured 29d 18h (no data: 6h; maintenance left out: 0s)."))
        #expect(text.stdout.contains("1 check of 42840 passed only on a retry (flaky, counted up)."))
        #expect(text.stdout.contains("How this report counts:\n- Uptime is measured by time, not by counting checks"))
        #expect(text.stdout.contains("- Maintenance windows (--maintenance) are left out"))
        // Counted: 53 minutes down against a 43.2-minute budget: 122.6851% used, overspent by 9.8 minutes.
        let counted = try report(["--period", "2026-11"])
        #expect(counted.stdout.contains("api (API): 99.8773% up, target missed."))
        #expect(counted.stdout.contains("Error budget 43m 12s: 53m used (122.6851%), overspent by 9m 48s."), "\(counted.stdout)")
        #expect(counted.stdout.contains("- Maintenance is counted like any other time (no --maintenance was given)."))
        for format in ["markdown", "html"] {
            let page = try report(["--period", "2026-11", "--maintenance", file, "--format", format])
            #expect(page.status == 0 && page.stdout.contains("99.9004%") && page.stdout.contains("How this report counts"), "\(format)")
        }
    }

    @Test("an ISO week and a range: 2026-W47 is Monday 16 to Monday 23 November; --since/--until by dates")
    func weekAndRange() throws {
        let week = try monitors(try report(["--period", "2026-W47", "--format", "json"]))
        // The week holds the maintenance (10 minutes down, counted) but not the outage of the 14th.
        #expect(week["api"]?.int("down_ms") == 600_000 && week["api"]?.int("measured_ms") == 7 * 1440 * 60_000)
        let range = try monitors(try report(["--since", "2026-11-14", "--until", "2026-11-15", "--format", "json"]))
        #expect(range["api"]?.int("down_ms") == 43 * 60_000 && range["api"]?.int("measured_ms") == 1440 * 60_000)
        let bad = try run("digest", ["--period", "2026-13"], stdin: "")
        #expect(bad.status == 64 && bad.stderr.contains("--period takes a month (2026-11)"), "\(bad.stderr)")
        let half = try run("digest", ["--since", "2026-11-01"], stdin: "")
        #expect(half.status == 64 && half.stderr.contains("needs both --since and --until"))
        let slo = try run("digest", ["--period", "2026-11", "--slo", "100"], stdin: "")
        #expect(slo.status == 64 && slo.stderr.contains("--slo"))
    }

    @Test("partial outages from two places: measured, not up, spent from the budget, and no outage")
    func partialFromTwoPlaces() throws {
        // 10:00 to 11:00, tokyo checks at each minute's :00, paris at :20; tokyo fails 10:10 to 10:19.
        // Each check holds until the next check of the monitor: tokyo's 20 s, paris's 40 s. From 10:10:00
        // to 10:20:00 one place of two fails, fewer than a majority (both): partial, 10 minutes.
        var lines: [String] = []
        for minute in 0..<60 {
            let base = Timestamp.parse("2026-11-02T10:00:00Z")! + Int64(minute) * 60_000
            let tokyo = (10..<20).contains(minute) ? "down" : "up"
            lines.append(
                #"{"type":"sample","monitor":"web","at":"\#(Timestamp.format(milliseconds: base))","status":"\#(tokyo)","agent":"tokyo"}"#)
            lines.append(
                #"{"type":"sample","monitor":"web","at":"\#(Timestamp.format(milliseconds: base + 20_000))","status":"up","agent":"paris"}"#
            )
        }
        let result = try run(
            "digest", ["--since", "2026-11-02T10:00:00Z", "--until", "2026-11-02T11:00:00Z", "--format", "json"],
            stdin: lines.joined(separator: "\n") + "\n")
        let web = try #require(try monitors(result)["web"])
        #expect(web.int("partial_ms") == 600_000 && web.int("up_ms") == 3_000_000 && web.int("down_ms") == 0)
        #expect(abs((web.double("uptime_percent") ?? 0) - 50.0 / 60 * 100) < 1e-9)
        #expect(web.int("budget_ms") == 3_600 && web.int("budget_used_ms") == 600_000 && web["met"] == .bool(false))
        #expect(web["outages"]?.arrayValue?.isEmpty == true)
    }

    @Test("a flaky service that passes on the second try: probe-http --confirm 1 into digest counts it apart, as up")
    func flakyThroughThePipeline() throws {
        let server = try FixtureServerHandle()
        // /flap?period=1 answers 200, 503, 200, ...: after one request, a probe's first try gets 503 and its retry 200.
        _ = try run("probe-http", [], stdin: "\(server.url)/flap?period=1\n")
        let target = #"{"id":"flaky","url":"\#(server.url)/flap?period=1"}"# + "\n"
        let result = try shell(
            "probe-http --confirm 1 | digest --format json --tz UTC", stdin: target)
        #expect(result.status == 0, "\(result.stderr)")
        let service = try #require(try result.records().first?["services"]?.arrayValue?.first?.objectValue)
        #expect(service.int("checks") == 1 && service.int("flaky_checks") == 1)
        #expect(service.double("uptime_percent") == 100, "a check that passed on a retry counts up")
        let text = try shell("probe-http --confirm 1 | digest --tz UTC", stdin: target)
        // The counter moved on by two: this run's first try gets 503 again, its retry 200.
        #expect(text.stdout.contains("Passed only on a retry (flaky, counted up): flaky at 1 of 1 check."), "\(text.stdout)")
    }
}

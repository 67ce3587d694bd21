import Foundation
import Testing
import VitalsKit

/// digest and the place rule, end to end: the issue's two-place trace (`TwoPlaceTrace`, the one
/// store-samples' views are held to) through the built binaries. Every expected figure is worked
/// out by hand from vitals(7), PLACES and digest(1), in the comments beside it.
///
/// The trace: tokyo sees Web down at 10:00:00, 10:01:00, ... 10:05:00 (no latency, "connection
/// refused"), paris sees it up 20 s after each (40 ms). No check_interval: 60 s, so a place votes
/// for 120 s. 10:00:00 has only tokyo: down. Each later sample has the other place 20 or 40 s
/// before it: a majority of two is two, the worst both report is up, tokyo fails: degraded,
/// partial. So 1 down and 11 partial checks: 0% up (a partial check is not up); one outage from
/// 10:00:00 to 10:00:20 (20 s, <1m); one partial outage from 10:00:20 to the window's end at the
/// newest sample, 10:05:20 (5 min), going on; now tokyo (10:05:00, down) and paris (10:05:20, up)
/// are both fresh: partial. Latency: paris's six 40 ms; the short history's halves (3 and 3) are
/// both 40 ms: stable.
@Suite("digest: places end to end", .hangGuard(minutes: 2))
struct DigestPlacesTests {
    /// The trace as digest reads it.
    static var input: String { TwoPlaceTrace.lines.joined(separator: "\n") + "\n" }

    @Test("the issue's trace in words, Markdown and the prompt: partly unreachable, named by place, never flapping")
    func words() throws {
        let text = try run("digest", ["--tz", "UTC"], stdin: Self.input)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(
            text.lines == [
                "Digest of the 24 hours to 2026-01-27 10:05 UTC: 1 service, 12 checks, 0% up.",
                "The service had trouble. Web was down once for <1m (0% up) and has been partly unreachable since 10:00 "
                    + "(down from tokyo; up from paris).",
                "Latency was stable (40 ms on average).",
            ])
        let markdown = try run("digest", ["--tz", "UTC", "-f", "markdown"], stdin: Self.input).stdout
        #expect(markdown.contains("\n- Outages: 1, <1m in total\n- Partial outages: 1, 5m in total\n"), "\(markdown)")
        #expect(markdown.contains("| Web (`web`) | **degraded** | 0% | 12 | 40 ms | 40 ms | 40 ms | stable | 1 | <1m | – |"), "\(markdown)")
        let prompt = try run("digest", ["--tz", "UTC", "-f", "prompt"], stdin: Self.input).stdout
        #expect(
            prompt.contains(
                "- Web: status degraded (partial: down from tokyo; up from paris); uptime 0%; average latency 40 ms; latest latency "
                    + "40 ms; trend stable; outages 1 (<1m in total); partial outages 1 (5m in total; down from tokyo; up from paris)\n"),
            "\(prompt)")
    }

    @Test("the issue's trace as facts: each place, the partial outage, and --quorum in the record")
    func facts() throws {
        let record = try #require(try run("digest", ["-f", "json"], stdin: Self.input).records().first)
        #expect(record.string("quorum") == "majority")
        #expect(record["agent"] == nil)
        let web = try #require(objects(record["services"]).first)
        #expect(web.string("status") == "degraded" && web.string("last_reason") == "partial")
        #expect(web.string("last_message") == "down from tokyo; up from paris")
        let places = objects(web["places"])
        #expect(places.map { $0.string("place") } == ["paris", "tokyo"])
        #expect(places.map { $0.string("status") } == ["up", "down"])
        #expect(places.map { $0.string("at") } == ["2026-01-27T10:05:20.000Z", "2026-01-27T10:05:00.000Z"])
        #expect(places.map { $0["fresh"] } == [.bool(true), .bool(true)])
        #expect(web["by_status"] == (try JSONParser.parse(#"{"up":0,"degraded":11,"down":1,"error":0,"unknown":0}"#)))
        #expect(web.int("checks") == 12 && web["uptime_percent"] == .number("0"))
        #expect(web.int("outages") == 1 && web.int("outage_ms") == 20_000 && web["outage_ongoing"] == .bool(false))
        #expect(web.int("partial_checks") == 11 && web.int("partial_outages") == 1 && web.int("partial_ms") == 300_000)
        #expect(web["partial_ongoing"] == .bool(true) && web.string("partial_since") == "2026-01-27T10:00:20.000Z")
        #expect(web.string("partial_words") == "down from tokyo; up from paris")
        // Latency over every sample: paris's six.
        #expect(web.int("latency_checks") == 6 && web["latency_avg_ms"] == .number("40"))
        let overall = try #require(record["overall"]?.objectValue)
        #expect(overall.int("partial_outages") == 1 && overall.int("partial_ms") == 300_000 && overall.int("outages") == 1)
    }

    @Test("--agent: one place's samples with their own statuses; --quorum any: the worst any place sees")
    func options() throws {
        // tokyo alone: six downs from 10:00:00 to its newest, 10:05:00, the window's end.
        #expect(
            try run("digest", ["--tz", "UTC", "--agent", "tokyo"], stdin: Self.input).lines == [
                "Digest of the 24 hours to 2026-01-27 10:05 UTC: 1 service, 6 checks, 0% up.",
                "The service had trouble. Web has been down since 10:00 (0% up; connection refused).",
                "No latency was measured.",
            ])
        #expect(
            try run("digest", ["--tz", "UTC", "--agent", "paris"], stdin: Self.input).lines == [
                "Digest of the 24 hours to 2026-01-27 10:05 UTC: 1 service, 6 checks, 100% up.",
                "The service was up at every check, with no outages.",
                "Latency was stable (40 ms on average).",
            ])
        let tokyo = try #require(try run("digest", ["-f", "json", "--agent", "tokyo"], stdin: Self.input).records().first)
        #expect(tokyo.string("agent") == "tokyo" && tokyo.int("samples_read") == 6 && tokyo["quorum"] == nil)
        #expect(objects(tokyo["services"]).first?["places"] == nil)
        // --quorum any: from 10:00:20 on tokyo's down is always fresh beside paris's up: down,
        // twelve downs, one outage from 10:00:00 going on; tokyo speaks for it now.
        #expect(
            try run("digest", ["--tz", "UTC", "--quorum", "any"], stdin: Self.input).lines == [
                "Digest of the 24 hours to 2026-01-27 10:05 UTC: 1 service, 12 checks, 0% up.",
                "The service had trouble. Web has been down since 10:00 (0% up; connection refused).",
                "Latency was stable (40 ms on average).",
            ])
        for bad in ["most", "0", ""] {
            let result = try run("digest", ["--quorum", bad], stdin: Self.input)
            #expect(result.status == 64 && result.stdout.isEmpty, "--quorum '\(bad)'")
        }
        #expect(try run("digest", ["--agent", ""], stdin: Self.input).status == 64)
    }

    @Test("store-samples and digest agree on the trace: stored, exported and digested, the same facts and 0% up")
    func storeAgrees() throws {
        let scratch = try ScratchDirectory()
        let db = scratch.path("vitals.db")
        #expect(try run("store-samples", ["--db", db, "--quiet"], stdin: Self.input).status == 0)
        let direct = try run("digest", ["-f", "json"], stdin: Self.input).stdout
        #expect(direct.contains(#""checks":12,"by_status":{"up":0,"degraded":11,"down":1,"error":0,"unknown":0},"uptime_percent":0,"#))
        #expect(try shell("store-samples --db '\(db)' export | digest -f json").stdout == direct)
        // The overview counts uptime by the consensus stored with each sample: none was up.
        let overview = try run("store-samples", ["--db", db, "--now", TwoPlaceTrace.now, "overview"]).stdout
        #expect(overview.contains(#""uptime_24h":0"#) && overview.contains(#""status":"degraded""#), "\(overview)")
    }

    @Test("one place is today's digest, byte for byte: the basic trace with every sample naming one agent is its golden")
    func onePlace() throws {
        let basic = DigestFixtures.trace("basic")
        for format in ["text", "json", "markdown", "prompt", "html"] {
            let named = try shell(#"sed 's/}$/,"agent":"solo","check_interval":60}/' '\#(basic)' | digest -f \#(format)"#)
            #expect(named.status == 0, "\(named.stderr)")
            #expect(named.stdout == (try DigestFixtures.golden("basic." + format)), "\(format)")
        }
    }

    @Test("every field digest writes for several places is in vitals-records(7), DIGEST")
    func documented() throws {
        var written = Set<String>()
        for arguments in [["-f", "json"], ["-f", "json", "--agent", "paris"]] {
            written.formUnion(
                DigestRecordDocumentationTests().keys(
                    .object(try #require(try run("digest", arguments, stdin: Self.input).records().first))))
        }
        #expect(written.isSuperset(of: ["places", "place", "fresh", "partial_words", "partial_since", "quorum", "agent"]))
        let documented = boldWords(manSection(try readPage("man/man7/vitals-records.7"), "DIGEST"))
        for key in written.sorted() {
            #expect(documented.contains(key), "\(key) is not documented in vitals-records(7) DIGEST")
        }
    }
}

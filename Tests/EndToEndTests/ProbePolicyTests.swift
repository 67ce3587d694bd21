import Foundation
import Testing
import VitalsKit

/// The probes' side of the alert policy (issue 38): `depends_on` carried in every sample, cycles
/// refused when targets are read, and `probe-http --confirm`, against the fixture server.
@Suite("probes: depends_on carried, cycles refused, --confirm keeps every attempt", .hangGuard(minutes: 2))
struct ProbePolicyTests {
    @Test("depends_on (one id or an array) is written in every sample as an array after config; probe-ping too")
    func dependsOnCarried() throws {
        let server = try FixtureServerHandle()
        let targets = [
            #"{"id":"gw","url":"\#(server.url)/ok"}"#,
            #"{"id":"api","url":"\#(server.url)/ok","depends_on":"gw","team":"core"}"#,
            #"{"id":"web","url":"\#(server.url)/ok","depends_on":["gw","api"]}"#,
        ].joined(separator: "\n")
        let result = try run("probe-http", [], stdin: targets + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let samples = Dictionary(uniqueKeysWithValues: try result.records().map { ($0.string("monitor") ?? "", $0) })
        #expect(samples["gw"]?["depends_on"] == nil)
        #expect(samples["api"]?["depends_on"] == .array([.string("gw")]))
        #expect(samples["web"]?["depends_on"] == .array([.string("gw"), .string("api")]))
        // After config, before the target's own fields.
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains(#""monitor":"api""#) })
        #expect(line.contains(#","depends_on":["gw"],"team":"core"}"#), "\(line)")
        let ping = try run("probe-ping", [], stdin: #"{"id":"db","target":"tcp://127.0.0.1:1","depends_on":"gw"}"# + "\n")
        #expect(try ping.records().first?["depends_on"] == .array([.string("gw")]), "\(ping.stdout) \(ping.stderr)")
    }

    @Test("a cycle in one target list is an error naming each target's line; they are still probed, without their parents")
    func cycleRefused() throws {
        let server = try FixtureServerHandle()
        let targets = [
            #"{"id":"a","url":"\#(server.url)/ok","depends_on":"c"}"#,
            #"{"id":"b","url":"\#(server.url)/ok","depends_on":"a"}"#,
            #"{"id":"c","url":"\#(server.url)/ok","depends_on":["b","elsewhere"]}"#,
            #"{"id":"d","url":"\#(server.url)/ok","depends_on":"a"}"#,
            #"{"id":"e","url":"\#(server.url)/ok","depends_on":"e"}"#,
        ].joined(separator: "\n")
        let scratch = try ScratchDirectory()
        let file = try scratch.write("targets.ndjson", targets + "\n")
        let result = try run("probe-http", [file])
        #expect(result.status == 2)
        #expect(result.stderr.contains("\(file):1: depends_on makes a cycle (a -> c -> b -> a); 'a' is probed without its parents"))
        #expect(result.stderr.contains("\(file):2: depends_on makes a cycle (a -> c -> b -> a)"))
        #expect(result.stderr.contains("\(file):3: depends_on makes a cycle (a -> c -> b -> a)"))
        #expect(result.stderr.contains("\(file):5: field 'depends_on' names the target itself ('e')"), "\(result.stderr)")
        let samples = Dictionary(uniqueKeysWithValues: try result.records().map { ($0.string("monitor") ?? "", $0) })
        #expect(Set(samples.keys) == ["a", "b", "c", "d"])
        #expect(samples["a"]?["depends_on"] == nil && samples["c"]?["depends_on"] == nil)
        #expect(samples["d"]?["depends_on"] == .array([.string("a")]), "not on the cycle: kept")
    }

    @Test(
        "--confirm 2: a flaky service passes on its second try (attempts 2, both kept); a dead one is tried three times; a healthy one once"
    )
    func confirmation() throws {
        let server = try FixtureServerHandle()
        // /flap?period=1 answers 200, 503, 200, 503, ...: one request first, so the probe's first try gets 503.
        _ = try run("probe-http", [], stdin: "\(server.url)/flap?period=1\n")
        let targets = [
            #"{"id":"flaky","url":"\#(server.url)/flap?period=1"}"#,
            #"{"id":"dead","url":"\#(server.url)/status/503"}"#,
            #"{"id":"fine","url":"\#(server.url)/ok"}"#,
        ].joined(separator: "\n")
        let result = try run("probe-http", ["--confirm", "2", "--confirm-delay", "50ms", "--concurrency", "1"], stdin: targets + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let samples = Dictionary(uniqueKeysWithValues: try result.records().map { ($0.string("monitor") ?? "", $0) })
        let flaky = try #require(samples["flaky"])
        #expect(flaky.string("status") == "up" && flaky.int("attempts") == 2)
        let tries = flaky["tries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(tries.map { $0.string("status") ?? "" } == ["down", "up"])
        #expect(tries.map { $0.string("reason") } == ["http_status", nil])
        #expect(tries.first?.string("message") == "HTTP 503, expected 200-399")
        #expect(tries.first?.string("at") == flaky.string("at"), "the sample's at is its first try's")
        let first = try #require(tries.first?.string("at").flatMap(Timestamp.parse))
        let second = try #require(tries.last?.string("at").flatMap(Timestamp.parse))
        #expect(second - first >= 50, "--confirm-delay 50ms between the tries")
        #expect(tries.allSatisfy { $0["latency_ms"]?.doubleValue != nil })
        let dead = try #require(samples["dead"])
        #expect(dead.string("status") == "down" && dead.int("attempts") == 3)
        #expect(dead["tries"]?.arrayValue?.count == 3)
        #expect(samples["fine"]?["attempts"] == nil && samples["fine"]?["tries"] == nil, "one try: no attempts field")
        // Without --confirm a failure is written at once.
        let once = try run("probe-http", [], stdin: "\(server.url)/status/503\n")
        #expect(try once.records().first?["attempts"] == nil)
    }
}

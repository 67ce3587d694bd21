import FixtureServer
import Foundation
import Testing
import VitalsKit

/// A host name that cannot resolve and is rejected before any DNS packet leaves the machine:
/// its first label is 64 characters, one more than DNS allows.
let unresolvableHost = String(repeating: "a", count: 64) + ".invalid"

/// probe-http run as users run it: the built binary, real pipes, a real server on loopback.
@Suite("probe-http end to end", .hangGuard(minutes: 2))
struct ProbeHTTPTests {
    let server: FixtureServer

    init() throws {
        server = try FixtureServer()
    }

    func url(_ path: String) -> String { server.baseURL + path }

    func probeOne(_ target: String, _ arguments: [String] = []) throws -> (JSONObject, RunResult) {
        let result = try run("probe-http", arguments, stdin: target + "\n")
        let records = try result.records()
        guard records.count == 1 else { throw TestFailure("expected one sample, got \(records.count): \(result.stdout) \(result.stderr)") }
        return (records[0], result)
    }

    @Test("a healthy endpoint is up, with every sample field")
    func healthyEndpoint() throws {
        let (sample, result) = try probeOne(url("/ok"))
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(sample.string("type") == "sample")
        #expect(sample.string("status") == "up")
        #expect(sample.string("method") == "HEAD")
        #expect(sample.int("code") == 200)
        #expect(sample.string("kind") == "http")
        #expect(sample.string("target") == url("/ok"))
        #expect(sample.string("remote_ip") == "127.0.0.1")
        #expect(sample.string("http_version") == "1.1")
        #expect(sample["reason"] == .null)
        let latency = try #require(sample.double("latency_ms"))
        let total = try #require(sample.double("total_ms"))
        #expect(latency > 0 && latency <= total)
        for phase in ["dns_ms", "connect_ms", "ttfb_ms"] {
            #expect(sample.double(phase) != nil, "\(phase) missing")
        }
        #expect(sample["tls_ms"] == .null)
        #expect(sample["tls_expiry_days"] == nil, "plain HTTP has no certificate field")
        let at = try #require(sample.string("at"))
        let parsed = try #require(Timestamp.parse(at))
        #expect(abs(parsed - Clock.wallMilliseconds()) < 60_000)
        #expect(at.hasSuffix("Z") && at.count == 24)
        // Field order is the record page's order.
        let keys = Array(sample.fields.map(\.key).prefix(8))
        #expect(keys == ["type", "monitor", "name", "kind", "target", "at", "method", "status"])
        #expect(server.requests(for: "/ok").map(\.method) == ["HEAD"])
    }

    @Test("an unexpected status is down with reason http_status; expected_status changes what is expected")
    func unexpectedStatus() throws {
        let (down, _) = try probeOne(url("/status/503"))
        #expect(down.string("status") == "down")
        #expect(down.string("reason") == "http_status")
        #expect(down.int("code") == 503)
        #expect(down.string("message")?.contains("503") == true)

        let (expected, _) = try probeOne(#"{"url":"\#(url("/status/503"))","expected_status":"500-599"}"#)
        #expect(expected.string("status") == "up")
        let (list, _) = try probeOne(#"{"url":"\#(url("/status/204"))","expected_status":[200,"3xx"]}"#)
        #expect(list.string("status") == "down")
        let (redirectAsCode, _) = try probeOne(#"{"url":"\#(url("/redirect/2"))","max_redirects":0}"#)
        #expect(redirectAsCode.int("code") == 302)
        #expect(redirectAsCode.string("status") == "up", "302 is inside the default 200-399")
        let (followed, _) = try probeOne(url("/redirect/2"))
        #expect(followed.int("code") == 200)
    }

    @Test("HEAD refused with 405 or 501 falls back to GET, and the sample says so", arguments: ["/head-405", "/head-501"])
    func headFallback(path: String) throws {
        let (sample, _) = try probeOne(url(path))
        #expect(sample.string("status") == "up")
        #expect(sample.string("method") == "GET")
        #expect(sample.string("message")?.contains("after HEAD answered") == true)
        #expect(server.requests(for: path).map(\.method) == ["HEAD", "GET"])
    }

    @Test("HEAD that breaks the connection falls back to GET", arguments: ["/head-reset", "/head-close"])
    func headBrokenFallback(path: String) throws {
        let (sample, _) = try probeOne(url(path))
        #expect(sample.string("status") == "up")
        #expect(sample.string("method") == "GET")
        #expect(server.requests(for: path).map(\.method) == ["HEAD", "GET"])
    }

    @Test("a connection refused is not retried as GET: nothing a GET could change")
    func refusedNotRetried() throws {
        let closed = try RefusingPort()
        let (sample, _) = try probeOne("http://127.0.0.1:\(closed.port)/")
        #expect(sample.string("status") == "error")
        #expect(sample.string("reason") == "connect")
        #expect(sample.string("method") == "HEAD")
        #expect(sample.string("message")?.contains("refused") == true)
    }

    @Test("an explicit method, headers and body are sent as given, without fallback")
    func explicitMethod() throws {
        let target =
            #"{"url":"\#(url("/echo"))","method":"post","headers":{"X-Probe":"yes"},"body":"ping","expected_content":"\"method\":\"POST\""}"#
        let (sample, _) = try probeOne(target)
        #expect(sample.string("status") == "up", "\(sample.string("message") ?? "")")
        #expect(sample.string("method") == "POST")
        let request = try #require(server.requests(for: "/echo").first)
        #expect(request.method == "POST")
        #expect(request.header("X-Probe") == "yes")
        #expect(String(decoding: request.body, as: UTF8.self) == "ping")
        #expect(request.header("User-Agent")?.hasPrefix("vitals-probe-http/") == true)
    }

    @Test("a POST redirected with 307 sends its body again (curl rewinds the body it reads from the request)")
    func bodyAfterRedirect() throws {
        let body = String(repeating: "0123456789abcdef", count: 8_192)  // 128 KiB: more than one of curl's reads
        let target = #"{"url":"\#(url("/redirect-307"))","method":"POST","body":"\#(body)","max_redirects":1}"#
        let (sample, _) = try probeOne(target)
        #expect(sample.string("status") == "up", "\(sample.string("message") ?? "")")
        #expect(server.requests(for: "/redirect-307").first.map { $0.body.count } == body.utf8.count)
        let echoed = try #require(server.requests(for: "/echo").first)
        #expect(echoed.method == "POST")
        #expect(echoed.body.count == body.utf8.count && String(decoding: echoed.body, as: UTF8.self) == body, "sent whole, from its start")
    }

    @Test("expected_content: present is up, absent is down with reason content; it implies GET")
    func expectedContent() throws {
        let (found, _) = try probeOne(#"{"url":"\#(url("/content?text=all+good"))","expected_content":"all good"}"#)
        #expect(found.string("status") == "up")
        #expect(found.string("method") == "GET")
        let (missing, _) = try probeOne(#"{"url":"\#(url("/content?text=all+good"))","expected_content":"maintenance"}"#)
        #expect(missing.string("status") == "down")
        #expect(missing.string("reason") == "content")
        #expect(missing.string("message") == "Expected content not found: 'maintenance'")
    }

    @Test("expected_body_hash: the body's SHA-256 (as sha256sum computes it) is up; another is down")
    func bodyHash() throws {
        let digest = try shell("printf '%s' \"$BODY\" | sha256sum | cut -d' ' -f1", environment: ["BODY": FixtureServer.fixedBody])
        let hash = digest.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(hash.count == 64)
        let (match, _) = try probeOne(#"{"url":"\#(url("/fixed"))","expected_body_hash":"\#(hash)"}"#)
        #expect(match.string("status") == "up")
        let wrong = String(repeating: "0", count: 64)
        let (mismatch, _) = try probeOne(#"{"url":"\#(url("/fixed"))","expected_body_hash":"sha256:\#(wrong)"}"#)
        #expect(mismatch.string("status") == "down")
        #expect(mismatch.string("reason") == "body_hash")
    }

    @Test("expected_body_hash over a 2 MB body, read in pieces, is the hash sha256sum and md5sum give curl's copy")
    func bodyHashOverPieces() throws {
        let path = url("/body?size=2000000&needle=THE-END")
        let scratch = try ScratchDirectory()
        let sums = try shell(
            "curl -sS -o \"$FILE\" \"$URL\" && sha256sum \"$FILE\" | cut -d' ' -f1 && md5sum \"$FILE\" | cut -d' ' -f1",
            environment: ["URL": path, "FILE": scratch.path("body")])
        let lines = sums.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].count == 64 && lines[1].count == 32, "\(sums.stdout) \(sums.stderr)")
        guard lines.count == 2 else { return }
        for hash in lines {
            let (match, _) = try probeOne(
                #"{"url":"\#(path)","expected_body_hash":"\#(hash)","expected_content":"THE-END"}"#, ["--max-body", "3M"])
            #expect(match.string("status") == "up", "\(match.string("message") ?? "")")
            #expect(match.int("bytes") == 2_000_000)
        }
    }

    @Test("a body longer than --max-body is read only that far: a check beyond it is too_large")
    func maxBody() throws {
        let target = #"{"url":"\#(url("/body?size=2000000&needle=THE-END"))","expected_content":"THE-END"}"#
        let (capped, _) = try probeOne(target)
        #expect(capped.string("status") == "down")
        #expect(capped.string("reason") == "too_large")
        #expect(capped["truncated"] == .bool(true))
        let (raised, _) = try probeOne(target, ["--max-body", "3M"])
        #expect(raised.string("status") == "up")
        #expect(raised.int("bytes") == 2_000_000)
    }

    @Test("an endless body stops at the cap, in bounded memory, long before the timeout")
    func endlessBody() throws {
        let target = #"{"url":"\#(url("/endless"))","expected_content":"never there","timeout_seconds":20}"#
        let (sample, _) = try probeOne(target)
        #expect(sample.string("status") == "down")
        #expect(sample.string("reason") == "too_large")
        let bytes = try #require(sample.int("bytes"))
        #expect(bytes >= 1 << 20 && bytes < 2 << 20)
        #expect((sample.double("total_ms") ?? 1e9) < 20_000)
        // Bounded memory, measured: peak RSS reading the endless body to a 1 MiB cap, then to a 32 MiB
        // cap, searching it for content and hashing it. The body is read piece by piece and none of
        // it is kept, so the cap costs no memory: the two peaks differ by allocator noise (8 MiB),
        // where keeping the body would add at least the 31 MiB between the caps.
        let scratch = try ScratchDirectory()
        let hashed =
            #"{"id":"hashed","url":"\#(url("/endless"))","expected_content":"never there","expected_body_hash":"\#(String(repeating: "0", count: 64))","timeout_seconds":20}"#
        let targets = try scratch.write("endless.ndjson", target + "\n" + hashed + "\n")
        let smallCap = try BoundedMemoryTests.peakKiB("probe-http", ["--max-body", "1M"], file: targets)
        let largeCap = try BoundedMemoryTests.peakKiB("probe-http", ["--max-body", "32M"], file: targets)
        #expect(largeCap - smallCap < 8 * 1024, "\(smallCap) KiB with a 1 MiB cap, \(largeCap) KiB with a 32 MiB cap")
        // With no content or hash to check, the body is read and dropped: the cap costs no memory.
        let plain = try scratch.write("plain.ndjson", #"{"url":"\#(url("/endless"))","timeout_seconds":20}"# + "\n")
        let plainSmall = try BoundedMemoryTests.peakKiB("probe-http", ["--max-body", "1M"], file: plain)
        let plainLarge = try BoundedMemoryTests.peakKiB("probe-http", ["--max-body", "32M"], file: plain)
        #expect(plainLarge - plainSmall < 8 * 1024, "\(plainSmall) KiB with a 1 MiB cap, \(plainLarge) KiB with a 32 MiB cap")
    }

    struct Hostile: Sendable, CustomTestStringConvertible {
        let path: String
        let status: String
        let reason: String
        /// The budget: 1 s where the timeout is the answer; where it is not, 5 s, so that a slow
        /// machine does not time out before the server's bytes say what they say.
        var budget = 5
        var testDescription: String { "\(path) → \(status)/\(reason)" }
    }

    @Test(
        "hostile servers end on the timeout (each of HEAD and its GET fallback), not when the server pleases, with the right reason",
        arguments: [
            Hostile(path: "/slow-headers", status: "error", reason: "timeout", budget: 1),
            Hostile(path: "/hang", status: "error", reason: "timeout", budget: 1),
            Hostile(path: "/huge-headers", status: "error", reason: "too_large"),
            Hostile(path: "/redirect-loop", status: "error", reason: "redirects"),
            Hostile(path: "/reset", status: "error", reason: "reset"),
            Hostile(path: "/garbage", status: "error", reason: "protocol"),
            Hostile(path: "/close", status: "error", reason: "protocol"),
        ])
    func hostile(_ hostile: Hostile) throws {
        let started = Clock.monotonicMilliseconds()
        let (sample, result) = try probeOne(#"{"url":"\#(url(hostile.path))","timeout_seconds":\#(hostile.budget)}"#)
        let elapsed = Clock.monotonicMilliseconds() - started
        #expect(result.status == 0)
        #expect(sample.string("status") == hostile.status, "\(sample.string("message") ?? "")")
        #expect(sample.string("reason") == hostile.reason, "\(sample.string("message") ?? "")")
        // Left alone, /slow-headers takes 40 s (a byte a second) and /hang never ends: bounds far
        // above the budget tell the two apart without depending on the machine's speed.
        let total = try #require(sample.double("total_ms"))
        #expect(total < 10_000, "the answering request ran \(total) ms on a \(hostile.budget) s budget")
        // A HEAD that failed is followed by a GET with a budget of its own (isitup's rule): two budgets at most.
        #expect(elapsed < 25_000, "the run took \(elapsed) ms")
    }

    @Test("a name that does not resolve is error/dns")
    func dnsFailure() throws {
        let (sample, _) = try probeOne("http://\(unresolvableHost)/")
        #expect(sample.string("status") == "error")
        #expect(sample.string("reason") == "dns")
        #expect(sample.string("message") == "DNS lookup failed for \(unresolvableHost)")
    }

    @Test("latency thresholds: above ok is degraded, above degraded is down (OnlineTracker's words)")
    func latencyThresholds() throws {
        let (degraded, _) = try probeOne(#"{"url":"\#(url("/delay/150"))","http_ok_threshold_ms":50,"http_degraded_threshold_ms":2000}"#)
        #expect(degraded.string("status") == "degraded")
        #expect(degraded.string("reason") == "latency")
        #expect(degraded.string("message")?.hasPrefix("High latency: ") == true)
        let (down, _) = try probeOne(url("/delay/150"), ["--ok-ms", "10", "--degraded-ms", "50"])
        #expect(down.string("status") == "down")
        #expect(down.string("message")?.hasPrefix("Very high latency: ") == true)
        let (fine, _) = try probeOne(url("/delay/150"))
        #expect(fine.string("status") == "up", "no thresholds by default")
    }

    @Test("bad target lines are reported with their line numbers; the rest are still probed; exit 2")
    func badLines() throws {
        let input = [
            url("/ok"),
            "not a url at all",
            #"{"url": 5}"#,
            #"{"url":"ftp://example.com/file"}"#,
            "{broken json",
            #"{"url":"\#(url("/ok"))","timeout_seconds":"soon"}"#,
            #"{"name":"no url"}"#,
            url("/status/204"),
        ].joined(separator: "\n")
        let result = try run("probe-http", [], stdin: input)
        #expect(result.status == 2)
        let records = try result.records()
        #expect(records.count == 2)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 6, "\(result.stderr)")
        for (line, number) in zip(lines, [2, 3, 4, 5, 6, 7]) {
            #expect(line.hasPrefix("probe-http: <stdin>:\(number): "), "\(line)")
        }
        #expect(result.stderr.contains("unsupported scheme 'ftp'"))
        #expect(result.stderr.contains("field 'timeout_seconds' must be a number"))
        #expect(result.stderr.contains("target has no 'url'"))
    }

    // Seed 000, 5.1 Service Configuration Store: "Normalizes IDs: trims whitespace, ensures valid
    // UUID, ensures uniqueness, regenerates invalid/duplicate IDs". A services.json isitup accepts
    // is no error: the duplicate is probed under an id of its own, with one warning, and exit 0.
    @Test("a duplicate id is regenerated (isitup's ServiceStore): probed under a suffixed id, one warning naming both lines, exit 0")
    func duplicateIDs() throws {
        let input = """
            [{"id":"api","name":"API","url":"\(url("/ok"))"},
             {"id":" api ","name":"API again","url":"\(url("/status/200"))"},
             {"id":"web","name":"Web","url":"\(url("/ok"))"}]
            """
        let result = try run("probe-http", [], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "probe-http: <stdin>:2: warning: duplicate id 'api' (first on <stdin>:1); probing this one as 'api-2'\n")
        let monitors = Set(try result.records().compactMap { $0.string("monitor") })
        #expect(monitors == ["api", "api-2", "web"])
        // --watch reads the targets once: the warning is not repeated each cycle.
        let scratch = try ScratchDirectory()
        let file = try scratch.write("services.json", input)
        let watching = try RunningTool("probe-http", ["--watch", "--interval", "100ms", file])
        var rounds = 0
        while rounds < 3, let line = watching.readLine() {
            if line.contains(#""type":"round_end""#) { rounds += 1 }
        }
        let (_, _, stderr) = watching.stop(SIGTERM)
        #expect(stderr.components(separatedBy: "duplicate id").count == 2, "one warning in three cycles: \(stderr)")
    }

    @Test("ids missing from targets are derived from the URL, stable across runs")
    func derivedIDs() throws {
        let first = try probeOne(url("/ok?token=secret")).0
        let second = try probeOne(url("/ok?token=secret")).0
        let monitor = try #require(first.string("monitor"))
        #expect(monitor == second.string("monitor"))
        #expect(monitor == "http-127.0.0.1-\(server.port)-ok-token")
        #expect(!monitor.contains("secret"))
        #expect(first.string("name") == "127.0.0.1:\(server.port)/ok")
    }

    @Test("isitup's services.json (one JSON array) is read, with line numbers for bad entries")
    func servicesJSON() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write(
            "services.json",
            """
            [
              {"id": "7D1E1B47-0000-4000-8000-000000000001", "name": "Portfolio", "url": "\(url("/ok"))"},
              {"id": "7D1E1B47-0000-4000-8000-000000000002", "name": "PicMeal",
               "url": "\(url("/status/500"))"},
              {"id": "7D1E1B47-0000-4000-8000-000000000003", "name": "Broken", "url": 42}
            ]
            """)
        let result = try run("probe-http", [file])
        #expect(result.status == 2)
        #expect(result.stderr.contains("services.json:5: field 'url' must be a string"), "\(result.stderr)")
        let byName = Dictionary(uniqueKeysWithValues: try result.records().map { ($0.string("name") ?? "", $0) })
        #expect(byName["Portfolio"]?.string("status") == "up")
        #expect(byName["PicMeal"]?.string("status") == "down")
        #expect(byName["Portfolio"]?.string("monitor") == "7D1E1B47-0000-4000-8000-000000000001")
    }

    @Test("fields probe-http does not know are carried to the end of the sample, in order")
    func unknownFieldsCarried() throws {
        let (sample, _) = try probeOne(
            #"{"team":"ops","url":"\#(url("/ok"))","region":{"zone":"eu-1"},"status":"ignored","agent":"office"}"#)
        let keys = sample.fields.map(\.key)
        #expect(Array(keys.suffix(3)) == ["team", "region", "agent"])
        #expect(sample["region"] == .object(JSONObject([JSONField("zone", .string("eu-1"))])))
        #expect(sample.string("status") == "up", "a target's own 'status' never replaces the sample's")
        #expect(keys.filter { $0 == "status" }.count == 1)
    }

    @Test("--exit-status: 1 when a sample is not up, 0 when all are")
    func exitStatusFlag() throws {
        let bad = try run("probe-http", ["--exit-status"], stdin: url("/ok") + "\n" + url("/status/500") + "\n")
        #expect(bad.status == 1)
        let good = try run("probe-http", ["-e"], stdin: url("/ok") + "\n")
        #expect(good.status == 0)
        let without = try run("probe-http", [], stdin: url("/status/500") + "\n")
        #expect(without.status == 0, "verdicts do not change the status unless asked")
    }

    @Test("--summary writes one line to stderr with counts and the slowest target")
    func summary() throws {
        let result = try run(
            "probe-http", ["--summary"],
            stdin: """
                {"name":"fast","url":"\(url("/ok"))"}
                {"name":"slow","url":"\(url("/delay/1500"))"}
                {"name":"broken","url":"\(url("/status/500"))"}
                """)
        #expect(result.status == 0)
        let line = result.stderr.trimmingCharacters(in: .newlines)
        #expect(line.hasPrefix("probe-http: 3 probes: 2 up, 1 down; slowest slow ("), "\(line)")
    }

    @Test("--only picks isitup's best match; no match is a usage error listing close names")
    func only() throws {
        let input = """
            {"name":"Spidey's Arcade","url":"\(url("/ok"))"}
            {"name":"Portfolio","url":"\(url("/status/201"))"}
            {"name":"Port","url":"\(url("/status/202"))"}
            """
        let exact = try run("probe-http", ["--only", "port"], stdin: input)
        #expect(try exact.records().map { $0.int("code") } == [202])
        let partial = try run("probe-http", ["--only", "SPIDEY"], stdin: input)
        #expect(try partial.records().map { $0.string("name") } == ["Spidey's Arcade"])
        let host = try run("probe-http", ["--only", "127.0.0.1"], stdin: input)
        #expect(try host.records().count == 1)
        let none = try run("probe-http", ["--only", "Portfolo"], stdin: input)
        #expect(none.status == 64)
        #expect(none.stderr.contains("no target matches 'Portfolo' (closest: Portfolio"))
        #expect(none.stderr.contains("Try 'probe-http --help'"))
    }

    // Seed 000, 6.1: "Append simulation hint to message (`+<N>ms simulated`) when relevant".
    // Seed 000, 4: a service's id is "UUID string, normalized"; 8.4: CHECK_NOW re-checks the
    // services (notify's desktop action passes a grouped notification's monitor ids, one --only each).
    @Test("--only takes monitor ids (isitup's UUIDs, in either case), several at once, each target once")
    func onlyIDs() throws {
        let portfolio = "5B0C2D1A-7E8F-4A3B-9C6D-0E1F2A3B4C5D"
        let arcade = "a7d3e9b2-4c1f-4e8a-b6d5-3f2e1c0b9a87"
        let input = """
            {"id":"\(portfolio)","name":"Portfolio","url":"\(url("/status/201"))"}
            {"id":"\(arcade)","name":"Spidey's Arcade","url":"\(url("/status/202"))"}
            {"id":"picmeal","name":"PicMeal","url":"\(url("/status/203"))"}
            """
        let byID = try run("probe-http", ["--only", portfolio.lowercased()], stdin: input)
        #expect(byID.status == 0, "\(byID.stderr)")
        #expect(try byID.records().map { $0.string("monitor") } == [portfolio])
        // Several, as a grouped notification's Check now gives them (--only=ID), each once (samples
        // come in the order their probes finish, so compared as a set).
        let several = try run(
            "probe-http", ["--only=\(arcade)", "--only=\(portfolio)", "--only", "picmeal", "--only", arcade], stdin: input)
        #expect(several.status == 0, "\(several.stderr)")
        #expect(try several.records().compactMap { $0.int("code") }.sorted() == [201, 202, 203])
        // The monitor of one family of a target probed over both names the target.
        let family = try run("probe-http", ["--only", "picmeal/ipv4"], stdin: input)
        #expect(try family.records().map { $0.string("monitor") } == ["picmeal"])
        // Names still match as before, beside ids; one that matches nothing is still a usage error.
        #expect(try run("probe-http", ["--only", "arcade", "--only", portfolio], stdin: input).records().count == 2)
        let unknown = try run("probe-http", ["--only", portfolio, "--only", "00000000-0000-4000-8000-000000000000"], stdin: input)
        #expect(unknown.status == 64 && unknown.stderr.contains("no target matches '00000000-"), "\(unknown.stderr)")
    }

    @Test("--simulate-latency adds to the latency, marks the sample simulated and says so in isitup's words (+500ms simulated)")
    func simulateLatency() throws {
        let (sample, _) = try probeOne(url("/ok"), ["--simulate-latency", "500"])
        #expect((sample.double("latency_ms") ?? 0) >= 500)
        #expect(sample["simulated"] == .bool(true))
        #expect(sample.string("message")?.hasSuffix(" +500ms simulated") == true, "\(sample.string("message") ?? "")")
        let (thresholded, _) = try probeOne(#"{"url":"\#(url("/ok"))","http_ok_threshold_ms":300}"#, ["--simulate-latency", "500"])
        #expect(thresholded.string("status") == "degraded")
    }

    @Test("speed test: downloads speed_test_bytes and reports Mbps with a confidence")
    func speedTest() throws {
        let (sample, _) = try probeOne(#"{"url":"\#(url("/bytes/600000"))","speed_test_bytes":524288}"#)
        #expect(sample.string("status") == "up")
        #expect(sample.string("method") == "GET")
        let bytes = try #require(sample.int("speed_bytes"))
        #expect(bytes >= 524_288 && bytes <= 600_000)
        let speed = try #require(sample.double("speed_mbps"))
        #expect(speed > 0 && speed <= 1000)
        #expect(["low", "medium", "high"].contains(sample.string("speed_confidence") ?? ""))
        let (small, _) = try probeOne(url("/bytes/1000"), ["--speed-test"])
        #expect(small.int("speed_bytes") == 1000)
        #expect(small.string("speed_confidence") == "low", "1000 bytes is too little to trust")
    }

    @Test("ip 4 and 6 choose the family; both gives one sample per family")
    func ipFamilies() throws {
        let dual = try FixtureServer(host: "127.0.0.1", alsoIPv6: true)
        let v6 = try probeOne(#"{"id":"six","url":"http://[::1]:\#(dual.port)/ok","ip":"6"}"#).0
        #expect(v6.string("status") == "up")
        #expect(v6.string("remote_ip") == "::1")
        #expect(v6.string("ip") == "6")
        let result = try run("probe-http", [], stdin: #"{"id":"lo","url":"http://127.0.0.1:\#(dual.port)/ok","ip":"both"}"# + "\n")
        let byMonitor = Dictionary(uniqueKeysWithValues: try result.records().map { ($0.string("monitor") ?? "", $0) })
        #expect(Set(byMonitor.keys) == ["lo/ipv4", "lo/ipv6"])
        #expect(byMonitor["lo/ipv4"]?.string("status") == "up")
        #expect(byMonitor["lo/ipv6"]?.string("status") == "error", "an IPv4 literal has no IPv6 address")
    }

    @Test("credentials in URLs never appear in samples or diagnostics")
    func secretsRedacted() throws {
        let secretURL = "http://probe:hunter2@127.0.0.1:\(server.port)/ok?api_key=abc123&page=2"
        let result = try run(
            "probe-http", [],
            stdin: """
                {"url":"\(secretURL)","headers":{"Authorization":"Bearer tok-999"}}
                {"url":"\(secretURL)","timeout_seconds":"x"}
                """)
        #expect(!result.stdout.contains("hunter2") && !result.stdout.contains("abc123") && !result.stdout.contains("tok-999"))
        #expect(!result.stderr.contains("hunter2") && !result.stderr.contains("abc123"))
        let sample = try #require(try result.records().first)
        #expect(sample.string("target") == "http://probe:***@127.0.0.1:\(server.port)/ok?api_key=***&page=2")
        #expect(server.requests(for: "/ok").first?.header("Authorization") == "Bearer tok-999")
    }

    @Test("input with CRLF line ends, a BOM, blank lines and comments is read")
    func crlfAndBOM() throws {
        let input = "\u{FEFF}" + url("/ok") + "\r\n\r\n# a comment\r\n" + url("/status/201") + "\r\n"
        let result = try run("probe-http", [], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Set(try result.records().compactMap { $0.int("code") }) == [200, 201])
    }

    @Test("a line over 16 MiB is an error for that line only")
    func hugeLine() throws {
        let scratch = try ScratchDirectory()
        let huge = String(repeating: "x", count: 17 << 20)
        let file = try scratch.write("targets", url("/ok") + "\n" + huge + "\n" + url("/status/202") + "\n")
        let result = try run("probe-http", [file])
        #expect(result.status == 2)
        #expect(result.stderr.contains("targets:2: line is \(17 << 20) bytes, over the 16 MiB limit"))
        #expect(try result.records().count == 2)
    }

    @Test("files are read in order; a missing file is reported and the others are still probed")
    func files() throws {
        let scratch = try ScratchDirectory()
        let one = try scratch.write("one", url("/ok") + "\n")
        let result = try run("probe-http", [one, scratch.path("missing"), "-"], stdin: url("/status/201") + "\n")
        #expect(result.status == 2)
        #expect(result.stderr.contains("probe-http: cannot open \(scratch.path("missing")): No such file or directory"))
        #expect(try result.records().count == 2)
    }

    @Test("usage errors exit 64 with a hint; --help and --version exit 0")
    func usage() throws {
        let unknown = try run("probe-http", ["--concurency", "4"])
        #expect(unknown.status == 64)
        #expect(
            unknown.stderr
                == "probe-http: unknown option '--concurency' (did you mean '--concurrency'?)\nTry 'probe-http --help' for more information.\n"
        )
        let badValue = try run("probe-http", ["--timeout", "soon"])
        #expect(badValue.status == 64)
        #expect(badValue.stderr.contains("--timeout wants a duration"))
        let interval = try run("probe-http", ["--interval", "5s"])
        #expect(interval.status == 64)
        let help = try run("probe-http", ["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("Usage: probe-http [OPTIONS] [FILE...]"))
        let version = try run("probe-http", ["-V"])
        #expect(version.stdout == "probe-http (vitals) \(Vitals.version)\n")
    }

    @Test("a closed pipe downstream is success: probe-http | head -n 1")
    func brokenPipe() throws {
        let targets = (0..<400).map { #"{"id":"t\#($0)","url":"\#(url("/ok"))"}"# }.joined(separator: "\n")
        let scratch = try ScratchDirectory()
        let result = try shell("{ probe-http -c 8; echo $? > status; } | head -n 1", stdin: targets, directory: scratch.url)
        #expect(result.lines.count == 1)
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let status = try String(contentsOfFile: scratch.path("status"), encoding: .utf8)
        #expect(status == "0\n", "probe-http's own exit status")
    }

    @Test(
        "--watch streams each sample as it completes and stops cleanly on SIGINT (130) and SIGTERM (143)",
        arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func watch(signal: Int32, expected: Int32) throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write(
            "targets",
            """
            {"id":"a","url":"\(url("/ok"))","check_interval":0.2}
            {"id":"b","url":"\(url("/flap"))","check_interval":0.2}
            """)
        let tool = try RunningTool("probe-http", ["--watch", file])
        var seen: [String: [String]] = [:]
        while (seen["a"]?.count ?? 0) < 3 || (seen["b"]?.count ?? 0) < 3 {
            guard let line = tool.readLine(), case .object(let sample) = try JSONParser.parse(line) else {
                throw TestFailure("output ended early")
            }
            seen[sample.string("monitor") ?? "", default: []].append(sample.string("status") ?? "")
        }
        let (status, rest, stderr) = tool.stop(signal)
        #expect(status == expected)
        #expect(rest.isEmpty || rest.hasSuffix("\n"), "no half-written line")
        #expect(stderr.isEmpty, "\(stderr)")
        #expect(Array(seen["b"]!.prefix(3)) == ["up", "down", "up"], "the flapping endpoint alternates")
    }

    @Test("--watch --interval overrides check_interval")
    func watchInterval() throws {
        let scratch = try ScratchDirectory()
        let file = try scratch.write("targets", #"{"id":"a","url":"\#(url("/ok"))","check_interval":3600}"# + "\n")
        let tool = try RunningTool("probe-http", ["--watch", "--interval", "100ms", file])
        for _ in 0..<3 { #expect(tool.readLine() != nil) }
        let (status, _, _) = tool.stop(SIGTERM)
        #expect(status == 143)
    }

    @Test("SIGINT during a one-shot run abandons in-flight probes and exits 130")
    func interruptOneShot() throws {
        let tool = try RunningTool("probe-http", [])
        try tool.input.write(
            contentsOf: Data((url("/ok") + "\n" + #"{"url":"\#(url("/hang"))","timeout_seconds":60}"#).utf8))
        try tool.input.close()
        let first = tool.readLineSkippingMarks()
        #expect(first?.contains("\"code\":200") == true)
        let (status, rest, _) = tool.stop(SIGINT)
        #expect(status == 130)
        #expect(rest.isEmpty, "no round_end for the round cut short")
    }

    @Test("a probe's clock starts when it gets a slot: queued probes keep their whole budget and a true start time")
    func clockStartsAtSlot() throws {
        // Seven 400 ms answers through one slot take 2.8 s in all; each has 2 s of budget, so a clock
        // started at the queue would time out the sixth and all behind it, and each probe keeps
        // 1.6 s to spare however slow the machine.
        var lines = (0..<7).map { #"{"id":"slow\#($0)","url":"\#(url("/delay/400"))","timeout_seconds":2}"# }
        lines += (0..<3).map { #"{"id":"fallback\#($0)","url":"\#(url("/head-405"))","timeout_seconds":2}"# }
        let result = try run("probe-http", ["-c", "1"], stdin: lines.joined(separator: "\n"))
        let samples = try result.records()
        #expect(samples.count == 10)
        for sample in samples {
            #expect(sample.string("status") == "up", "\(sample.string("monitor") ?? ""): \(sample.string("message") ?? "")")
        }
        let starts = samples.compactMap { $0.string("at").flatMap(Timestamp.parse) }.sorted()
        #expect(starts.count == 10)
        #expect(starts.last! - starts.first! >= 2800, "seven 400 ms probes ran before the last one started")
    }

    @Test("thousands of targets in one run: every one gets exactly one sample")
    func manyTargets() throws {
        let count = 3000
        let targets = (0..<count).map { #"{"id":"t\#($0)","url":"\#(url("/ok"))"}"# }.joined(separator: "\n")
        let result = try run("probe-http", ["-c", "64"], stdin: targets)
        #expect(result.status == 0, "\(result.stderr)")
        let monitors = try result.records().compactMap { $0.string("monitor") }
        #expect(monitors.count == count)
        #expect(Set(monitors).count == count)
    }
}

/// A port on 127.0.0.1 that refuses connections: bound but never listening, and held for the
/// test's lifetime so no other test can take it.
final class RefusingPort {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestFailure("bind failed") }
        var storage = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: storage.sin_port))
    }

    deinit { close(fd) }
}

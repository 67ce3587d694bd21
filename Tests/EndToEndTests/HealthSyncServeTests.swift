import Foundation
import Testing
import VitalsKit

/// The seed's `HealthSample` (Health Sync's data model), written from the seed: `id` a UUID,
/// `startDate` and `endDate` dates, `value` a Double, `unit` and `sourceName` strings.
private struct HealthSample: Codable, Equatable {
    let id: UUID
    let startDate: Date
    let endDate: Date
    let value: Double
    let unit: String
    let sourceName: String
}

/// The answer of `POST /api/v1/health/data`, around the seed's samples.
private struct HealthDataResponse: Codable {
    let samples: [HealthSample]
    let offset: Int
    let limit: Int
    let returnedCount: Int
    let hasMore: Bool
}

/// The iOS app's decoder: ISO 8601 dates (whole seconds, `Z`).
private func seedDecoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}

private let heart = "HKQuantityTypeIdentifierHeartRate"
private let steps = "HKQuantityTypeIdentifierStepCount"
private let sleep = "HKCategoryTypeIdentifierSleepAnalysis"

/// Health Sync's endpoint through real nginx and snapshot-delta's responder on loopback, fetched with curl over
/// TLS 1.3 with client certificates made at test time by `snapshot-delta cert`.
@Suite("Health Sync over HTTPS: nginx + snapshot-delta serve", .hangGuard(minutes: 3))
struct HealthSyncServeTests {
    /// A small archive: three heart rates, two step counts, one sleep stage, one snapshot.
    static func makeArchive() throws -> HealthArchive {
        let archive = try HealthArchive()
        try archive.take([
            HealthLines.record(heart, "2026-01-10T08:00:00Z", value: "61", unit: "count/min", source: "Watch"),
            HealthLines.record(heart, "2026-01-10T08:30:00Z", "2026-01-10T08:31:00Z", value: "64.5", unit: "count/min", source: "Watch"),
            HealthLines.record(heart, "2026-01-10T09:00:00Z", value: "70", unit: "count/min", source: "Watch"),
            HealthLines.record(steps, "2026-01-10T08:15:00Z", "2026-01-10T08:20:00Z", value: "120", source: "Phone"),
            HealthLines.record(steps, "2026-01-10T09:15:00Z", "2026-01-10T09:25:00Z", value: "300", source: "Phone"),
            HealthLines.record(
                sleep, "2026-01-09T23:00:00Z", "2026-01-10T06:00:00Z", value: "\"HKCategoryValueSleepAnalysisAsleepCore\"",
                unit: "", source: "Watch"),
        ])
        return archive
    }

    /// The server, the archive and two client certificates; `alice` is paired.
    fileprivate final class Fixture {
        let archive: HealthArchive
        let tls: ScratchDirectory
        let server: ServeHandle
        var url: String { "https://localhost:\(server.port)" }
        let pin: String
        var serverCert: String { tls.path("server.crt") }
        var responses: [String] = []
        var tokens: [String] = []

        init(pair: Bool = true) throws {
            archive = try HealthSyncServeTests.makeArchive()
            tls = try ScratchDirectory()
            for client in ["alice", "bob", "carol"] {
                let made = try run("snapshot-delta", ["cert", "client", "--out", tls.path(client), "--name", client])
                guard made.status == 0 else { throw TestFailure("cert client: \(made.stderr)") }
            }
            let made = try run("snapshot-delta", ["cert", "server", "--out", tls.url.path, "--format", "ndjson"])
            guard made.status == 0 else { throw TestFailure("cert server: \(made.stderr)") }
            pin = try #require(try made.records().first?.string("public_key_pin"))
            server = try ServeHandle(
                site: "health-sync",
                [
                    "--cert", tls.path("server.crt"), "--key", tls.path("server.key"),
                    "--archive", archive.db,
                ], scratch: tls)
            if pair {
                let token = try newToken()
                let answer = try post("/api/v1/pair", #"{"token":"\#(token)"}"#, client: "alice")
                guard answer.status == 200 else { throw TestFailure("pairing alice: \(answer.status) \(answer.body)") }
            }
        }

        /// A fresh pairing token from `snapshot-delta pair` (ndjson), optionally as of another time.
        func newToken(_ extra: [String] = []) throws -> String {
            let result = try archive.run(["pair", "--server-cert", serverCert, "--format", "ndjson"] + extra)
            guard result.status == 0 else { throw TestFailure("pair: \(result.stderr)") }
            let token = try #require(try result.records().first?.string("token"))
            tokens.append(token)
            return token
        }

        func fingerprint(_ client: String) throws -> String {
            let result = try shell("openssl x509 -in '\(tls.path(client + "/client.crt"))' -outform der | sha256sum")
            return String(result.stdout.prefix(64))
        }

        /// One request with curl: pinned to the server's key, with a client's certificate when named.
        func request(
            _ method: String, _ path: String, _ body: String? = nil, bodyFile: String? = nil, client: String? = nil,
            extra: [String] = []
        ) throws -> HealthAnswer {
            var arguments = [
                "curl", "-sS", "--path-as-is", "-X", method, "--cacert", serverCert, "--pinnedpubkey", pin,
                "-D", "-", "-H", "Content-Type: application/json",
            ]
            if let client { arguments += ["--cert", tls.path(client + "/client.crt"), "--key", tls.path(client + "/client.key")] }
            if let body { arguments += ["--data-binary", body] }
            if let bodyFile { arguments += ["--data-binary", "@" + bodyFile] }
            arguments += extra + [url + path]
            let result = try runProcess("/usr/bin/env", arguments, stdin: "", environment: toolEnvironment())
            let answer = HealthAnswer(result)
            responses.append(result.stdout)
            return answer
        }

        func post(_ path: String, _ body: String, client: String? = "alice") throws -> HealthAnswer {
            try request("POST", path, body, client: client)
        }

        func data(_ body: String, client: String? = "alice") throws -> HealthAnswer {
            try post("/api/v1/health/data", body, client: client)
        }
    }

    // MARK: - Fetching

    @Test("a paired client's fetch decodes into the seed's HealthSample, newest first, and pages; dates bound the range")
    func pairedFetch() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        let fixture = try Fixture()
        let all = try fixture.data(#"{"types":["\#(heart)","\#(steps)"]}"#)
        #expect(all.status == 200, "\(all.body)")
        #expect(all.header("content-type") == "application/json")
        let page = try seedDecoder().decode(HealthDataResponse.self, from: Data(all.body.utf8))
        // Worked by hand: both types, newest start first.
        let expected: [(String, String, Double, String, String)] = [
            ("2026-01-10T09:15:00Z", "2026-01-10T09:25:00Z", 300, "count", "Phone"),
            ("2026-01-10T09:00:00Z", "2026-01-10T09:00:00Z", 70, "count/min", "Watch"),
            ("2026-01-10T08:30:00Z", "2026-01-10T08:31:00Z", 64.5, "count/min", "Watch"),
            ("2026-01-10T08:15:00Z", "2026-01-10T08:20:00Z", 120, "count", "Phone"),
            ("2026-01-10T08:00:00Z", "2026-01-10T08:00:00Z", 61, "count/min", "Watch"),
        ]
        let iso = ISO8601DateFormatter()
        #expect(page.samples.count == 5 && page.returnedCount == 5 && !page.hasMore && page.offset == 0 && page.limit == 1000)
        for (sample, want) in zip(page.samples, expected) {
            #expect(sample.startDate == iso.date(from: want.0) && sample.endDate == iso.date(from: want.1))
            #expect(sample.value == want.2 && sample.unit == want.3 && sample.sourceName == want.4)
        }
        #expect(Set(page.samples.map(\.id)).count == 5, "ids are distinct")
        // The raw JSON names each sample's type (not in the seed's struct, so checked here).
        let types = try #require(try JSONParser.parse(all.body).objectValue?["samples"]?.arrayValue).compactMap {
            $0.objectValue?.string("type")
        }
        #expect(types == [steps, heart, heart, steps, heart])

        // Paging: offset 2, limit 2 is the third and fourth; more follow. The ids are stable.
        let second = try seedDecoder().decode(
            HealthDataResponse.self,
            from: Data(
                try fixture.data(#"{"types":["\#(heart)","\#(steps)"],"offset":2,"limit":2}"#).body.utf8))
        #expect(second.samples == Array(page.samples[2..<4]) && second.hasMore && second.returnedCount == 2)
        let last = try seedDecoder().decode(
            HealthDataResponse.self,
            from: Data(
                try fixture.data(#"{"types":["\#(heart)","\#(steps)"],"offset":4,"limit":2}"#).body.utf8))
        #expect(last.samples == [page.samples[4]] && !last.hasMore)

        // The range: starts in [08:10, 09:00).
        let ranged = try seedDecoder().decode(
            HealthDataResponse.self,
            from: Data(
                try fixture.data(
                    #"{"types":["\#(heart)","\#(steps)"],"startDate":"2026-01-10T08:10:00Z","endDate":"2026-01-10T09:00:00Z"}"#
                ).body.utf8))
        #expect(ranged.samples == [page.samples[2], page.samples[3]])

        // A category value is not a number: 0, with the text beside it.
        let night = try fixture.data(#"{"types":["\#(sleep)"]}"#)
        let sample = try #require(try JSONParser.parse(night.body).objectValue?["samples"]?.arrayValue?.first?.objectValue)
        #expect(sample.double("value") == 0 && sample.string("valueText") == "HKCategoryValueSleepAnalysisAsleepCore")
        #expect(try seedDecoder().decode(HealthDataResponse.self, from: Data(night.body.utf8)).samples.count == 1)

        // The command line answers the same query with the same samples (one shared fetch).
        let cli = try fixture.archive.run(["samples", "--type", heart, "--format", "csv"])
        #expect(
            cli.lines.dropFirst().map { String($0.split(separator: ",")[1]) }
                == ["2026-01-10T09:00:00.000Z", "2026-01-10T08:30:00.000Z", "2026-01-10T08:00:00.000Z"])

        // Each request is in the operation log: client, types, range, count, status.
        let alice = try fixture.fingerprint("alice")
        let log = try fixture.archive.sql(
            """
            SELECT json_extract(detail, '$.client_fingerprint'), json_extract(detail, '$.types'), json_extract(detail, '$.from'),
                   json_extract(detail, '$.to'), json_extract(detail, '$.returned'), json_extract(detail, '$.status')
            FROM operations WHERE operation = 'health_data' ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(
            log == [
                "\(alice)|[\"\(heart)\",\"\(steps)\"]|||5|200",
                "\(alice)|[\"\(heart)\",\"\(steps)\"]|||2|200",
                "\(alice)|[\"\(heart)\",\"\(steps)\"]|||1|200",
                "\(alice)|[\"\(heart)\",\"\(steps)\"]|2026-01-10T08:10:00.000Z|2026-01-10T09:00:00.000Z|2|200",
                "\(alice)|[\"\(sleep)\"]|||1|200",
            ])
        #expect(try fixture.archive.sql("SELECT last_seen IS NOT NULL FROM paired_clients") == "1")

        // A client that asks for gzip (URLSession does) gets it, past nginx's 1 KB minimum, and
        // decodes the same bytes.
        let asked = try fixture.request(
            "POST", "/api/v1/health/data", #"{"types":["\#(heart)","\#(steps)"]}"#, client: "alice", extra: ["--compressed"])
        #expect(all.body.utf8.count >= 1024 && asked.header("content-encoding") == "gzip" && asked.body == all.body, "\(asked.body)")
        #expect(try seedDecoder().decode(HealthDataResponse.self, from: Data(asked.body.utf8)).samples.count == 5)
    }

    // MARK: - Who may fetch

    @Test("no client certificate and an unpaired one get 401 JSON; unpairing ends access; each refusal is logged")
    func unpaired() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        let fixture = try Fixture()
        let query = #"{"types":["\#(heart)"]}"#
        let none = try fixture.data(query, client: nil)
        #expect(none.status == 401 && none.json?.string("reason") == "unauthorized" && none.json?.string("error") != nil)
        let stranger = try fixture.data(query, client: "bob")
        #expect(stranger.status == 401 && stranger.json?.string("reason") == "unauthorized", "\(stranger.body)")
        #expect(try fixture.data(query).status == 200)

        let alice = try fixture.fingerprint("alice")
        let listed = try fixture.archive.run(["paired"]).records()
        #expect(listed.map { $0.string("certificate_fingerprint") } == [alice])
        let colons = Array(alice.uppercased()).enumerated().map { $0.offset > 0 && $0.offset % 2 == 0 ? ":\($0.element)" : "\($0.element)" }
            .joined()
        #expect(try fixture.archive.run(["unpair", colons]).status == 0)
        #expect(try fixture.data(query).status == 401)
        #expect(try fixture.archive.run(["paired"]).stdout.isEmpty)
        #expect(try fixture.archive.run(["paired", "--all"]).records().first?.string("unpaired_at") != nil)
        let again = try fixture.archive.run(["unpair", alice])
        #expect(again.status == 2 && again.stderr.contains("no paired client"))
        #expect(try fixture.archive.run(["unpair", "abc"]).status == 64)

        let log = try fixture.archive.sql(
            """
            SELECT operation, coalesce(json_extract(detail, '$.client_fingerprint'), '-'), json_extract(detail, '$.status'),
                   coalesce(json_extract(detail, '$.outcome'), '')
            FROM operations WHERE operation IN ('pair', 'unpair', 'health_data') ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        let bob = try fixture.fingerprint("bob")
        #expect(
            log == [
                "pair|\(alice)|200|paired", "health_data|-|401|no_client_certificate", "health_data|\(bob)|401|not_paired",
                "health_data|\(alice)|200|", "unpair|\(alice)||", "health_data|\(alice)|401|not_paired",
            ])
    }

    @Test("a pairing token works once, within its lifetime; expired, reused and unknown tokens are refused and logged")
    func tokens() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        let fixture = try Fixture(pair: false)
        // Issued an hour ago with the default 10 minutes: expired.
        let expired = try fixture.newToken(["--now", Timestamp.format(milliseconds: Clock.wallMilliseconds() - 3_600_000)])
        let late = try fixture.post("/api/v1/pair", #"{"token":"\#(expired)"}"#, client: "bob")
        #expect(
            late.status == 401 && late.json?.string("reason") == "pairing_refused"
                && late.json?.string("error") == "the pairing token has expired")
        let token = try fixture.newToken()
        let noCert = try fixture.post("/api/v1/pair", #"{"token":"\#(token)"}"#, client: nil)
        #expect(noCert.status == 401 && noCert.json?.string("reason") == "unauthorized")
        let first = try fixture.post("/api/v1/pair", #"{"token":"\#(token)"}"#, client: "bob")
        #expect(first.status == 200 && first.json?.string("status") == "paired", "\(first.body)")
        #expect(first.json?.string("certificateFingerprint") == (try fixture.fingerprint("bob")))
        let reused = try fixture.post("/api/v1/pair", #"{"token":"\#(token)"}"#, client: "carol")
        #expect(reused.status == 401 && reused.json?.string("error") == "the pairing token was already used")
        let unknown = try fixture.post("/api/v1/pair", #"{"token":"aaaaaaaaaaaaaaaaaaaaaaaaaa"}"#, client: "carol")
        #expect(unknown.status == 401 && unknown.json?.string("error") == "the pairing token is not known")
        let malformed = try fixture.post("/api/v1/pair", #"{"tokens":1}"#, client: "carol")
        #expect(malformed.status == 400 && malformed.json?.string("reason") == "bad_request")
        #expect(try fixture.data(#"{"types":["\#(heart)"]}"#, client: "carol").status == 401)
        #expect(try fixture.data(#"{"types":["\#(heart)"]}"#, client: "bob").status == 200)

        // The archive keeps the tokens' SHA-256 only; the log names the outcomes.
        let dump = try shell("sqlite3 '\(fixture.archive.db)' .dump").stdout
        for token in fixture.tokens { #expect(!dump.contains(token)) }
        #expect(try fixture.archive.sql("SELECT count(*) FROM pairing_tokens WHERE token_sha256 = '\(try sha256sum(token))'") == "1")
        let outcomes = try fixture.archive.sql(
            """
            SELECT operation || ':' || coalesce(json_extract(detail, '$.outcome'), '') FROM operations
            WHERE operation IN ('pairing_token', 'pair') ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(
            outcomes == [
                "pairing_token:", "pair:expired_token", "pairing_token:", "pair:no_client_certificate", "pair:paired",
                "pair:used_token", "pair:unknown_token",
            ])
    }

    // MARK: - What nginx enforces

    @Test("TLS 1.2 is refused in the handshake; the 61st request in a minute gets 429 JSON; 1 MB + 1 byte gets 413 JSON")
    func limits() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        let fixture = try Fixture()
        let old = try runProcess(
            "/usr/bin/env",
            [
                "curl", "-sS", "--tls-max", "1.2", "--cacert", fixture.serverCert,
                "--cert", fixture.tls.path("alice/client.crt"), "--key", fixture.tls.path("alice/client.key"),
                "--data", "{}", fixture.url + "/api/v1/health/data", "-w", "%{http_code}",
            ],
            stdin: "", environment: toolEnvironment())
        #expect(old.status == 35, "curl: \(old.stderr)")
        #expect(old.stdout == "000")

        // Carol pairs (her first request), then sends bursts of 60 at once until one is refused.
        // nginx's bucket holds 60 and refills one a second: the first 60 requests always pass,
        // and she is refused by her 61st plus one for each whole second the requests took. (Bursts,
        // not one request at a time: on a loaded machine one at a time can be slower than the refill.)
        let started = Date()
        let token = try fixture.newToken()
        #expect(try fixture.post("/api/v1/pair", #"{"token":"\#(token)"}"#, client: "carol").status == 200)
        var accepted = 1
        var refusedBody: String?
        var limitedSeen = 0
        for round in 0..<10 where refusedBody == nil {
            var config = ""
            for index in 0..<60 {
                config += "url = \"\(fixture.url)/api/v1/health/data\"\noutput = \"\(fixture.tls.path("burst-\(round)-\(index).json"))\"\n"
            }
            let configFile = try fixture.tls.write("burst-\(round).cfg", config)
            let burst = try runProcess(
                "/usr/bin/env",
                [
                    "curl", "-s", "--no-progress-meter", "--parallel", "--parallel-immediate", "--parallel-max", "60",
                    "--cacert", fixture.serverCert, "--cert", fixture.tls.path("carol/client.crt"),
                    "--key", fixture.tls.path("carol/client.key"), "-H", "Content-Type: application/json",
                    "-w", "%{http_code} %{filename_effective}\\n",
                    "--data", #"{"types":["\#(heart)"]}"#, "-K", configFile,
                ],
                stdin: "", environment: toolEnvironment())
            let answers = burst.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(answers.allSatisfy { $0.first == "200" || $0.first == "429" } && answers.count == 60, "\(burst.stdout)")
            accepted += answers.filter { $0.first == "200" }.count
            limitedSeen += answers.filter { $0.first == "429" }.count
            refusedBody = answers.first { $0.first == "429" }.flatMap { try? String(contentsOfFile: $0.last ?? "", encoding: .utf8) }
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(accepted >= 60 && Double(accepted) <= 60 + elapsed.rounded(.up), "\(accepted) accepted in \(elapsed) s")
        let refusedText = try #require(refusedBody)
        let limited = try #require(try JSONParser.parse(refusedText).objectValue)
        #expect(limited.string("reason") == "rate_limited" && limited.string("error") != nil)
        // Another client has its own allowance.
        #expect(try fixture.data(#"{"types":["\#(heart)"]}"#).status == 200)

        let big = try fixture.tls.write("big.json", String(repeating: " ", count: 1_048_577))
        let tooLarge = try fixture.request("POST", "/api/v1/health/data", bodyFile: big, client: "alice")
        #expect(tooLarge.status == 413 && tooLarge.json?.string("reason") == "too_large", "\(tooLarge.body)")
        let query = #"{"types":["\#(heart)"]}"#
        let justRight = try fixture.tls.write("ok.json", query + String(repeating: " ", count: 1_048_576 - query.utf8.count))
        #expect(try fixture.request("POST", "/api/v1/health/data", bodyFile: justRight, client: "alice").status == 200)

        // The responder holds the seed's 1 MB itself too, whoever reaches its socket (the serving user).
        let direct = try fastCGIRequest(
            socket: fixture.server.runDirectory + "/healthsync.sock",
            parameters: ["REQUEST_METHOD": "POST", "REQUEST_URI": "/api/v1/health/data"],
            body: query + String(repeating: " ", count: 1_048_577 - query.utf8.count),
            as: runningAsRoot ? servingUser : nil, scratch: fixture.tls)
        #expect(cgiStatus(direct) == 413 && direct.contains(#""reason":"too_large""#), "\(direct.prefix(300))")

        // What nginx refused itself reached the operation log too, by status, path and client (the
        // seed audits network events): the rate limit's 429s, counted, and the 413.
        fixture.server.stop()
        let refusals = try fixture.archive.run(["log"]).records().filter { $0.string("operation") == "network_refusal" }
            .compactMap { $0["detail"]?.objectValue }
        let limitedCount = refusals.filter { $0.int("status") == 429 }.compactMap { $0.int("count") }.reduce(0, +)
        let carolSHA1 = try shell("openssl x509 -in '\(fixture.tls.path("carol/client.crt"))' -noout -fingerprint -sha1").stdout
            .split(separator: "=").last.map {
                $0.replacingOccurrences(of: ":", with: "").trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            }
        #expect(
            limitedCount == limitedSeen
                && refusals.filter { $0.int("status") == 429 }.allSatisfy {
                    $0.string("outcome") == "rate_limited" && $0.string("path") == "/api/v1/health/data"
                        && $0.string("client_sha1") == carolSHA1
                }, "\(refusals)")
        let tooLargeLogged = refusals.filter { $0.int("status") == 413 }
        #expect(
            tooLargeLogged.count == 1 && tooLargeLogged.first?.string("outcome") == "too_large" && tooLargeLogged.first?.int("count") == 1,
            "\(refusals)")
    }

    @Test("a client sending its request a byte a second is cut at 10 s, and so is a body that stops")
    func slowClients() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        guard try requireGate(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the slow client is python3") else {
            return
        }
        let fixture = try Fixture()
        // Both at once: each trickles (or stalls) until the server closes, and says after how long.
        let script = """
            import socket, ssl, sys, time, threading
            port = int(sys.argv[1]); ca, cert, key = sys.argv[2:5]
            def client(mode, results):
                context = ssl.create_default_context(cafile=ca)
                context.load_cert_chain(cert, key)
                conn = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
                head = b"POST /api/v1/health/data HTTP/1.1\\r\\nHost: localhost\\r\\nContent-Type: application/json\\r\\nContent-Length: 64\\r\\n\\r\\n"
                start = time.monotonic()
                if mode == "stall":
                    conn.sendall(head + b'{"types":')
                pending = head if mode == "trickle" else b""
                conn.settimeout(1.0)
                while time.monotonic() - start < 20:
                    if pending:
                        try:
                            conn.sendall(pending[:1]); pending = pending[1:]
                        except OSError:
                            break
                    try:
                        if conn.recv(4096) == b"":
                            break
                    except socket.timeout:
                        continue
                    except OSError:
                        break
                results[mode] = time.monotonic() - start
            results = {}
            threads = [threading.Thread(target=client, args=(mode, results)) for mode in ("trickle", "stall")]
            for thread in threads: thread.start()
            for thread in threads: thread.join()
            print("%.2f %.2f" % (results["trickle"], results["stall"]))
            """
        let result = try runProcess(
            "/usr/bin/python3",
            [
                "-c", script, String(fixture.server.port), fixture.serverCert,
                fixture.tls.path("alice/client.crt"), fixture.tls.path("alice/client.key"),
            ],
            stdin: "", environment: toolEnvironment())
        let times = result.stdout.split(separator: " ").compactMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try #require(times.count == 2, "\(result.stdout) \(result.stderr)")
        // Not before nginx's 10 s (less the client's own second of slack); the upper bound only
        // tells a cut from none (the client gives up at 20 s), far from what a busy machine adds.
        #expect(times[0] >= 9 && times[0] < 19, "a byte a second: cut after \(times[0]) s")
        #expect(times[1] >= 9 && times[1] < 19, "a stalled body: cut after \(times[1]) s")
        // Both cuts are network events nginx handled itself: they reach the operation log as 408s.
        fixture.server.stop()
        let refusals = try fixture.archive.run(["log"]).records().filter { $0.string("operation") == "network_refusal" }
            .compactMap { $0["detail"]?.objectValue }
        #expect(
            refusals.filter { $0.int("status") == 408 }.compactMap { $0.int("count") }.reduce(0, +) == 2,
            "\(refusals) \(fixture.server.accessLog)")
    }

    // MARK: - Odd requests

    @Test("paths with ../, %00, SQL text or 10 KB, odd types and wrong methods get 400, 404 or 405 JSON; secrets never show")
    func oddRequests() throws {
        guard try requireGate(servingInstalled, "Health Sync's server needs nginx (apt-get install nginx)") else { return }
        let fixture = try Fixture()
        let long = String(repeating: "a", count: 10 * 1024)
        let paths: [(String, Int)] = [
            ("/api/v1/../../../etc/passwd", 400), ("/api/v1/health/../../v1/health/data/../x", 404), ("/api/v1/health/data%00", 400),
            ("/api/v1/health/data%00.json", 400), ("/api/v1/health/data'%20OR%20'1'='1", 404), ("/api/v1/health/" + long, 404),
            ("/api/v1/health/data/" + long, 404), ("/", 404), ("/api/v1/pair/../pair", 200),
        ]
        for (path, status) in paths {
            let body = path.hasSuffix("pair") ? #"{"token":"\#(try fixture.newToken())"}"# : #"{"types":["\#(heart)"]}"#
            let answer = try fixture.request("POST", path, body, client: "alice")
            #expect(answer.status == status, "\(path.prefix(60)): \(answer.status) \(answer.body)")
            #expect(answer.header("content-type") == "application/json", "\(path.prefix(60))")
            #expect(answer.json?.string(status == 200 ? "status" : "reason") != nil, "\(path.prefix(60)): \(answer.body)")
        }
        let bodies: [(String, Int)] = [
            (#"{"types":["x' OR '1'='1"]}"#, 400), (#"{"types":["\#(heart)'; DROP TABLE samples; --"]}"#, 400),
            (#"{"types":["\#(long)"]}"#, 400), (#"{"types":[]}"#, 400), (#"{"types":"\#(heart)"}"#, 400), ("not json", 400), ("", 400),
            (#"{"types":["\#(heart)"],"limit":0}"#, 400), (#"{"types":["\#(heart)"],"limit":10001}"#, 400),
            (#"{"types":["\#(heart)"],"offset":-1}"#, 400), (#"{"types":["\#(heart)"],"startDate":"yesterday"}"#, 400),
            (#"{"types":["\#(heart)"],"startDate":"2026-01-10T09:00:00Z","endDate":"2026-01-10T08:00:00Z"}"#, 400),
            (#"{"types":["HKQuantityTypeIdentifierNothing"]}"#, 200),
        ]
        for (body, status) in bodies {
            let answer = try fixture.data(body)
            #expect(answer.status == status, "\(body.prefix(60)): \(answer.body)")
            #expect(answer.json?[status == 200 ? "hasMore" : "reason"] != nil, "\(body.prefix(60)): \(answer.body)")
        }
        #expect(try fixture.archive.sql("SELECT count(*) FROM samples") == "6", "nothing was dropped")
        for method in ["GET", "PUT", "DELETE", "PATCH"] {
            for path in ["/api/v1/health/data", "/api/v1/pair"] {
                let answer = try fixture.request(method, path, client: "alice")
                #expect(
                    answer.status == 405 && answer.header("allow") == "POST" && answer.json?.string("reason") == "method_not_allowed",
                    "\(method) \(path): \(answer.status) \(answer.body)")
            }
        }
        // Plain HTTP on the TLS port: JSON too.
        let plain = try runProcess(
            "/usr/bin/env", ["curl", "-sS", fixture.url.replacingOccurrences(of: "https:", with: "http:") + "/"],
            stdin: "", environment: toolEnvironment())
        #expect((try? JSONParser.parse(plain.stdout).objectValue?.string("reason")) == "https_required")

        // No token or key text in any answer or in nginx's logs.
        let secrets =
            fixture.tokens
            + (try ["server.key", "alice/client.key"].map { name in
                try String(contentsOfFile: fixture.tls.path(name), encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
                    .joined()
            }) + ["PRIVATE KEY"]
        let logs = fixture.server.accessLog + fixture.server.errorLog
        for secret in secrets {
            #expect(!fixture.responses.joined().contains(secret))
            #expect(!logs.contains(secret))
        }
        #expect(logs.contains("\"POST /api/v1/health/data\" 200"), "the access log has the requests")
    }
}

/// What curl got: status, headers, body.
private struct HealthAnswer {
    var status = 0
    var headers: [(String, String)] = []
    var body = ""

    init(_ result: RunResult) {
        // -D - writes the head (or heads, after a 100 Continue) before the body.
        var text = Substring(result.stdout)
        while text.hasPrefix("HTTP/") {
            guard let end = text.range(of: "\r\n\r\n") else { break }
            let head = text[..<end.lowerBound].components(separatedBy: "\r\n")
            status = Int(head[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            headers = head.dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            text = text[end.upperBound...]
        }
        body = String(text)
    }

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    var json: JSONObject? { (try? JSONParser.parse(body))?.objectValue }
}

/// `snapshot-delta` as a web server that runs a program per request runs it, with the CGI environment set directly (no nginx).
@Suite("snapshot-delta cgi with the CGI environment set directly", .hangGuard(minutes: 3))
struct HealthSyncCGITests {
    func cgi(_ db: String, method: String = "POST", path: String, body: String = "", certificate: String? = nil) throws -> (
        head: [String], body: JSONObject?
    ) {
        var environment = [
            "GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": method, "DOCUMENT_URI": path, "REQUEST_URI": path,
            "CONTENT_LENGTH": String(body.utf8.count), "VITALS_HEALTH_DB": db,
        ]
        if let certificate { environment["SSL_CLIENT_CERT"] = certificate.addingPercentEncoding(withAllowedCharacters: .alphanumerics) }
        // No arguments: a tool with a cgi subcommand answers as one under a web server.
        let result = try run("snapshot-delta", [], stdin: body, environment: environment)
        #expect(result.status == 0 || result.status == 2, "\(result.stderr)")
        let parts = result.stdout.components(separatedBy: "\r\n\r\n")
        return (parts[0].components(separatedBy: "\r\n"), parts.count > 1 ? (try? JSONParser.parse(parts[1]))?.objectValue : nil)
    }

    @Test("routes, methods, a missing archive, certificates, and a paired fetch, as CGI output")
    func answers() throws {
        let archive = try HealthSyncServeTests.makeArchive()
        let missing = try cgi(archive.scratch.path("none.db"), path: "/api/v1/health/data", body: "{}")
        #expect(missing.head.first == "Status: 503 Service Unavailable" && missing.body?["reason"]?.stringValue == "unavailable")
        #expect(!FileManager.default.fileExists(atPath: archive.scratch.path("none.db")), "the CGI never creates an archive")
        let unknown = try cgi(archive.db, path: "/api/v1/health/samples")
        #expect(unknown.head.first == "Status: 404 Not Found" && unknown.head.contains("Content-Type: application/json"))
        let get = try cgi(archive.db, method: "GET", path: "/api/v1/pair")
        #expect(get.head.first == "Status: 405 Method Not Allowed" && get.head.contains("Allow: POST"))
        let anonymous = try cgi(archive.db, path: "/api/v1/health/data", body: #"{"types":["x"]}"#)
        #expect(anonymous.head.first == "Status: 401 Unauthorized" && anonymous.body?["reason"]?.stringValue == "unauthorized")
        let garbage = try cgi(
            archive.db, path: "/api/v1/health/data", body: "{}", certificate: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
        )
        #expect(
            garbage.head.first == "Status: 401 Unauthorized"
                && garbage.body?["error"]?.stringValue == "the client certificate could not be read")

        let tls = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "client", "--out", tls.url.path]).status == 0)
        #expect(try run("snapshot-delta", ["cert", "server", "--out", tls.url.path]).status == 0)
        let refused = try run("snapshot-delta", ["cert", "client", "--out", tls.url.path])
        #expect(refused.status == 2 && refused.stderr.contains("--force"))
        let mode = try FileManager.default.attributesOfItem(atPath: tls.path("client.key"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let certificate = try String(contentsOfFile: tls.path("client.crt"), encoding: .utf8)
        let token = try #require(
            try archive.run(["pair", "--server-cert", tls.path("server.crt"), "--format", "ndjson"]).records().first?.string("token"))
        let paired = try cgi(archive.db, path: "/api/v1/pair", body: #"{"token":"\#(token)"}"#, certificate: certificate)
        #expect(paired.head.first == "Status: 200 OK" && paired.body?["status"]?.stringValue == "paired")
        let fetched = try cgi(
            archive.db, path: "/api/v1/health/data", body: #"{"types":["HKQuantityTypeIdentifierStepCount"],"limit":1}"#,
            certificate: certificate)
        #expect(fetched.body?["returnedCount"]?.intValue == 1 && fetched.body?["hasMore"] == .bool(true))
        #expect(fetched.body?["samples"]?.arrayValue?.first?.objectValue?["startDate"]?.stringValue == "2026-01-10T09:15:00Z")
        // The text form of pair: the token, the fingerprints and the curl command; a QR code when qrencode is there.
        let text = try archive.run(["pair", "--server-cert", tls.path("server.crt"), "--url", "https://myhost.local:8443"])
        #expect(
            text.status == 0 && text.stdout.contains("Pairing token:") && text.stdout.contains("--pinnedpubkey 'sha256//")
                && text.stdout.contains("https://myhost.local:8443/api/v1/pair"))
        #expect(try archive.run(["pair"]).status == 64, "pair wants --server-cert")
    }
}

import Foundation
import Testing
import VitalsKit

private let heart = "HKQuantityTypeIdentifierHeartRate"
private let steps = "HKQuantityTypeIdentifierStepCount"
private let sleep = "HKCategoryTypeIdentifierSleepAnalysis"

/// A Health Sync server (scripts/serve: real nginx in front of snapshot-delta serve) and the
/// clients of a test, each `healthsync` with a state file of its own.
final class HealthSyncSite {
    let archive: HealthArchive
    let tls: ScratchDirectory
    let server: ServeHandle
    /// The server certificate's SHA-256 and key pin, as openssl(1) computes them (not our code).
    let serverSHA256: String
    var url: String { "https://localhost:\(server.port)" }
    var serverCert: String { tls.path("server.crt") }

    /// A site serving `archive`; with `sameAs`, another server with its certificate and key (and
    /// its clients' files) on its port, as the same server started again.
    init(
        archive: HealthArchive, extra: [String] = [], environment: [String: String] = [:], namespace: String? = nil,
        listen: ((Int) -> String)? = nil, sameAs: HealthSyncSite? = nil
    ) throws {
        self.archive = archive
        tls = try sameAs?.tls ?? ScratchDirectory()
        if sameAs == nil {
            let made = try run("snapshot-delta", ["cert", "server", "--out", tls.url.path])
            guard made.status == 0 else { throw TestFailure("cert server: \(made.stderr)") }
        }
        serverSHA256 = String(try shell("openssl x509 -in '\(tls.path("server.crt"))' -outform der | sha256sum").stdout.prefix(64))
        try FileManager.default.createDirectory(atPath: tls.path("clients"), withIntermediateDirectories: true)
        server = try ServeHandle(
            site: "health-sync", ["--cert", tls.path("server.crt"), "--key", tls.path("server.key"), "--archive", archive.db] + extra,
            scratch: tls, environment: environment, namespace: namespace, listen: listen, port: sameAs?.server.port)
    }

    /// The text of the QR code `snapshot-delta pair` prints (its NDJSON record's qr_text), for `url`.
    func pairingText(url: String? = nil, _ extra: [String] = []) throws -> String {
        let result = try archive.run(["pair", "--server-cert", serverCert, "--url", url ?? self.url, "--format", "ndjson"] + extra)
        guard result.status == 0, let text = try result.records().first?.string("qr_text") else {
            throw TestFailure("pair: \(result.stderr)")
        }
        return text
    }

    /// A client's state file (its certificate and key are made beside it by scan).
    func statePath(_ client: String) -> String { tls.path("clients/\(client).json") }

    /// `healthsync --state STATE ARGUMENTS...`.
    func client(_ client: String, _ arguments: [String], stdin: String = "") throws -> RunResult {
        try run("healthsync", ["--state", statePath(client)] + arguments, stdin: stdin)
    }

    /// Pairs `client` with a fresh token; fails the test when it does not exit 0.
    func pair(_ client: String) throws {
        let result = try self.client(client, ["scan"], stdin: try pairingText())
        guard result.status == 0 else { throw TestFailure("scan \(client): \(result.stderr)") }
    }

    /// The SHA-256 of a client's certificate, by openssl(1).
    func clientSHA256(_ client: String) throws -> String {
        String(try shell("openssl x509 -in '\(tls.path("clients/\(client).crt"))' -outform der | sha256sum").stdout.prefix(64))
    }

    /// One request with curl, the independent client: pinned to the server's key, with a client's certificate.
    func curl(_ client: String, _ method: String, _ path: String, _ body: String? = nil) throws -> (status: Int, body: JSONObject?) {
        var arguments = [
            "curl", "-sS", "-X", method, "--cacert", serverCert, "--cert", tls.path("clients/\(client).crt"),
            "--key", tls.path("clients/\(client).key"), "-H", "Content-Type: application/json", "-w", "\n%{http_code}",
        ]
        if let body { arguments += ["--data-binary", body] }
        let result = try runProcess("/usr/bin/env", arguments + [url + path], stdin: "", environment: toolEnvironment())
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? 0
        return (status, (try? JSONParser.parse(lines.dropLast().joined(separator: "\n")))?.objectValue)
    }
}

/// Each record has its subsection in vitals-records(7), and each of its fields is named there.
func expectDocumented(_ records: [JSONObject], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let page = try readPage("man/man7/vitals-records.7")
    let documented = boldWords(manSection(page, "SNAPSHOT\\-DELTA"))
    for record in records {
        let type = record.string("type") ?? "?"
        #expect(page.contains("\n.SS \(type)\n"), "no subsection for \(type)", sourceLocation: sourceLocation)
        for field in record {
            #expect(documented.contains(field.key), "\(type).\(field.key) is not in vitals-records(7)", sourceLocation: sourceLocation)
        }
    }
}

/// A state file as scan writes it, for a server no scan could reach.
enum ClientStateText {
    static func make(server: String, certificate: String, key: String) -> String {
        let zeros = String(repeating: "0", count: 64)
        return
            #"{"type":"pairing","server":"\#(server)","server_certificate_sha256":"\#(zeros)","server_public_key_pin":"sha256//47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=","client_certificate":"\#(certificate)","client_key":"\#(key)","client_certificate_sha256":"\#(zeros)","pairing_id":"x","paired_at":"2026-01-01T00:00:00.000Z"}"#
    }
}

/// What `fetch` wrote: its health_record lines and its type_status lines.
private struct Fetched {
    var records: [JSONObject] = []
    var statuses: [String: String] = [:]

    init(_ result: RunResult) throws {
        for record in try result.records() {
            if record.string("type") == "type_status" {
                statuses[record.string("type_identifier") ?? ""] = record.string("quality")
            } else {
                records.append(record)
            }
        }
    }

    /// Each record as `type start end value unit source`, the fields a test works out by hand.
    var rows: [String] {
        records.map { record in
            [
                record.string("type_identifier"), record.string("start"), record.string("end"), record["value"]?.jsonText,
                record["unit"]?.jsonText, record["source"]?.jsonText,
            ].map { $0 ?? "-" }.joined(separator: " ")
        }
    }
}

/// The seed's command-line client against the real server, nginx included.
///
/// The seed (002, Architecture Overview): "CLI: healthsync scan → Read QR from clipboard → Parse
/// pairing token → Connect to server → Present client certificate → Server validates →
/// Accept: Store fingerprint → Pairing complete → Can now fetch health data"; "CLI: healthsync
/// fetch → Parse arguments → Discover device via Bonjour → TCP + mTLS connection → Certificate
/// paired? No: 401 Unauthorized"; "Sort by date descending → Apply offset/limit → ... CLI outputs
/// CSV/JSON"; "Rate Limiting: 60 req/min".
@Suite("healthsync: scan and fetch against nginx + snapshot-delta serve", .serialized, .hangGuard(minutes: 4))
struct HealthSyncClientTests {
    static let gate = "Health Sync's server needs nginx (apt-get install nginx)"

    @Test(
        "scan pairs from the QR text and keeps what it needs in a 0600 file; fetch pages newest first into NDJSON that take reads, and CSV")
    func scanAndFetch() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        let text = try site.pairingText()
        // "Parse pairing token → Connect to server → Present client certificate": on standard input.
        let scanned = try site.client("laptop", ["scan", "--format", "ndjson"], stdin: text)
        try #require(scanned.status == 0, "\(scanned.stderr)")
        let laptop = try site.clientSHA256("laptop")
        let record = try #require(try scanned.records().first)
        try expectDocumented([record])
        #expect(record.string("type") == "pairing" && record.string("server") == site.url)
        #expect(record.string("server_certificate_sha256") == site.serverSHA256 && record.string("client_certificate_sha256") == laptop)
        // "Store fingerprint": the server lists the client's certificate, by openssl's SHA-256.
        #expect(try site.archive.run(["paired"]).records().map { $0.string("certificate_fingerprint") } == [laptop])
        // The state file and the key: mode 0600; the state holds no token and no key.
        for file in [site.statePath("laptop"), site.tls.path("clients/laptop.key")] {
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600, "\(file)")
        }
        let state = try String(contentsOfFile: site.statePath("laptop"), encoding: .utf8)
        let token = try #require(try JSONParser.parse(text).objectValue?.string("token"))
        #expect(!state.contains(token) && !state.contains("PRIVATE KEY"))
        // Nor does scan print them: not the token, not the key.
        #expect(!(scanned.stdout + scanned.stderr).contains(token) && !(scanned.stdout + scanned.stderr).contains("PRIVATE KEY"))

        // "Sort by date descending → Apply offset/limit": two samples a page, every shared type
        // (the default: all three, as none was ever chosen). Worked by hand from the archive.
        let fetched = try site.client("laptop", ["fetch", "--per-page", "2"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        let all = try Fetched(fetched)
        #expect(
            all.rows == [
                "\(steps) 2026-01-10T09:15:00.000Z 2026-01-10T09:25:00.000Z 300 \"count\" \"Phone\"",
                "\(heart) 2026-01-10T09:00:00.000Z 2026-01-10T09:00:00.000Z 70 \"count/min\" \"Watch\"",
                "\(heart) 2026-01-10T08:30:00.000Z 2026-01-10T08:31:00.000Z 64.5 \"count/min\" \"Watch\"",
                "\(steps) 2026-01-10T08:15:00.000Z 2026-01-10T08:20:00.000Z 120 \"count\" \"Phone\"",
                "\(heart) 2026-01-10T08:00:00.000Z 2026-01-10T08:00:00.000Z 61 \"count/min\" \"Watch\"",
                "\(sleep) 2026-01-09T23:00:00.000Z 2026-01-10T06:00:00.000Z \"HKCategoryValueSleepAnalysisAsleepCore\" null \"Watch\"",
            ])
        #expect(all.statuses == [heart: "complete", steps: "complete", sleep: "complete"])
        try expectDocumented(try fetched.records())
        // The ids are the server's: curl's answer to the same question has the same ones.
        let byCurl = try site.curl("laptop", "POST", "/api/v1/health/data", #"{"types":["\#(heart)","\#(steps)","\#(sleep)"]}"#)
        #expect(byCurl.status == 200)
        #expect(all.records.map { $0.string("uuid") } == byCurl.body?["samples"]?.arrayValue?.map { $0.objectValue?.string("id") })
        // Three pages of two (offsets 0, 2, 4) after the question of which types are shared.
        let log = try site.archive.sql(
            """
            SELECT operation || ' ' || coalesce(json_extract(detail, '$.offset'), '-') || ' ' || json_extract(detail, '$.returned')
            FROM operations WHERE operation IN ('health_data', 'health_types') ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(log.prefix(4) == ["health_types - 3", "health_data 0 2", "health_data 2 2", "health_data 4 2"])

        // "CLI outputs CSV": the seed's columns, a range, one type.
        let csv = try site.client(
            "laptop",
            [
                "fetch", "--types", heart, "--since", "2026-01-10T08:10:00Z", "--until", "2026-01-10T09:30:00Z",
                "--format", "csv",
            ])
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(
            csv.stdout == """
                Type,Value,Unit,Start Date,End Date,Source
                \(heart),70,count/min,2026-01-10T09:00:00Z,2026-01-10T09:00:00Z,Watch
                \(heart),64.5,count/min,2026-01-10T08:30:00Z,2026-01-10T08:31:00Z,Watch

                """)
        // A range is a part of a type: its status says partial, never complete.
        let ranged = try Fetched(try site.client("laptop", ["fetch", "--types", heart, "--since", "2026-01-10T08:10:00Z"]))
        #expect(ranged.records.count == 2 && ranged.statuses == [heart: "partial"])

        // The NDJSON pipes into snapshot-delta take: a copy of the archive with the same samples.
        let copy = try HealthArchive()
        let piped = try shell(
            "healthsync --state '\(site.statePath("laptop"))' fetch | snapshot-delta --db '\(copy.db)' take --device-id-file '\(copy.deviceFile)' -"
        )
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try piped.records().first?.string("quality") == "complete")
        let values =
            "SELECT t.identifier || ' ' || s.start_ms || ' ' || s.end_ms || ' ' || s.value FROM samples s JOIN sample_types t ON t.id = s.type_id ORDER BY 1"
        #expect(try copy.sql(values) == (try site.archive.sql(values)))
    }

    @Test("unpaired gets 401 and a reused or expired token is refused: healthsync says so and exits 2, keeping nothing")
    func refusals() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        let text = try site.pairingText()
        #expect(try site.client("alice", ["scan"], stdin: text).status == 0)
        // The same token again, from another client: "Server validates → Reject".
        let reused = try site.client("mallory", ["scan", text])
        #expect(reused.status == 2)
        #expect(reused.stderr.contains("HTTP 401 (pairing_refused): the pairing token was already used"), "\(reused.stderr)")
        let token = try #require(try JSONParser.parse(text).objectValue?.string("token"))
        #expect(!(reused.stdout + reused.stderr).contains(token))
        #expect(!FileManager.default.fileExists(atPath: site.statePath("mallory")), "nothing is kept")
        // Issued an hour ago, valid 10 minutes.
        let expired = try site.pairingText(["--now", Timestamp.format(milliseconds: Clock.wallMilliseconds() - 3_600_000)])
        let late = try site.client("mallory", ["scan", "-"], stdin: expired)
        #expect(late.status == 2 && late.stderr.contains("the pairing token has expired"), "\(late.stderr)")

        // "Certificate Not Paired → 401 Unauthorized": a client whose pairing ended.
        #expect(try site.client("alice", ["fetch", "--types", heart]).status == 0)
        // The pairing names the server and the pins this client trusts, the key lets its holder
        // fetch: a pairing file others could change, a key others could read, or a pairing file
        // another user owns is refused before any request (the log below holds no request of theirs).
        let statePath = site.statePath("alice")
        let keyPath = site.tls.path("clients/alice.key")
        for (file, mode, words) in [
            (statePath, 0o620, "has mode 0620: refused, since others can change it"),
            (statePath, 0o602, "has mode 0602: refused, since others can change it"),
            (keyPath, 0o640, "has mode 0640: refused, since others can read it"),
            (keyPath, 0o604, "has mode 0604: refused, since others can read it"),
        ] {
            #expect(chmod(file, mode_t(mode)) == 0)
            let loose = try site.client("alice", ["fetch", "--types", heart])
            #expect(
                loose.status == 2 && loose.stdout.isEmpty && loose.stderr.contains("\(file) (") && loose.stderr.contains(words),
                "\(loose.stderr)")
            #expect(chmod(file, 0o600) == 0)
        }
        // Only root can give a file to another user: as anyone else this check cannot be staged.
        if geteuid() == 0 {
            #expect(chown(statePath, 65534, 65534) == 0)
            let foreign = try site.client("alice", ["types"])
            #expect(foreign.status == 2 && foreign.stderr.contains("belongs to user 65534, not to this user"), "\(foreign.stderr)")
            #expect(chown(statePath, geteuid(), getegid()) == 0)
        }
        #expect(try site.archive.run(["unpair", try site.clientSHA256("alice")]).status == 0)
        let unpaired = try site.client("alice", ["fetch", "--types", heart])
        #expect(unpaired.status == 2)
        #expect(unpaired.stderr.contains("HTTP 401 (unauthorized): this client certificate is not paired"), "\(unpaired.stderr)")
        #expect(try Fetched(unpaired).records.isEmpty && (try Fetched(unpaired)).statuses == [heart: "partial"])
        let types = try site.client("alice", ["types"])
        #expect(types.status == 2 && types.stdout.isEmpty && types.stderr.contains("HTTP 401"))
        // A client that never paired has no state: it says to scan first.
        let stranger = try site.client("nobody-yet", ["fetch"])
        #expect(stranger.status == 2 && stranger.stderr.contains("not paired yet"), "\(stranger.stderr)")
        let log = try site.archive.sql(
            """
            SELECT operation || ':' || coalesce(json_extract(detail, '$.outcome'), json_extract(detail, '$.status')) FROM operations
            WHERE operation IN ('pair', 'health_data', 'health_types') ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(
            log == [
                "pair:paired", "pair:used_token", "pair:expired_token", "health_data:200", "health_data:not_paired",
                "health_types:not_paired",
            ])
    }

    @Test("scan checks the server's key and certificate before the token goes out; a wrong one pairs nothing")
    func pinning() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        // Another key: curl's pin check fails in the handshake.
        let other = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "server", "--out", other.url.path]).status == 0)
        let otherPin = try #require(
            try run("snapshot-delta", ["cert", "server", "--out", other.url.path, "--force", "--format", "ndjson"])
                .records().first?.string("public_key_pin"))
        let text = try site.pairingText()
        var payload = try #require(try JSONParser.parse(text).objectValue)
        payload["pin"] = .string(otherPin)
        let wrongKey = try site.client("eve", ["scan", JSONValue.object(payload).jsonText])
        #expect(wrongKey.status == 2 && wrongKey.stderr.contains("pinned public key"), "\(wrongKey.stderr)")
        // The same key, another certificate SHA-256.
        payload = try #require(try JSONParser.parse(text).objectValue)
        payload["certificateFingerprint"] = .string(String(repeating: "0", count: 64))
        let wrongCertificate = try site.client("eve", ["scan", JSONValue.object(payload).jsonText])
        #expect(wrongCertificate.status == 2 && wrongCertificate.stderr.contains("not the pinned 0000"), "\(wrongCertificate.stderr)")
        // Garbage for a pairing text, on standard input as a pasted QR text comes: each refused with
        // its reason, without the token, keeping nothing.
        let token = try #require(payload.string("token"))
        func changed(_ key: String, _ value: JSONValue) throws -> String {
            var object = try #require(try JSONParser.parse(text).objectValue)
            object[key] = value
            return JSONValue.object(object).jsonText
        }
        let garbage: [(String, String)] = [
            ("", "the pairing text is empty"),
            ("\u{0}\u{1}\u{7f}\u{ff}" + text, "not the JSON object"),
            ("[" + text + "]", "not the JSON object"),
            (text + String(repeating: " ", count: 5000) + "x", "not the JSON object"),
            (String(repeating: "[", count: 200_000), "not the JSON object"),
            (try changed("url", .string(site.url.replacingOccurrences(of: "https:", with: "http:") + "/api/v1/pair")), "no https:// url"),
            (try changed("url", .string("https://user:secret@localhost:\(site.server.port)/api/v1/pair")), "no https:// url"),
            (try changed("url", .string(site.url + "/api/v1/pair?next=https://elsewhere")), "no https:// url"),
            (try changed("url", .number("1")), "no https:// url"),
            (try changed("token", .string(String(token.dropLast()))), "no token of 26"),
            (try changed("token", .string(token.uppercased())), "no token of 26"),
            (try changed("certificateFingerprint", .string("zz")), "no certificateFingerprint"),
            (try changed("pin", .string("sha256//" + String(repeating: "A", count: 20))), "no pin"),
        ]
        for (input, words) in garbage {
            let refused = try site.client("eve", ["scan", "-"], stdin: input)
            #expect(
                refused.status == 2 && refused.stdout.isEmpty && refused.stderr.contains(words), "\(input.prefix(80)): \(refused.stderr)")
            #expect(!refused.stderr.contains(token.dropLast()), "\(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: site.statePath("eve")))
        // Neither reached the server with the token: it is still unused, and the right text pairs.
        #expect(try site.archive.sql("SELECT count(*) FROM operations WHERE operation = 'pair'") == "0")
        #expect(try site.client("eve", ["scan", text]).status == 0)

        // Paired, eve's address later answers with another server (another key): the handshake
        // fails on the pin and no request reaches it.
        let impostor = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        let paired = try #require(try JSONParser.parse(try String(contentsOfFile: site.statePath("eve"), encoding: .utf8)).objectValue)
        var moved = paired
        moved["server"] = .string(impostor.url)
        try AtomicFile.write(JSONValue.object(moved).jsonText + "\n", to: site.statePath("eve"))
        let elsewhere = try site.client("eve", ["fetch", "--types", heart])
        #expect(
            elsewhere.status == 2 && elsewhere.stderr.contains("pinned public key") && !elsewhere.stdout.contains("health_record"),
            "\(elsewhere.stderr)")
        #expect(!impostor.server.accessLog.contains("/api/"), "\(impostor.server.accessLog)")
        #expect(try impostor.archive.sql("SELECT count(*) FROM operations WHERE operation LIKE 'health_%'") == "0")
        // The same key with another certificate: the answer is thrown away, nothing written.
        var reissued = paired
        reissued["server_certificate_sha256"] = .string(String(repeating: "0", count: 64))
        try AtomicFile.write(JSONValue.object(reissued).jsonText + "\n", to: site.statePath("eve"))
        let otherCertificate = try site.client("eve", ["fetch", "--types", heart])
        #expect(
            otherCertificate.status == 2 && otherCertificate.stderr.contains("not the pinned 0000")
                && !otherCertificate.stdout.contains("health_record"), "\(otherCertificate.stderr)")
        // A malformed text is refused without repeating the token.
        let truncated = String(text.dropLast(5))
        let bad = try site.client("eve", ["scan", truncated])
        #expect(bad.status == 2 && bad.stderr.contains("not the JSON object") && !bad.stderr.contains(token))
        #expect(try site.client("eve", ["scan", "a", "b"]).status == 64)
    }

    @Test(
        "the 61st request in a minute gets 429: with --retries 0 fetch says so, exits 2, and what it wrote is the newest pages whole, marked partial"
    )
    func rateLimit() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        // 300 heart rates, one a minute: with one sample a page the fetch needs 300 requests, far
        // more than nginx's bucket of 60 plus what refills (one a second) while they are sent.
        let archive = try HealthArchive()
        try archive.take(HealthLines.records(heart, 300))
        let site = try HealthSyncSite(archive: archive)
        let started = Date()
        try site.pair("carol")  // her first request
        // On a machine slow enough to refill the bucket as fast as a fetch drains it, fetch again
        // until one is refused: what is asserted is what a refused fetch writes and says.
        var accepted = 1
        var fetched = try site.client("carol", ["fetch", "--types", heart, "--per-page", "1", "--retries", "0"])
        while fetched.status == 0, accepted < 2_000 {
            accepted += 300
            fetched = try site.client("carol", ["fetch", "--types", heart, "--per-page", "1", "--retries", "0"])
        }
        let elapsed = Date().timeIntervalSince(started)
        #expect(fetched.status == 2)
        #expect(
            fetched.stderr.contains("refused with HTTP 429 (rate_limited): at most 60 requests a minute per client"), "\(fetched.stderr)")
        #expect(fetched.stderr.contains("wait a minute"))
        let got = try Fetched(fetched)
        // Every accepted page was written: her 60 first requests (pairing included) always pass,
        // and at most one more for each second they took.
        accepted += got.records.count
        #expect(accepted >= 60 && Double(accepted) <= 60 + elapsed.rounded(.up), "\(accepted) accepted in \(elapsed) s")
        #expect(fetched.stderr.contains("the fetch stopped after \(got.records.count) samples in \(got.records.count) pages"))
        // No page was lost in between: they are the newest samples, in order, with no gap.
        let newest = try site.archive.run(["samples", "--type", heart, "--per-page", String(got.records.count)]).records().map {
            $0.string("start")
        }
        #expect(got.records.map { $0.string("start") } == newest)
        #expect(got.statuses == [heart: "partial"])
        // Taken, the partial fetch is a partial snapshot: nothing reads as deleted.
        let copy = try HealthArchive()
        let taken = try copy.run(["take", "-"], stdin: fetched.stdout)
        let takenQuality = try taken.records().first?.string("quality")
        #expect(taken.status == 0 && takenQuality == "partial", "\(taken.stderr)")
        // The refusal reached the operation log through nginx's refusal log (a FIFO).
        site.server.stop()
        let limited = try site.archive.run(["log"]).records().filter { $0.string("operation") == "network_refusal" }
            .compactMap { $0["detail"]?.objectValue }.filter { $0.int("status") == 429 }
        #expect(!limited.isEmpty && limited.allSatisfy { $0.string("path") == "/api/v1/health/data" })
    }

    @Test("a take on the server between two pages stops the fetch: the offsets no longer fit, and it says so")
    func takeBetweenPages() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let archive = try HealthArchive()
        let records = ["2026-01-10", "2026-01-11", "2026-01-12", "2026-01-13"].flatMap { HealthLines.records(heart, 900, day: $0) }
        try archive.take(records)
        let site = try HealthSyncSite(archive: archive)
        try site.pair("reader")
        // The first page (1,000 lines, far more than a pipe holds) is written before the second is
        // asked for, so the fetch waits on its output while the reader of the pipe, having read a
        // line of the first page, takes a snapshot on the server; then it reads on.
        let take = "snapshot-delta --db '\(archive.db)' take --device-id-file '\(archive.deviceFile)' --now 2026-02-01T11:00:00Z"
        let records2 = try archive.scratch.write(
            "more.ndjson", (records + [HealthLines.record(heart, "2026-01-14T08:00:00Z")]).joined(separator: "\n") + "\n")
        let script = """
            set -o pipefail
            healthsync --state '\(site.statePath("reader"))' fetch --per-page 1000 |
              { IFS= read -r first && \(take) '\(records2)' >/dev/null && wc -l; }
            """
        let result = try runProcess("/bin/bash", ["-c", script], stdin: "", environment: toolEnvironment())
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("the server's archive changed during the fetch (snapshot "), "\(result.stderr)")
        #expect(result.stderr.contains("the fetch stopped after 1000 samples in 1 pages"), "\(result.stderr)")
        // The first line was read; the rest of the first page and the partial statuses followed.
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1000", "\(result.stdout)")

        // vitals(7): a reader that goes away (| head) is success, here with pages still to come.
        let head = try runProcess(
            "/bin/bash",
            [
                "-c",
                "healthsync --state '\(site.statePath("reader"))' fetch --format csv | head -n 1 >/dev/null; echo \"${PIPESTATUS[0]}\"",
            ],
            stdin: "", environment: toolEnvironment())
        #expect(head.stdout == "0\n" && head.stderr.isEmpty, "\(head.stdout) \(head.stderr)")
    }

    @Test("SIGTERM while a server keeps the handshake waiting: exit 143, the types marked partial first")
    func sigterm() throws {
        guard try requireGate(FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "the silent server is python3") else {
            return
        }
        let scratch = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "client", "--out", scratch.url.path]).status == 0)
        // A server that accepts connections and never says a word.
        let script = """
            import socket, sys
            listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(8)
            print(listener.getsockname()[1], flush=True)
            held = []
            while True:
                connection, _ = listener.accept(); held.append(connection)
                open(sys.argv[1], "a").write("accepted\\n")
            """
        // Killed with SIGKILL when it goes away.
        let silent = try Spawned(["/usr/bin/python3", "-c", script, scratch.path("accepted")])
        let port = silent.output.map(readFirstLine) ?? ""
        let state = ClientStateText.make(
            server: "https://127.0.0.1:\(port)", certificate: scratch.path("client.crt"), key: scratch.path("client.key"))
        try scratch.write("state.json", state)
        let running = try RunningTool("healthsync", ["--state", scratch.path("state.json"), "fetch", "--types", heart])
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: scratch.path("accepted")) && Date() < deadline { usleep(20_000) }
        let stopped = running.stop(SIGTERM)
        #expect(stopped.status == 143, "\(stopped.stderr)")
        #expect(stopped.rest == #"{"type":"type_status","type_identifier":"\#(heart)","quality":"partial"}"# + "\n", "\(stopped.rest)")
    }

    @Test("scan --clipboard reads the QR text from an X11 clipboard (Xvfb, xsel); with no display it says there is no clipboard")
    func clipboard() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let tools = ["/usr/bin/Xvfb", "/usr/bin/xsel"]
        guard
            try requireGate(
                tools.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) },
                "an X11 clipboard needs Xvfb and xsel (apt-get install xvfb xsel)")
        else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        let work = try ScratchDirectory()
        let text = try work.write("pairing.json", try site.pairingText())
        // A display of its own; xsel keeps the clipboard until the display goes.
        let session = """
            Xvfb -displayfd 3 -nolisten tcp 3>"$1/display" >"$1/xvfb.log" 2>&1 &
            xvfb=$!
            tries=0
            until [ -s "$1/display" ]; do tries=$((tries + 1)); [ $tries -lt 400 ] || exit 3; sleep 0.05; done
            export DISPLAY=":$(head -n 1 "$1/display")"
            xsel --clipboard --input <"$2" >/dev/null 2>&1
            healthsync --state "$3" scan --clipboard </dev/null
            status=$?
            kill -KILL $xvfb
            exit $status
            """
        let result = try runProcess(
            "/bin/sh", ["-c", session, "session", work.url.path, text, site.statePath("desk")], stdin: "",
            environment: toolEnvironment())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("Paired with \(site.url)"), "\(result.stdout)")
        #expect(try site.archive.run(["paired"]).records().count == 1)
        var headless = toolEnvironment()
        headless["DISPLAY"] = nil
        headless["WAYLAND_DISPLAY"] = nil
        let none = try runProcess(
            Binaries.path("healthsync"), ["--state", site.statePath("other"), "scan", "--clipboard"], stdin: "",
            environment: headless)
        #expect(none.status == 2 && none.stderr.contains("no clipboard here"), "\(none.stderr)")
    }

    @Test("the documented examples of healthsync(1) run against the server as written")
    func examples() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        let home = try ScratchDirectory()
        try home.write("pairing.json", try site.pairingText())
        let page = try readPage("man/man1/healthsync.1")
        let commands = ExampleTests.examples(in: page, roff: true)
        #expect(commands.count == 4, "\(commands)")
        var outputs: [String] = []
        for command in commands {
            let result = try runProcess(
                "/bin/bash", ["-c", "set -o pipefail\n" + command], stdin: "",
                environment: toolEnvironment(["HOME": home.url.path, "XDG_CONFIG_HOME": home.path(".config")]),
                directory: home.url)
            #expect(result.status == 0, "`\(command)`: \(result.stderr)")
            outputs.append(result.stdout)
        }
        try #require(outputs.count == 4)
        #expect(FileManager.default.fileExists(atPath: home.path(".config/vitals/healthsync.json")), "the default state file")
        #expect(outputs[1] == "\(sleep)\n\(heart)\n\(steps)\n")
        #expect(outputs[2].split(separator: "\n").count == 3, "\(outputs[2])")
        #expect(outputs[3] == #"{"type":"snapshot","quality":"complete","record_count":6}"# + "\n")
    }
}

import Foundation
import Testing
import VitalsKit

/// notify's apns:// channel against Fixtures/notify/apns_server.py: TLS and HTTP/2 on
/// hypercorn, the provider token verified with python3-jwt, Apple's answers scripted.
@Suite("notify: Apple push and devices", .serialized, .hangGuard(minutes: 3))
struct NotifyPushTests {
    static let certificates: TestCertificates? = try? TestCertificates()
    static let deviceA = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
    static let deviceB = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    static let deviceC = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    static let topic = "com.example.tracker"

    struct Fake {
        let server: PythonPeer
        let scratch: ScratchDirectory
        let channel: String
        let state: String
    }

    /// A fake APNs, a .p8 key made by openssl, and a state file with `devices` registered.
    func fakeAPNs(scripts: [String] = [], devices: [String] = [deviceA, deviceB]) throws -> Fake {
        let certs = try #require(NotifyPushTests.certificates)
        let (cert, key) = try certs.server(named: "apns", daysLeft: 60)
        let scratch = try ScratchDirectory()
        let p8 = scratch.path("AuthKey_KEY1234567.p8")
        let made = try shell("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out '\(p8)'")
        #expect(made.status == 0, "\(made.stderr)")
        var arguments = [
            "--log", scratch.path("log.ndjson"), "--cert", cert, "--key", key, "--key-file", p8,
            "--key-id", "KEY1234567", "--team-id", "TEAM123456", "--topic", NotifyPushTests.topic,
        ]
        for script in scripts { arguments += ["--script", script] }
        let server = try PythonPeer("apns_server.py", arguments, scratch: scratch)
        let state = scratch.path("state.json")
        for device in devices {
            let added = try run("notify", ["--state", state, "devices", "add", device, "--app-version", "1.0.0"])
            #expect(added.status == 0, "\(added.stderr)")
        }
        let channel =
            "apns://\(server.hostPort)/\(NotifyPushTests.topic)?team=TEAM123456&key_id=KEY1234567&key_file=\(p8)&cafile=\(certs.path("ca.pem"))"
        return Fake(server: server, scratch: scratch, channel: channel, state: state)
    }

    func delivery(_ result: RunResult) throws -> JSONObject {
        try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
    }

    @Test("each device gets OnlineTracker's payload over HTTP/2 with a verified ES256 provider token and the apns-* headers")
    func push() throws {
        let fake = try fakeAPNs()
        let input =
            sampleLine("7", 0, "up", name: "Google DNS") + "\n"
            + sampleLine("7", 10, "down", name: "Google DNS", message: "Request timeout after 10s") + "\n"
        let result = try run("notify", ["--state", fake.state, "--to", fake.channel], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try delivery(result)
        #expect(outcome.string("result") == "delivered")
        #expect(outcome.int("devices_sent") == 2)
        let requests = try fake.server.log()
        #expect(Set(requests.compactMap { $0.string("token") }) == [NotifyPushTests.deviceA, NotifyPushTests.deviceB])
        for request in requests {
            #expect(request.string("http_version") == "2")
            #expect(request["jwt_ok"] == .bool(true), "\(request["jwt_error"] ?? .null)")
            #expect(request["jwt_header"]?.objectValue?["alg"] == .string("ES256"))
            let headers = try #require(request["headers"]?.objectValue)
            #expect(headers["apns-topic"] == .string(NotifyPushTests.topic))
            #expect(headers["apns-push-type"] == .string("alert"))
            #expect(headers["apns-priority"] == .string("10"))
            #expect(headers["apns-collapse-id"] == .string("7"))
            let payload = try #require(request["payload"]?.objectValue)
            let aps = try #require(payload["aps"]?.objectValue)
            #expect(
                aps["alert"]
                    == .object(
                        JSONObject([
                            JSONField("title", .string("Monitor DOWN")),
                            JSONField("body", .string("Google DNS is not responding")),
                        ])))
            #expect(aps["sound"] == .string("default"))
            #expect(aps["badge"] == .number("1"))
            #expect(payload["monitor_id"] == .number("7"), "an integer, as OnlineTracker's app reads it")
            #expect(payload["monitor_name"] == .string("Google DNS"))
            #expect(payload["status"] == .string("down"))
            #expect(payload["details"] == .string("Request timeout after 10s"))
        }
    }

    @Test("410 removes the device; 429 is retried; a bad device token fails that device only")
    func answers() throws {
        let fake = try fakeAPNs(
            scripts: [
                "\(NotifyPushTests.deviceA)=429:TooManyRequests,200", "\(NotifyPushTests.deviceB)=410:Unregistered",
                "\(NotifyPushTests.deviceC)=400:BadDeviceToken",
            ],
            devices: [NotifyPushTests.deviceA, NotifyPushTests.deviceB, NotifyPushTests.deviceC])
        let result = try run("notify", ["--state", fake.state, "--to", fake.channel], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try delivery(result)
        #expect(outcome.string("result") == "delivered")
        #expect(outcome.int("devices_sent") == 1)
        #expect(outcome.int("devices_removed") == 1)
        // A got it after the retry; B is gone for good (410, removed); C's token was refused (400 BadDeviceToken):
        // that device failed, the others did not, and C stays registered (a refusal is not an unregistration).
        let count = try run("notify", ["--state", fake.state, "devices", "count"])
        #expect(count.stdout == "{\"count\":2}\n")
        let listed = try run("notify", ["--state", fake.state, "devices", "list"]).records()
        #expect(listed.map { $0.string("device_token") } == [NotifyPushTests.deviceA, NotifyPushTests.deviceC])
        #expect(try fake.server.log().map { $0.int("answered") }.sorted { ($0 ?? 0) < ($1 ?? 0) } == [200, 400, 410, 429])
    }

    @Test("a provider token Apple refuses (403 InvalidProviderToken) fails for good; no devices means nothing to send")
    func refusedToken() throws {
        let fake = try fakeAPNs(scripts: ["\(NotifyPushTests.deviceA)=403:InvalidProviderToken"], devices: [NotifyPushTests.deviceA])
        let result = try run("notify", ["--state", fake.state, "--to", fake.channel], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 2)
        #expect(try delivery(result).string("result") == "failed")
        #expect(try delivery(result).string("error") == "APNs 403 InvalidProviderToken")
        let none = try fakeAPNs(devices: [])
        let quiet = try run("notify", ["--state", none.state, "--to", none.channel], stdin: NotifyWebhookTests.outage)
        #expect(quiet.status == 0)
        #expect(try delivery(quiet).int("devices_sent") == 0)
        #expect(try none.server.log().isEmpty)
    }

    @Test(
        "the provider token is kept in the state: reused for 50 minutes, then renewed; ExpiredProviderToken renews it, never sooner than 20 minutes"
    )
    func tokenAges() throws {
        let fake = try fakeAPNs(
            scripts: ["\(NotifyPushTests.deviceA)=200,200,200,403:ExpiredProviderToken,403:ExpiredProviderToken,200"],
            devices: [NotifyPushTests.deviceA])
        // One outage per run, each a new monitor's: t is the wall clock --now gives. Deliveries that
        // must go through get the default 30 s; the one that must stay pending, 2 s.
        func push(_ monitor: String, at now: String, budget: String = "30s") throws -> RunResult {
            try run(
                "notify", ["--state", fake.state, "--to", fake.channel, "--now", now, "--deliver-timeout", budget],
                stdin: sampleLine(monitor, 0, "up") + "\n" + sampleLine(monitor, 10, "down") + "\n")
        }
        func issuedAt(_ request: JSONObject) -> Int? { request["jwt_claims"]?.objectValue?["iat"]?.intValue }
        // --now sets the clock at the start of the run, and it runs on: a token is issued at --now
        // plus however long the run took to get there (more than a second on a loaded machine).
        func issued(_ request: JSONObject, near expected: Int) -> Bool {
            issuedAt(request).map { $0 >= expected && $0 < expected + 60 } ?? false
        }
        let base = 1_769_508_000  // 2026-01-27T10:00:00Z in seconds
        _ = try push("m1", at: "2026-01-27T10:00:00Z")
        _ = try push("m2", at: "2026-01-27T10:30:00Z")  // 30 minutes: the same token
        _ = try push("m3", at: "2026-01-27T10:55:00Z")  // 55 minutes: a new one
        var log = try fake.server.log()
        #expect(
            log.count == 3 && issued(log[0], near: base) && issuedAt(log[1]) == issuedAt(log[0]) && issued(log[2], near: base + 55 * 60),
            "\(log.map(issuedAt))")
        // Apple says expired 5 minutes after issue: not renewed before 20 minutes; pending.
        let early = try push("m4", at: "2026-01-27T11:00:00Z", budget: "2s")
        #expect(early.status == 2)
        #expect(try delivery(early).string("result") == "pending")
        #expect(try delivery(early).string("error")?.contains("20 minutes") == true)
        // 25 minutes after issue: renewed at once and sent (the pending m4 first: its token is renewed, then both go).
        let late = try push("m5", at: "2026-01-27T11:20:00Z")
        #expect(late.status == 0, "\(late.stderr)")
        log = try fake.server.log()
        let lastThree = Array(log.suffix(3))
        #expect(
            lastThree.count == 3 && issuedAt(lastThree[0]) == issuedAt(log[2]) && issued(lastThree[1], near: base + 80 * 60)
                && issuedAt(lastThree[2]) == issuedAt(lastThree[1]), "\(log.map(issuedAt))")
        #expect(log.map { $0.int("answered") }.suffix(3) == [403, 200, 200])
    }

    @Test("a push whose texts are longer than Apple's 4 KB is shortened to fit")
    func payloadLimit() throws {
        let fake = try fakeAPNs(devices: [NotifyPushTests.deviceA])
        let name = String(repeating: "A service with a rather long name ", count: 60)
        let message = String(repeating: "the server answered with a very long error page ", count: 100)
        let lines = [sampleLine("long", 0, "up", name: name), sampleLine("long", 30, "down", name: name, message: message)]
        let result = try run("notify", ["--state", fake.state, "--to", fake.channel], stdin: lines.joined(separator: "\n") + "\n")
        #expect(result.status == 0, "\(result.stderr)")
        let request = try #require(try fake.server.log().first)
        #expect((request.int("size") ?? 0) <= 4096)
        #expect(request.int("answered") == 200)
        #expect(request["payload"]?.objectValue?["aps"]?.objectValue?["alert"]?.objectValue?["title"] == .string("Monitor DOWN"))
        #expect(request["payload"]?.objectValue?["monitor"] == .string("long"))
    }

    @Test("devices add, remove and count answer as OnlineTracker's API; a bad token is a usage error")
    func devices() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let added = try run(
            "notify",
            ["--state", state, "devices", "add", NotifyPushTests.deviceA.uppercased(), "--platform", "ios", "--app-version", "1.2"])
        #expect(added.stdout == "{\"success\":true,\"device_id\":1,\"message\":\"Device registered successfully\"}\n")
        let again = try run("notify", ["--state", state, "devices", "add", NotifyPushTests.deviceA])
        #expect(again.stdout.contains("\"device_id\":1"), "registering again keeps the id")
        _ = try run("notify", ["--state", state, "devices", "add", NotifyPushTests.deviceB])
        #expect(try run("notify", ["--state", state, "devices", "count"]).stdout == "{\"count\":2}\n")
        let removed = try run("notify", ["--state", state, "devices", "remove", NotifyPushTests.deviceA])
        #expect(removed.stdout == "{\"success\":true,\"message\":\"Device unregistered successfully\"}\n")
        #expect(try run("notify", ["--state", state, "devices", "count"]).stdout == "{\"count\":1}\n")
        let unknown = try run("notify", ["--state", state, "devices", "remove", NotifyPushTests.deviceA])
        #expect(unknown.status == 2)
        let bad = try run("notify", ["--state", state, "devices", "add", "not-a-token"])
        #expect(bad.status == 64)
        #expect(try run("notify", ["devices", "count"]).status == 64, "devices need --state")
    }
}

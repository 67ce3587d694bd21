import Foundation
import Testing
import VitalsKit

/// notify's HTTP channels against Fixtures/notify/webhook_server.py, which checks the
/// signatures with Python's own hmac and answers as each test scripts.
@Suite("notify: webhooks, ntfy, Slack, Discord, Teams; retries and pending deliveries", .serialized, .hangGuard(minutes: 3))
struct NotifyWebhookTests {
    /// api up, then down at t=10: one notification.
    static let outage = [sampleLine("api", 0, "up"), sampleLine("api", 10, "down")].joined(separator: "\n") + "\n"

    func body(_ request: JSONObject) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(request.string("body") ?? "") else {
            throw TestFailure("body is not an object")
        }
        return object
    }

    @Test("json:// posts the notification record; sign=github and sign=standard verify on the receiver; secrets stay out of the output")
    func signedWebhooks() throws {
        let scratch = try ScratchDirectory()
        let standardSecret = "whsec_" + Data("a standard webhooks key".utf8).base64EncodedString()
        let server = try webhookServer(scratch, github: "It's a Secret", standard: standardSecret)
        let environment = ["HOOK_SECRET": "It's a Secret", "STANDARD_SECRET": standardSecret]
        let result = try run(
            "notify",
            [
                "--to", "json://\(server.hostPort)/github?sign=github&secret=${HOOK_SECRET}",
                "--to", "json://\(server.hostPort)/standard?sign=standard&secret=${STANDARD_SECRET}",
            ],
            stdin: NotifyWebhookTests.outage, environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.records()
        #expect(records.count == 1)
        let deliveries = records[0]["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(deliveries.map { $0.string("result") } == ["delivered", "delivered"])
        #expect(deliveries.map { $0.int("code") } == [200, 200])
        #expect(deliveries[0].string("channel") == "json://\(server.hostPort)/github?sign=github&secret=${HOOK_SECRET}")
        #expect(!result.stdout.contains("It's a Secret") && !result.stdout.contains(standardSecret))
        // The two channels deliver concurrently: match the requests by the receiver's verdicts, not by order.
        let requests = try server.log()
        #expect(requests.count == 2)
        let githubRequests = requests.filter { $0["github"] == .bool(true) && ($0["standard"] ?? .null) == .null }
        let standardRequests = requests.filter { $0["standard"] == .bool(true) && ($0["github"] ?? .null) == .null }
        #expect(githubRequests.count == 1 && standardRequests.count == 1)
        let sent = try body(try #require(githubRequests.first))
        #expect(sent.string("type") == "notification")
        #expect(sent.string("id") == records[0].string("id"))
        #expect(sent.string("event") == "down")
        #expect(sent["deliveries"] == nil, "the payload is the notification without its delivery results")
        let standardHeaders = standardRequests.first?["headers"]?.objectValue
        #expect(standardHeaders?["webhook-id"]?.stringValue == records[0].string("id"))
        // A wrong secret does not verify (the receiver really checks).
        let scratch2 = try ScratchDirectory()
        let strict = try webhookServer(scratch2, github: "another secret")
        _ = try run(
            "notify", ["--to", "json://\(strict.hostPort)/github?sign=github&secret=${HOOK_SECRET}"],
            stdin: NotifyWebhookTests.outage, environment: environment)
        #expect(try strict.log().first?["github"] == .bool(false))
    }

    @Test("a literal secret on the command line works but is warned about and redacted")
    func literalSecret() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch, github: "plain")
        let result = try run(
            "notify", ["--to", "json://user:hunter2@\(server.hostPort)/hook?sign=github&secret=plain"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0)
        #expect(result.stderr.contains("warning: --to json://user:***@\(server.hostPort)/hook?sign=github&secret=*** carries a secret"))
        #expect(!result.stdout.contains("hunter2") && !result.stdout.contains("secret=plain"))
        let request = try #require(try server.log().first)
        #expect(request["github"] == .bool(true))
        // The user and password went as HTTP Basic: base64("user:hunter2").
        #expect(request["headers"]?.objectValue?["authorization"]?.stringValue == "Basic dXNlcjpodW50ZXIy")
    }

    @Test("?format=alertmanager sends Alertmanager's v4 webhook body: firing, then resolved")
    func alertmanager() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch)
        let input = NotifyWebhookTests.outage + sampleLine("api", 20, "up") + "\n"
        let result = try run("notify", ["--to", "json://\(server.hostPort)/am?format=alertmanager"], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let bodies = try server.log().map(body)
        #expect(bodies.count == 2)
        let firing = bodies[0]
        #expect(firing.string("version") == "4")
        #expect(firing.string("status") == "firing")
        #expect(firing.string("receiver") == "vitals-notify")
        #expect(firing["truncatedAlerts"] == .number("0"))
        let alert = try #require(firing["alerts"]?.arrayValue?.first?.objectValue)
        #expect(alert.string("status") == "firing")
        #expect(alert["labels"]?.objectValue?["alertname"] == .string("MonitorDown"))
        #expect(alert["labels"]?.objectValue?["monitor"] == .string("api"))
        #expect(alert.string("startsAt") == traceTime(10))
        #expect(alert.string("endsAt") == "0001-01-01T00:00:00Z")
        for key in ["groupKey", "groupLabels", "commonLabels", "commonAnnotations", "externalURL"] { #expect(firing[key] != nil, "\(key)") }
        let resolved = bodies[1]
        #expect(resolved.string("status") == "resolved")
        let ended = try #require(resolved["alerts"]?.arrayValue?.first?.objectValue)
        #expect(ended.string("endsAt") == traceTime(20))
        #expect(ended["fingerprint"] == alert["fingerprint"], "the resolved alert is the one that fired")
    }

    @Test("503 and 429 (with Retry-After) are retried in the same run until accepted")
    func retries() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch, scripts: ["/hook=503,429@1,200"])
        let result = try run("notify", ["--to", "json://\(server.hostPort)/hook"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let delivery = try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
        #expect(delivery.string("result") == "delivered")
        #expect(delivery.int("attempts") == 3)
        #expect(try server.log().map { $0.int("answered") } == [503, 429, 200])
    }

    @Test("410 is refused for good: failed, reported, exit 2, and not retried by the next run")
    func refused() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch, scripts: ["/hook=410"])
        let state = scratch.path("state.json")
        let result = try run("notify", ["--state", state, "--to", "json://\(server.hostPort)/hook"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 2)
        let delivery = try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
        #expect(delivery.string("result") == "failed")
        #expect(delivery.int("code") == 410)
        #expect(result.stderr.contains("HTTP 410"))
        let again = try run("notify", ["--state", state, "--to", "json://\(server.hostPort)/hook"], stdin: "")
        #expect(again.status == 0)
        #expect(again.stdout.isEmpty)
        #expect(try server.log().count == 1)
    }

    @Test("what the budget does not cover stays pending; the next run delivers it once; its cooldown starts then")
    func pending() throws {
        let scratch = try ScratchDirectory()
        let state = scratch.path("state.json")
        let down = try webhookServer(scratch, scripts: ["/hook=" + Array(repeating: "503", count: 30).joined(separator: ",")])
        let first = try run(
            "notify", ["--state", state, "--deliver-timeout", "1500ms", "--to", "json://\(down.hostPort)/hook"],
            stdin: NotifyWebhookTests.outage)
        #expect(first.status == 2)
        #expect(first.stderr.contains("1 delivery is still pending; the next run retries"))
        let record = try #require(try first.records().first)
        let delivery = try #require(record["deliveries"]?.arrayValue?.first?.objectValue)
        #expect(delivery.string("result") == "pending")
        #expect(delivery.string("error")?.hasPrefix("HTTP 503") == true)
        #expect(delivery.string("next_attempt_at") != nil)
        #expect(try down.log().count >= 1)
        // The receiver is back. The next run, with newer samples: the pending delivery first
        // (the same notification id), then api's recovery at 20; api down again at 30 is
        // inside the cooldown that started with the accepted delivery of 10.
        let scratch2 = try ScratchDirectory()
        let up = try webhookServer(scratch2)
        let channel = "json://\(up.hostPort)/hook"
        // The channel is named by the same URL text, so its pending delivery is found.
        let stateText = try String(contentsOfFile: state, encoding: .utf8).replacingOccurrences(of: down.hostPort, with: up.hostPort)
        try stateText.write(toFile: state, atomically: true, encoding: .utf8)
        let second = try run(
            "notify", ["--state", state, "--to", channel],
            stdin: [sampleLine("api", 20, "up"), sampleLine("api", 30, "down")].joined(separator: "\n") + "\n")
        #expect(second.status == 0, "\(second.stderr)")
        let records = try second.records()
        #expect(records.count == 2)
        #expect(records[0].string("id") == record.string("id"))
        #expect(records[0]["redelivery"] == .bool(true))
        #expect(records[0]["deliveries"]?.arrayValue?.first?.objectValue?.string("result") == "delivered")
        #expect(records[1].string("event") == "recovered")
        let received = try up.log().map { try body($0).string("event") ?? "?" }
        #expect(received == ["down", "recovered"], "delivered once each, in order; the second down was held back")
        let third = try run("notify", ["--state", state, "--to", channel], stdin: "")
        #expect(third.stdout.isEmpty && third.status == 0, "nothing is pending any more")
    }

    @Test("--give-up-after: a delivery still refused that long after its first attempt fails for good")
    func giveUp() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch, scripts: ["/hook=503,503,503"])
        let result = try run(
            "notify", ["--give-up-after", "1ms", "--to", "json://\(server.hostPort)/hook"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 2)
        let delivery = try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
        #expect(delivery.string("result") == "failed")
        #expect(delivery.string("error")?.contains("given up after 1ms") == true)
    }

    @Test("ntfy:// posts the text with Title, Priority, Tags and Click; a token goes as a bearer")
    func ntfy() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch)
        let input =
            sampleLine("api", 0, "up") + "\n"
            + #"{"type":"sample","monitor":"api","name":"API","target":"https://api.example.com/health","at":"2026-01-27T10:00:10Z","status":"down","message":"HTTP 503"}"#
            + "\n"
        let result = try run(
            "notify", ["--to", "ntfy://\(server.hostPort)/alerts?token=${NTFY_TOKEN}&tags=prod"], stdin: input,
            environment: ["NTFY_TOKEN": "tk_secret"])
        #expect(result.status == 0, "\(result.stderr)")
        let request = try #require(try server.log().first)
        #expect(request.string("path") == "/alerts")
        #expect(request.string("body") == "API is not responding: HTTP 503")
        let headers = try #require(request["headers"]?.objectValue)
        #expect(headers["title"]?.stringValue == "Monitor DOWN")
        #expect(headers["priority"]?.stringValue == "5")
        #expect(headers["tags"]?.stringValue == "rotating_light,down,prod")
        #expect(headers["click"]?.stringValue == "https://api.example.com/health")
        #expect(headers["authorization"]?.stringValue == "Bearer tk_secret")
        #expect(!result.stdout.contains("tk_secret"))
    }

    @Test("slack://, discord:// and teams:// post their services' shapes over TLS; Discord's 204 is accepted")
    func chat() throws {
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.server(named: "hooks", daysLeft: 60)
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch, tls: (cert, key))
        let ca = certificates.path("ca.pem")
        let host = server.hostPort
        let result = try run(
            "notify",
            [
                "--to", "slack://\(host)/services/T000/B000/XXXXSECRET?cafile=\(ca)",
                "--to", "discord://\(host)/api/webhooks/123/DISCORDTOKEN?cafile=\(ca)",
                "--to", "teams://\(host)/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=TEAMSSIG&cafile=\(ca)",
            ], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let deliveries = try result.records().first?["deliveries"]?.arrayValue?.compactMap(\.objectValue) ?? []
        #expect(deliveries.map { $0.string("result") } == ["delivered", "delivered", "delivered"])
        #expect(deliveries.map { $0.int("code") } == [200, 204, 200])
        for secret in ["XXXXSECRET", "DISCORDTOKEN", "TEAMSSIG"] { #expect(!result.stdout.contains(secret), "\(secret) redacted") }
        let requests = try server.log()
        #expect(requests.count == 3)
        let byPath = Dictionary(uniqueKeysWithValues: try requests.map { (String($0.string("path")!.prefix(10)), try body($0)) })
        let slack = try #require(byPath["/services/"])
        #expect(slack.string("text") == "*Monitor DOWN*: Api is not responding: HTTP 503, expected 200-399")
        #expect(slack["attachments"]?.arrayValue?.first?.objectValue?["color"] == .string("#EF4444"))
        let discord = try #require(byPath["/api/webho"])
        let embed = try #require(discord["embeds"]?.arrayValue?.first?.objectValue)
        #expect(embed.string("title") == "Monitor DOWN")
        #expect(embed.int("color") == 0xEF4444)
        #expect(embed.string("timestamp") == traceTime(10))
        let teams = try #require(byPath["/workflows"])
        #expect(teams.string("type") == "message")
        let attachment = try #require(teams["attachments"]?.arrayValue?.first?.objectValue)
        #expect(attachment.string("contentType") == "application/vnd.microsoft.card.adaptive")
        let card = try #require(attachment["content"]?.objectValue)
        #expect(card.string("type") == "AdaptiveCard")
        #expect(card["body"]?.arrayValue?.first?.objectValue?["text"] == .string("Monitor DOWN"))
        #expect(
            requests.first { $0.string("path")!.hasPrefix("/workflows") }?.string("path")?.contains("sig=TEAMSSIG") == true,
            "Teams' own query parameters are passed on")
    }

    @Test("--config reads [tags=]URL lines; --tag picks channels; a bad line is a usage error with its line")
    func config() throws {
        let scratch = try ScratchDirectory()
        let server = try webhookServer(scratch)
        let config = try scratch.write(
            "channels.conf",
            """
            # the on-call hooks
            ops,critical=json://\(server.hostPort)/ops

            dev=json://\(server.hostPort)/dev
            """)
        let result = try run("notify", ["--config", config, "--tag", "ops"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try server.log().map { $0.string("path") } == ["/ops"])
        let bad = try scratch.write("bad.conf", "json://\(server.hostPort)/ok\nwat://nowhere\n")
        let refused = try run("notify", ["--config", bad], stdin: NotifyWebhookTests.outage)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("unknown channel scheme 'wat'"))
        let missing = try run("notify", ["--to", "json://\(server.hostPort)/x?sign=github&secret=${NOT_SET_ANYWHERE}"], stdin: "")
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("the environment variable NOT_SET_ANYWHERE is not set"))
    }
}

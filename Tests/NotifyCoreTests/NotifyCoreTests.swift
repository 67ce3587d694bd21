import Testing
import VitalsKit

@testable import NotifyCore

/// Unit tests of notify's pieces; the behaviour end to end is in EndToEndTests/Notify*.
@Suite("notify core")
struct NotifyCoreTests {
    static let base = Timestamp.parse("2026-01-27T10:00:00Z")!

    func sample(_ monitor: String, _ seconds: Int64, _ status: SampleStatus) -> SampleEvent {
        SampleEvent(monitor: monitor, name: monitor, at: NotifyCoreTests.base + seconds * 1000, status: status)
    }

    @Test("mute windows: duration or end time, patterns, the end excluded; bad ones say why")
    func mutes() throws {
        let window = try MuteWindow.parse("db-*,api@2026-01-27T10:00:00Z/1h").get()
        #expect(window.covers("db-main", at: NotifyCoreTests.base))
        #expect(window.covers("api", at: NotifyCoreTests.base + 3_599_999))
        #expect(!window.covers("api", at: NotifyCoreTests.base + 3_600_000), "the end is excluded")
        #expect(!window.covers("web", at: NotifyCoreTests.base))
        let until = try MuteWindow.parse("api@2026-01-27T10:00:00Z/2026-01-27T10:30:00Z").get()
        #expect(until.end - until.start == 1_800_000)
        for bad in ["api", "@2026-01-27T10:00:00Z/1h", "api@2026-01-27T10:00:00Z", "api@soon/1h", "api@2026-01-27T10:00:00Z/forever"] {
            if case .success = MuteWindow.parse(bad) { Issue.record("'\(bad)' was accepted") }
        }
    }

    @Test("the decider: transitions per channel; a channel that failed is told separately")
    func perChannel() {
        var policy = Policy()
        policy.groupWaitMs = 1000
        let decider = Decider(policy: policy, channels: ["stdout", "hook"], monitors: [:], views: [:])
        _ = decider.add(sample("api", 0, .up))
        _ = decider.add(sample("api", 10, .down))
        let decided = decider.closeRound()
        #expect(decided.count == 1)
        #expect(decided.first?.channels == ["stdout", "hook"], "one notification, merged across channels")
        // Only stdout accepted: hook's cooldown has not started, stdout's has.
        decider.accepted(decided[0].notification, by: "stdout")
        #expect(decider.views["stdout"]?.cooldowns["api"] == NotifyCoreTests.base + 10_000)
        #expect(decider.views["hook"]?.cooldowns["api"] == nil)
        _ = decider.add(sample("api", 20, .up))
        let recovered = decider.add(sample("api", 30, .down))  // closes the round of 20
        #expect(recovered.map(\.notification.event) == [.recovered])
        #expect(recovered.first?.channels == ["stdout", "hook"])
        // Down again at 30: stdout's key api cools down until 70; hook's never started, as its
        // delivery was not accepted, so hook alone is told.
        let later = decider.closeRound()
        #expect(later.map(\.notification.event) == [.down])
        #expect(later.first?.channels == ["hook"])
    }

    @Test("a sample its monitor already had neither counts nor ends the round")
    func staleSamples() {
        let decider = Decider(policy: Policy(), channels: ["stdout"], monitors: [:], views: [:])
        _ = decider.add(sample("a", 0, .up))
        _ = decider.add(sample("b", 0, .up))
        #expect(decider.add(sample("a", 60, .down)).isEmpty)
        #expect(decider.add(sample("a", 0, .up)).isEmpty, "stale: skipped without closing the round of 60")
        #expect(decider.add(sample("b", 61, .down)).isEmpty)
        let decided = decider.closeRound()
        #expect(decided.map { $0.notification.monitors.map(\.monitor) } == [["a", "b"]])
        #expect(decider.staleSamples == 1)
    }

    @Test("notification ids are stable and differ by content")
    func ids() {
        let change = MonitorChange(monitor: "api", name: "API", status: "down", previousStatus: "up")
        let one = Notification(event: .down, grouped: false, key: "api", at: 1, monitors: [change])
        let same = Notification(event: .down, grouped: false, key: "api", at: 1, monitors: [change])
        let later = Notification(event: .down, grouped: false, key: "api", at: 2, monitors: [change])
        #expect(one.id == same.id)
        #expect(one.id != later.id)
        #expect(one.id.hasPrefix("n_") && one.id.count == 22)
    }

    @Test("channel URLs: parts, percent-escapes, references to the environment and files, redaction")
    func channelURLs() throws {
        let parsed = try ChannelURL(
            "mailto://alerts%40example.com:${PW}@smtp.example.com:2525/x?to=a@b.c&tls=none",
            environment: ["PW": "p@ss:word/?"])
        #expect(parsed.user == "alerts@example.com")
        #expect(parsed.password == "p@ss:word/?")
        #expect(parsed.host == "smtp.example.com")
        #expect(parsed.port == 2525)
        #expect(parsed.parameter("to") == "a@b.c")
        #expect(parsed.display == "mailto://alerts%40example.com:${PW}@smtp.example.com:2525/x?to=a@b.c&tls=none")
        #expect(!parsed.hasLiteralSecret)
        let literal = try ChannelURL("json://u:hunter2@h/p?token=abc&sign=github&key_id=K", environment: [:])
        #expect(literal.display == "json://u:***@h/p?token=***&sign=github&key_id=K")
        #expect(literal.hasLiteralSecret)
        #expect(throws: UsageError.self) { try ChannelURL("json://h/p?secret=${MISSING}", environment: [:]) }
        #expect(throws: UsageError.self) { try ChannelURL("no-scheme", environment: [:]) }
        #expect(throws: UsageError.self) { try ChannelURL("json://h:99999/p", environment: [:]) }
        #expect(ChannelURL.redact("slack://hooks.slack.com/services/T/B/X") == "slack://hooks.slack.com/services/T/B/X")
        #expect(maskLastSegment("slack://hooks.slack.com/services/T/B/XSECRET") == "slack://hooks.slack.com/services/T/B/***")
    }

    @Test("Retry-After dates, RFC 5322 dates and encoded subjects")
    func dates() {
        // RFC 9110's example date; 784111777 s since the epoch (date -d 'Sun, 06 Nov 1994 08:49:37 GMT' +%s).
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777_000)
        #expect(HTTPDate.parse("yesterday") == nil)
        // IMF-fixdate's fields are 2 digits of day, 4 of year, hour 00-23, minute 00-59, second
        // 00-60 (RFC 9110 5.6.7): anything else is no date, and a server's huge year is no crash.
        #expect(HTTPDate.parse("Sun, 06 Nov 99999999999999 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 9999999999999999 Nov 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 24:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:60:00 GMT") == nil)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799_000)
        // 2026-01-27 was a Tuesday (cal 1 2026).
        #expect(MailMessage.rfc5322Date(NotifyCoreTests.base + 5_000) == "Tue, 27 Jan 2026 10:00:05 +0000")
        #expect(MailMessage.encodedWord("Monitor DOWN") == "Monitor DOWN")
        // "Café" in UTF-8 is 43 61 66 C3 A9: Base64 "Q2Fmw6k=".
        #expect(MailMessage.encodedWord("Café") == "=?UTF-8?B?Q2Fmw6k=?=")
    }

    @Test("the push payload stays within 4 KB however long the text")
    func payloadLimit() throws {
        let long = String(repeating: "x", count: 10_000)
        let change = MonitorChange(monitor: "7", name: long, status: "down", previousStatus: "up", message: long)
        let notification = Notification(event: .down, grouped: false, key: "7", at: 0, monitors: [change])
        let payload = APNsPayload.encode(notification, sound: "default", badge: 1)
        #expect(payload.count <= 4096)
        let object = try #require(try JSONParser.parse(payload).objectValue)
        #expect(object["monitor_id"] == .number("7"))
        #expect(APNsChannel.collapseID(String(repeating: "k", count: 100)).utf8.count == 64)
        // SHA-256("a") = ca978112 ca1b bdca fac2 31b39a23dc4d...: the first 32 hex digits, with the version
        // nibble (13th) set to 4 and the variant nibble (17th) to 8: a stable apns-id per notification.
        #expect(APNsChannel.uuid("a") == "CA978112-CA1B-4DCA-8AC2-31B39A23DC4D")
        #expect(APNsChannel.uuid("b") != APNsChannel.uuid("a"))
        #expect(APNsChannel.uuid("a").split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
    }

    @Test("device tokens: hexadecimal, lowercased; other text refused")
    func deviceTokens() throws {
        #expect(try DevicesCommand.normalized("ABCDEF0123456789") == "abcdef0123456789")
        #expect(throws: UsageError.self) { try DevicesCommand.normalized("xyz") }
        #expect(throws: UsageError.self) { try DevicesCommand.normalized("abc") }
    }
}

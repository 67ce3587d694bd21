import Foundation
import Testing
import VitalsKit

/// notify's mail and command channels: SMTP against Debian's aiosmtpd (STARTTLS, implicit
/// TLS, AUTH), sendmail:// and exec:// against commands the tests write.
@Suite("notify: mailto, mailtos, sendmail, exec", .serialized, .hangGuard(minutes: 3))
struct NotifyMailTests {
    static let certificates: TestCertificates? = try? TestCertificates()

    func smtp(_ scratch: ScratchDirectory, _ arguments: [String]) throws -> PythonPeer {
        try PythonPeer("smtp_server.py", ["--log", scratch.path("log.ndjson")] + arguments, scratch: scratch)
    }

    func delivery(_ result: RunResult) throws -> JSONObject {
        try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
    }

    @Test("mailto://: STARTTLS, then the login (which the server saw), then an RFC 5322 message")
    func startTLSWithLogin() throws {
        let certs = try #require(NotifyMailTests.certificates)
        let (cert, key) = try certs.server(named: "smtp", daysLeft: 60)
        let scratch = try ScratchDirectory()
        let server = try smtp(scratch, ["--starttls", cert, key, "--auth", "alice:wonder land"])
        let result = try run(
            "notify",
            [
                "--to",
                "mailto://alice:${SMTP_PASSWORD}@\(server.hostPort)?to=ops@example.com,oncall@example.com&from=vitals@example.com&cafile=\(certs.path("ca.pem"))",
            ],
            stdin: NotifyWebhookTests.outage, environment: ["SMTP_PASSWORD": "wonder land"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try delivery(result).string("result") == "delivered")
        #expect(try delivery(result).int("code") == 250)
        let message = try #require(try server.log().first)
        #expect(message.string("login") == "alice", "the server saw the login")
        #expect(message["tls"] == .bool(true))
        #expect(message.string("mail_from") == "vitals@example.com")
        #expect(message["rcpt_tos"] == .array([.string("ops@example.com"), .string("oncall@example.com")]))
        let data = try #require(message.string("data"))
        #expect(data.contains("Subject: Monitor DOWN: Api is not responding\r\n"))
        #expect(data.contains("From: vitals@example.com\r\nTo: ops@example.com, oncall@example.com\r\n"))
        #expect(
            data.range(of: #"Date: [A-Z][a-z]{2}, \d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d \+0000\r\n"#, options: .regularExpression)
                != nil)
        #expect(data.contains("Message-ID: <n_"))
        #expect(data.contains("Content-Type: text/plain; charset=utf-8\r\n"))
        #expect(data.contains("\r\n\r\nMonitor DOWN\r\n"), "the body follows the header after one empty line")
        #expect(!result.stdout.contains("wonder land"))
    }

    @Test("mailtos://: TLS from the first byte, with the login")
    func implicitTLS() throws {
        let certs = try #require(NotifyMailTests.certificates)
        let (cert, key) = try certs.server(named: "smtps", daysLeft: 60)
        let scratch = try ScratchDirectory()
        let server = try smtp(scratch, ["--implicit", cert, key, "--auth", "bob:secret"])
        let result = try run(
            "notify",
            [
                "--to",
                "mailtos://bob:${file:\(try scratch.write("password", "secret\n"))}@\(server.hostPort)?to=ops@example.com&cafile=\(certs.path("ca.pem"))",
            ],
            stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        let message = try #require(try server.log().first)
        #expect(message.string("login") == "bob")
        #expect(message["tls"] == .bool(true))
    }

    @Test("a server without STARTTLS gets nothing unless tls=none; one without AUTH gets nothing when a login was asked for")
    func refusals() throws {
        let scratch = try ScratchDirectory()
        let plain = try smtp(scratch, [])
        let refused = try run("notify", ["--to", "mailto://\(plain.hostPort)?to=ops@example.com"], stdin: NotifyWebhookTests.outage)
        #expect(refused.status == 2)
        #expect(try delivery(refused).string("result") == "failed")
        #expect(try delivery(refused).string("error")?.contains("does not offer STARTTLS") == true)
        #expect(try plain.log().isEmpty, "nothing was sent in clear text")
        let clear = try run("notify", ["--to", "mailto://\(plain.hostPort)?to=ops@example.com&tls=none"], stdin: NotifyWebhookTests.outage)
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(try plain.log().count == 1)
        #expect(try plain.log().first?["tls"] == .bool(false))
        // STARTTLS offered, AUTH not: libcurl would skip the login silently; notify stops first.
        let certs = try #require(NotifyMailTests.certificates)
        let (cert, key) = try certs.server(named: "noauth", daysLeft: 60)
        let scratch2 = try ScratchDirectory()
        let noAuth = try smtp(scratch2, ["--starttls", cert, key])
        let unauthenticated = try run(
            "notify", ["--to", "mailto://carol:${P}@\(noAuth.hostPort)?to=ops@example.com&cafile=\(certs.path("ca.pem"))"],
            stdin: NotifyWebhookTests.outage, environment: ["P": "pw"])
        #expect(unauthenticated.status == 2)
        #expect(try delivery(unauthenticated).string("error")?.contains("did not offer AUTH") == true)
        #expect(try noAuth.log().isEmpty)
    }

    @Test("sendmail:// hands the message to the local mail command; exit 75 is retried")
    func sendmail() throws {
        let scratch = try ScratchDirectory()
        let fake = try scratch.write(
            "sendmail",
            """
            #!/bin/sh
            # A stand-in for sendmail(8): keeps its arguments and the message; fails once with EX_TEMPFAIL when asked.
            printf '%s\\n' "$@" > "\(scratch.path("arguments"))"
            cat > "\(scratch.path("message"))"
            if [ -e "\(scratch.path("fail-once"))" ]; then rm "\(scratch.path("fail-once"))"; exit 75; fi
            exit 0
            """)
        chmod(fake, 0o755)
        _ = try scratch.write("fail-once", "")
        let result = try run(
            "notify", ["--to", "sendmail://\(fake)?to=ops@example.com&from=vitals@example.com"], stdin: NotifyWebhookTests.outage)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try delivery(result).int("attempts") == 2)
        #expect(
            try String(contentsOfFile: scratch.path("arguments"), encoding: .utf8) == "-oi\n-f\nvitals@example.com\n--\nops@example.com\n")
        #expect(
            try String(contentsOfFile: scratch.path("message"), encoding: .utf8).contains(
                "Subject: Monitor DOWN: Api is not responding\r\n"))
    }

    @Test("exec:// runs the command without a shell: the notification JSON on stdin, arguments as given, VITALS_* variables")
    func exec() throws {
        let scratch = try ScratchDirectory()
        let handler = try scratch.write(
            "handler",
            """
            #!/bin/sh
            cat > "\(scratch.path("stdin"))"
            printf '%s\\n' "$@" > "\(scratch.path("arguments"))"
            printf '%s|%s|%s\\n' "$VITALS_EVENT" "$VITALS_MONITOR" "$VITALS_TITLE" > "\(scratch.path("environment"))"
            """)
        chmod(handler, 0o755)
        let result = try run(
            "notify", ["--to", "exec://\(handler)?arg=one%20word&arg=$(touch%20\(scratch.path("pwned")))"], stdin: NotifyWebhookTests.outage
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: scratch.path("arguments"), encoding: .utf8) == "one word\n$(touch \(scratch.path("pwned")))\n")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("pwned")), "no shell saw the arguments")
        #expect(try String(contentsOfFile: scratch.path("environment"), encoding: .utf8) == "down|api|Monitor DOWN\n")
        let input = try String(contentsOfFile: scratch.path("stdin"), encoding: .utf8)
        guard case .object(let payload) = try JSONParser.parse(input.trimmingCharacters(in: .newlines)) else {
            throw TestFailure("stdin: \(input)")
        }
        #expect(payload.string("type") == "notification")
        #expect(payload.string("id") == (try result.records().first?.string("id")))
        // A command that fails (not 75) is refused for good; one that cannot start says why.
        let failing = try run("notify", ["--to", "exec:///bin/false"], stdin: NotifyWebhookTests.outage)
        #expect(failing.status == 2)
        #expect(try delivery(failing).int("code") == 1)
        let missing = try run("notify", ["--to", "exec:///no/such/command"], stdin: NotifyWebhookTests.outage)
        #expect(try delivery(missing).string("error")?.contains("cannot run /no/such/command") == true)
    }
}

/// desktop:// against a real notification daemon: dunst on Xvfb in a D-Bus session
/// (Fixtures/notify/desktop_session.sh records what dunst shows).
@Suite("notify: desktop notifications", .serialized, .hangGuard(minutes: 2))
struct NotifyDesktopTests {
    @Test("desktop:// shows the title and text through notify-send, as arguments: nothing is interpreted by a shell")
    func desktop() throws {
        let scratch = try ScratchDirectory()
        let name = #"Shop $(touch PWNED) "quoted" `x`"#
        let trace = try scratch.write(
            "trace.ndjson",
            [
                sampleLine("shop", 0, "up", name: name),
                sampleLine("shop", 10, "down", name: name, message: "HTTP 503; rm -rf nothing"),
            ].joined(separator: "\n") + "\n")
        let session = Binaries.fixtures.appendingPathComponent("notify/desktop_session.sh").path
        let result = try runProcess(
            session, [scratch.url.path, Binaries.path("notify"), "--to", "desktop://", trace], stdin: "",
            environment: toolEnvironment(), directory: scratch.url)
        #expect(result.status == 0, "\(result.stderr)")
        let shown = try String(contentsOfFile: scratch.path("shown"), encoding: .utf8)
        #expect(shown == "vitals|Monitor DOWN|\(name) is not responding: HTTP 503; rm -rf nothing|CRITICAL\n")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("PWNED")))
        let delivery = try #require(try result.records().first?["deliveries"]?.arrayValue?.first?.objectValue)
        #expect(delivery.string("result") == "delivered")
    }
}

import Foundation
import Testing
import VitalsKit

@testable import NotifyCore

/// Channel URLs as notify(1), CHANNELS and SECRETS describe them: the parts, `${NAME}` and
/// `${file:PATH}` expanded after the URL is split, and the name a channel goes by in records,
/// diagnostics and the state, with literal secrets as `***` and references kept.
@Suite("channel URLs: parsing")
struct ChannelURLParsingTests {
    @Test("scheme lowercased; host, port and path; parameter names lowercased, values decoded, repeats kept")
    func parts() throws {
        let url = try ChannelURL(
            "JSONS://Hooks.Example.com:8443/a%20b/c?Header=X-One:%201&header=X-Two:%202&Tags=a%2Cb",
            environment: [:])
        #expect(url.scheme == "jsons")
        #expect(url.host == "Hooks.Example.com", "the host as written (exec:// names are case-sensitive)")
        #expect(url.port == 8443)
        #expect(url.path == "/a b/c")
        #expect(url.rawPath == "/a%20b/c")
        #expect(url.parameters("header") == ["X-One: 1", "X-Two: 2"])
        #expect(url.parameter("tags") == "a,b")
        #expect(url.authority() == "Hooks.Example.com:8443")
    }

    @Test("no port: the scheme's default when one is given; IPv6 hosts in brackets")
    func ports() throws {
        let plain = try ChannelURL("ntfys://ntfy.sh/alerts", environment: [:])
        #expect(plain.port == nil)
        #expect(plain.authority() == "ntfy.sh")
        #expect(plain.authority(defaultPort: 443) == "ntfy.sh:443")
        let six = try ChannelURL("json://[::1]:9093/api/v2/alerts", environment: [:])
        #expect(six.host == "::1")
        #expect(six.port == 9093)
        #expect(six.authority() == "[::1]:9093")
        #expect(try ChannelURL("json://h:65535/p", environment: [:]).port == 65_535)
        for bad in ["json://h:0/p", "json://h:65536/p", "json://h:http/p", "json://[::1]:70000/p"] {
            #expect(throws: UsageError.self, "\(bad)") { try ChannelURL(bad, environment: [:]) }
        }
    }

    @Test("${NAME} may hold any character: it is put in after the URL is split")
    func references() throws {
        let url = try ChannelURL(
            "json://${USER_NAME}:${PW}@h/${PATH_PART}?secret=${S}",
            environment: ["USER_NAME": "me", "PW": "a/b?c@d:e#f", "PATH_PART": "x/y", "S": "s&t=u"])
        #expect(url.user == "me")
        #expect(url.password == "a/b?c@d:e#f")
        #expect(url.host == "h")
        #expect(url.path == "/x/y")
        #expect(url.parameter("secret") == "s&t=u")
        #expect(!url.hasLiteralSecret)
        #expect(url.display == "json://${USER_NAME}:${PW}@h/${PATH_PART}?secret=${S}")
    }

    @Test("${file:PATH} reads a file, without its last newline")
    func fileReference() throws {
        let name = "notify-secret-\(ProcessInfo.processInfo.processIdentifier)"
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "line one\nhunter2\n".write(toFile: path, atomically: true, encoding: .utf8)
        let url = try ChannelURL("jsons://h/p?secret=${file:\(path)}", environment: [:])
        #expect(url.parameter("secret") == "line one\nhunter2", "one trailing newline dropped, the inner one kept")
        #expect(url.display == "jsons://h/p?secret=${file:\(path)}")
        #expect(throws: UsageError.self) { try ChannelURL("jsons://h/p?secret=${file:\(path).missing}", environment: [:]) }
    }

    @Test("a reference that cannot be read is a usage error naming the redacted URL")
    func badReferences() {
        #expect(throws: UsageError.self) { try ChannelURL("json://h/p?token=${UNSET}", environment: [:]) }
        #expect(throws: UsageError.self) { try ChannelURL("json://h/p?token=${OPEN", environment: [:]) }
        do {
            _ = try ChannelURL("json://u:hunter2@h/p?x=${UNSET}", environment: [:])
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("UNSET"))
            #expect(!error.message.contains("hunter2"), "the message names the URL redacted")
        }
    }

    @Test("flags: yes, true, 1 and on; the default otherwise")
    func flags() throws {
        let url = try ChannelURL("json://h/p?insecure=YES&a=on&b=1&c=no&d=", environment: [:])
        #expect(url.flag("insecure"))
        #expect(url.flag("a") && url.flag("b"))
        #expect(!url.flag("c"))
        #expect(!url.flag("d"))
        #expect(url.flag("absent", default: true))
    }

    @Test("parameters that are not notify's own are passed on, as written")
    func passthrough() throws {
        let url = try ChannelURL("ntfys://ntfy.sh/t?tags=prod&Priority=5&x=a%2Fb&flag&cafile=/ca.pem", environment: [:])
        #expect(url.passthroughQuery(excluding: HTTPSEndpoint.ownParameters) == "?x=a%2Fb&flag")
        let none = try ChannelURL("json://h/p?format=alertmanager", environment: [:])
        #expect(none.passthroughQuery(excluding: WebhookChannel.ownParameters) == "")
    }
}

@Suite("channel URLs: redaction")
struct ChannelURLRedactionTests {
    @Test("literal passwords and secret-looking values are ***; references are kept")
    func redact() {
        // notify(1), SECRETS: "literal passwords and secret-looking parameters (token, key, secret,
        // password, sig, ...) as ***".
        #expect(ChannelURL.redact("json://u:p@ss@h/p") == "json://u:***@h/p", "the last @ ends the user info")
        #expect(ChannelURL.redact("json://u:${PW}@h/p") == "json://u:${PW}@h/p")
        #expect(ChannelURL.redact("json://u@h/p") == "json://u@h/p", "a user alone is no secret")
        #expect(
            ChannelURL.redact("teams://x.logic.azure.com/w?api-version=2016-06-01&sv=1.0&sig=abc")
                == "teams://x.logic.azure.com/w?api-version=2016-06-01&sv=1.0&sig=***")
        #expect(
            ChannelURL.redact("ntfys://ntfy.sh/t?Token=tk_1&AuthHeader=x&apikey=k&session_id=s")
                == "ntfys://ntfy.sh/t?Token=***&AuthHeader=***&apikey=***&session_id=***")
        #expect(ChannelURL.redact("ntfys://ntfy.sh/t?token=${T}") == "ntfys://ntfy.sh/t?token=${T}")
        // notify's own settings whose names look secret are not: the signing scheme, the key's id
        // and the path of the key file.
        #expect(
            ChannelURL.redact("apns://production/com.example.app?team=T1&key_id=K1&key_file=/etc/AuthKey.p8")
                == "apns://production/com.example.app?team=T1&key_id=K1&key_file=/etc/AuthKey.p8")
        #expect(ChannelURL.redact("jsons://h/p?sign=github&secret=s3") == "jsons://h/p?sign=github&secret=***")
        #expect(
            ChannelURL.redact("mailto://smtp.example.com?to=ops@example.com") == "mailto://smtp.example.com?to=ops@example.com",
            "an @ in the query is no user info")
    }

    @Test("a literal secret is noticed (notify warns about it); references and notify's own settings are not")
    func literalSecrets() throws {
        #expect(try ChannelURL("json://u:pw@h/p", environment: [:]).hasLiteralSecret)
        #expect(try ChannelURL("json://h/p?sig=abc", environment: [:]).hasLiteralSecret)
        #expect(try !ChannelURL("json://u:${PW}@h/p", environment: ["PW": "x"]).hasLiteralSecret)
        #expect(try !ChannelURL("json://u@h/p?sign=github&key_id=K&key_file=/k.p8", environment: [:]).hasLiteralSecret)
        #expect(try !ChannelURL("json://h/p?token=", environment: [:]).hasLiteralSecret, "an empty value holds nothing")
    }

    @Test("the parsed URL's display is the redaction of the text as written")
    func display() throws {
        let url = try ChannelURL("  jsons://u:pw@h/p?token=abc&x=1  ", environment: [:])
        #expect(url.display == "jsons://u:***@h/p?token=***&x=1")
        #expect(url.password == "pw")
        #expect(url.parameter("token") == "abc")
    }
}

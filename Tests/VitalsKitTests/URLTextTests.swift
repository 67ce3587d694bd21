import Testing
@testable import VitalsKit

@Suite("URL splitting")
struct URLTextTests {
    @Test("parts of a full URL")
    func full() {
        let parts = URLText("HTTPS://user:pw@Example.COM:8443/a/b?x=1&token=t#frag")
        #expect(parts.scheme == "https")
        #expect(parts.userInfo == "user:pw")
        #expect(parts.hostPort == "Example.COM:8443")
        #expect(parts.host == "example.com")
        #expect(parts.port == 8443)
        #expect(parts.path == "/a/b")
        #expect(parts.query == "x=1&token=t")
        #expect(parts.redactedQuery == "x=1&token=***")
        #expect(parts.redactedUserInfo == "user:***")
        #expect(parts.fragment == "frag")
    }

    @Test("IPv6 literals, no path, no scheme")
    func edges() {
        let v6 = URLText("http://[::1]:80")
        #expect(v6.host == "::1" && v6.port == 80 && v6.path == "")
        let bare = URLText("example.com/x")
        #expect(bare.scheme == nil && bare.host == "example.com" && bare.path == "/x")
        #expect(URLText("1http://x").scheme == nil, "a scheme starts with a letter")
        #expect(URLText("a@b@host/").host == "host", "the last @ ends the user info")
    }
}

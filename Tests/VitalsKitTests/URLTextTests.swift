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

@Suite("percent-decoding and encoding, from RFC 3986")
struct PercentCodingTests {
    @Test("%XX is a byte in either case; any other % stays as written (RFC 3986 §2.1)")
    func decoding() {
        #expect(URLText.percentDecoded("a%20b%2Fc%2fd") == "a b/c/d")
        #expect(URLText.percentDecoded("%+1%G0%4%") == "%+1%G0%4%", "not two hexadecimal digits: kept, never byte 0x01")
        #expect(URLText.percentDecoded("%E2%82%AC") == "€")
        #expect(URLText.percentDecoded("a+b") == "a+b")
        #expect(URLText.percentDecoded("a+b%2B", plusAsSpace: true) == "a b+")
        #expect(URLText.percentDecodedBytes(Array("%00%FF".utf8)) == [0x00, 0xFF])
        #expect(URLText.percentDecoded("%FF") == "\u{FFFD}", "bytes that are not UTF-8 become U+FFFD in text")
    }

    @Test("encoding keeps the unreserved characters (§2.3) and writes the rest as upper-case %XX (§2.1)")
    func encoding() {
        #expect(URLText.percentEncoded("AZaz09-._~") == "AZaz09-._~")
        #expect(URLText.percentEncoded("a b/c?d=€") == "a%20b%2Fc%3Fd%3D%E2%82%AC")
        #expect(URLText.percentDecoded(URLText.percentEncoded("any text: 100% & more")) == "any text: 100% & more")
    }
}

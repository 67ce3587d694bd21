import FixtureServer
import Foundation
import Testing
import VitalsKit

/// probe-http against the seeds' own words (issue 15): isitup's HEAD-then-GET, OnlineTracker's
/// monitor fields, and what a hostile server's answer is called.
extension ProbeHTTPTests {
    @Test("expected_body_hash accepts MD5: OnlineTracker's servers store the body's MD5 in 32 hex digits")
    func expectedBodyHashAcceptsMD5() throws {
        // The MD5 md5sum computes for the fixture's body: the hash an OnlineTracker server would have stored.
        let digest = try shell("printf '%s' \"$BODY\" | md5sum | cut -d' ' -f1", environment: ["BODY": FixtureServer.fixedBody])
        let md5 = digest.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(md5.count == 32)
        let (match, _) = try probeOne(#"{"url":"\#(url("/fixed"))","config":{"expected_body_hash":"\#(md5.uppercased())"}}"#)
        #expect(match.string("status") == "up", "\(match.string("message") ?? "")")
        let wrong = String(repeating: "0", count: 32)
        let (mismatch, _) = try probeOne(#"{"url":"\#(url("/fixed"))","expected_body_hash":"\#(wrong)"}"#)
        #expect(mismatch.string("status") == "down")
        #expect(mismatch.string("reason") == "body_hash")
        #expect(mismatch.string("message") == "Response body changed: md5 \(md5.prefix(12))..., expected 000000000000...")
        // Neither 64 nor 32 hex digits is refused with both lengths named.
        let bad = try run("probe-http", [], stdin: #"{"url":"\#(url("/fixed"))","expected_body_hash":"abc"}"# + "\n")
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("SHA-256 in 64 hex digits or an MD5 in 32"))
    }





    @Test("a response with one header line of 4 MB is too_large, in words that say what the server sent")
    func responseWithOneHeaderLineOf4MBIsTooLarge() throws {
        let (sample, _) = try probeOne(#"{"url":"\#(url("/huge-header-line"))","timeout_seconds":5}"#)
        #expect(sample.string("status") == "error")
        #expect(sample.string("reason") == "too_large", "\(sample.string("message") ?? "")")
        let message = sample.string("message") ?? ""
        #expect(message.hasPrefix("The server sent a response header line longer than "), "\(message)")
        #expect(!message.contains("memory"), "\(message)")
        // Many normal lines (4096 of 1 KB each) pass the man page's 256 KiB of headers.
        let (many, _) = try probeOne(#"{"url":"\#(url("/huge-headers"))","timeout_seconds":5}"#)
        #expect(many.string("status") == "error")
        #expect(many.string("reason") == "too_large")
        #expect(many.string("message")?.hasPrefix("The server sent more than 256 KiB of response headers") == true, "\(many.string("message") ?? "")")
    }
}


import Testing
import VitalsKit

@testable import StoreSamplesCore

/// Reads a sample and hands it to `body` while its bytes are alive (a StorableSample points into them).
func withSample<R>(_ text: String, _ body: (StorableSample) throws -> R) throws -> R {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBufferPointer { buffer in
        guard let sample = try StorableSample.read(buffer) else { throw SampleProblem.noType }
        return try body(sample)
    }
}

func readSample(_ text: String) throws {
    try withSample(text) { _ in }
}

@Suite("storable samples")
struct StorableSampleTests {
    @Test("the stored columns are read from a probe-http sample")
    func columns() throws {
        try withSample(
            #"{"type":"sample","monitor":"api","name":"A\"PI","kind":"https","target":"https://a/","at":"2026-01-27T10:30:00.123Z","method":"HEAD","status":"degraded","reason":"latency","message":"High latency: 312ms","code":200,"latency_ms":312.5,"tls_expiry_days":40,"agent":"office","check_interval":60}"#
        ) { sample in
            #expect(sample.monitor == "api")
            #expect(sample.name == "A\"PI")
            #expect(sample.at == 1_769_509_800_123)
            #expect(sample.status == .degraded)
            #expect(sample.reason == "latency")
            #expect(sample.code == 200)
            #expect(sample.latencyMs == 312.5)
            #expect(sample.tlsExpiryDays == 40)
            #expect(sample.agent == "office")
            #expect(sample.checkInterval == 60)
            #expect(sample.message == "High latency: 312ms")
        }
    }

    @Test(
        "what is not a storable sample says why, in the shared wording",
        arguments: [
            (#"{"monitor":"a","at":"2026-01-27T10:30:00Z","status":"up"}"#, "record has no 'type'"),
            (#"{"type":"sample","at":"2026-01-27T10:30:00Z","status":"up"}"#, "sample has no 'monitor'"),
            (#"{"type":"sample","monitor":"a","status":"up"}"#, "sample has no 'at'"),
            (#"{"type":"sample","monitor":"a","at":"yesterday","status":"up"}"#, #"sample 'at' is "yesterday"; expected an RFC 3339 time"#),
            (#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z"}"#, "sample has no 'status'"),
            (
                #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"healthy"}"#,
                #"sample 'status' is "healthy"; expected up, degraded, down, error or unknown"#
            ),
            (
                #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","latency_ms":"fast"}"#,
                #"sample 'latency_ms' is "fast"; expected a number, 0 or more, or null"#
            ),
            (
                #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","code":200.5}"#,
                "sample 'code' is 200.5; expected a whole number or null"
            ),
            (
                #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","name":7}"#,
                "sample 'name' is 7; expected a string or null"
            ),
            (
                #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","speed_mbps":-1}"#,
                "sample 'speed_mbps' is -1; expected a number, 0 or more, or null"
            ),
        ])
    func problems(line: String, message: String) {
        do {
            try readSample(line)
            Issue.record("accepted: \(line)")
        } catch let problem as SampleProblem {
            #expect(problem.message == message)
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("a record of another type is not stored and is no problem")
    func otherType() throws {
        let bytes = Array(#"{"type":"target","url":"x"}"#.utf8)
        let sample = try bytes.withUnsafeBufferPointer { try StorableSample.read($0) }
        #expect(sample == nil)
    }

    @Test("the client's vocabulary: error is down, tcp is ping")
    func vocabulary() {
        #expect(Views.clientStatus(.error) == "down")
        #expect(Views.clientStatus(nil) == "unknown")
        #expect(Views.clientType("tcp") == "ping")
        #expect(Views.clientType("https") == "https")
        #expect(Views.clientType(nil) == "http")
    }

    @Test("CSV quoting follows RFC 4180")
    func csv() {
        #expect(CSVExport.quote("plain") == "plain")
        #expect(CSVExport.quote("a, \"b\"") == "\"a, \"\"b\"\"\"")
    }
}

import Testing
@testable import StoreSamplesCore
import VitalsKit

/// Reads a sample and hands it to `body` while its bytes are alive (a SampleLine points into them).
func withSample<R>(_ text: String, _ body: (SampleLine) throws -> R) throws -> R {
    let bytes = Array(text.utf8)
    return try bytes.withUnsafeBufferPointer { try body(try SampleLine.read($0)) }
}

func readSample(_ text: String) throws {
    try withSample(text) { _ in }
}

@Suite("sample lines")
struct SampleLineTests {
    @Test("the stored columns are read from a probe-http sample")
    func columns() throws {
        try withSample(#"{"type":"sample","monitor":"api","name":"A\"PI","kind":"https","target":"https://a/","at":"2026-01-27T10:30:00.123Z","method":"HEAD","status":"degraded","reason":"latency","message":"High latency: 312ms","code":200,"latency_ms":312.5,"tls_expiry_days":40,"agent":"office","check_interval":60}"#) { sample in
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

    @Test("what is not a storable sample says why", arguments: [
        (#"{"type":"target","url":"x"}"#, "a 'target' record is not a sample; only samples are stored"),
        (#"{"monitor":"a","at":"2026-01-27T10:30:00Z","status":"up"}"#, #"record has no 'type' (a sample has "type":"sample")"#),
        (#"{"type":"sample","at":"2026-01-27T10:30:00Z","status":"up"}"#, "sample has no 'monitor'"),
        (#"{"type":"sample","monitor":"a","status":"up"}"#, "sample has no 'at'"),
        (#"{"type":"sample","monitor":"a","at":"yesterday","status":"up"}"#, "sample 'at' is not an RFC 3339 time: 'yesterday'"),
        (#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z"}"#, "sample has no 'status'"),
        (#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"healthy"}"#, "sample 'status' must be up, degraded, down, error or unknown, not 'healthy'"),
        (#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","latency_ms":"fast"}"#, "field 'latency_ms' must be a number"),
    ])
    func problems(line: String, message: String) {
        do {
            try readSample(line)
            Issue.record("accepted: \(line)")
        } catch let problem as SampleLine.Problem {
            #expect(problem.message == message)
        } catch {
            Issue.record("\(error)")
        }
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

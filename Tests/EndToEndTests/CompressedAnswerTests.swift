import Foundation
import Testing

/// Issue 39, item 2: nginx compresses the API's JSON and the Prometheus text for a client that
/// asks (Accept-Encoding: gzip, as the app's URLSession does), and the app's models still read
/// what such a client decodes: the very bytes of the uncompressed answer.
@Suite("compressed answers through nginx", .serialized)
final class CompressedAnswerTests {
    let scratch: ScratchDirectory
    let certificates: TestCertificates

    init() throws {
        scratch = try ScratchDirectory()
        certificates = try TestCertificates()
    }

    /// The raw bytes of an answer to a client that asks for gzip and does not decode it.
    func rawBytes(_ url: String) throws -> [UInt8] {
        let file = scratch.path("raw-\(UUID().uuidString.prefix(8))")
        let result = try runProcess(
            "/usr/bin/env",
            ["curl", "-sS", "--max-time", "30", "--cacert", certificates.path("ca.pem"), "-H", "Accept-Encoding: gzip", "-o", file, url],
            stdin: "", environment: toolEnvironment())
        #expect(result.status == 0, "\(result.stderr)")
        return Array((try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data())
    }

    @Test("with Accept-Encoding: gzip the JSON views and /metrics come gzipped, decode to the same bytes, and the app's models read them")
    func onlineTrackerCompresses() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        // 40 monitors, a few hours each: views of several KB, well past gzip_min_length (1 KB).
        let db = scratch.path("vitals.db")
        let now = Int(Date().timeIntervalSince1970) / 60 * 60
        var lines: [String] = []
        for monitor in 0..<40 {
            for step in 1...12 {
                let at = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(now - step * 900)))
                let status = (monitor + step) % 17 == 0 ? "down" : "up"
                lines.append(
                    #"{"type":"sample","monitor":"m\#(monitor)","name":"Monitor \#(monitor)","kind":"https","at":"\#(at)","status":"\#(status)","latency_ms":\#(40 + monitor + step)}"#
                )
            }
        }
        #expect(try run("store-samples", ["--db", db, "-q"], stdin: lines.joined(separator: "\n") + "\n").status == 0)
        let server = try certificates.server(named: "api", daysLeft: 30)
        let handle = try ServeHandle(site: "onlinetracker", ["--cert", server.cert, "--key", server.key, "--db", db], scratch: scratch)
        let base = "https://127.0.0.1:\(handle.port)"
        let ca = certificates.path("ca.pem")
        var compressed: [String: String] = [:]
        for path in ["/api/status/overview", "/api/monitors", "/api/monitors/1", "/api/monitors/1/history?hours=24", "/metrics", "/health"]
        {
            let plain = try fetch(base + path, caFile: ca)
            let asked = try fetch(base + path, caFile: ca, extra: ["--compressed"])
            #expect(plain.status == 200 && asked.status == 200, "\(path): \(plain.status) \(asked.status)")
            #expect(plain.headers["content-encoding"] == nil, "\(path): not compressed for a client that does not ask")
            // Small answers (/health, one monitor) go as they are: gzip_min_length 1024.
            let large = plain.body.utf8.count >= 1024
            #expect(
                asked.headers["content-encoding"] == (large ? "gzip" : nil), "\(path): \(plain.body.utf8.count) bytes, \(asked.headers)")
            #expect(asked.headers["vary"] == (large ? "Accept-Encoding" : nil), "\(path): \(asked.headers)")
            #expect(asked.body == plain.body, "\(path): the decoded answer is the uncompressed one")
            compressed[path] = asked.body
            if large {
                // On the wire: a gzip stream (1f 8b), smaller than the answer.
                let raw = try rawBytes(base + path)
                #expect(raw.starts(with: [0x1f, 0x8b]) && raw.count < plain.body.utf8.count, "\(path): \(raw.count) bytes on the wire")
            }
        }
        let overview = try decode(OTStatusOverview.self, compressed["/api/status/overview"] ?? "")
        #expect(overview.totalMonitors == 40 && overview.monitors.count == 40)
        let monitors = try decode([OTMonitor].self, compressed["/api/monitors"] ?? "")
        #expect(monitors.count == 40)
        let history = try decode([OTStatusHistoryPoint].self, compressed["/api/monitors/1/history?hours=24"] ?? "")
        #expect(!history.isEmpty)
        #expect(compressed["/metrics"]?.contains("# TYPE") == true)
    }
}

import Foundation
import Testing
import VitalsKit

/// A Python test peer (Fixtures/notify/*.py) run with Debian's /usr/bin/python3, which sees
/// the python3-* packages scripts/test installs. It prints its URL on its first line; reading
/// that line is the wait.
final class PythonPeer {
    let process: Spawned
    let url: String
    let scratch: ScratchDirectory

    init(_ script: String, _ arguments: [String], scratch: ScratchDirectory, environment: [String: String] = [:]) throws {
        self.scratch = scratch
        process = try Spawned(
            ["/usr/bin/python3", Binaries.fixtures.appendingPathComponent("notify/" + script).path] + arguments,
            environment: toolEnvironment(environment), error: .file(scratch.path("peer-stderr")))
        url = process.output.map(readFirstLine) ?? ""
        guard url.contains("://") else {
            let problem = (try? String(contentsOfFile: scratch.path("peer-stderr"), encoding: .utf8)) ?? ""
            throw TestFailure("\(script) did not start: \(problem)")
        }
    }

    /// `127.0.0.1:PORT`.
    var hostPort: String { String(url.split(separator: "/").dropFirst().first ?? "") }

    /// The JSON lines a peer logged to `name` in its scratch directory.
    func log(_ name: String = "log.ndjson") throws -> [JSONObject] {
        guard let text = try? String(contentsOfFile: scratch.path(name), encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { line in
            guard case .object(let object) = try JSONParser.parse(String(line)) else { throw TestFailure("not an object: \(line)") }
            return object
        }
    }
}

/// The first line a process writes (its URL, for the test servers), read a byte at a time
/// so nothing after it is consumed.
func readFirstLine(_ handle: FileHandle) -> String {
    var line = Data()
    while true {
        let byte = handle.readData(ofLength: 1)
        if byte.isEmpty || byte == Data([0x0A]) { break }
        line.append(byte)
    }
    return String(decoding: line, as: UTF8.self)
}

/// The webhook receiver (Fixtures/notify/webhook_server.py).
func webhookServer(
    _ scratch: ScratchDirectory, scripts: [String] = [], github: String? = nil, standard: String? = nil,
    tls: (cert: String, key: String)? = nil
) throws -> PythonPeer {
    var arguments = ["--log", scratch.path("log.ndjson")]
    for script in scripts { arguments += ["--script", script] }
    if let github { arguments += ["--github-secret", github] }
    if let standard { arguments += ["--standard-secret", standard] }
    if let tls { arguments += ["--cert", tls.cert, "--key", tls.key] }
    return try PythonPeer("webhook_server.py", arguments, scratch: scratch)
}

/// A sample line for traces: `at` is 2026-01-27T10:00:00Z plus `seconds`.
func sampleLine(_ monitor: String, _ seconds: Double, _ status: String, name: String? = nil, message: String? = nil) -> String {
    let base = Timestamp.parse("2026-01-27T10:00:00Z")!
    let at = Timestamp.format(milliseconds: base + Int64(seconds * 1000))
    var object = JSONObject()
    object["type"] = .string("sample")
    object["monitor"] = .string(monitor)
    object["name"] = .string(name ?? monitor.capitalized)
    object["at"] = .string(at)
    object["status"] = .string(status)
    object["message"] = .string(message ?? (status == "up" ? "HTTP 200 in 20ms" : "HTTP 503, expected 200-399"))
    return JSONValue.object(object).jsonText
}

/// `2026-01-27T10:00:00Z` plus `seconds`, as records write it.
func traceTime(_ seconds: Double) -> String {
    Timestamp.format(milliseconds: Timestamp.parse("2026-01-27T10:00:00Z")! + Int64(seconds * 1000))
}

extension RunResult {
    /// The notification records, each as (event, monitors, at).
    func events() throws -> [String] {
        try records().map { record in
            let monitors = record["monitors"]?.arrayValue?.compactMap { $0.objectValue?["monitor"]?.stringValue } ?? []
            return "\(record.string("event") ?? "?") \(monitors.joined(separator: ",")) \(record.string("at") ?? "?")"
        }
    }
}

import FixtureServer
import Foundation
import Testing
import VitalsKit

/// What a tool run produced.
struct RunResult {
    var stdout: String
    var stderr: String
    var status: Int32

    /// Non-empty stdout lines.
    var lines: [String] { stdout.split(separator: "\n").map(String.init) }

    /// Each stdout line parsed as a JSON object.
    func records() throws -> [JSONObject] {
        try lines.map { line in
            guard case .object(let object) = try JSONParser.parse(line) else {
                throw TestFailure("not a JSON object: \(line)")
            }
            return object
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Where the built executables are: `VITALS_BIN_DIR`, or beside the test binary.
enum Binaries {
    static let directory: String = {
        if let override = ProcessInfo.processInfo.environment["VITALS_BIN_DIR"] { return override }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // On macOS the runner sits inside an .xctest bundle.
        while url.path.contains(".xctest") { url = url.deletingLastPathComponent() }
        return url.path
    }()

    static func path(_ tool: String) -> String { directory + "/" + tool }

    /// A folder (mode 755) holding copies of the built tools, for tests that run them as
    /// another user: the build folder may sit in a checkout only its owner can enter.
    static let sharedDirectory: String = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vitals-tools-" + UUID().uuidString).path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o755)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where !name.contains(".") && FileManager.default.isExecutableFile(atPath: directory + "/" + name) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            try? FileManager.default.copyItem(atPath: directory + "/" + name, toPath: folder + "/" + name)
            chmod(folder + "/" + name, 0o755)
        }
        return folder
    }()

    /// The repository root (for man pages, scripts, README).
    static let repositoryRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url = url.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }()

    /// The fixtures folder of this test target.
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/EndToEndTests/Fixtures")
}

/// The environment every tool runs in: the built tools first on PATH, C locale, UTC.
/// With `shared`, the tools come from a copy any user can run (for tests that drop privileges).
func toolEnvironment(_ extra: [String: String] = [:], shared: Bool = false) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["PATH"] = (shared ? Binaries.sharedDirectory : Binaries.directory) + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
    environment["LC_ALL"] = "C"
    environment["TZ"] = "UTC"
    // Tests talk to loopback only; a proxy from the caller's environment must not intercept.
    for proxy in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
        environment[proxy] = nil
    }
    for (key, value) in extra { environment[key] = value }
    return environment
}

/// Runs a built tool with arguments and stdin, waits, and returns what it wrote.
func run(_ tool: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:],
         directory: URL? = nil) throws -> RunResult {
    try runProcess(Binaries.path(tool), arguments, stdin: stdin, environment: toolEnvironment(environment), directory: directory)
}

/// Runs `sh -c script` with the built tools on PATH.
func shell(_ script: String, stdin: String = "", environment: [String: String] = [:], directory: URL? = nil) throws -> RunResult {
    try runProcess("/bin/sh", ["-c", script], stdin: stdin, environment: toolEnvironment(environment), directory: directory)
}

func runProcess(_ executable: String, _ arguments: [String], stdin: String, environment: [String: String],
                directory: URL? = nil) throws -> RunResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    if let directory { process.currentDirectoryURL = directory }
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    // Read both streams concurrently so neither pipe fills and blocks the tool.
    let collected = CollectedOutput()
    let group = DispatchGroup()
    for (pipe, isError) in [(output, false), (errors, true)] {
        group.enter()
        DispatchQueue.global().async {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            collected.set(data, error: isError)
            group.leave()
        }
    }
    if !stdin.isEmpty {
        try? input.fileHandleForWriting.write(contentsOf: Data(stdin.utf8))
    }
    try? input.fileHandleForWriting.close()
    process.waitUntilExit()
    group.wait()
    let (out, err) = collected.get()
    return RunResult(stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self),
                     status: process.terminationStatus)
}

final class CollectedOutput: @unchecked Sendable {
    private let lock = NSLock()
    private var out = Data()
    private var err = Data()
    func set(_ data: Data, error: Bool) {
        lock.lock()
        if error { err = data } else { out = data }
        lock.unlock()
    }
    func get() -> (Data, Data) {
        lock.lock()
        defer { lock.unlock() }
        return (out, err)
    }
}

/// A tool started in the background with pipes, for streaming and signal tests.
final class RunningTool {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    let errors = Pipe()
    private var buffered = Data()

    init(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: Binaries.path(tool))
        process.arguments = arguments
        process.environment = toolEnvironment(environment)
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// Blocks until one whole line arrives on stdout (nil at end of output).
    func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = buffered[buffered.startIndex..<newline]
                buffered = Data(buffered[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return buffered.isEmpty ? nil : String(decoding: buffered, as: UTF8.self) }
            buffered.append(chunk)
        }
    }

    /// Sends a signal and waits for the exit; returns the status, the rest of stdout and all of stderr.
    func stop(_ signal: Int32) -> (status: Int32, rest: String, stderr: String) {
        kill(process.processIdentifier, signal)
        try? input.fileHandleForWriting.close()
        let rest = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: buffered + rest, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}

/// A scratch directory removed when the value goes away.
final class ScratchDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("vitals-test-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }
}

extension JSONObject {
    func string(_ key: String) -> String? { self[key]?.stringValue }
    func int(_ key: String) -> Int? { self[key]?.intValue }
    func double(_ key: String) -> Double? { self[key]?.doubleValue }
}

/// A fixture server kept alive for a test's duration (for tests that only need its URL).
final class FixtureServerHandle {
    private let server: FixtureServer
    var url: String { server.baseURL }
    init() throws { server = try FixtureServer() }
}

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

    /// Each stdout line parsed as a JSON object, but for the round marks (`round_start`,
    /// `round_end`) that probe runs write and filters pass on: `allRecords` has those too.
    func records() throws -> [JSONObject] {
        try allRecords().filter { !RunResult.isRoundMark($0) }
    }

    /// Each stdout line parsed as a JSON object.
    func allRecords() throws -> [JSONObject] {
        try lines.map { line in
            guard case .object(let object) = try JSONParser.parse(line) else {
                throw TestFailure("not a JSON object: \(line)")
            }
            return object
        }
    }

    /// The round marks on stdout, each as `start ROUND` or `end ROUND`, in order.
    func marks() throws -> [String] {
        try allRecords().filter(RunResult.isRoundMark).map { mark in
            "\(mark.string("type") == "round_start" ? "start" : "end") \(mark.string("round") ?? "?")"
        }
    }

    static func isRoundMark(_ record: JSONObject) -> Bool {
        record.string("type") == "round_start" || record.string("type") == "round_end"
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
            guard FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
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
func run(
    _ tool: String, _ arguments: [String], stdin: String = "", environment: [String: String] = [:],
    directory: URL? = nil
) throws -> RunResult {
    try runProcess(Binaries.path(tool), arguments, stdin: stdin, environment: toolEnvironment(environment), directory: directory)
}

/// Runs `sh -c script` with the built tools on PATH.
func shell(_ script: String, stdin: String = "", environment: [String: String] = [:], directory: URL? = nil) throws -> RunResult {
    try runProcess("/bin/sh", ["-c", script], stdin: stdin, environment: toolEnvironment(environment), directory: directory)
}

/// Runs `executable` and waits for it and for the end of its output. Its pipes are made
/// close-on-exec and the child gets no other descriptor of the runner's (spawnClean), so no
/// server another test starts meanwhile keeps this one's output open, and this child keeps
/// no other test's.
func runProcess(
    _ executable: String, _ arguments: [String], stdin: String, environment: [String: String],
    directory: URL? = nil
) throws -> RunResult {
    var input: [Int32] = [-1, -1]
    var output: [Int32] = [-1, -1]
    var errors: [Int32] = [-1, -1]
    guard let pipe2 = GlibcExtras.pipe2, pipe2(&input, O_CLOEXEC) == 0, pipe2(&output, O_CLOEXEC) == 0,
        pipe2(&errors, O_CLOEXEC) == 0
    else { throw TestFailure("pipe2: \(errno)") }
    let pid: pid_t
    do {
        pid = try spawnClean(
            [executable] + arguments, environment: environment, descriptors: (input[0], output[1], errors[1]),
            directory: directory?.path)
    } catch {
        for fd in input + output + errors { close(fd) }
        throw error
    }
    close(input[0])
    close(output[1])
    close(errors[1])
    let collected = CollectedOutput()
    let group = DispatchGroup()
    for (fd, isError) in [(output[0], false), (errors[0], true)] {
        group.enter()
        DispatchQueue.global().async {
            collected.set(readToEnd(fd), error: isError)
            close(fd)
            group.leave()
        }
    }
    let writer = input[1]
    let bytes = Array(stdin.utf8)
    DispatchQueue.global().async {
        signal(SIGPIPE, SIG_IGN)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            offset += count
        }
        close(writer)
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    group.wait()
    let (out, err) = collected.get()
    // As Foundation's terminationStatus: the exit status, or the signal that ended it.
    let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : status & 0x7F
    return RunResult(stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self), status: code)
}

/// Everything `fd` gives until its end (or an error), in 64 KiB reads.
func readToEnd(_ fd: Int32, each: ((ArraySlice<UInt8>) -> Void)? = nil) -> Data {
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        data.append(contentsOf: buffer[0..<count])
        each?(buffer[0..<count])
    }
    return data
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

/// A process a test starts and keeps while it runs (a server, a peer, a tool fed through a
/// pipe), started as every process of the tests is, through `spawnClean`: default signal actions,
/// nothing blocked, no descriptor of the runner's but the streams it is given.
final class Spawned {
    /// What one of its standard streams is.
    enum Stream {
        /// A pipe of ours: `input` writes to it, `output` or `errors` read from it.
        case pipe
        /// /dev/null.
        case null
        /// This descriptor of ours (the caller keeps and closes it).
        case descriptor(Int32)
        /// This file, appended to.
        case file(String)
        /// For standard error: wherever standard output goes.
        case asOutput
    }

    let pid: pid_t
    /// The write end of its standard input, when that is `.pipe`.
    let input: FileHandle?
    /// The read end of its standard output, when that is `.pipe`.
    let output: FileHandle?
    /// The read end of its standard error, when that is `.pipe`.
    let errors: FileHandle?
    /// Its wait status once it was reaped.
    private var waitStatus: Int32?

    init(
        _ argv: [String], environment: [String: String] = toolEnvironment(), input: Stream = .null, output: Stream = .pipe,
        error: Stream = .null, directory: String? = nil
    ) throws {
        var ours: [FileHandle?] = [nil, nil, nil]
        var theirs: [Int32] = [-1, -1, -1]
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        for (stream, kind) in [input, output, error].enumerated() {
            switch kind {
            case .pipe:
                var fds: [Int32] = [-1, -1]
                guard let pipe2 = GlibcExtras.pipe2, pipe2(&fds, O_CLOEXEC) == 0 else { throw TestFailure("pipe2: \(errno)") }
                // Index 0 reads: it reads its input, we read its output.
                let (mine, its) = stream == 0 ? (fds[1], fds[0]) : (fds[0], fds[1])
                ours[stream] = FileHandle(fileDescriptor: mine, closeOnDealloc: true)
                theirs[stream] = its
                opened.append(its)
            case .null, .file:
                let path: String
                if case .file(let file) = kind { path = file } else { path = "/dev/null" }
                let fd = open(path, (stream == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND) | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw TestFailure("cannot open \(path)") }
                theirs[stream] = fd
                opened.append(fd)
            case .descriptor(let fd): theirs[stream] = fd
            case .asOutput: theirs[stream] = theirs[1]
            }
        }
        pid = try spawnClean(argv, environment: environment, descriptors: (theirs[0], theirs[1], theirs[2]), directory: directory)
        (self.input, self.output, self.errors) = (ours[0], ours[1], ours[2])
    }

    deinit {
        if waitStatus == nil {
            kill(pid, SIGKILL)
            wait()
        }
    }

    /// It has not ended yet (reaps it if it has).
    var isRunning: Bool {
        guard waitStatus == nil else { return false }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return true }
        waitStatus = status
        return false
    }

    /// It exited rather than being ended by a signal (once reaped).
    var exited: Bool { (waitStatus ?? 0) & 0x7F == 0 }

    /// Sends it SIGTERM.
    func terminate() { kill(pid, SIGTERM) }

    /// `wait()`'s answer: its exit status or the signal that ended it, once it ended.
    var terminationStatus: Int32 { wait() }

    /// Waits for it to end and returns, as Foundation's terminationStatus did, its exit status or
    /// the signal that ended it.
    @discardableResult
    func wait() -> Int32 {
        if waitStatus == nil {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            waitStatus = status
        }
        let status = waitStatus ?? 0
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
    }
}

/// A tool started in the background with pipes, for streaming and signal tests.
final class RunningTool {
    let process: Spawned
    /// Its standard input.
    let input: FileHandle
    private let output: FileHandle
    private var buffered = Data()

    init(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = try Spawned(
            [Binaries.path(tool)] + arguments, environment: toolEnvironment(environment), input: .pipe, output: .pipe, error: .pipe)
        guard let input = process.input, let output = process.output else { throw TestFailure("no pipes for \(tool)") }
        (self.input, self.output) = (input, output)
    }

    /// Blocks until one whole line arrives on stdout (nil at end of output).
    func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = buffered[buffered.startIndex..<newline]
                buffered = Data(buffered[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            let chunk = output.availableData
            if chunk.isEmpty { return buffered.isEmpty ? nil : String(decoding: buffered, as: UTF8.self) }
            buffered.append(chunk)
        }
    }

    /// Blocks until one whole line that is not a round mark arrives (nil at end of output).
    func readLineSkippingMarks() -> String? {
        while let line = readLine() {
            if !line.contains(#""type":"round_start""#) && !line.contains(#""type":"round_end""#) { return line }
        }
        return nil
    }

    /// Sends a signal and waits for the exit; returns the status, the rest of stdout and all of stderr.
    func stop(_ signal: Int32) -> (status: Int32, rest: String, stderr: String) {
        kill(process.pid, signal)
        try? input.close()
        let rest = output.readDataToEndOfFile()
        let err = process.errors?.readDataToEndOfFile() ?? Data()
        let status = process.wait()
        return (status, String(decoding: buffered + rest, as: UTF8.self), String(decoding: err, as: UTF8.self))
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

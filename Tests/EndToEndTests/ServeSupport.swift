import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Whether nginx is installed (Debian package `nginx`).
let nginxPath = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
let servingInstalled = nginxPath != nil

/// Run as root (`runningAsRoot`, as CI does), scripts/serve runs nginx's workers and the
/// responders as `servingUser`, and a second user tries the sockets.
/// The user the served stack runs as when the tests run as root.
let servingUser = "nobody"

/// `scripts/serve` running one site on a free loopback port: nginx in front of the tools'
/// responders. Started with posix_spawn and an empty signal mask (the test runner's threads block
/// signals, and a shell that inherits that mask never sees SIGTERM or SIGCHLD) and no descriptor
/// of the runner's but the three; stopped with SIGTERM, as a user's Ctrl-C would, when the value
/// goes away. Run as root, it serves as `servingUser`, whose the scratch folder and the folders
/// of the files it is given become.
final class ServeHandle {
    let port: Int
    let log: String
    let runDirectory: String
    private(set) var pid: pid_t = 0

    /// Starts `scripts/serve --site SITE ARGUMENTS...` and waits (20 s at most) until it says it is serving;
    /// with `namespace`, inside that network namespace (`ip netns exec`, which execs the script); on
    /// `port`, else on a port unused now.
    init(
        site: String, _ arguments: [String], scratch: ScratchDirectory, environment: [String: String] = [:],
        namespace: String? = nil, listen: ((Int) -> String)? = nil, port: Int? = nil
    ) throws {
        let chosen = try port ?? unusedPort()
        self.port = chosen
        // Named afresh each time: the same server started again on its port keeps its own log.
        let run = "\(chosen)-\(UUID().uuidString.prefix(8))"
        log = scratch.path("serve-\(run).log")
        runDirectory = scratch.path("run-\(run)")
        let script = Binaries.repositoryRoot.appendingPathComponent("scripts/serve").path
        var argv =
            (namespace.map { [NetworkNamespace.ip, "netns", "exec", $0] } ?? [])
            + [
                script, "--site", site, "--listen", listen?(chosen) ?? "127.0.0.1:\(chosen)", "--bin", Binaries.directory, "--run-dir",
                runDirectory,
            ]
            + arguments
        if runningAsRoot {
            argv += ["--user", servingUser]
            var folders = [scratch.url.path]
            for (index, argument) in arguments.enumerated() where ["--db", "--archive", "--notify-state", "--tokens"].contains(argument) {
                if index + 1 < arguments.count, arguments[index + 1].hasPrefix("/") {
                    folders.append((arguments[index + 1] as NSString).deletingLastPathComponent)
                }
            }
            try giveToServingUser(folders)
        }
        pid = try spawnClean(argv, environment: toolEnvironment(environment), output: log)
        let deadline = Date().addingTimeInterval(20)
        while true {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("serving https://") { break }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                pid = 0
                throw TestFailure("scripts/serve ended before serving: \(text)")
            }
            guard Date() < deadline else { throw TestFailure("scripts/serve did not start in 20 s: \(text)") }
            usleep(20_000)
        }
    }

    /// Stops nginx and the responders (SIGTERM to scripts/serve) and waits for it; the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard pid > 0 else { return -1 }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        pid = 0
        return status
    }

    deinit { stop() }

    /// The access log nginx wrote.
    var accessLog: String { (try? String(contentsOfFile: runDirectory + "/logs/access.log", encoding: .utf8)) ?? "" }
    /// The error log nginx wrote, then what the responders wrote on their standard error.
    var errorLog: String {
        let logs = runDirectory + "/logs"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: logs)) ?? []).filter {
            $0.hasSuffix(".log") && $0 != "access.log"
        }.sorted()
        return names.map { (try? String(contentsOfFile: logs + "/" + $0, encoding: .utf8)) ?? "" }.joined()
    }

    /// The processes scripts/serve started, and theirs: (pid, parent, real uid, command line).
    func processes() -> [(pid: pid_t, parent: pid_t, uid: uid_t, command: String)] {
        var children: [pid_t: [pid_t]] = [:]
        var info: [pid_t: (pid_t, uid_t, String)] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let number = pid_t(entry),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8)
            else { continue }
            var parent: pid_t = 0
            var uid: uid_t = 0
            for line in status.split(separator: "\n") {
                if line.hasPrefix("PPid:") { parent = pid_t(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) ?? 0 }
                if line.hasPrefix("Uid:") { uid = uid_t(line.dropFirst(4).split(separator: "\t").first { !$0.isEmpty } ?? "") ?? 0 }
            }
            let command = ((try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/cmdline"))) ?? Data())
                .split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
            children[parent, default: []].append(number)
            info[number] = (parent, uid, command)
        }
        var result: [(pid_t, pid_t, uid_t, String)] = []
        var queue = children[pid] ?? []
        while let next = queue.popLast() {
            if let (parent, uid, command) = info[next] { result.append((next, parent, uid, command)) }
            queue += children[next] ?? []
        }
        return result
    }
}

/// Run as root: gives `folders` (and what is in them) to `servingUser`, so the responders, which
/// run as that user, can use the files the tests made as root.
func giveToServingUser(_ folders: [String]) throws {
    guard runningAsRoot else { return }
    for folder in folders {
        let result = try runProcess("/bin/chown", ["-R", "\(servingUser):", folder], stdin: "", environment: toolEnvironment())
        guard result.status == 0 else { throw TestFailure("chown \(folder): \(result.stderr)") }
    }
}

/// Starts `argv` with standard input from /dev/null, standard output and error to the file
/// `output`, an empty signal mask, default signal actions, and no other descriptor of the test
/// runner's. For servers and daemons a test starts: a long-lived child that inherited the write
/// end of a pipe another test's `Process` is reading (Foundation leaves them inheritable) keeps
/// that test waiting until the server ends.
func spawnClean(_ argv: [String], environment: [String: String], output: String, directory: String? = nil) throws -> pid_t {
    let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
    let file = open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    defer {
        close(input)
        close(file)
    }
    guard input >= 0, file >= 0 else { throw TestFailure("cannot open /dev/null or \(output)") }
    return try spawnClean(argv, environment: environment, descriptors: (input, file, file), directory: directory)
}

/// Starts `argv` with `descriptors` as its standard input, output and error, and nothing else
/// of the runner's (see the other `spawnClean`).
func spawnClean(_ argv: [String], environment: [String: String], descriptors: (Int32, Int32, Int32), directory: String? = nil) throws
    -> pid_t
{
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, descriptors.0, 0)
    posix_spawn_file_actions_adddup2(&actions, descriptors.1, 1)
    posix_spawn_file_actions_adddup2(&actions, descriptors.2, 2)
    // glibc's closefrom and chdir actions (2.34, 2.29), which Swift's Glibc module does not show.
    guard let closeFrom = GlibcExtras.closeFrom, let changeDirectory = GlibcExtras.changeDirectory else {
        throw TestFailure("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
    }
    _ = closeFrom(&actions, 3)
    if let directory { _ = changeDirectory(&actions, directory) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let cArgv = argv.map { strdup($0) } + [nil]
    let cEnv = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in cArgv + cEnv { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, argv[0], &actions, &attributes, cArgv, cEnv)
    guard spawned == 0 else { throw TestFailure("posix_spawn \(argv[0]): \(String(cString: strerror(spawned)))") }
    return pid
}

/// glibc functions Swift's Glibc module leaves out (they need _GNU_SOURCE), found at run time.
enum GlibcExtras {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    static let closeFrom: CloseFrom? = symbol("posix_spawn_file_actions_addclosefrom_np")
    static let changeDirectory: ChangeDirectory? = symbol("posix_spawn_file_actions_addchdir_np")
    static let pipe2: Pipe2? = symbol("pipe2")

    static func symbol<T>(_ name: String) -> T? {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }  // RTLD_DEFAULT
        return unsafeBitCast(address, to: T.self)
    }
}

/// One HTTP answer fetched with curl: status, headers (lowercased names) and body.
struct HTTPAnswer {
    var status: Int
    var headers: [String: String]
    var body: String
}

/// Fetches `url` with curl (an independent client), trusting `caFile`; `extra` are more curl arguments.
func fetch(_ url: String, method: String = "GET", body: String? = nil, headers: [String] = [], caFile: String, extra: [String] = []) throws
    -> HTTPAnswer
{
    var arguments = ["-sS", "--max-time", "30", "--cacert", caFile, "-X", method, "-D", "-", "-o", "-", "--http1.1"]
    for header in headers { arguments += ["-H", header] }
    if body != nil { arguments += ["--data-binary", "@-"] }
    let result = try runProcess("/usr/bin/env", ["curl"] + arguments + extra + [url], stdin: body ?? "", environment: toolEnvironment())
    guard result.status == 0 else { throw TestFailure("curl \(url): exit \(result.status): \(result.stderr)") }
    var text = result.stdout[...]
    // Headers of the final answer, then the body.
    guard let split = text.range(of: "\r\n\r\n") else { throw TestFailure("curl \(url): no headers in \(result.stdout)") }
    let head = text[..<split.lowerBound]
    text = text[split.upperBound...]
    var lines = head.split(separator: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    var headers: [String: String] = [:]
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return HTTPAnswer(status: Int(statusLine.count > 1 ? statusLine[1] : "0") ?? 0, headers: headers, body: String(text))
}

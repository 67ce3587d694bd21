import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Where Debian's ClickHouse server is installed (`/usr/sbin`), if it is.
let clickHouseServerPath = ["/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// Whether the ClickHouse server is installed (package `clickhouse-server`).
let clickHouseInstalled = clickHouseServerPath != nil

/// A TCP port nobody listens on now (bound to port 0 and released).
func unusedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestFailure("bind: \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A `clickhouse-server` started as an ordinary process in a scratch folder: its own config,
/// data path and ports on 127.0.0.1; users `default` (no password) and `vitals` (password
/// `s3cret-pw`). Stopped when the value goes away.
/// A started ClickHouse server and the URL of its `vitals` database, or nil when clickhouse-server
/// is not installed (the gate then says so, and fails the test where gates are required).
func startedClickHouse(sourceLocation: SourceLocation = #_sourceLocation) throws -> (server: ClickHouseServer, url: String)? {
    guard
        try requireGate(
            clickHouseInstalled, "needs clickhouse-server (apt-get install clickhouse-server clickhouse-client)",
            sourceLocation: sourceLocation)
    else {
        return nil
    }
    let server = try ClickHouseServer()
    try server.start()
    return (server, "clickhouse://127.0.0.1:\(server.httpPort)/vitals")
}

final class ClickHouseServer {
    let scratch: ScratchDirectory
    let httpPort: Int
    let tcpPort: Int

    /// The password of user `vitals`.
    static let password = "s3cret-pw"

    /// Writes the config; `clusterXML` is a `<remote_servers>` element or empty. Call `start()` next.
    init(httpPort: Int? = nil, tcpPort: Int? = nil, clusterXML: String = "") throws {
        scratch = try ScratchDirectory()
        self.httpPort = try httpPort ?? unusedPort()
        self.tcpPort = try tcpPort ?? unusedPort()
        let dir = scratch.url.path
        try scratch.write(
            "users.xml",
            """
            <yandex>
              <profiles><default></default></profiles>
              <users>
                <default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default>
                <vitals><password>\(ClickHouseServer.password)</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></vitals>
              </users>
              <quotas><default></default></quotas>
            </yandex>
            """)
        try scratch.write(
            "config.xml",
            """
            <yandex>
              <logger><level>warning</level><log>\(dir)/server.log</log><errorlog>\(dir)/error.log</errorlog></logger>
              <http_port>\(self.httpPort)</http_port>
              <tcp_port>\(self.tcpPort)</tcp_port>
              <listen_host>127.0.0.1</listen_host>
              <path>\(dir)/data/</path>
              <tmp_path>\(dir)/tmp/</tmp_path>
              <user_files_path>\(dir)/user_files/</user_files_path>
              <format_schema_path>\(dir)/format_schemas/</format_schema_path>
              <users_config>\(dir)/users.xml</users_config>
              <default_profile>default</default_profile>
              <default_database>default</default_database>
              <mark_cache_size>536870912</mark_cache_size>
              \(clusterXML)
            </yandex>
            """)
    }

    /// The server's process id, once started.
    private var pid: pid_t?

    /// Starts the server as a daemon (its own pid file in the scratch folder: a long-lived child of
    /// the test runner's Foundation `Process` is not needed) and waits (30 s at most) until it answers.
    func start() throws {
        // Started clean (see spawnClean): the daemon outlives the launcher and must hold no pipe of another test.
        let launcher = try spawnClean(
            [
                clickHouseServerPath ?? "/usr/sbin/clickhouse-server",
                "--config-file=\(scratch.path("config.xml"))", "--pid-file=\(scratch.path("server.pid"))", "--daemon",
            ],
            environment: toolEnvironment(), output: scratch.path("launch.log"), directory: scratch.url.path)
        var launched: Int32 = 0
        waitpid(launcher, &launched, 0)
        guard launched == 0 else {
            throw TestFailure(
                "clickhouse-server --daemon: \((try? String(contentsOfFile: scratch.path("launch.log"), encoding: .utf8)) ?? "")")
        }
        let deadline = Date().addingTimeInterval(30)
        while (try? query("SELECT 1")) != "1" {
            if pid == nil, let text = try? String(contentsOfFile: scratch.path("server.pid"), encoding: .utf8) {
                pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            guard Date() < deadline else {
                let errors = (try? String(contentsOfFile: scratch.path("error.log"), encoding: .utf8)) ?? ""
                throw TestFailure("clickhouse-server did not answer on port \(httpPort): \(errors.suffix(2000))")
            }
            usleep(20_000)
        }
        if pid == nil, let text = try? String(contentsOfFile: scratch.path("server.pid"), encoding: .utf8) {
            pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s) and waits until it is gone.
    func stop() {
        guard let pid else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while kill(pid, 0) == 0, Date() < deadline { usleep(20_000) }
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        self.pid = nil
    }

    deinit { stop() }

    /// Runs `sql` through curl (an independent client) and returns the answer, trimmed.
    @discardableResult
    func query(_ sql: String) throws -> String {
        let result = try runProcess(
            "/usr/bin/env", ["curl", "-sS", "--max-time", "20", "--data-binary", "@-", "http://127.0.0.1:\(httpPort)/"],
            stdin: sql, environment: toolEnvironment())
        guard result.status == 0 else { throw TestFailure("curl: \(result.stderr)") }
        if result.stdout.hasPrefix("Code: ") { throw TestFailure("ClickHouse: \(result.stdout)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

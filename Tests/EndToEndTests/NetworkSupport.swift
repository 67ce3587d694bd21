import Foundation
import Testing
import VitalsKit

/// Whether the tests run as root (CI does): raw ICMP sockets and network namespaces need it.
let runningAsRoot = geteuid() == 0

/// The interface the kernel routes `address` through, as iproute2 says (`ip -o route get`):
/// an answer found without the code under test. Nil when there is no route.
func routeDevice(_ address: String, namespace: NetworkNamespace? = nil) throws -> String? {
    let command = "ip -o route get \(address)"
    let result = try namespace.map { try $0.inside(command) } ?? shell(command)
    guard result.status == 0 else { return nil }
    let words = result.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init)
    guard let index = words.firstIndex(of: "dev"), index + 1 < words.count else { return nil }
    return words[index + 1]
}

/// A network namespace made for one test with iproute2 and removed when the value goes away.
/// Addresses, routes, nftables rules and sysctls made inside it touch nothing outside, and
/// packets sent inside it stay inside: tests send packets only to loopback and to these.
final class NetworkNamespace {
    let name: String

    /// iproute2's `ip`, wherever this system keeps it.
    static let ip =
        ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "ip"

    /// Whether namespaces can be made here (root, iproute2, a kernel that allows it): tried once.
    static let available: Bool = {
        guard runningAsRoot else { return false }
        let probe = "vitals-probe-\(getpid())"
        guard
            let made = try? runProcess(
                "/bin/sh", ["-c", "ip netns add \(probe) && ip netns del \(probe)"], stdin: "",
                environment: toolEnvironment())
        else { return false }
        return made.status == 0
    }()

    /// Whether nftables can load rules inside a namespace (the drop, loss and reject tests need it).
    static let firewallAvailable: Bool = {
        guard available, let namespace = try? NetworkNamespace(setup: ""),
            let result = try? namespace.inside("nft add table inet vitals_probe")
        else { return false }
        return result.status == 0
    }()

    /// Makes a namespace with its loopback up, then runs `setup` (shell commands) inside it.
    init(setup: String) throws {
        name = "vitals-\(getpid())-\(UUID().uuidString.prefix(8))"
        let made = try shell("ip netns add \(name)")
        guard made.status == 0 else { throw TestFailure("ip netns add failed: \(made.stderr)") }
        let result = try inside("ip link set lo up\n" + setup)
        guard result.status == 0 else {
            _ = try? shell("ip netns del \(name)")
            throw TestFailure("namespace set-up failed (\(result.status)): \(result.stderr)")
        }
    }

    deinit {
        _ = try? shell("ip netns del \(name)")
    }

    /// Runs `script` with `sh -e` inside the namespace, the built tools first on PATH.
    func inside(_ script: String, stdin: String = "", environment: [String: String] = [:]) throws -> RunResult {
        try runProcess(
            NetworkNamespace.ip, ["netns", "exec", name, "/bin/sh", "-ec", script], stdin: stdin,
            environment: toolEnvironment(environment))
    }

    /// Runs `script` inside the namespace as the unprivileged user nobody (uid and gid 65534,
    /// no supplementary groups, no capabilities left in any set).
    func insideAsNobody(_ script: String, stdin: String = "") throws -> RunResult {
        try runProcess(
            NetworkNamespace.ip,
            [
                "netns", "exec", name, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "/bin/sh", "-ec", script,
            ],
            stdin: stdin, environment: toolEnvironment(shared: true))
    }
}

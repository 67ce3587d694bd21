import Foundation
import Testing
import VitalsKit

/// Two hosts on one link: network namespaces joined by a veth pair, each side with an address
/// of a private network (10.95.0.0/24) and one of a public one (198.51.100.0/24, TEST-NET-2,
/// which no RFC 1918, link-local or unique local range holds), so the client can reach the
/// server from either, as a laptop at home and a stranger on the Internet would.
final class LinkedHosts {
    let server: NetworkNamespace
    let client: NetworkNamespace
    static let privateServer = "10.95.0.1"
    static let publicServer = "198.51.100.1"
    static let publicClient = "198.51.100.2"

    init() throws {
        server = try NetworkNamespace(setup: "")
        client = try NetworkNamespace(setup: "")
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        let made = try shell(
            """
            set -e
            ip link add ln\(tag)a type veth peer name ln\(tag)b
            ip link set ln\(tag)a netns \(server.name)
            ip link set ln\(tag)b netns \(client.name)
            ip -n \(server.name) addr add \(LinkedHosts.privateServer)/24 dev ln\(tag)a
            ip -n \(server.name) addr add \(LinkedHosts.publicServer)/24 dev ln\(tag)a
            ip -n \(server.name) link set ln\(tag)a up
            ip -n \(client.name) addr add 10.95.0.2/24 dev ln\(tag)b
            ip -n \(client.name) addr add \(LinkedHosts.publicClient)/24 dev ln\(tag)b
            ip -n \(client.name) link set ln\(tag)b up
            """)
        guard made.status == 0 else { throw TestFailure("veth: \(made.stderr)") }
    }

    /// One request from the client's side with curl (the server's certificate names localhost,
    /// so it is not checked: what is tested is who gets an answer). The status and the body.
    func get(_ host: String, _ port: Int, _ path: String) throws -> (status: Int, body: JSONObject?) {
        let result = try client.inside("curl -sk -w '\\n%{http_code}' 'https://\(host):\(port)\(path)'")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, (try? JSONParser.parse(lines.dropLast().joined(separator: "\n")))?.objectValue)
    }
}

/// Seed 002, Security Features: "Local network only - Bonjour discovery on `.local` domain".
/// The server is attacked where it listens: nginx on every address (`--listen 0.0.0.0:PORT`),
/// asked from a private and from a public source address.
@Suite("Health Sync answers the local network only", .serialized, .hangGuard(minutes: 3))
struct HealthSyncLocalNetworkTests {
    @Test("a peer beyond the local network gets 403 not_local from nginx, whatever it asks; --allow opens a network, --allow any all")
    func localNetworkOnly() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        guard try requireGate(NetworkNamespace.available, "two hosts on a link need root and network namespaces") else { return }
        let hosts = try LinkedHosts()
        let archive = try HealthSyncServeTests.makeArchive()
        func site(_ extra: [String]) throws -> HealthSyncSite {
            try HealthSyncSite(
                archive: archive, extra: ["--no-advertise"] + extra, namespace: hosts.server.name, listen: { "0.0.0.0:\($0)" })
        }
        let local = try site([])
        let port = local.server.port
        // From the private address: the responder answers (401: no client certificate).
        let fromHome = try hosts.get(LinkedHosts.privateServer, port, "/api/v1/health/types")
        #expect(fromHome.status == 401 && fromHome.body?.string("reason") == "unauthorized", "\(fromHome)")
        #expect(try hosts.get(LinkedHosts.privateServer, port, "/nothing").status == 404)
        // From the public one: 403 for an endpoint and for any other path alike.
        for path in ["/api/v1/health/types", "/api/v1/pair", "/nothing", "/"] {
            let fromAfar = try hosts.get(LinkedHosts.publicServer, port, path)
            #expect(fromAfar.status == 403 && fromAfar.body?.string("reason") == "not_local", "\(path): \(fromAfar)")
        }
        #expect(!local.server.accessLog.isEmpty)
        local.server.stop()
        // None of those reached the responder; the refusals are in the archive's log.
        let refusals = try archive.run(["log"]).records().filter { $0.string("operation") == "network_refusal" }
            .compactMap { $0["detail"]?.objectValue }
        #expect(
            refusals.contains {
                $0.int("status") == 403 && $0.string("outcome") == "not_local" && $0.string("remote_addr") == LinkedHosts.publicClient
            }, "\(refusals)")
        #expect(!refusals.contains { $0.string("remote_addr") != LinkedHosts.publicClient && $0.int("status") == 403 })
        let asked = try archive.sql("SELECT count(*) FROM operations WHERE operation = 'health_types'")
        #expect(asked == "1", "only the private address's request reached the responder")

        // --allow opens the public network, and --allow any every address.
        for allow in ["198.51.100.0/24", "any"] {
            let open = try site(["--allow", allow])
            let answered = try hosts.get(LinkedHosts.publicServer, open.server.port, "/api/v1/health/types")
            #expect(answered.status == 401 && answered.body?.string("reason") == "unauthorized", "--allow \(allow): \(answered)")
            open.server.stop()
        }
        // Another network than the client's is still refused.
        let other = try site(["--allow", "203.0.113.0/24"])
        #expect(try hosts.get(LinkedHosts.publicServer, other.server.port, "/api/v1/health/types").status == 403)
        other.server.stop()
        // A value that is no network is refused before anything starts.
        let script = Binaries.repositoryRoot.appendingPathComponent("scripts/serve").path
        let bad = try runProcess(
            script, ["--site", "health-sync", "--cert", local.serverCert, "--key", local.tls.path("server.key"), "--allow", "everyone"],
            stdin: "", environment: toolEnvironment())
        #expect(bad.status == 64 && bad.stderr.contains("--allow wants ADDRESS/BITS"), "\(bad.stderr)")
        withExtendedLifetime(hosts) {}
    }
}

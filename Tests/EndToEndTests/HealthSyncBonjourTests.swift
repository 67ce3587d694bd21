import Foundation
import Testing
import VitalsKit

/// Whether avahi's daemon and tools and a D-Bus daemon are installed (Debian: avahi-daemon,
/// avahi-utils, dbus-daemon).
let avahiInstalled = ["/usr/sbin/avahi-daemon", "/usr/bin/avahi-publish", "/usr/bin/avahi-browse", "/usr/bin/dbus-daemon"]
    .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

/// Two hosts on one link: two network namespaces joined by a veth pair (10.99.N.1 and 10.99.N.2),
/// each with its own D-Bus system bus and its own avahi-daemon (in a mount namespace of its own,
/// so each has its own /run/avahi-daemon), answering mDNS on the veth. Nothing reaches beyond
/// the pair: the multicast stays on the link.
final class AvahiLink {
    let server: NetworkNamespace
    let client: NetworkNamespace
    let scratch: ScratchDirectory
    let serverAddress: String
    /// The server's end of the veth pair (in its namespace), and the link's /24 prefix (`10.99.N`).
    let serverLink: String
    let subnet: String
    private var pids: [pid_t] = []

    /// With `staticService`, the server side's avahi-daemon also reads that file from its
    /// /etc/avahi/services (a folder of its own, bound over the system's in its mount namespace).
    init(staticService: String? = nil) throws {
        scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.path("services"), withIntermediateDirectories: true)
        if let staticService { try scratch.write("services/healthsync.service", staticService) }
        // The bus sockets are reached by the serving user too.
        chmod(scratch.url.path, 0o755)
        let subnet = Int(getpid() % 200) + 20
        self.subnet = "10.99.\(subnet)"
        serverAddress = "10.99.\(subnet).1"
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        serverLink = "hs\(tag)a"
        let clientLink = "hs\(tag)b"
        server = try NetworkNamespace(setup: "")
        client = try NetworkNamespace(setup: "")
        let made = try shell(
            """
            set -e
            ip link add \(serverLink) type veth peer name \(clientLink)
            ip link set \(serverLink) netns \(server.name)
            ip link set \(clientLink) netns \(client.name)
            ip -n \(server.name) addr add \(serverAddress)/24 dev \(serverLink)
            ip -n \(server.name) link set \(serverLink) up
            ip -n \(client.name) addr add 10.99.\(subnet).2/24 dev \(clientLink)
            ip -n \(client.name) link set \(clientLink) up
            """)
        guard made.status == 0 else { throw TestFailure("veth: \(made.stderr)") }
        for (side, namespace, link) in [("server", server, serverLink), ("client", client, clientLink)] {
            try start(side, namespace, link)
        }
    }

    /// The D-Bus address of one side's system bus.
    func bus(_ side: String) -> String { "unix:path=\(scratch.path(side + "-bus"))" }

    private func start(_ side: String, _ namespace: NetworkNamespace, _ link: String) throws {
        try scratch.write(
            "\(side)-bus.conf",
            """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>\(bus(side))</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """)
        try scratch.write(
            "\(side)-avahi.conf",
            """
            [server]
            host-name=vitals-\(side)
            domain-name=local
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=\(link)
            enable-dbus=yes
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-hinfo=no
            publish-workstation=no
            """)
        pids.append(
            try spawnClean(
                [
                    NetworkNamespace.ip, "netns", "exec", namespace.name, "dbus-daemon",
                    "--config-file=" + scratch.path("\(side)-bus.conf"),
                    "--nofork", "--nopidfile",
                ], environment: toolEnvironment(), output: scratch.path("\(side)-dbus.log")))
        try waitFor("\(side)'s D-Bus") { FileManager.default.fileExists(atPath: self.scratch.path(side + "-bus")) }
        let services = side == "server" ? "mount --bind \(scratch.path("services")) /etc/avahi/services && " : ""
        let daemon =
            "mount -t tmpfs tmpfs /run && mkdir /run/avahi-daemon && \(services)exec avahi-daemon -f \(scratch.path("\(side)-avahi.conf"))"
            + " --no-drop-root --no-chroot --no-rlimits --no-proc-title"
        pids.append(
            try spawnClean(
                [NetworkNamespace.ip, "netns", "exec", namespace.name, "unshare", "--mount", "/bin/sh", "-c", daemon],
                environment: toolEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": bus(side)]), output: scratch.path("\(side)-avahi.log")))
        try waitFor("\(side)'s avahi-daemon") { self.log(side).contains("Server startup complete") }
    }

    func log(_ side: String) -> String { (try? String(contentsOfFile: scratch.path("\(side)-avahi.log"), encoding: .utf8)) ?? "" }

    /// Polls `condition` (20 s at most): the daemons say when they are ready only in files.
    func waitFor(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while !condition() {
            guard Date() < deadline else { throw TestFailure("\(what) did not start: \(log("server")) \(log("client"))") }
            usleep(20_000)
        }
    }

    /// Runs `argv` on one side, with that side's system bus.
    func run(on side: String, _ argv: [String], stdin: String = "") throws -> RunResult {
        try runProcess(
            NetworkNamespace.ip, ["netns", "exec", (side == "server" ? server : client).name] + argv, stdin: stdin,
            environment: toolEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": bus(side)]))
    }

    /// Starts `argv` on one side and leaves it running until the link goes.
    func spawn(on side: String, _ argv: [String], output: String) throws {
        pids.append(
            try spawnClean(
                [NetworkNamespace.ip, "netns", "exec", (side == "server" ? server : client).name] + argv,
                environment: toolEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": bus(side)]), output: scratch.path(output)))
    }

    deinit {
        for pid in pids.reversed() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }
}

/// Bonjour, with real avahi daemons on both ends of a link. The seed (002): "Local network only -
/// Bonjour discovery on `.local` domain"; "CLI: healthsync fetch → Parse arguments → Discover device
/// via Bonjour → TCP + mTLS connection".
@Suite(
    "Health Sync over Bonjour: scripts/serve advertises _healthsync._tcp, healthsync --discover finds it", .serialized,
    .hangGuard(minutes: 3))
struct HealthSyncBonjourTests {
    @Test("the server is advertised through avahi with its certificate's SHA-256; the client discovers it, pairs and fetches by it alone")
    func discover() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        guard try requireGate(NetworkNamespace.available, "two hosts on a link need root and network namespaces") else { return }
        guard
            try requireGate(
                avahiInstalled,
                "Bonjour needs avahi-daemon, avahi-utils and dbus-daemon (apt-get install avahi-daemon avahi-utils dbus-daemon)")
        else { return }
        // vitals-serve(7)'s static service file, as the page prints it, beside what scripts/serve publishes.
        let page = try readPage("man/man7/vitals-serve.7")
        let example = try #require(page.components(separatedBy: "/etc/avahi/services/healthsync.service").dropFirst().first)
        let block = try #require(example.components(separatedBy: ".EX\n").dropFirst().first?.components(separatedBy: "\n.EE").first)
        let placeholder = String(repeating: "ab", count: 32)
        let link = try AvahiLink(
            staticService: block.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\fISHA256\\fP", with: placeholder))
        let address = link.serverAddress
        let site = try HealthSyncSite(
            archive: try HealthSyncServeTests.makeArchive(), extra: ["--service-name", "Health Sync test"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": link.bus("server")], namespace: link.server.name,
            listen: { "\(address):\($0)" })
        let served = try String(contentsOfFile: site.server.log, encoding: .utf8)
        #expect(served.contains("advertised by Bonjour: 'Health Sync test' (_healthsync._tcp, port \(site.server.port))"), "\(served)")
        // Another service of the same type on the link, showing another certificate.
        try link.spawn(
            on: "server",
            ["avahi-publish", "--service", "Someone else", "_healthsync._tcp", "9443", "sha256=" + String(repeating: "0", count: 64)],
            output: "rogue.log")
        try link.waitFor("the other service") {
            ((try? String(contentsOfFile: link.scratch.path("rogue.log"), encoding: .utf8)) ?? "").contains("Established under name")
        }

        // And an impostor: a TLS server with another key, advertised with the real certificate's SHA-256.
        let impostor = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "server", "--out", impostor.url.path]).status == 0)
        let impostorPort = try unusedPort()
        try link.spawn(
            on: "server",
            [
                "openssl", "s_server", "-quiet", "-accept", String(impostorPort), "-cert", impostor.path("server.crt"),
                "-key", impostor.path("server.key"), "-www",
            ], output: "impostor-tls.log")
        try link.spawn(
            on: "server",
            ["avahi-publish", "--service", "Impostor", "_healthsync._tcp", String(impostorPort), "sha256=" + site.serverSHA256],
            output: "impostor.log")
        try link.waitFor("the impostor's service") {
            ((try? String(contentsOfFile: link.scratch.path("impostor.log"), encoding: .utf8)) ?? "").contains("Established under name")
        }

        // From the other host, over mDNS on the link: every service, resolved.
        let state = site.statePath("laptop")
        let found = try link.run(on: "client", [Binaries.path("healthsync"), "--state", state, "discover"])
        #expect(found.status == 0, "\(found.stderr)")
        let services = try found.records()
        try expectDocumented(services)
        // avahi-browse may resolve the service on the link's IPv6 address as well, in either order:
        // the entry of the server's IPv4 address is the one worked out here.
        let named = services.filter { $0.string("name") == "Health Sync test" }
        #expect(named.allSatisfy { $0.string("server_certificate_sha256") == site.serverSHA256 }, "\(named)")
        let ours = try #require(named.first { $0.string("address") == address }, "\(found.stdout) \(found.stderr)")
        #expect(ours.int("port") == site.server.port && ours.string("host") == "vitals-server.local")
        #expect(
            ours.string("server_certificate_sha256") == site.serverSHA256 && ours.string("url") == "https://\(address):\(site.server.port)")
        #expect(services.contains { $0.string("name") == "Someone else" } && services.contains { $0.string("name") == "Impostor" })
        let fromFile = try #require(services.first { $0.string("name") == "Health Sync on vitals-server" }, "\(services)")
        #expect(fromFile.int("port") == 8443 && fromFile.string("server_certificate_sha256") == placeholder)
        #expect(
            fromFile["txt"] == .array([.string("sha256=\(placeholder)"), .string("path=/api/v1"), .string("txtvers=1")]), "\(fromFile)")

        // The pairing text names localhost, which is nothing on the client's host: the address
        // comes from Bonjour, by the certificate's SHA-256.
        let text = try site.pairingText()
        let blind = try link.run(on: "client", [Binaries.path("healthsync"), "--state", state, "scan", text])
        #expect(blind.status == 2 && blind.stderr.contains("cannot reach"), "\(blind.stderr)")
        let scanned = try link.run(on: "client", [Binaries.path("healthsync"), "--state", state, "scan", "--discover", text])
        #expect(scanned.status == 0, "\(scanned.stderr)")
        #expect(scanned.stderr.contains("Bonjour: 'Health Sync test' at https://\(address):\(site.server.port)"))
        let fetched = try link.run(
            on: "client",
            [Binaries.path("healthsync"), "--state", state, "fetch", "--discover", "--types", "HKQuantityTypeIdentifierHeartRate"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(try fetched.records().filter { $0.string("type") == "health_record" }.count == 3)
        #expect(
            try site.archive.run(["paired"]).records().map { $0.string("certificate_fingerprint") } == [try site.clientSHA256("laptop")])
        // With the server gone, only the impostor names the certificate: its key gives it away.
        site.server.stop()
        let fooled = try link.run(
            on: "client",
            [Binaries.path("healthsync"), "--state", state, "fetch", "--discover", "--types", "HKQuantityTypeIdentifierHeartRate"])
        #expect(fooled.status == 2 && !fooled.stdout.contains("health_record"), "\(fooled.stdout)")
        #expect(
            fooled.stderr.contains("'Impostor' at https://\(address):\(impostorPort) skipped")
                && fooled.stderr.contains("pinned public key"),
            "\(fooled.stderr)")
        #expect(fooled.stderr.contains("no service naming the paired certificate showed it"))
        withExtendedLifetime(link) {}
    }

    // The issue's case: a server whose DHCP address changed. The seed's fetch discovers the device
    // by Bonjour, then connects; healthsync goes to the kept address, and when it fails, to Bonjour.
    @Test("the kept address fails (the server moved): fetch finds it again by Bonjour, checks its key and keeps the new address")
    func findsTheServerAgain() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        guard try requireGate(NetworkNamespace.available, "two hosts on a link need root and network namespaces") else { return }
        guard try requireGate(avahiInstalled, "Bonjour needs avahi-daemon, avahi-utils and dbus-daemon") else { return }
        let link = try AvahiLink()
        let site = try HealthSyncSite(
            archive: try HealthSyncServeTests.makeArchive(), extra: ["--service-name", "Health Sync moving"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": link.bus("server")], namespace: link.server.name, listen: { "0.0.0.0:\($0)" })
        let port = site.server.port
        let state = site.statePath("laptop")
        let healthsync = [Binaries.path("healthsync"), "--state", state]
        // Paired at the address of the day.
        let text = try site.pairingText(url: "https://\(link.serverAddress):\(port)")
        let paired = try link.run(on: "client", healthsync + ["scan", text])
        #expect(paired.status == 0, "\(paired.stderr)")
        // The server's address changes, as a new DHCP lease changes it; its avahi-daemon says so.
        let moved = "\(link.subnet).3"
        let changed = try shell(
            """
            ip -n \(link.server.name) addr del \(link.serverAddress)/24 dev \(link.serverLink)
            ip -n \(link.server.name) addr add \(moved)/24 dev \(link.serverLink)
            """)
        #expect(changed.status == 0, "\(changed.stderr)")
        try link.waitFor("the moved address in Bonjour") {
            let browsed =
                (try? link.run(on: "client", ["avahi-browse", "--resolve", "--parsable", "--terminate", "_healthsync._tcp"]))?
                .stdout ?? ""
            return browsed.contains(";\(moved);\(port);")
        }
        let fetched = try link.run(on: "client", healthsync + ["fetch", "--types", "HKQuantityTypeIdentifierHeartRate", "--timeout", "5s"])
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(try fetched.records().filter { $0.string("type") == "health_record" }.count == 3)
        #expect(
            fetched.stderr.contains(
                "the paired server no longer answers at https://\(link.serverAddress):\(port); Bonjour found it at https://\(moved):\(port)"
            ),
            "\(fetched.stderr)")
        // The new address is kept: the next run goes straight there, with no word of Bonjour.
        let kept = try #require(try JSONParser.parse(try String(contentsOfFile: state, encoding: .utf8)).objectValue)
        #expect(kept.string("server") == "https://\(moved):\(port)")
        let again = try link.run(on: "client", healthsync + ["types", "--format", "text"])
        #expect(again.status == 0 && !again.stderr.contains("Bonjour"), "\(again.stderr)")
        // A server that is gone for good, with no service left to find: the kept address stays
        // and the fetch says it could not reach it, after looking.
        site.server.stop()
        let gone = try link.run(on: "client", healthsync + ["fetch", "--types", "HKQuantityTypeIdentifierHeartRate", "--retries", "0"])
        #expect(gone.status == 2 && gone.stderr.contains("looked for by Bonjour, not found"), "\(gone.stderr)")
        #expect(
            try JSONParser.parse(try String(contentsOfFile: state, encoding: .utf8)).objectValue?.string("server")
                == "https://\(moved):\(port)")
        withExtendedLifetime(link) {}
    }

    @Test("without an avahi-daemon, or on loopback, scripts/serve says it is not advertised and serves all the same")
    func notAdvertised() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        guard try requireGate(NetworkNamespace.available, "an address beyond loopback needs root and a network namespace") else { return }
        guard try requireGate(avahiInstalled, "avahi-publish is avahi-utils'") else { return }
        let namespace = try NetworkNamespace(
            setup:
                "ip link add vitals0 type veth peer name vitals1 && ip addr add 10.98.0.1/24 dev vitals0 && ip link set vitals0 up && ip link set vitals1 up"
        )
        let noDaemon = try ScratchDirectory()
        let site = try HealthSyncSite(
            archive: try HealthSyncServeTests.makeArchive(),
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + noDaemon.path("no-bus")],
            namespace: namespace.name, listen: { "10.98.0.1:\($0)" })
        let served = try String(contentsOfFile: site.server.log, encoding: .utf8)
        #expect(served.contains("not advertised by Bonjour (is avahi-daemon running?)"), "\(served)")
        #expect(served.contains("serving https://10.98.0.1:"))
        let loopback = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        #expect(
            try String(contentsOfFile: loopback.server.log, encoding: .utf8).contains("listening on loopback: not advertised by Bonjour"))
        // The client says what Bonjour needs when no daemon answers.
        let lost = try runProcess(
            NetworkNamespace.ip, ["netns", "exec", namespace.name, Binaries.path("healthsync"), "discover"], stdin: "",
            environment: toolEnvironment(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=" + noDaemon.path("no-bus"), "HOME": noDaemon.url.path]))
        #expect(lost.status == 2 && lost.stderr.contains("avahi-browse failed") && lost.stderr.contains("avahi-daemon"), "\(lost.stderr)")
        site.server.stop()
        withExtendedLifetime(namespace) {}
    }
}

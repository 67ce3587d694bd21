import Foundation
import Testing
import VitalsKit

@testable import ProbeKit

/// A literal address the test knows is valid.
private func ip(_ text: String) throws -> IPAddress {
    guard let address = IPAddress(text) else { throw AddressError(text: text) }
    return address
}

private struct AddressError: Error { let text: String }

@Suite("IP addresses")
struct IPAddressTests {
    @Test(
        "literals parse and print back as inet_ntop writes them",
        arguments: [
            ("192.0.2.1", "192.0.2.1"), ("::1", "::1"), ("[::1]", "::1"), ("2001:DB8:0:0::1", "2001:db8::1"),
            ("::ffff:192.0.2.1", "::ffff:192.0.2.1"), ("127.0.0.1", "127.0.0.1"),
        ])
    func roundTrip(text: String, printed: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == printed)
    }

    @Test(
        "names and malformed literals are not addresses",
        arguments: ["example.com", "1.2.3", "256.1.1.1", "", "::1::2", "fe80::1%no-such-interface-x"])
    func rejects(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test("bytes, loopback, prefixes")
    func properties() throws {
        // 192.0.2.1 is C0 00 02 01.
        let v4 = try #require(IPAddress("192.0.2.1"))
        #expect(v4.bytes == [0xC0, 0x00, 0x02, 0x01])
        #expect(v4.low == 0xC000_0201)
        #expect(IPAddress("127.9.9.9")?.isLoopback == true)
        #expect(IPAddress("::1")?.isLoopback == true)
        #expect(IPAddress("::2")?.isLoopback == false)
        #expect(IPAddress("fe80::1")?.isLinkLocal == true)
        #expect(IPAddress("fec0::1")?.isLinkLocal == false)
        #expect(IPAddress("255.255.255.0")?.prefixLength == 24)
        #expect(IPAddress("255.255.255.255")?.prefixLength == 32)
        #expect(IPAddress("ffff:ffff:ffff:ffff:ffff::")?.prefixLength == 80)
        #expect(IPAddress("ffff:fe00::")?.prefixLength == 23)
        let net = try #require(IPAddress("10.1.2.0"))
        #expect(net.shares(prefix: 24, with: try ip("10.1.2.200")))
        #expect(!net.shares(prefix: 24, with: try ip("10.1.3.1")))
        #expect(net.shares(prefix: 0, with: v4))
        let v6 = try #require(IPAddress("2001:db8:1::"))
        #expect(v6.shares(prefix: 48, with: try ip("2001:db8:1:ffff::9")))
        #expect(!v6.shares(prefix: 72, with: try ip("2001:db8:1:0:ff00::")))
        #expect(!v6.shares(prefix: 8, with: v4), "families never share a prefix")
    }

    @Test("a sockaddr round trip keeps the address")
    func sockaddrRoundTrip() throws {
        for text in ["198.51.100.7", "2001:db8::42"] {
            let address = try #require(IPAddress(text))
            let back = address.withSockaddr(port: 80) { pointer, _ in IPAddress(pointer) }
            #expect(back == address)
        }
    }
}

@Suite("network view")
struct NetworkViewTests {
    @Test("loopback targets leave by the loopback interface")
    func loopbackRoute() throws {
        let view = NetworkView()
        let route = try #require(view.route(to: try ip("127.0.0.1")))
        #expect(route.link == .loopback)
        // The kernel's own name for it (lo on Linux, lo0 on macOS).
        #expect(route.interface.hasPrefix("lo"))
        #expect(view.route(to: try ip("127.3.4.5"))?.interface == route.interface)
    }

    /// A fake /sys/class/net laid out as Linux lays out each kind of device.
    @Test("Linux link types from sysfs: type, wireless, tun_flags, DEVTYPE")
    func linuxLinks() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("vitals-sysfs-" + UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: root) }
        func device(_ name: String, type: Int, uevent: String = "", entries: [String] = []) throws {
            let directory = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try "\(type)\n".write(to: directory.appendingPathComponent("type"), atomically: true, encoding: .utf8)
            try "INTERFACE=\(name)\nIFINDEX=3\n\(uevent)".write(
                to: directory.appendingPathComponent("uevent"), atomically: true, encoding: .utf8)
            for entry in entries {
                try FileManager.default.createDirectory(at: directory.appendingPathComponent(entry), withIntermediateDirectories: true)
            }
        }
        try device("lo", type: 772)
        try device("eth0", type: 1)
        try device("wlp2s0", type: 1, uevent: "DEVTYPE=wlan\n", entries: ["phy80211"])
        try device("wlan1", type: 1, entries: ["wireless"])
        try device("wwan0", type: 65534, uevent: "DEVTYPE=wwan\n")
        try device("rmnet_data0", type: 519)
        try device("tun0", type: 65534, entries: ["tun_flags"])
        try device("tap0", type: 1, entries: ["tun_flags"])
        try device("wg0", type: 65534, uevent: "DEVTYPE=wireguard\n")
        try device("gre1", type: 778)
        try device("ib0", type: 32)
        let view = NetworkView(sysfsRoot: root.path)
        let expected: [(String, LinkType)] = [
            ("lo", .loopback), ("eth0", .ethernet), ("wlp2s0", .wifi), ("wlan1", .wifi), ("wwan0", .cellular),
            ("rmnet_data0", .cellular), ("tun0", .vpn), ("tap0", .vpn), ("wg0", .vpn), ("gre1", .vpn),
            ("ib0", .unknown), ("missing0", .unknown), ("../etc", .unknown),
        ]
        for (name, link) in expected {
            #expect(view.link(ofInterface: name) == link, "\(name)")
        }
    }
}

import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (getifaddrs(3), ioctl(2) and sockaddr take raw pointers): kept.

/// The kind of link an interface is: the command-line counterpart of NWPathMonitor's
/// interface types (Online Now's connection type).
public enum LinkType: String, Sendable, CaseIterable {
    case ethernet
    case wifi
    case cellular
    case loopback
    /// A tunnel: tun/tap, WireGuard, IP-in-IP, GRE, SIT, macOS utun and ipsec.
    case vpn
    case unknown
}

/// The interface traffic to a target leaves by, and its link type.
public struct NetworkRoute: Sendable, Equatable {
    /// The interface name (`eth0`, `wlan0`, `lo`, `en0`).
    public var interface: String
    /// What kind of link it is.
    public var link: LinkType

    /// Creates a route.
    public init(interface: String, link: LinkType) {
        self.interface = interface
        self.link = link
    }
}

/// `SOCK_DGRAM` as the socket call wants it on this system.
public let datagramSocketType: Int32 = {
    #if canImport(Glibc)
        return Int32(SOCK_DGRAM.rawValue)
    #else
        return SOCK_DGRAM
    #endif
}()

/// Which interface the system would use to reach an address, and what kind of link it is,
/// read from the operating system without sending anything.
///
/// The route is found by connecting a UDP socket to the address (which sends no packet) and
/// matching the local address the kernel chose against the interfaces' addresses. The link
/// type comes, on Linux, from `/sys/class/net/IF`: `type` (the ARPHRD number), a `wireless`
/// or `phy80211` entry, `tun_flags`, and `DEVTYPE` in `uevent`; on macOS from the interface
/// type and its functional type (that branch is written for macOS but not tested here).
/// Interface lists and link types are cached for `refreshAfterMs`, so a long watch follows
/// changes (Wi-Fi to cellular, a VPN coming up). One instance belongs to one thread.
public final class NetworkView {
    struct InterfaceAddress {
        var name: String
        var address: IPAddress
        var prefix: Int
        var isLoopback: Bool
    }

    private let sysfsRoot: String
    private let refreshAfterMs: Int64
    private var addresses: [InterfaceAddress] = []
    private var loadedAtMs: Int64 = .min
    private var links: [String: LinkType] = [:]
    #if os(macOS)
        private var interfaceTypes: [String: UInt8] = [:]
    #endif

    /// Creates a view reading link details under `sysfsRoot` (Linux), refreshed every `refreshAfterMs`.
    public init(sysfsRoot: String = "/sys/class/net", refreshAfterMs: Int64 = 2000) {
        self.sysfsRoot = sysfsRoot
        self.refreshAfterMs = refreshAfterMs
    }

    /// The interface and link the system would use to reach `remote`; nil when there is no
    /// route (the network is unreachable).
    public func route(to remote: IPAddress) -> NetworkRoute? {
        guard let local = NetworkView.localAddress(toward: remote) else { return nil }
        if local.high == remote.high, local.low == remote.low, local.family == remote.family {
            // Talking to one of this machine's own addresses goes through the loopback interface.
            refreshIfStale()
            if let loopback = addresses.first(where: { $0.isLoopback }) {
                return NetworkRoute(interface: loopback.name, link: link(ofInterface: loopback.name))
            }
        }
        return route(fromLocal: local)
    }

    /// The interface holding the local address `local` (the address a connection was made
    /// from), or nil when no interface has it.
    public func route(fromLocal local: IPAddress) -> NetworkRoute? {
        refreshIfStale()
        if local.scopeID != 0 {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(local.scopeID, &name) != nil {
                let text = cBufferText(name)
                return NetworkRoute(interface: text, link: link(ofInterface: text))
            }
        }
        let same = addresses.first { $0.address.family == local.family && $0.address.high == local.high && $0.address.low == local.low }
        let covering = same ?? addresses.filter { $0.address.shares(prefix: $0.prefix, with: local) }.max { $0.prefix < $1.prefix }
        guard let match = covering else { return nil }
        return NetworkRoute(interface: match.name, link: link(ofInterface: match.name))
    }

    /// The route of the default path: where traffic to an address outside every local network
    /// would go (a TEST-NET address, to which nothing is sent). Nil when there is none (offline).
    public func defaultRoute(family: IPAddress.Family = .v4) -> NetworkRoute? {
        // 198.51.100.1 (TEST-NET-2) and 2001:db8::1 (documentation) are never reached: a UDP
        // connect only asks the kernel for the route.
        let probe = family == .v4 ? IPAddress(v4: 0xC633_6401) : IPAddress(v6High: 0x2001_0DB8_0000_0000, low: 1)
        return route(to: probe)
    }

    /// The link type of interface `name`.
    public func link(ofInterface name: String) -> LinkType {
        refreshIfStale()
        if let known = links[name] { return known }
        let link: LinkType
        #if os(macOS)
            link = NetworkView.darwinLink(name: name, interfaceType: interfaceTypes[name])
        #else
            link = linuxLink(name)
        #endif
        links[name] = link
        return link
    }

    /// The local address the kernel picks to reach `remote`, or nil when there is no route.
    static func localAddress(toward remote: IPAddress) -> IPAddress? {
        let fd = socket(remote.family.systemValue, datagramSocketType, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let connected = remote.withSockaddr(port: 9) { address, length in connect(fd, address, length) }
        guard connected == 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { return nil }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { IPAddress($0) } }
    }

    /// The Linux rules, from what sysfs says about one interface.
    /// - Parameters:
    ///   - type: the ARPHRD number in `type`.
    ///   - devtype: `DEVTYPE` from `uevent`.
    ///   - wireless: a `wireless` or `phy80211` entry exists.
    ///   - tun: a `tun_flags` entry exists (tun and tap devices).
    ///   - name: the interface name.
    static func classifyLinux(type: Int?, devtype: String?, wireless: Bool, tun: Bool, name: String) -> LinkType {
        if type == 772 { return .loopback }  // ARPHRD_LOOPBACK
        if wireless || devtype == "wlan" || (801...804).contains(type ?? 0) { return .wifi }  // ARPHRD_IEEE80211*
        if devtype == "wwan" || type == 519  // ARPHRD_RAWIP (qmi_wwan, rmnet)
            || ["wwan", "rmnet", "ccmni"].contains(where: { name.hasPrefix($0) })
        {
            return .cellular
        }
        if tun || devtype == "wireguard"
            || [65534, 768, 769, 776, 778, 823].contains(type ?? 0)
        {  // NONE, TUNNEL, TUNNEL6, SIT, IPGRE, IP6GRE
            return .vpn
        }
        if type == 1 { return .ethernet }  // ARPHRD_ETHER
        return .unknown
    }

    // MARK: - Internals

    private func refreshIfStale() {
        let now = Clock.monotonicMilliseconds()
        if loadedAtMs != .min, now - loadedAtMs < refreshAfterMs { return }
        loadedAtMs = now
        links.removeAll(keepingCapacity: true)
        addresses.removeAll(keepingCapacity: true)
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return }
        defer { freeifaddrs(list) }
        var node = list
        while let entry = node {
            defer { node = entry.pointee.ifa_next }
            guard let rawName = entry.pointee.ifa_name, let address = entry.pointee.ifa_addr else { continue }
            let name = String(cString: rawName)
            #if os(macOS)
                if Int32(address.pointee.sa_family) == AF_LINK, let data = entry.pointee.ifa_data {
                    interfaceTypes[name] = data.assumingMemoryBound(to: if_data.self).pointee.ifi_type
                    continue
                }
            #endif
            guard let ip = IPAddress(address) else { continue }
            let prefix = entry.pointee.ifa_netmask.flatMap { IPAddress($0) }?.prefixLength ?? (ip.family == .v4 ? 32 : 128)
            let isLoopback = (entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK)) != 0
            addresses.append(InterfaceAddress(name: name, address: ip, prefix: prefix, isLoopback: isLoopback))
        }
    }

    private func linuxLink(_ name: String) -> LinkType {
        guard !name.contains("/"), name != "..", name != "." else { return .unknown }
        let directory = sysfsRoot + "/" + name
        let type = NetworkView.readSmallFile(directory + "/type").flatMap { Int($0.trimmingSpaces) }
        var devtype: String?
        if let uevent = NetworkView.readSmallFile(directory + "/uevent") {
            for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
                devtype = String(line.dropFirst(8)).trimmingSpaces
            }
        }
        let wireless = access(directory + "/wireless", F_OK) == 0 || access(directory + "/phy80211", F_OK) == 0
        let tun = access(directory + "/tun_flags", F_OK) == 0
        return NetworkView.classifyLinux(type: type, devtype: devtype, wireless: wireless, tun: tun, name: name)
    }

    private static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    #if os(macOS)
        /// macOS: loopback, cellular and tunnels from the interface type and name; Wi-Fi from the
        /// functional type (`SIOCGIFFUNCTIONALTYPE`), since Wi-Fi and Ethernet share IFT_ETHER.
        private static func darwinLink(name: String, interfaceType: UInt8?) -> LinkType {
            switch interfaceType {
            case 0x18?: return .loopback  // IFT_LOOP
            case 0xFF?: return .cellular  // IFT_CELLULAR
            default: break
            }
            if ["utun", "ipsec", "ppp", "tun", "tap", "wg"].contains(where: { name.hasPrefix($0) }) { return .vpn }
            switch functionalType(name) {
            case 1: return .loopback
            case 2: return .ethernet
            case 3, 4: return .wifi  // IFRTYPE_FUNCTIONAL_WIFI_INFRA, _WIFI_AWDL
            case 5: return .cellular
            default: break
            }
            return interfaceType == 0x06 ? .ethernet : .unknown  // IFT_ETHER
        }

        /// `ioctl(SIOCGIFFUNCTIONALTYPE)`: `_IOWR('i', 173, struct ifreq)`; the answer is a
        /// UInt32 after the 16-byte name in the 32-byte `ifreq`.
        private static func functionalType(_ name: String) -> UInt32 {
            let fd = socket(AF_INET, SOCK_DGRAM, 0)
            guard fd >= 0 else { return 0 }
            defer { close(fd) }
            let request = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
            defer { request.deallocate() }
            request.initializeMemory(as: UInt8.self, repeating: 0, count: 32)
            let nameBytes = Array(name.utf8.prefix(15))
            request.copyMemory(from: nameBytes, byteCount: nameBytes.count)
            guard ioctl(fd, UInt(0xC020_69AD), request) == 0 else { return 0 }
            return request.load(fromByteOffset: 16, as: UInt32.self)
        }
    #endif
}

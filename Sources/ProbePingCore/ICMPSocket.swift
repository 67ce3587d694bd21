import ProbeKit
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (ICMP packets are sent and received through sendto(2), recvmsg(2) and sockaddr): kept.

/// Which ICMP sockets to use (`--socket`).
enum ICMPSocketChoice: String, Sendable, CaseIterable {
    /// Datagram sockets where the system allows them, else raw sockets.
    case auto
    /// Only unprivileged datagram sockets (`SOCK_DGRAM`, `IPPROTO_ICMP`/`IPPROTO_ICMPV6`).
    case datagram
    /// Only raw sockets (root or CAP_NET_RAW).
    case raw
}

/// Why no ICMP socket could be opened for a family.
struct ICMPOpenFailure: Error {
    /// Refused by the system (the sample's reason is `permission`), or not supported at all.
    let permission: Bool
    /// What happened and how to allow it.
    let message: String
}

/// What arrived on an ICMP socket, already checked against this run's cookie (and, where the
/// kernel does not do it, the identifier).
enum ICMPEvent {
    /// An echo reply to request `sequence`, whose payload carried `generation`.
    case reply(sequence: UInt16, generation: UInt32, from: IPAddress, receivedRealtimeNs: Int64?)
    /// An ICMP error about request `sequence` sent to `destination`, in ping(8)'s words.
    case failed(sequence: UInt16, generation: UInt32?, destination: IPAddress?, words: String)
}

/// One ICMP socket of one family: sends echo requests and reads what comes back, without
/// allocating per packet. Datagram sockets let the kernel keep the echo identifier and hand
/// this socket only its own replies (errors come through the error queue); raw sockets see
/// every ICMP packet, so the identifier is checked and a kernel filter drops all but echo
/// replies and errors. Every request carries this run's 64-bit cookie and the slot's
/// generation in its payload, so a reply is matched only to the request that caused it.
final class ICMPSocket {
    /// Bytes of an echo request: an 8-byte header and ping(8)'s 56 bytes of payload.
    static let packetSize = 64

    let family: IPAddress.Family
    let isRaw: Bool
    let fd: Int32
    let identifier: UInt16
    let cookie: UInt64
    private let checksIdentifier: Bool
    private let packet = UnsafeMutableRawPointer.allocate(byteCount: ICMPSocket.packetSize, alignment: 8)
    private let receiveBuffer = UnsafeMutableRawPointer.allocate(byteCount: 2048, alignment: 8)
    private let control = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 8)
    private let name = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: 1)
    private let vector = UnsafeMutablePointer<iovec>.allocate(capacity: 1)
    private let message = UnsafeMutablePointer<msghdr>.allocate(capacity: 1)

    private init(family: IPAddress.Family, isRaw: Bool, fd: Int32, cookie: UInt64) {
        self.family = family
        self.isRaw = isRaw
        self.fd = fd
        self.cookie = cookie
        self.identifier = UInt16.random(in: 1...UInt16.max)
        #if os(Linux)
            // Linux datagram ICMP sockets rewrite the identifier and deliver only their own replies.
            checksIdentifier = isRaw
        #else
            checksIdentifier = true
        #endif
        packet.initializeMemory(as: UInt8.self, repeating: 0, count: ICMPSocket.packetSize)
        for offset in 20..<ICMPSocket.packetSize {
            packet.storeBytes(of: UInt8(truncatingIfNeeded: offset), toByteOffset: offset, as: UInt8.self)
        }
    }

    deinit {
        close(fd)
        packet.deallocate()
        receiveBuffer.deallocate()
        control.deallocate()
        name.deallocate()
        vector.deallocate()
        message.deallocate()
    }

    /// Opens a socket of `family` as `choice` allows, or says why none could be opened.
    static func open(family: IPAddress.Family, choice: ICMPSocketChoice, cookie: UInt64) -> Result<ICMPSocket, ICMPOpenFailure> {
        let proto: Int32 = family == .v4 ? 1 : 58  // IPPROTO_ICMP, IPPROTO_ICMPV6
        let kinds: [Bool] = choice == .auto ? [false, true] : [choice == .raw]
        var failures: [(raw: Bool, code: Int32)] = []
        for raw in kinds {
            let fd = socket(family.systemValue, raw ? rawSocketType : datagramSocketType, proto)
            if fd >= 0 {
                let socket = ICMPSocket(family: family, isRaw: raw, fd: fd, cookie: cookie)
                socket.configure()
                return .success(socket)
            }
            failures.append((raw, errno))
        }
        let unsupported: Set<Int32> = [EAFNOSUPPORT, EPROTONOSUPPORT, ESOCKTNOSUPPORT, EINVAL]
        if failures.allSatisfy({ unsupported.contains($0.code) }) {
            let what = family == .v6 ? "IPv6 is not available on this system" : "ICMP sockets are not available on this system"
            return .failure(ICMPOpenFailure(permission: false, message: "\(what) (\(errorText(failures[0].code)))"))
        }
        return .failure(ICMPOpenFailure(permission: true, message: permissionMessage(choice: choice)))
    }

    /// How to allow ICMP, for the choice that failed.
    static func permissionMessage(choice: ICMPSocketChoice) -> String {
        var text = "ICMP echo is not allowed for this user (uid \(getuid()), gid \(getgid()))"
        var ways: [String] = []
        #if os(Linux)
            if choice != .raw {
                let range = readSysctl("/proc/sys/net/ipv4/ping_group_range").map { " (now '\($0)')" } ?? ""
                ways.append(
                    "allow unprivileged ICMP sockets for your group with sysctl -w net.ipv4.ping_group_range='0 2147483647'\(range)")
            }
        #endif
        if choice != .datagram {
            #if os(Linux)
                ways.append("give the tool CAP_NET_RAW (setcap cap_net_raw+ep probe-ping) or run it as root")
            #else
                ways.append("run it as root for raw sockets")
            #endif
        }
        if !ways.isEmpty { text += ": " + ways.joined(separator: ", or ") }
        return text
    }

    private static func readSysctl(_ path: String) -> String? {
        let fd = openFile(path)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\t" })
            .joined(separator: " ").trimmingSpaces
    }

    private func configure() {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        var size: Int32 = 4 << 20
        #if os(Linux)
            // SO_RCVBUFFORCE and SO_SNDBUFFORCE (33, 32) pass the system maximum when privileged;
            // otherwise the plain options give what the maximum allows. A burst of replies must fit.
            if setsockopt(fd, SOL_SOCKET, 33, &size, 4) != 0 { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4) }
            if setsockopt(fd, SOL_SOCKET, 32, &size, 4) != 0 { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4) }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, 35, &on, 4)  // SO_TIMESTAMPNS: kernel receive times
            if isRaw {
                if family == .v4 {
                    // ICMP_FILTER (SOL_RAW 255, option 1): a set bit drops that type. Keep echo reply (0),
                    // destination unreachable (3) and time exceeded (11).
                    var blocked: UInt32 = ~((1 << 0) | (1 << 3) | (1 << 11))
                    setsockopt(fd, 255, 1, &blocked, 4)
                } else {
                    // ICMP6_FILTER (IPPROTO_ICMPV6, option 1): 256 bits, set = drop. Keep 129, 1, 2, 3.
                    var filter = [UInt32](repeating: UInt32.max, count: 8)
                    for type in [129, 1, 2, 3] { filter[type >> 5] &= ~(UInt32(1) << UInt32(type & 31)) }
                    setsockopt(fd, 58, 1, &filter, 32)
                }
            } else {
                // IP_RECVERR / IPV6_RECVERR: ICMP errors about our requests come through the error queue.
                if family == .v4 { setsockopt(fd, 0, 11, &on, 4) } else { setsockopt(fd, 41, 25, &on, 4) }
            }
        #else
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, 4)
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4)
        #endif
    }

    /// Sends one echo request; returns 0, or the errno of a send that failed
    /// (EAGAIN and ENOBUFS mean "try again soon").
    func send(to address: IPAddress, sequence: UInt16, generation: UInt32) -> Int32 {
        packet.storeBytes(of: family == .v4 ? UInt8(8) : UInt8(128), toByteOffset: 0, as: UInt8.self)
        packet.storeBytes(of: UInt8(0), toByteOffset: 1, as: UInt8.self)
        packet.storeBytes(of: UInt16(0), toByteOffset: 2, as: UInt16.self)
        packet.storeBytes(of: identifier.bigEndian, toByteOffset: 4, as: UInt16.self)
        packet.storeBytes(of: sequence.bigEndian, toByteOffset: 6, as: UInt16.self)
        packet.storeBytes(of: cookie.bigEndian, toByteOffset: 8, as: UInt64.self)
        packet.storeBytes(of: generation.bigEndian, toByteOffset: 16, as: UInt32.self)
        if family == .v4 {
            // The kernel fills in the ICMPv6 checksum; for ICMPv4 over a raw socket it is ours.
            packet.storeBytes(
                of: ICMPSocket.checksum(UnsafeRawBufferPointer(start: packet, count: ICMPSocket.packetSize)).bigEndian,
                toByteOffset: 2, as: UInt16.self)
        }
        for attempt in 0..<2 {
            let sent = address.withSockaddr { sockaddr, length in
                sendto(fd, packet, ICMPSocket.packetSize, 0, sockaddr, length)
            }
            if sent >= 0 { return 0 }
            let code = errno
            // A datagram socket reports an ICMP error about an earlier request (to another
            // target) on the next send, once; the same error again is about this send.
            guard attempt == 0, !isRaw, [EHOSTUNREACH, ENETUNREACH, ECONNREFUSED, EHOSTDOWN, EPROTO, EMSGSIZE].contains(code) else {
                return code
            }
        }
        return 0
    }

    /// The Internet checksum (RFC 1071) of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt16 {
        var sum: UInt32 = 0
        var index = 0
        while index + 1 < bytes.count {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.count { sum += UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(truncatingIfNeeded: sum)
    }

    /// Reads everything waiting (the error queue first), handing each event to `handle`.
    func drain(_ handle: (ICMPEvent) -> Void) {
        #if os(Linux)
            if !isRaw { drainErrorQueue(handle) }
        #endif
        var failures = 0
        while true {
            let count = receive(flags: 0)
            if count < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK { return }
                // EINTR, or a pending error the kernel reports once (EHOSTUNREACH, ...): read on.
                failures += 1
                if failures > 64 { return }
                continue
            }
            let from = IPAddress(UnsafeRawPointer(name).assumingMemoryBound(to: sockaddr.self))
            let timestamp = receiveTimestamp()
            if let event = ICMPSocket.parse(
                UnsafeRawBufferPointer(start: receiveBuffer, count: count), family: family, from: from,
                timestamp: timestamp, identifier: checksIdentifier ? identifier : nil, cookie: cookie)
            {
                handle(event)
            }
        }
    }

    private func receive(flags: Int32) -> Int {
        vector.pointee = iovec(iov_base: receiveBuffer, iov_len: 2048)
        var header = msghdr()
        header.msg_name = UnsafeMutableRawPointer(name)
        header.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
        header.msg_iov = vector
        header.msg_iovlen = 1
        header.msg_control = control
        header.msg_controllen = 512
        message.pointee = header
        return recvmsg(fd, message, flags | Int32(MSG_DONTWAIT))
    }

    /// Control messages of the last receive: (level, type, data offset, data length).
    private func controlMessages() -> [(level: Int32, type: Int32, offset: Int, length: Int)] {
        var found: [(Int32, Int32, Int, Int)] = []
        #if os(Linux)
            let total = Int(message.pointee.msg_controllen)
            let headerSize = MemoryLayout<cmsghdr>.size
            var offset = 0
            while offset + headerSize <= total {
                let length = control.load(fromByteOffset: offset, as: Int.self)
                guard length >= headerSize, offset + length <= total else { break }
                let level = control.load(fromByteOffset: offset + MemoryLayout<Int>.size, as: Int32.self)
                let type = control.load(fromByteOffset: offset + MemoryLayout<Int>.size + 4, as: Int32.self)
                found.append((level, type, offset + headerSize, length - headerSize))
                offset += (length + MemoryLayout<Int>.size - 1) & ~(MemoryLayout<Int>.size - 1)
            }
        #endif
        return found
    }

    /// The kernel's receive time of the last packet (CLOCK_REALTIME, nanoseconds), if it gave one.
    private func receiveTimestamp() -> Int64? {
        for item in controlMessages() where item.level == SOL_SOCKET && item.type == 35 && item.length >= 16 {
            let seconds = control.loadUnaligned(fromByteOffset: item.offset, as: Int64.self)
            let nanoseconds = control.loadUnaligned(fromByteOffset: item.offset + 8, as: Int64.self)
            return seconds * 1_000_000_000 + nanoseconds
        }
        return nil
    }

    #if os(Linux)
        /// Datagram sockets: ICMP errors about our requests, with the request itself as the data.
        private func drainErrorQueue(_ handle: (ICMPEvent) -> Void) {
            for _ in 0..<4096 {
                let count = receive(flags: 0x2000)  // MSG_ERRQUEUE
                if count < 0 { return }
                let destination = IPAddress(UnsafeRawPointer(name).assumingMemoryBound(to: sockaddr.self))
                let request = UnsafeRawBufferPointer(start: receiveBuffer, count: count)
                guard count >= 8 else { continue }
                let sequence = ICMPSocket.load16(request, 6)
                let generation: UInt32? = count >= 20 && ICMPSocket.load64(request, 8) == cookie ? ICMPSocket.load32(request, 16) : nil
                for item in controlMessages() where (item.level == 0 && item.type == 11) || (item.level == 41 && item.type == 25) {
                    guard item.length >= 16 else { continue }
                    let origin = control.load(fromByteOffset: item.offset + 4, as: UInt8.self)
                    let type = control.load(fromByteOffset: item.offset + 5, as: UInt8.self)
                    let code = control.load(fromByteOffset: item.offset + 6, as: UInt8.self)
                    let errorNumber = control.loadUnaligned(fromByteOffset: item.offset, as: UInt32.self)
                    var words: String
                    switch origin {
                    case 2: words = ICMPSocket.words(v6: false, type: type, code: code)  // SO_EE_ORIGIN_ICMP
                    case 3: words = ICMPSocket.words(v6: true, type: type, code: code)  // SO_EE_ORIGIN_ICMP6
                    default: words = ICMPSocket.errorText(Int32(bitPattern: errorNumber))
                    }
                    if item.length >= 16 + MemoryLayout<sockaddr_in>.size,
                        let offender = IPAddress((control + item.offset + 16).assumingMemoryBound(to: sockaddr.self))
                    {
                        words += " (from \(offender))"
                    }
                    handle(.failed(sequence: sequence, generation: generation, destination: destination, words: words))
                }
            }
        }
    #endif

    /// Reads one received packet: an echo reply or an ICMP error about one of this run's requests
    /// (nil for anything else). IPv4 packets may start with their IP header. `identifier` is
    /// checked when given; the payload must carry `cookie`.
    static func parse(
        _ bytes: UnsafeRawBufferPointer, family: IPAddress.Family, from: IPAddress?, timestamp: Int64?,
        identifier: UInt16?, cookie: UInt64
    ) -> ICMPEvent? {
        var icmp = bytes
        // Raw IPv4 sockets (and datagram ones outside Linux) see the IP header first; no ICMP type
        // we accept starts with 0x4_, so a leading version nibble of 4 is a header.
        if family == .v4, bytes.count >= 20, bytes[0] >> 4 == 4 {
            let headerLength = Int(bytes[0] & 0x0F) * 4
            guard bytes.count >= headerLength + 8 else { return nil }
            icmp = UnsafeRawBufferPointer(rebasing: bytes[headerLength...])
        }
        guard icmp.count >= 8 else { return nil }
        let type = icmp[0]
        let replyType: UInt8 = family == .v4 ? 0 : 129
        if type == replyType {
            guard icmp.count >= 20, let from else { return nil }
            if let identifier, load16(icmp, 4) != identifier { return nil }
            guard load64(icmp, 8) == cookie else { return nil }
            return .reply(sequence: load16(icmp, 6), generation: load32(icmp, 16), from: from, receivedRealtimeNs: timestamp)
        }
        // An error about a request: the offending packet's headers follow the 8-byte ICMP header.
        let isError = family == .v4 ? (type == 3 || type == 11) : (type >= 1 && type <= 3)
        guard isError else { return nil }
        let inner = UnsafeRawBufferPointer(rebasing: icmp[8...])
        let destination: IPAddress
        let request: UnsafeRawBufferPointer
        if family == .v4 {
            guard inner.count >= 28, inner[0] >> 4 == 4, inner[9] == 1 else { return nil }
            let headerLength = Int(inner[0] & 0x0F) * 4
            guard inner.count >= headerLength + 8 else { return nil }
            destination = IPAddress(v4: load32(inner, 16))
            request = UnsafeRawBufferPointer(rebasing: inner[headerLength...])
            guard request[0] == 8 else { return nil }
        } else {
            guard inner.count >= 48, inner[6] == 58 else { return nil }
            destination = IPAddress(v6High: load64(inner, 24), low: load64(inner, 32))
            request = UnsafeRawBufferPointer(rebasing: inner[40...])
            guard request[0] == 128 else { return nil }
        }
        if let identifier, load16(request, 4) != identifier { return nil }
        var generation: UInt32?
        if request.count >= 20 {
            guard load64(request, 8) == cookie else { return nil }
            generation = load32(request, 16)
        }
        var words = words(v6: family == .v6, type: type, code: icmp[1])
        if let from { words += " (from \(from))" }
        return .failed(sequence: load16(request, 6), generation: generation, destination: destination, words: words)
    }

    /// ping(8)'s words for an ICMP error.
    static func words(v6: Bool, type: UInt8, code: UInt8) -> String {
        if v6 {
            switch (type, code) {
            case (1, 0): return "No route to destination"
            case (1, 1): return "Communication administratively prohibited"
            case (1, 3): return "Address unreachable"
            case (1, 4): return "Port unreachable"
            case (1, _): return "Destination unreachable (code \(code))"
            case (2, _): return "Packet too big"
            case (3, _): return "Hop limit exceeded"
            default: return "ICMPv6 type \(type) code \(code)"
            }
        }
        switch (type, code) {
        case (3, 0): return "Destination net unreachable"
        case (3, 1): return "Destination host unreachable"
        case (3, 2): return "Destination protocol unreachable"
        case (3, 3): return "Destination port unreachable"
        case (3, 4): return "Fragmentation needed"
        case (3, 6): return "Destination net unknown"
        case (3, 7): return "Destination host unknown"
        case (3, 9), (3, 10), (3, 13): return "Communication administratively prohibited"
        case (3, _): return "Destination unreachable (code \(code))"
        case (11, _): return "Time to live exceeded"
        default: return "ICMP type \(type) code \(code)"
        }
    }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    private static func load16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    private static func load32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    private static func load64(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

/// `SOCK_RAW` as the socket call wants it on this system.
let rawSocketType: Int32 = {
    #if canImport(Glibc)
        return Int32(SOCK_RAW.rawValue)
    #else
        return SOCK_RAW
    #endif
}()

/// `open(path, O_RDONLY)`, outside the type whose `open` would hide it.
private func openFile(_ path: String) -> Int32 {
    open(path, O_RDONLY | O_CLOEXEC)
}

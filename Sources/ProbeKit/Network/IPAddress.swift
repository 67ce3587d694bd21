#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (sockaddr, inet_pton(3) and inet_ntop(3) take raw pointers): kept.

/// An IPv4 or IPv6 address held by value (no allocation), parsed and printed with the
/// system's `inet_pton` and `inet_ntop`, convertible to and from `sockaddr`.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        case v4
        case v6

        /// `AF_INET` or `AF_INET6`.
        public var systemValue: Int32 { self == .v4 ? AF_INET : AF_INET6 }
    }

    /// The family.
    public let family: Family
    /// IPv6: bytes 0 to 7, big-endian. IPv4: 0.
    public let high: UInt64
    /// IPv6: bytes 8 to 15, big-endian. IPv4: the four bytes, big-endian, in the low 32 bits.
    public let low: UInt64
    /// The IPv6 scope (interface index) of a link-local address; 0 otherwise.
    let scopeID: UInt32

    /// An IPv4 address from its four bytes as one big-endian number (`0x7F000001` is 127.0.0.1).
    public init(v4 value: UInt32) {
        family = .v4
        high = 0
        low = UInt64(value)
        scopeID = 0
    }

    /// An IPv6 address from its sixteen bytes as two big-endian halves.
    public init(v6High high: UInt64, low: UInt64, scopeID: UInt32 = 0) {
        family = .v6
        self.high = high
        self.low = low
        self.scopeID = scopeID
    }

    /// Parses a literal address: `192.0.2.1`, `::1`, `fe80::1%eth0`, `[::1]`. Nil for anything else
    /// (host names included; nothing is looked up).
    public init?(_ text: String) {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = in_addr()
        if !literal.contains(":"), inet_pton(AF_INET, literal, &v4) == 1 {
            self.init(v4: UInt32(bigEndian: v4.s_addr))
            return
        }
        var zone: UInt32 = 0
        if let percent = literal.firstIndex(of: "%") {
            let name = String(literal[literal.index(after: percent)...])
            literal = String(literal[..<percent])
            if let number = UInt32(name) {
                zone = number
            } else {
                zone = if_nametoindex(name)
                if zone == 0 { return nil }
            }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, literal, &v6) == 1 else { return nil }
        let halves = withUnsafeBytes(of: &v6) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
        self.init(v6High: UInt64(bigEndian: halves.0), low: UInt64(bigEndian: halves.1), scopeID: zone)
    }

    /// Reads the address of a `sockaddr_in` or `sockaddr_in6`; nil for other families.
    public init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let value = UnsafeRawPointer(address).withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
            self.init(v4: UInt32(bigEndian: value))
        case AF_INET6:
            let (first, second, scope) = UnsafeRawPointer(address).withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var bytes = pointer.pointee.sin6_addr
                let halves = withUnsafeBytes(of: &bytes) { raw in
                    (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                }
                return (halves.0, halves.1, pointer.pointee.sin6_scope_id)
            }
            self.init(v6High: UInt64(bigEndian: first), low: UInt64(bigEndian: second), scopeID: scope)
        default:
            return nil
        }
    }

    /// Whether this is 127.0.0.0/8 or ::1.
    var isLoopback: Bool {
        family == .v4 ? (low >> 24) == 127 : (high == 0 && low == 1)
    }

    /// Whether this is an IPv6 link-local address (fe80::/10).
    var isLinkLocal: Bool { family == .v6 && (high >> 54) == 0x3FA }

    /// The sixteen (IPv6) or four (IPv4) bytes, network order.
    public var bytes: [UInt8] {
        if family == .v4 { return (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * $0)) } }
        return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// Whether the first `prefix` bits equal those of `other` (same family).
    func shares(prefix: Int, with other: IPAddress) -> Bool {
        guard family == other.family else { return false }
        if family == .v4 {
            let bits = min(max(prefix, 0), 32)
            if bits == 0 { return true }
            let mask = UInt64(UInt32.max << (32 - bits))
            return low & mask == other.low & mask
        }
        let bits = min(max(prefix, 0), 128)
        func masked(_ value: UInt64, _ count: Int) -> UInt64 {
            count <= 0 ? 0 : count >= 64 ? value : value & (UInt64.max << (64 - count))
        }
        return masked(high, bits) == masked(other.high, bits) && masked(low, bits - 64) == masked(other.low, bits - 64)
    }

    /// The number of leading one bits, read as a netmask.
    var prefixLength: Int {
        if family == .v4 { return (~UInt32(truncatingIfNeeded: low)).leadingZeroBitCount }
        return high == UInt64.max ? 64 + (~low).leadingZeroBitCount : (~high).leadingZeroBitCount
    }

    /// Calls `body` with this address as a `sockaddr` of the right size, with `port`.
    public func withSockaddr<Result>(port: UInt16 = 0, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result {
        if family == .v4 {
            var address = sockaddr_in()
            #if canImport(Darwin)
                address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
            #endif
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = UInt32(truncatingIfNeeded: low).bigEndian
            return try withUnsafePointer(to: &address) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var address = sockaddr_in6()
        #if canImport(Darwin)
            address.sin6_len = UInt8(MemoryLayout<sockaddr_in6>.size)
        #endif
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_scope_id = scopeID
        withUnsafeMutableBytes(of: &address.sin6_addr) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return try withUnsafePointer(to: &address) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }

    /// `192.0.2.1`, `2001:db8::1`, `fe80::1%eth0`.
    public var description: String {
        var text = [CChar](repeating: 0, count: 64)
        if family == .v4 {
            var value = in_addr()
            value.s_addr = UInt32(truncatingIfNeeded: low).bigEndian
            inet_ntop(AF_INET, &value, &text, socklen_t(text.count))
        } else {
            var value = in6_addr()
            withUnsafeMutableBytes(of: &value) { raw in
                raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            }
            inet_ntop(AF_INET6, &value, &text, socklen_t(text.count))
        }
        var result = cBufferText(text)
        if scopeID != 0 {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            if if_indextoname(scopeID, &name) != nil {
                result += "%" + cBufferText(name)
            } else {
                result += "%\(scopeID)"
            }
        }
        return result
    }
}

/// The text of a NUL-terminated C buffer.
func cBufferText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

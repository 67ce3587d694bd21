import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (bind(2) and accept(2) take a sockaddr_un): kept.

/// The listening socket of a responder, and who may open it.
///
/// Whoever can connect to a responder's socket is the web server as far as the responder knows:
/// it can claim any client certificate and skip every limit nginx sets. So the socket is made
/// private before it exists (the umask while it is bound): mode 0600, for a web server running as
/// the same user, or 0660 with `--socket-group`, the group of nginx's workers. Its folder must
/// give others nothing and its group no write: otherwise another user could replace the socket.
public struct Listener {
    /// The listening descriptor.
    public let fd: Int32
    /// The socket's path when this process made it (removed at the end), nil when inherited.
    public let path: String?
    /// How the socket is described in messages: `unix:PATH`, or `an inherited socket (systemd)`.
    public let display: String

    /// The socket systemd passed (socket activation: LISTEN_PID is this process, LISTEN_FDS 1,
    /// the socket is descriptor 3), else a new one at `path`.
    public static func open(path: String?, group: String?, environment: [String: String]) throws -> Listener {
        if let fds = systemdDescriptors(environment) {
            guard fds >= 1, isSocket(3, type: socketStream) else {
                throw ToolError("systemd's LISTEN_FDS is set, but descriptor 3 is not a stream socket")
            }
            if path != nil { throw UsageError("--socket is systemd's to set here (the service was started with a socket, LISTEN_FDS)") }
            return Listener(fd: 3, path: nil, display: "a socket from systemd")
        }
        guard let path else { throw UsageError("serve wants --socket PATH (a Unix socket for nginx), or a socket from systemd") }
        return try Listener(creating: path, group: group, type: socketStream)
    }

    /// A named pipe (FIFO) the web server writes lines to (nginx's access log of the requests it
    /// refused itself): systemd's second descriptor (4, `ListenFIFO=`) when it passed two, else a
    /// new FIFO at `path`, private like the socket (0600, or 0660 with a group), opened for
    /// reading and writing so it never reads as ended while nginx reopens its logs.
    ///
    /// A pipe, not a datagram socket: a Unix datagram socket queues at most
    /// net.unix.max_dgram_qlen messages (10 here), and nginx drops a syslog line it cannot send at
    /// once, so a burst of 429s lost lines; a pipe buffers 64 KiB and nginx waits for room.
    public static func openLogPipe(path: String?, group: String?, option: String, environment: [String: String]) throws -> Listener? {
        if let fds = systemdDescriptors(environment) {
            guard fds >= 2 else {
                if path != nil { throw UsageError("\(option) is systemd's to set here: give the service's socket unit a ListenFIFO=") }
                return nil
            }
            var info = stat()
            guard fstat(4, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else {
                throw ToolError("systemd passed two descriptors, but descriptor 4 is not a FIFO (ListenFIFO=)")
            }
            return Listener(fd: 4, path: nil, display: "a FIFO from systemd")
        }
        guard let path else { return nil }
        guard !path.isEmpty else { throw UsageError("\(option) wants a path") }
        let gid = try group.map(Listener.groupID)
        try Listener.checkFolder(of: path, grouped: gid != nil)
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFIFO else { throw ToolError("\(path) exists and is not a FIFO; name another with \(option)") }
            unlink(path)
        }
        let old = umask(gid == nil ? 0o177 : 0o117)
        let made = mkfifo(path, 0o660)
        let why = errno
        umask(old)
        guard made == 0 else { throw ToolError("cannot make the FIFO \(path): \(String(cString: strerror(why)))") }
        if let gid, chown(path, uid_t.max, gid) != 0 {
            let reason = String(cString: strerror(errno))
            unlink(path)
            throw ToolError("cannot give the FIFO \(path) to group \(group!): \(reason)")
        }
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            unlink(path)
            throw ToolError("cannot open the FIFO \(path): \(reason)")
        }
        return Listener(fd: fd, path: path, display: "the FIFO \(path)")
    }

    /// How many sockets systemd passed this process, or nil when it passed none.
    static func systemdDescriptors(_ environment: [String: String]) -> Int? {
        guard let fds = environment["LISTEN_FDS"].flatMap({ Int($0) }), let pid = environment["LISTEN_PID"], Int32(pid) == getpid() else {
            return nil
        }
        return fds
    }

    static func isSocket(_ fd: Int32, type: Int32) -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return false }
        var kind: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &kind, &length) == 0 && kind == type
    }

    private init(fd: Int32, path: String?, display: String) {
        self.fd = fd
        self.path = path
        self.display = display
    }

    /// Makes the socket at `path`: checks its folder, removes a stale socket, binds with the mode
    /// set from the start, and listens.
    private init(creating path: String, group: String?, type: Int32) throws {
        guard path.utf8.count < 104 else {
            throw UsageError("the socket path \(path) is longer than a Unix socket path may be (103 bytes)")
        }
        let gid = try group.map(Listener.groupID)
        try Listener.checkFolder(of: path, grouped: gid != nil)
        try Listener.removeStale(path, type: type)
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { throw ToolError("cannot make a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        // The mode is right from the moment the socket exists: 0600, or 0660 for a group.
        let old = umask(gid == nil ? 0o177 : 0o117)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(old)
        guard bound == 0 else {
            _ = closeDescriptor(fd)
            throw ToolError("cannot make the socket \(path): \(String(cString: strerror(bindErrno)))")
        }
        if let gid, chown(path, uid_t.max, gid) != 0 {
            let why = String(cString: strerror(errno))
            _ = closeDescriptor(fd)
            unlink(path)
            throw ToolError("cannot give the socket \(path) to group \(group!): \(why) (a user can give files only to groups they are in)")
        }
        guard listen(fd, 1024) == 0 else {
            let why = String(cString: strerror(errno))
            _ = closeDescriptor(fd)
            unlink(path)
            throw ToolError("cannot listen on \(path): \(why)")
        }
        self.init(fd: fd, path: path, display: "unix:\(path)")
    }

    /// The folder must exist, belong to this user (or root), give others nothing and its group no write.
    static func checkFolder(of path: String, grouped: Bool) throws {
        let folder = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let shown = folder.isEmpty ? "/" : folder
        var info = stat()
        guard stat(folder.isEmpty ? "/" : folder, &info) == 0 else {
            throw ToolError("cannot use the socket's folder \(shown): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw ToolError("\(shown) is not a folder") }
        switch OwnerCheck.refusal(of: info, forbidding: 0o027) {
        case nil: return
        case .foreignOwner:
            throw ToolError(
                "the socket's folder \(shown) belongs to another user: make it yours (a folder of the responder's user, mode 0700)")
        case .openMode(let mode):
            let want = grouped ? "0710 (chmod 710 \(shown)), so that only the group can reach the socket" : "0700 (chmod 700 \(shown))"
            throw ToolError(
                "the socket's folder \(shown) has mode \(OwnerCheck.octal(mode)): others could reach or replace the socket; make it \(want)"
            )
        }
    }

    /// Removes a socket nobody listens on any more; refuses a live one or a file of another kind.
    static func removeStale(_ path: String, type: Int32) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw ToolError("\(path) exists and is not a socket; name another") }
        if Listener.connects(path, type: type) { throw ToolError("another program is listening on \(path)") }
        unlink(path)
    }

    /// Whether something accepts connections at the Unix socket `path`.
    static func connects(_ path: String, type: Int32 = socketStream) -> Bool {
        let fd = socket(AF_UNIX, type, 0)
        guard fd >= 0 else { return false }
        defer { _ = closeDescriptor(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// A group's id, by name or number.
    static func groupID(_ name: String) throws -> gid_t {
        if let number = gid_t(name) { return number }
        guard let entry = getgrnam(name) else { throw UsageError("--socket-group: no group named '\(name)'") }
        return entry.pointee.gr_gid
    }
}

/// SOCK_STREAM as a plain integer (an enum on Linux, an integer on Darwin).
#if canImport(Glibc)
    let socketStream = Int32(SOCK_STREAM.rawValue)
#else
    let socketStream = SOCK_STREAM
#endif

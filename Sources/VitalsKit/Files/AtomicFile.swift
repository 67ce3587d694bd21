#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (mkstemp(3) and write(2)): kept.

/// Replaces a file whole or not at all, so a crash or a power loss leaves either the old
/// contents or the new ones: every state file and cache of the suite is written through here.
///
/// The steps: a temporary file in the same directory (so the rename stays on one file system),
/// mode 0600 before any byte is written (and, for root, the old file's owner), every byte written, `fsync`, a checked `close`,
/// `rename` over the path, and an `fsync` of the directory so the rename itself is durable.
/// On any failure before the rename the temporary file is removed and the old file is untouched.
public enum AtomicFile {
    /// The mode every state file and cache gets: readable and writable by its owner only.
    public static let privateMode: mode_t = 0o600

    /// Writes `bytes` to `path`, replacing what was there.
    ///
    /// - Throws: a `ToolError` naming `path` and the reason; it says whether the old file was kept.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = privateMode) throws(ToolError) {
        let directory = directoryName(path)
        let base = baseName(path)
        var template = Array(((directory == "/" ? "/" : directory + "/") + "." + base + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        if fd < 0 { throw failure(path) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }

        func abandon() -> ToolError {
            let error = failure(path)
            close(fd)
            unlink(temporary)
            return error
        }
        if fchmod(fd, mode) != 0 { throw abandon() }
        // Root replacing a file another user owns (a token file or a state file a responder
        // running as that user reads) gives the new file the same owner, as SQLite does for its
        // journal files: otherwise the owner could no longer read its own file.
        var existing = stat()
        if geteuid() == 0, lstat(path, &existing) == 0, existing.st_uid != 0 || existing.st_gid != 0,
            fchown(fd, existing.st_uid, existing.st_gid) != 0
        {
            throw abandon()
        }
        if !bytes.withUnsafeBytes({ Streams.writeAll(fd, $0) }) { throw abandon() }
        if fsync(fd) != 0 { throw abandon() }
        if close(fd) != 0 {
            // The descriptor is gone whatever close returned; only the temporary is left to remove.
            let error = failure(path)
            unlink(temporary)
            throw error
        }
        if rename(temporary, path) != 0 {
            let error = failure(path)
            unlink(temporary)
            throw error
        }
        try syncDirectory(directory, of: path)
    }

    /// Writes `text` as UTF-8 to `path`, replacing what was there.
    public static func write(_ text: String, to path: String, mode: mode_t = privateMode) throws(ToolError) {
        try write(Array(text.utf8), to: path, mode: mode)
    }

    /// The directory part of `path`: `.` for a bare name, `/` for a file at the root.
    public static func directoryName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func baseName(_ path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Makes the rename durable. The new contents are in place by now, so a failure says so.
    private static func syncDirectory(_ directory: String, of path: String) throws(ToolError) {
        let fd = open(directory, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            throw ToolError(
                "\(path) was replaced, but its directory \(directory) could not be opened to make that durable: "
                    + String(cString: strerror(errno)))
        }
        defer { close(fd) }
        // Some file systems cannot sync a directory (EINVAL): nothing more can be done there.
        if fsync(fd) != 0 && errno != EINVAL {
            throw ToolError(
                "\(path) was replaced, but its directory \(directory) could not be synced: "
                    + String(cString: strerror(errno)))
        }
    }

    private static func failure(_ path: String) -> ToolError {
        let reason = String(cString: strerror(errno))
        return ToolError("cannot write \(path): \(reason) (the previous file, if any, is unchanged)")
    }
}

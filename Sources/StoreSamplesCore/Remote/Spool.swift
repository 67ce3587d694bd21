import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (readdir(3)'s entries, write(2) and read(2) buffers): kept.

/// An agent's spool: the batches a remote store has taken and not yet delivered, one file each, on
/// disk before anything is sent, so nothing is lost while the server or the link is down.
///
/// Layout, in one folder per server (`RemoteLocation.spoolName`) under the spool folder:
///
///     SEQ.ndjson            a batch waiting: the sample lines as read, 16 digits that give the order
///     refused/SEQ-N.ndjson  lines the server refused, from line N of batch SEQ, as sent
///     refused/SEQ-N.why     why: `LINE: reason`, LINE counted in the .ndjson beside it
///     .lock                 held (flock) by the run that sends
///     .tmp-PID-N            a batch being written (left by a run killed meanwhile: removed)
///
/// A batch is written to a temporary file (mode 0600), synced, then linked to its name (never
/// over another run's) and the folder synced: a kill -9 or a full disk leaves the batch whole or
/// absent, never half of it to be sent. The folders are 0700 and must belong to the user and give
/// no one else write access; entries that are not regular files of the user's are left alone.
/// Every path is reached from the folder's descriptor, without following a symbolic link.
final class Spool {
    /// One batch waiting: the file `SEQ.ndjson`.
    struct Entry: Equatable {
        /// Its place in the order batches are sent.
        let seq: UInt64
        /// Its size in bytes.
        var bytes: Int64
        /// Its lines, when known (this run wrote it).
        var lines: Int?
    }

    /// The folder, for messages.
    let path: String
    /// The folder, opened without following a link.
    private let fd: Int32
    /// The most bytes the waiting batches may take (`--spool-size`).
    let maxBytes: Int64
    /// How old a waiting batch may grow, ms (`--spool-age`).
    let maxAgeMs: Int64
    private let diagnostics: Diagnostics
    /// The batches waiting, oldest first.
    private(set) var entries: [Entry] = []
    /// The next batch's number.
    private var nextSeq: UInt64 = 1
    /// Temporary files made by this run.
    private var temporaries = 0
    /// `.lock`, open.
    private let lockFD: Int32
    /// The batch being sent (`RemoteSender`), never dropped to make room.
    var sending: UInt64?
    /// Samples dropped by the limits, never sent.
    private(set) var droppedSamples = 0
    /// Names of entries already reported as left alone.
    private var ignored: Set<String> = []

    /// The folder the refused lines are kept in.
    var refusedPath: String { path + "/refused" }

    /// Opens (making it when missing, mode 0700) the folder `name` under `base` and its `refused/`,
    /// checks who may write them, removes temporary files of runs that died, and lists the batches
    /// waiting, dropping those older than `maxAgeMs` (said on standard error, with a count).
    init(base: String, name: String, maxBytes: Int64, maxAgeMs: Int64, now: Int64, diagnostics: Diagnostics) throws {
        path = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/" + name
        self.maxBytes = maxBytes
        self.maxAgeMs = maxAgeMs
        self.diagnostics = diagnostics
        try Spool.makeFolders(base)
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw Spool.failure("cannot make the spool folder \(path)") }
        let folder = try Spool.openFolder(at: AT_FDCWD, path, shown: path)
        let lock: Int32
        do {
            if mkdirat(folder, "refused", 0o700) != 0, errno != EEXIST {
                throw Spool.failure("cannot make the spool folder \(path)/refused")
            }
            close(try Spool.openFolder(at: folder, "refused", shown: path + "/refused"))
            lock = openat(folder, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if lock < 0 { throw Spool.failure("cannot open \(path)/.lock") }
        } catch {
            close(folder)
            throw error
        }
        fd = folder
        lockFD = lock
        try refresh()
        nextSeq = max(nextSeq, (entries.last?.seq ?? 0) + 1)
        var old = (batches: 0, samples: 0)
        for entry in entries where Spool.modified(fd, Spool.name(entry.seq)).map({ $0 < now - maxAgeMs }) ?? false {
            old.samples += lines(of: entry)
            old.batches += 1
            drop(entry)
        }
        if old.batches > 0 {
            droppedSamples += old.samples
            diagnostics.error(
                "dropped \(Spool.count(old.batches, "batch", "batches")) (\(Spool.count(old.samples, "sample", "samples"))) "
                    + "older than --spool-age \(DefaultText.duration(milliseconds: maxAgeMs)) from \(path), never sent")
        }
    }

    deinit {
        close(lockFD)
        close(fd)
    }

    /// Takes the lock of the run that sends; false when another run holds it.
    func tryLock() -> Bool { flock(lockFD, LOCK_EX | LOCK_NB) == 0 }

    /// The name of batch `seq`.
    static func name(_ seq: UInt64) -> String {
        let digits = String(seq)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits + ".ndjson"
    }

    /// Lists the folder again (another run may have added batches), removing the temporary files
    /// of runs that ended.
    func refresh() throws {
        let known = Dictionary(entries.map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
        var found: [Entry] = []
        try Spool.forEachName(in: fd, path) { name in
            if name.hasPrefix(".tmp-") {
                let pid = name.dropFirst(5).split(separator: "-").first.flatMap { pid_t($0) } ?? 0
                if pid > 0, pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { unlinkat(fd, name, 0) }
                return
            }
            guard let seq = Spool.seq(name, suffix: ".ndjson") else { return }
            var info = stat()
            guard fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid()
            else {
                if ignored.insert(name).inserted {
                    diagnostics.warning("left alone: \(path)/\(name) is not a regular file of yours")
                }
                return
            }
            found.append(Entry(seq: seq, bytes: Int64(info.st_size), lines: known[seq]?.lines))
        }
        entries = found.sorted { $0.seq < $1.seq }
        if nextSeq == 1 {
            // Refused files keep their batch's number: a new batch never takes one.
            let refused = try Spool.openFolder(at: fd, "refused", shown: refusedPath)
            defer { close(refused) }
            var highest: UInt64 = 0
            try Spool.forEachName(in: refused, refusedPath) { name in
                if let seq = Spool.seq(String(name.prefix(16)), suffix: "") { highest = max(highest, seq) }
            }
            nextSeq = highest + 1
        }
    }

    /// Writes a batch of `lines` lines (each ending with a line feed) durably, after dropping the
    /// oldest batches waiting if the limit asks (said on standard error, with a count).
    func add(_ bytes: [UInt8], lines: Int) throws {
        makeRoom(for: Int64(bytes.count))
        var temporary = ""
        var out: Int32 = -1
        repeat {
            temporaries += 1
            temporary = ".tmp-\(getpid())-\(temporaries)"
            out = openat(fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        } while out < 0 && errno == EEXIST
        guard out >= 0 else { throw writeFailure(errno) }
        var error = bytes.withUnsafeBytes { Streams.writeAll(out, $0) } ? 0 : errno
        if error == 0, fsync(out) != 0 { error = errno }
        if close(out) != 0, error == 0 { error = errno }
        if error != 0 {
            unlinkat(fd, temporary, 0)
            throw writeFailure(error)
        }
        // Linked, not renamed: a name another run took meanwhile is never replaced.
        while linkat(fd, temporary, fd, Spool.name(nextSeq), 0) != 0 {
            guard errno == EEXIST else {
                let failure = writeFailure(errno)
                unlinkat(fd, temporary, 0)
                throw failure
            }
            try refresh()
            nextSeq = max(nextSeq + 1, (entries.last?.seq ?? 0) + 1)
        }
        unlinkat(fd, temporary, 0)
        if fsync(fd) != 0, errno != EINVAL { throw writeFailure(errno) }
        if !entries.contains(where: { $0.seq == nextSeq }) {
            entries.append(Entry(seq: nextSeq, bytes: Int64(bytes.count), lines: lines))
        }
        nextSeq += 1
    }

    /// The contents of a batch, nil when it is gone (dropped, or sent by another run).
    func contents(of entry: Entry) throws -> [UInt8]? {
        var bytes: [UInt8] = []
        return try contents(of: entry, into: &bytes) ? bytes : nil
    }

    /// Reads a batch into `bytes` (replacing what it held, in its storage when that is big enough
    /// and not shared); false when the batch is gone (dropped, or sent by another run).
    ///
    /// A catching-up agent reads one batch after another into the same storage (`RemoteSender`),
    /// and reads each whole at its size: a batch is written whole before it is named. Reading in
    /// 64 KiB pieces into a new array for each batch held two copies at each doubling, and glibc,
    /// once the first such array was freed, kept the later ones in a heap it did not give back:
    /// the agent's peak resident memory reached its 32 MB goal (scripts/bench/agents).
    func contents(of entry: Entry, into bytes: inout [UInt8]) throws -> Bool {
        let input = openat(fd, Spool.name(entry.seq), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if input < 0 {
            if errno == ENOENT { return false }
            throw Spool.failure("cannot read \(path)/\(Spool.name(entry.seq))")
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0 else { throw Spool.failure("cannot read \(path)/\(Spool.name(entry.seq))") }
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: repeatElement(0, count: Int(info.st_size)))
        var filled = 0
        while true {
            if filled == bytes.count { bytes.append(contentsOf: repeatElement(0, count: 1 << 16)) }  // it grew after all
            let count = bytes.withUnsafeMutableBytes { read(input, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw Spool.failure("cannot read \(path)/\(Spool.name(entry.seq))") }
            if count == 0 {
                bytes.removeLast(bytes.count - filled)
                return true
            }
            filled += count
        }
    }

    /// Removes a batch delivered. The folder is not synced: a batch that comes back after a crash is
    /// sent again, which changes nothing on the server (a sample's identity is stored once).
    func remove(_ entry: Entry) {
        unlinkat(fd, Spool.name(entry.seq), 0)
        entries.removeAll { $0.seq == entry.seq }
    }

    /// Keeps lines the server refused apart, with its reasons: `refused/SEQ-LINE.ndjson` and
    /// `.why`; returns the path of the first. `reasons` has one entry for each line.
    @discardableResult
    func keepApart(_ lines: [UInt8], reasons: [String], seq: UInt64, firstLine: Int) throws -> String {
        let base = refusedPath + "/" + String(Spool.name(seq).dropLast(7)) + "-\(firstLine)"
        let why = reasons.enumerated().map { "\($0.offset + 1): \($0.element)\n" }.joined()
        try AtomicFile.write(Array(why.utf8), to: base + ".why")
        try AtomicFile.write(lines, to: base + ".ndjson")
        return base + ".ndjson"
    }

    /// The lines of a batch: counted this run, else read.
    func lines(of entry: Entry) -> Int {
        if let lines = entry.lines { return lines }
        return ((try? contents(of: entry)) ?? nil)?.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) } ?? 0
    }

    /// Drops the oldest batches waiting (never the one being sent) until `bytes` more fit the limit.
    private func makeRoom(for bytes: Int64) {
        var total = entries.reduce(Int64(0)) { $0 + $1.bytes }
        var dropped = (batches: 0, samples: 0)
        while total + bytes > maxBytes, let oldest = entries.first(where: { $0.seq != sending }) {
            dropped.samples += lines(of: oldest)
            dropped.batches += 1
            total -= oldest.bytes
            drop(oldest)
        }
        guard dropped.batches > 0 else { return }
        droppedSamples += dropped.samples
        diagnostics.error(
            "the spool \(path) is full (--spool-size \(Spool.sizeText(maxBytes))): dropped its "
                + "\(dropped.batches == 1 ? "oldest batch" : "\(dropped.batches) oldest batches") "
                + "(\(Spool.count(dropped.samples, "sample", "samples"))), never sent")
    }

    /// Removes a batch that will never be sent.
    private func drop(_ entry: Entry) {
        unlinkat(fd, Spool.name(entry.seq), 0)
        entries.removeAll { $0.seq == entry.seq }
    }

    /// The error for a batch that could not be written, with the system's reason for `code`.
    private func writeFailure(_ code: Int32) -> ToolError {
        let reason = String(cString: strerror(code))
        return ToolError(
            "cannot write a batch into the spool \(path): \(reason); it was neither spooled nor passed on, "
                + "and the \(Spool.count(entries.count, "batch", "batches")) spooled before \(entries.count == 1 ? "is" : "are") intact")
    }

    /// `words` and the system's reason.
    private static func failure(_ words: String) -> ToolError {
        ToolError("\(words): \(String(cString: strerror(errno)))")
    }

    /// `1 batch`, `3 batches`, `1,234 samples`.
    static func count(_ number: Int, _ one: String, _ many: String) -> String {
        let digits = String(number)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return grouped + " " + (number == 1 ? one : many)
    }

    /// `512M`, `1G`, `65536`: a size as `--spool-size` takes it.
    static func sizeText(_ bytes: Int64) -> String {
        for (unit, size) in [("G", Int64(1 << 30)), ("M", 1 << 20), ("K", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(unit)"
        }
        return String(bytes)
    }

    /// The number of a name `DIGITS` + `suffix` with 16 digits.
    private static func seq(_ name: String, suffix: String) -> UInt64? {
        guard name.hasSuffix(suffix), name.utf8.count == 16 + suffix.utf8.count else { return nil }
        let digits = name.prefix(16)
        guard digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(digits)
    }

    /// When a file in the folder was last written, ms since 1970.
    private static func modified(_ folder: Int32, _ name: String) -> Int64? {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        #if canImport(Glibc)
            return Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
        #else
            return Int64(info.st_mtimespec.tv_sec) * 1000 + Int64(info.st_mtimespec.tv_nsec) / 1_000_000
        #endif
    }

    /// Makes `path` and the folders above it that are missing, each 0700.
    private static func makeFolders(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + part
            if mkdir(prefix, 0o700) != 0, errno != EEXIST { throw failure("cannot make the spool folder \(prefix)") }
        }
    }

    /// Opens the folder `name` (relative to `parent`) without following a link, and checks that it
    /// is the user's and that no one else may write in it: another user who could would have their
    /// batches sent with this agent's token.
    private static func openFolder(at parent: Int32, _ name: String, shown: String) throws -> Int32 {
        let folder = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            if errno == ELOOP || errno == ENOTDIR {
                throw ToolError("the spool folder \(shown) is not a folder (a symbolic link?): refused")
            }
            throw failure("cannot open the spool folder \(shown)")
        }
        var info = stat()
        guard fstat(folder, &info) == 0 else {
            close(folder)
            throw failure("cannot read the spool folder \(shown)")
        }
        switch OwnerCheck.refusal(of: info, forbidding: 0o022, rootMayOwn: false) {
        case nil: return folder
        case .foreignOwner(let owner):
            close(folder)
            throw ToolError("the spool folder \(shown) belongs to user \(owner), not to you: refused")
        case .openMode(let mode):
            close(folder)
            throw ToolError(
                "the spool folder \(shown) can be written by other users (mode \(OwnerCheck.octal(mode))): refused, "
                    + "since their files would be sent with this agent's token; run chmod 700 \(shown)")
        }
    }

    /// Calls `visit` with each name in the folder `folder` but `.` and `..`.
    private static func forEachName(in folder: Int32, _ shown: String, _ visit: (String) throws -> Void) throws {
        let listing = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard listing >= 0, let directory = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            throw failure("cannot list the spool folder \(shown)")
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) { String(cString: $0) }
            }
            if name != ".", name != ".." { try visit(name) }
        }
    }
}

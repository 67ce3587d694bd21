import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (read(2) of the cache file): kept.

/// `--cache FILE`: the digest made today, kept so a second run the same day prints it again
/// instead of reading the samples (isitup's daily cache). One JSON object:
/// `{"type":"digest_cache","generated_at":…,"day":"2026-01-27","key":…,"output":…}`.
struct DigestCache {
    /// The file.
    let path: String

    /// What the file holds, or why it cannot be used.
    enum Lookup: Equatable {
        /// Made on `day` with the same options: the output to print.
        case hit(String)
        /// Absent, from another day, or made with other options.
        case miss
        /// Unreadable or not a cache; the message says why.
        case unusable(String)
    }

    /// Looks up a digest made on `day` (a `YYYY-MM-DD` in the chosen zone) with options `key`.
    func lookup(day: String, key: String) -> Lookup {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            return errno == ENOENT ? .miss : .unusable("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .unusable("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > 64 << 20 { return .unusable("\(path) is over 64 MiB; not a digest cache") }
        }
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
        guard let value = try? JSONParser.parse(bytes), let object = value.objectValue,
            object["type"]?.stringValue == "digest_cache", let cachedDay = object["day"]?.stringValue,
            let cachedKey = object["key"]?.stringValue, let output = object["output"]?.stringValue
        else {
            return .unusable("\(path) is not a digest cache")
        }
        return cachedDay == day && cachedKey == key ? .hit(output) : .miss
    }

    /// Removes the cache (isitup's "clear history"). An absent file is already clear; a file
    /// that is not a digest cache is left alone and refused.
    func clear() throws(ToolError) {
        if case .unusable(let why) = lookup(day: "", key: "") {
            if access(path, F_OK) != 0, errno == ENOENT { return }
            throw ToolError("\(why); not removed")
        }
        if unlink(path) != 0, errno != ENOENT {
            throw ToolError("cannot remove \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Stores `output` made at `generatedAt` on `day` with options `key`, atomically, mode 0600.
    func store(output: String, generatedAt: Int64, day: String, key: String) throws(ToolError) {
        let record = JSONValue.object(
            JSONObject([
                JSONField("type", .string("digest_cache")),
                JSONField("generated_at", .string(Timestamp.format(milliseconds: generatedAt))),
                JSONField("day", .string(day)),
                JSONField("key", .string(key)),
                JSONField("output", .string(output)),
            ]))
        var bytes = record.encoded()
        bytes.append(0x0A)
        try AtomicFile.write(bytes, to: path)
    }
}

import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (read(2) of the cursor file): kept.

/// A batch a follower of a ClickHouse store has written: its number, when its writer sent it, and
/// how many samples it had when it was written (more later means a shard showed the rest late: the
/// batch is written again, whole).
struct SeenBatch: Equatable {
    let number: UInt64
    let receivedMs: Int64
    var samples: Int
}

/// Where a follower stands in a store's batches (store-samples(1), FOLLOW): what the cursor file
/// keeps, one form per backend.
enum FollowPosition: Equatable {
    /// SQLite: every sample numbered up to `afterID` was written, or is never written.
    case sqlite(afterID: Int64)
    /// ClickHouse: every batch received (by its writer's clock) up to `throughMs` was written or is
    /// past waiting for; `seen` are the batches received after it that were written.
    case clickHouse(throughMs: Int64, seen: [SeenBatch])

    /// The backend's word in the cursor file.
    var store: String {
        switch self {
        case .sqlite: return "sqlite"
        case .clickHouse: return "clickhouse"
        }
    }
}

/// The cursor file of `store-samples follow --cursor FILE`: one JSON line, replaced whole (a
/// temporary file, fsync, rename, mode 0600) once the records it covers were written and flushed.
struct FollowCursor {
    /// The file.
    let path: String

    /// The `type` of the cursor's record.
    static let type = "follow_cursor"

    /// Refuses a cursor whose folder another user could write to (they could replace the cursor,
    /// and so choose what the follower skips) or that is not a plain file of this user's.
    func checkPlace() throws {
        let folder = AtomicFile.directoryName(path)
        var info = stat()
        guard stat(folder, &info) == 0 else {
            throw ToolError("cannot use the cursor \(path): its folder \(folder): \(String(cString: strerror(errno)))")
        }
        if let refusal = OwnerCheck.refusal(of: info, forbidding: 0o022) {
            let whose =
                switch refusal {
                case .foreignOwner: "another user's"
                case .openMode: "writable by others"
                }
            throw ToolError(
                "refusing the cursor \(path): its folder \(folder) is \(whose), who could replace the cursor; "
                    + "keep it in a folder of your own that only you can write (chmod go-w)")
        }
        var file = stat()
        if lstat(path, &file) == 0 {
            guard file.st_mode & S_IFMT == S_IFREG, file.st_uid == geteuid() else {
                throw ToolError("refusing the cursor \(path): it is not a plain file of your own")
            }
        }
    }

    /// The position the file holds, or nil when there is no file yet.
    func load() throws -> FollowPosition? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ToolError("cannot read the cursor \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
            guard bytes.count <= 16 << 20 else { throw ToolError("the cursor \(path) is larger than 16 MiB: not a cursor") }
        }
        do {
            return try FollowCursor.decode(bytes)
        } catch let error as ToolError {
            throw ToolError("cannot read the cursor \(path): \(error.message)")
        }
    }

    /// Replaces the file with `position` (mode 0600), saved at `now`.
    func save(_ position: FollowPosition, now: Int64) throws {
        try AtomicFile.write(FollowCursor.encode(position, now: now) + [0x0A], to: path)
    }

    /// The cursor's line: `type`, `store`, the backend's fields, `saved_at`.
    static func encode(_ position: FollowPosition, now: Int64) -> [UInt8] {
        var record = JSONObjectBuilder(capacity: 256)
        record.string("type", type)
        record.string("store", position.store)
        switch position {
        case .sqlite(let afterID):
            record.value("after_id", .number(String(afterID)))
        case .clickHouse(let through, let seen):
            record.value("through_ms", .number(String(through)))
            record.value(
                "seen",
                .array(
                    seen.map { batch in
                        .object(
                            JSONObject([
                                JSONField("batch", .string(FollowCursor.hex(batch.number))),
                                JSONField("received_ms", .number(String(batch.receivedMs))),
                                JSONField("samples", .integer(batch.samples)),
                            ]))
                    }))
        }
        record.string("saved_at", Timestamp.format(milliseconds: now))
        return record.finish()
    }

    /// The position a cursor line holds; a `ToolError` in words for anything else.
    static func decode(_ bytes: [UInt8]) throws -> FollowPosition {
        var text = bytes
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
        guard case .object(let object)? = try? JSONParser.parse(text), object["type"]?.stringValue == type else {
            throw ToolError("not a follow cursor (a JSON object of type \"\(type)\")")
        }
        func integer(_ key: String) throws -> Int64 {
            guard case .number(let literal)? = object[key], let value = Int64(literal) else {
                throw ToolError("its \(key) is not a whole number")
            }
            return value
        }
        switch object["store"]?.stringValue {
        case "sqlite"?:
            return .sqlite(afterID: try integer("after_id"))
        case "clickhouse"?:
            var seen: [SeenBatch] = []
            for item in object["seen"]?.arrayValue ?? [] {
                guard let batch = item.objectValue, let number = batch["batch"]?.stringValue.flatMap({ UInt64($0, radix: 16) }),
                    case .number(let received)? = batch["received_ms"], let receivedMs = Int64(received),
                    let samples = batch["samples"]?.intValue
                else { throw ToolError("an entry of its seen is not a batch") }
                seen.append(SeenBatch(number: number, receivedMs: receivedMs, samples: samples))
            }
            return .clickHouse(throughMs: try integer("through_ms"), seen: seen)
        default:
            throw ToolError("its store is neither \"sqlite\" nor \"clickhouse\"")
        }
    }

    /// A batch number as the cursor and the round marks write it: 16 hexadecimal digits.
    static func hex(_ number: UInt64) -> String {
        let digits = String(number, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

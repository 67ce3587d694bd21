import Foundation
import VitalsCrypto
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A maintenance window added from a script (`notify mute add`), as kept beside the state file.
struct StoredMute: Codable, Equatable {
    /// A short id for `mute remove` (`m_` and 8 hexadecimal digits).
    var id: String
    /// Monitor ids or shell patterns.
    var monitors: [String]
    /// Start and end (exclusive), ms since the epoch.
    var start: Int64
    var end: Int64
    /// Why, as given with --reason.
    var reason: String?
    /// When it was added (wall clock, ms).
    var addedAt: Int64

    /// The window notify applies.
    var window: MuteWindow {
        MuteWindow(
            monitors: monitors, start: start, end: end,
            text: monitors.joined(separator: ",") + "@" + Timestamp.format(milliseconds: start) + "/"
                + Timestamp.format(milliseconds: end), reason: reason)
    }

    /// The `maintenance` record `mute list` writes (and `digest --maintenance` reads).
    var record: JSONObject {
        var object = JSONObject()
        object["type"] = .string("maintenance")
        object["id"] = .string(id)
        object["monitors"] = .array(monitors.map { .string($0) })
        object["start"] = .string(Timestamp.format(milliseconds: start))
        object["end"] = .string(Timestamp.format(milliseconds: end))
        object["reason"] = reason.map { .string($0) } ?? .null
        object["added_at"] = .string(Timestamp.format(milliseconds: addedAt))
        return object
    }
}

/// The maintenance windows added from scripts, in a file of their own beside the state file
/// (`STATE.mutes`, JSON, mode 0600), as the devices are: a running `notify --state STATE` holds the
/// state's lock for its whole run (a live pipeline, for ever), so a deploy script could not wait for
/// it. Every change is a read, change and atomic write under a short flock of `STATE.mutes.lock`;
/// notify reads the file again whenever it changed, before each round's notifications. Windows are
/// kept for 400 days after their end, so a month's report can leave them out of uptime.
final class MuteStore {
    /// The windows.
    struct Contents: Codable, Equatable {
        var version = 1
        var mutes: [StoredMute] = []
    }

    let path: String
    /// How long an ended window is kept.
    static let keptMs: Int64 = 400 * 86_400_000

    /// The store of the state file at `statePath`.
    init(statePath: String) {
        path = statePath + ".mutes"
    }

    /// The windows now (no lock needed: the file is only ever replaced whole).
    func read() throws -> Contents {
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) == 0 { throw ToolError("cannot read \(path): \(String(cString: strerror(errno)))") }
            return Contents()
        }
        do {
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw ToolError("\(path) is not notify's list of mutes (\(error)); move it aside")
        }
    }

    /// Runs `change` on the windows under the store's lock, dropping windows ended over 400 days
    /// before `now`, and writes them atomically (mode 0600) if they changed.
    func update<T>(now: Int64, _ change: (inout Contents) throws -> T) throws -> T {
        let fd = try ShortLock.take(path + ".lock")
        defer { close(fd) }
        var contents = try read()
        let before = contents
        contents.mutes.removeAll { $0.end + MuteStore.keptMs < now }
        let result = try change(&contents)
        if contents != before {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicFile.write(Array(try encoder.encode(contents)) + [0x0A], to: path)
        }
        return result
    }

    /// The file's change time, to read it again only when it changed (nil: no file).
    func stamp() -> (Int, Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
            return (Int(info.st_mtimespec.tv_sec), Int(info.st_mtimespec.tv_nsec) ^ Int(info.st_ino))
        #else
            return (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec) ^ Int(info.st_ino))
        #endif
    }
}

/// `notify mute`: maintenance windows from a script (`add`, `list`, `remove`), kept in `MuteStore`.
enum MuteCommand {
    static func run(
        _ action: NotifyCommand.MuteAction, _ operands: [String], _ options: ParsedOptions, _ context: ToolContext, wallClock: () -> Int64
    ) throws -> VitalsKit.ExitStatus {
        guard let statePath = options.value("state") else {
            throw UsageError("mutes are kept beside the state file: name it with --state FILE")
        }
        let store = MuteStore(statePath: statePath)
        let now = wallClock()
        func output(_ object: JSONObject) throws { try context.output.write(JSONValue.object(object).encoded()) }
        switch action {
        case .add:
            guard let lengthMs = try options.duration("for") else {
                throw UsageError("mute add needs --for DURATION (how long the maintenance lasts, such as 30m)")
            }
            guard lengthMs > 0 else { throw UsageError("--for must be longer than 0s") }
            let monitors = operands.map(\.trimmingSpaces)
            if let blank = monitors.firstIndex(where: \.isEmpty) {
                throw UsageError("mute add: monitor \(blank + 1) is empty")
            }
            let start =
                try options.value("from").map { text -> Int64 in
                    guard let at = Timestamp.parse(text) else { throw UsageError("--from takes an RFC 3339 time, not '\(text)'") }
                    return at
                } ?? now
            let reason = options.value("reason").map(\.trimmingSpaces).flatMap { $0.isEmpty ? nil : $0 }
            let added = try store.update(now: now) { contents -> StoredMute in
                var identity = "\(monitors.joined(separator: ","))|\(start)|\(start + lengthMs)|\(now)"
                var mute: StoredMute
                repeat {
                    let id = "m_" + String(SHA256.hexDigest(Array(identity.utf8)).prefix(8))
                    mute = StoredMute(id: id, monitors: monitors, start: start, end: start + lengthMs, reason: reason, addedAt: now)
                    identity += "+"
                } while contents.mutes.contains { $0.id == mute.id }
                contents.mutes.append(mute)
                return mute
            }
            try output(added.record)
        case .list:
            let all = options.has("all")
            for mute in try store.read().mutes where all || mute.end > now {
                try output(mute.record)
            }
        case .remove:
            let removed = try store.update(now: now) { contents -> [StoredMute] in
                var removed: [StoredMute] = []
                for operand in operands {
                    if let index = contents.mutes.firstIndex(where: { $0.id == operand }) {
                        removed.append(contents.mutes.remove(at: index))
                        continue
                    }
                    // A monitor: its open and coming windows end now (or are dropped, if not begun).
                    var found = false
                    for index in contents.mutes.indices.reversed() where contents.mutes[index].monitors.contains(operand) {
                        guard contents.mutes[index].end > now else { continue }
                        found = true
                        var mute = contents.mutes[index]
                        if mute.monitors.count > 1 {
                            contents.mutes[index].monitors.removeAll { $0 == operand }
                            mute.monitors = [operand]
                        } else {
                            contents.mutes.remove(at: index)
                        }
                        removed.append(mute)
                        if mute.start < now {
                            // What was muted stays on record as maintenance, up to now.
                            var ended = mute
                            ended.end = now
                            contents.mutes.append(ended)
                        }
                    }
                    if !found { throw ToolError("no mute has the id \(operand), and no open or coming mute names the monitor \(operand)") }
                }
                return removed
            }
            for mute in removed {
                var record = mute.record
                record["removed"] = .bool(true)
                try output(record)
            }
        }
        return .success
    }
}

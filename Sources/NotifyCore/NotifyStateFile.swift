import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Everything notify keeps between runs.
struct NotifyState: Codable, Equatable {
    /// The format version; a newer file is refused rather than misread.
    var version = NotifyState.currentVersion
    /// Per monitor: its confirmed status and streaks (and its places').
    var monitors: [String: MonitorTrack] = [:]
    /// Per agent: when it last reported, its cadence, whether it was told silent or cut off (nil
    /// in a state written before places).
    var agents: [String: PlaceClock]? = nil
    /// Per channel: what it was told, its cooldowns per key, its open groups.
    var channels: [String: ChannelView] = [:]
    /// Deliveries not yet accepted, oldest first.
    var pending: [PendingDelivery] = []
    /// Per fallback channel: the monitors it was told are failing (it is told their recovery).
    var fallbackTold: [String: Set<String>]? = nil
    /// APNs provider tokens per team and key: the JWT and when it was issued (wall clock, ms).
    var providerTokens: [String: ProviderToken] = [:]
    /// Registered push devices (OnlineTracker's push_devices).
    var devices: [Device] = []
    /// The id the next registered device gets.
    var nextDeviceID = 1

    static let currentVersion = 1
}

/// A delivery that a channel has not accepted yet: retried by later runs.
struct PendingDelivery: Codable, Equatable {
    var notification: Notification
    /// The channel's id.
    var channel: String
    /// Attempts made so far.
    var attempts: Int
    /// Wall clock of the first attempt (ms); the delivery is given up after --give-up-after.
    var firstAttemptAt: Int64
    /// Not to be tried before this wall-clock time (ms): backoff or the server's Retry-After.
    var nextAttemptAt: Int64
    /// The last failure, in words.
    var lastError: String?
    /// For push: the device tokens still to be sent to (nil: every registered device).
    var devices: [String]?
}

/// An APNs provider authentication token and its issue time.
struct ProviderToken: Codable, Equatable {
    var jwt: String
    /// Seconds since the epoch (the JWT's `iat`).
    var issuedAt: Int64
}

/// A registered push device.
struct Device: Codable, Equatable {
    var id: Int
    var token: String
    var platform: String
    var appVersion: String?
    var registeredAt: Int64
}

/// The state file: JSON, written atomically (temporary file, fsync, rename, fsync of the
/// directory) with mode 0600, and locked (an flock on `FILE.lock`) for the whole run so two
/// runs never interleave. A path that is not a regular file (`/dev/null`) reads as empty and
/// is never written.
final class NotifyStateFile {
    let path: String
    private var lockFD: Int32 = -1
    /// False for /dev/null and other non-files.
    let persistent: Bool

    /// Opens (and locks) the state at `path`; `lock` false for read-only uses such as --dry-run.
    /// When another run holds the lock, `waiting` is called once before this one waits for it.
    init(path: String, lock: Bool, waiting: () -> Void = {}) throws {
        self.path = path
        var info = stat()
        if stat(path, &info) == 0 {
            persistent = (info.st_mode & S_IFMT) == S_IFREG
        } else {
            persistent = true
        }
        if lock && persistent {
            lockFD = open(path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard lockFD >= 0 else {
                throw ToolError("cannot lock \(path).lock: \(String(cString: strerror(errno)))")
            }
            if flock(lockFD, LOCK_EX | LOCK_NB) == 0 { return }
            if errno == EWOULDBLOCK { waiting() }
            while flock(lockFD, LOCK_EX) != 0 {
                if errno != EINTR || Signals.stopRequested {
                    close(lockFD)
                    lockFD = -1
                    throw ToolError("cannot lock \(path).lock: \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    deinit {
        if lockFD >= 0 { close(lockFD) }
    }

    /// Reads the state; a missing or empty file is a fresh state.
    func load() throws -> NotifyState {
        guard persistent else { return NotifyState() }
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) == 0 { throw ToolError("cannot read the state file \(path): \(String(cString: strerror(errno)))") }
            return NotifyState()
        }
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }) { return NotifyState() }
        let decoder = JSONDecoder()
        struct VersionOnly: Decodable { var version: Int? }
        if let version = try? decoder.decode(VersionOnly.self, from: data).version, version > NotifyState.currentVersion {
            throw ToolError(
                "the state file \(path) is version \(version), newer than this notify understands (\(NotifyState.currentVersion)); use a newer notify or another --state"
            )
        }
        do {
            return try decoder.decode(NotifyState.self, from: data)
        } catch {
            throw ToolError(
                "the state file \(path) is not notify state (\(NotifyStateFile.describe(error))); move it aside or name another --state")
        }
    }

    /// Writes the state atomically with mode 0600.
    func save(_ state: NotifyState) throws {
        guard persistent else { return }
        try AtomicFile.write(try NotifyStateWriter.encode(state), to: path)
    }

    private static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type at " + context.codingPath.map(\.stringValue).joined(separator: ".")
        default: return "\(error)"
        }
    }
}

extension NotifyState {
    /// As the synthesized encoding, but for the monitors when `NotifyStateWriter` writes them.
    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        if encoder.userInfo[NotifyStateWriter.monitorsApart] as? Bool != true {
            try container.encode(monitors, forKey: .monitors)
        }
        try container.encodeIfPresent(agents, forKey: .agents)
        try container.encode(channels, forKey: .channels)
        try container.encode(pending, forKey: .pending)
        try container.encodeIfPresent(fallbackTold, forKey: .fallbackTold)
        try container.encode(providerTokens, forKey: .providerTokens)
        try container.encode(devices, forKey: .devices)
        try container.encode(nextDeviceID, forKey: .nextDeviceID)
    }
}

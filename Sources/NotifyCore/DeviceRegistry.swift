import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// OnlineTracker's registered push devices, in a file of their own beside the state file
/// (`STATE.devices`, JSON, mode 0600), so the API can register a device while a long-running
/// `notify --state STATE` holds the state file's lock: every change is a read, change and atomic
/// write under a short flock of `STATE.devices.lock`, and notify reads the list afresh for each
/// push. Nothing registered while notify runs is lost, and a device Apple says is gone is removed
/// the same way.
final class DeviceRegistry: @unchecked Sendable {
    /// The devices and the next id.
    struct Contents: Codable, Equatable {
        var version = 1
        var nextDeviceID = 1
        var devices: [Device] = []
    }

    let path: String
    let statePath: String

    /// The registry of the state file at `statePath`.
    init(statePath: String) {
        self.statePath = statePath
        self.path = statePath + ".devices"
    }

    /// The devices now (no lock needed: the file is only ever replaced whole).
    func read() throws -> Contents {
        if let data = FileManager.default.contents(atPath: path) {
            do {
                return try JSONDecoder().decode(Contents.self, from: data)
            } catch {
                throw ToolError("the device list \(path) is not notify's (\(error)); move it aside")
            }
        }
        // Before devices had a file of their own they were kept in the state file.
        guard let data = FileManager.default.contents(atPath: statePath),
            let state = try? JSONDecoder().decode(NotifyState.self, from: data)
        else { return Contents() }
        return Contents(nextDeviceID: state.nextDeviceID, devices: state.devices)
    }

    /// Runs `change` on the devices under the registry's lock and writes them if it changed them.
    func update<T>(_ change: (inout Contents) throws -> T) throws -> T {
        let fd = try ShortLock.take(path + ".lock")
        defer { close(fd) }
        var contents = try read()
        let before = contents
        let result = try change(&contents)
        if contents != before || access(path, F_OK) != 0 {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicFile.write(Array(try encoder.encode(contents)) + [0x0A], to: path)
        }
        return result
    }

    /// Registers `token` (or refreshes it: apps send their token at every launch); its id.
    func register(token: String, platform: String, appVersion: String?, now: Int64) throws -> Int {
        try update { contents in
            if let index = contents.devices.firstIndex(where: { $0.token == token }) {
                contents.devices[index].platform = platform
                contents.devices[index].appVersion = appVersion ?? contents.devices[index].appVersion
                return contents.devices[index].id
            }
            let id = contents.nextDeviceID
            contents.nextDeviceID += 1
            contents.devices.append(Device(id: id, token: token, platform: platform, appVersion: appVersion, registeredAt: now))
            return id
        }
    }

    /// Removes `token`; false when it was not registered.
    func unregister(token: String) throws -> Bool {
        try update { contents in
            guard let index = contents.devices.firstIndex(where: { $0.token == token }) else { return false }
            contents.devices.remove(at: index)
            return true
        }
    }
}

/// The short exclusive lock a file beside the state file is changed under (devices, mutes).
enum ShortLock {
    /// Opens (creating, mode 0600) and flocks `path`; the descriptor, to close when done.
    static func take(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ToolError("cannot lock \(path): \(String(cString: strerror(errno)))") }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                throw ToolError("cannot lock \(path): \(String(cString: strerror(errno)))")
            }
        }
        return fd
    }
}

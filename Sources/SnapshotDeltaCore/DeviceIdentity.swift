import Foundation
import VitalsKit

/// The stable device id, kept outside the archive (the role HealthProbe gives the Keychain):
/// a file holding one UUID, created on first use with mode 0600. When the archive is empty
/// but the file already existed, the archive was reset and the device id is recovered.
struct DeviceIdentity: Sendable {
    /// The id.
    let id: String
    /// The file existed before this run.
    let existed: Bool

    /// Where the file lives when `--device-id-file` is not given:
    /// `$XDG_CONFIG_HOME/vitals/device-id`, else `$HOME/.config/vitals/device-id`.
    static func defaultPath(environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/vitals/device-id" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config/vitals/device-id" }
        return nil
    }

    /// Reads the id at `path`, or creates it (parents too) when the file does not exist.
    static func load(path: String) throws -> DeviceIdentity {
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard UUID(uuidString: text) != nil else {
                throw ToolError("\(path) does not hold a device id (a UUID); move it away to start a new one")
            }
            return DeviceIdentity(id: text.lowercased(), existed: true)
        }
        if FileManager.default.fileExists(atPath: path) { throw ToolError("cannot read the device id in \(path)") }
        let id = UUID().uuidString.lowercased()
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                throw ToolError("cannot create \(directory) for the device id: \(error.localizedDescription)")
            }
        }
        try AtomicFile.write(Array((id + "\n").utf8), to: path)
        return DeviceIdentity(id: id, existed: false)
    }
}

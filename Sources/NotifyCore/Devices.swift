import VitalsKit

/// `notify devices`: OnlineTracker's device registry (register, unregister, count), kept in the state file.
enum DevicesCommand {
    static func run(_ operands: [String], _ options: ParsedOptions, _ context: ToolContext, wallClock: () -> Int64) throws -> VitalsKit.ExitStatus {
        guard let path = options.value("state") else {
            throw UsageError("devices are kept in the state file: name it with --state FILE")
        }
        guard let action = operands.first else { throw UsageError("devices wants add TOKEN, remove TOKEN, count or list") }
        let arguments = Array(operands.dropFirst())
        let file = try NotifyStateFile(path: path, lock: true)
        var state = try file.load()
        func output(_ object: JSONObject) throws { try context.output.write(JSONValue.object(object).encoded()) }
        switch action {
        case "add", "register":
            guard arguments.count == 1 else { throw UsageError("devices add wants one TOKEN") }
            let token = try normalized(arguments[0])
            let platform = options.valueOrDefault("platform") ?? "ios"
            guard !platform.isEmpty else { throw UsageError("--platform must not be empty") }
            var id: Int
            if let index = state.devices.firstIndex(where: { $0.token == token }) {
                // Registering again refreshes it (apps send their token at every launch).
                state.devices[index].platform = platform
                state.devices[index].appVersion = options.value("app-version") ?? state.devices[index].appVersion
                id = state.devices[index].id
            } else {
                id = state.nextDeviceID
                state.nextDeviceID += 1
                state.devices.append(Device(id: id, token: token, platform: platform, appVersion: options.value("app-version"),
                                            registeredAt: wallClock()))
            }
            try file.save(state)
            var object = JSONObject()
            object["success"] = .bool(true)
            object["device_id"] = .integer(id)
            object["message"] = .string("Device registered successfully")
            try output(object)
        case "remove", "unregister":
            guard arguments.count == 1 else { throw UsageError("devices remove wants one TOKEN") }
            let token = try normalized(arguments[0])
            guard let index = state.devices.firstIndex(where: { $0.token == token }) else {
                throw ToolError("no device with that token is registered in \(path)")
            }
            state.devices.remove(at: index)
            try file.save(state)
            var object = JSONObject()
            object["success"] = .bool(true)
            object["message"] = .string("Device unregistered successfully")
            try output(object)
        case "count":
            guard arguments.isEmpty else { throw UsageError("devices count takes no operands") }
            var object = JSONObject()
            object["count"] = .integer(state.devices.count)
            try output(object)
        case "list":
            guard arguments.isEmpty else { throw UsageError("devices list takes no operands") }
            for device in state.devices {
                var object = JSONObject()
                object["type"] = .string("device")
                object["device_id"] = .integer(device.id)
                object["device_token"] = .string(device.token)
                object["platform"] = .string(device.platform)
                object["app_version"] = device.appVersion.map { .string($0) } ?? .null
                object["registered_at"] = .string(Timestamp.format(milliseconds: device.registeredAt))
                try output(object)
            }
        default:
            throw UsageError("unknown devices action '\(action)' (add, remove, count or list)")
        }
        return .success
    }

    /// A device token: hexadecimal (APNs tokens are 32 bytes, 64 digits; longer ones are allowed), lowercased.
    static func normalized(_ token: String) throws(UsageError) -> String {
        let lower = token.trimmingSpaces.lowercased()
        guard lower.count >= 16, lower.count <= 400, lower.count % 2 == 0,
              lower.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) }) else {
            throw UsageError("'\(token)' is not a device token (an even number of hexadecimal digits, 64 for APNs)")
        }
        return lower
    }
}

import Serving
import VitalsKit

/// `notify devices`: OnlineTracker's device registry (register, unregister, count), kept beside
/// the state file (see `DeviceRegistry`).
enum DevicesCommand {
    static func run(
        _ action: NotifyCommand.DeviceAction, _ operands: [String], _ options: ParsedOptions, _ context: ToolContext,
        wallClock: () -> Int64
    ) throws -> VitalsKit.ExitStatus {
        guard let path = options.value("state") else {
            throw UsageError("devices are kept in the state file: name it with --state FILE")
        }
        let registry = DeviceRegistry(statePath: path)
        func output(_ object: JSONObject) throws { try context.output.write(JSONValue.object(object).encoded()) }
        switch action {
        case .add:
            let platform = options.valueOrDefault("platform") ?? "ios"
            guard !platform.isEmpty else { throw UsageError("--platform must not be empty") }
            try output(
                try register(
                    registry, token: try normalized(operands[0]), platform: platform,
                    appVersion: options.value("app-version"), now: wallClock()))
        case .remove:
            guard let answer = try unregister(registry, token: try normalized(operands[0])) else {
                throw ToolError("no device with that token is registered in \(registry.path)")
            }
            try output(answer)
        case .count:
            try output(try count(registry))
        case .list:
            for device in try registry.read().devices {
                var object = JSONObject()
                object["type"] = .string("device")
                object["device_id"] = .integer(device.id)
                object["device_token"] = .string(device.token)
                object["platform"] = .string(device.platform)
                object["app_version"] = device.appVersion.map { .string($0) } ?? .null
                object["registered_at"] = .string(Timestamp.format(milliseconds: device.registeredAt))
                try output(object)
            }
        }
        return .success
    }

    // The answers of OnlineTracker's device endpoints, shared by `notify devices` and `notify cgi`.

    /// POST /api/devices/register: the seed's answer.
    static func register(_ registry: DeviceRegistry, token: String, platform: String, appVersion: String?, now: Int64) throws -> JSONObject
    {
        let id = try registry.register(token: token, platform: platform, appVersion: appVersion, now: now)
        var object = JSONObject()
        object["success"] = .bool(true)
        object["device_id"] = .integer(id)
        object["message"] = .string("Device registered successfully")
        return object
    }

    /// DELETE /api/devices/TOKEN: the seed's answer, or nil when no such device is registered.
    static func unregister(_ registry: DeviceRegistry, token: String) throws -> JSONObject? {
        guard try registry.unregister(token: token) else { return nil }
        var object = JSONObject()
        object["success"] = .bool(true)
        object["message"] = .string("Device unregistered successfully")
        return object
    }

    /// GET /api/devices/count.
    static func count(_ registry: DeviceRegistry) throws -> JSONObject {
        var object = JSONObject()
        object["count"] = .integer(try registry.read().devices.count)
        return object
    }

    /// A device token: hexadecimal (APNs tokens are 32 bytes, 64 digits; longer ones are allowed), lowercased.
    static func normalized(_ token: String) throws(UsageError) -> String {
        let lower = token.trimmingSpaces.lowercased()
        guard lower.count >= 16, lower.count <= 400, lower.count % 2 == 0,
            lower.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) })
        else {
            throw UsageError("'\(token)' is not a device token (an even number of hexadecimal digits, 64 for APNs)")
        }
        return lower
    }
}

/// OnlineTracker's device endpoints (`notify serve`, behind nginx; see vitals-serve(7)), over the
/// same registry and answers as `notify devices`: `POST /api/devices/register`,
/// `GET /api/devices/count` and `DELETE /api/devices/{token}`. The device list is the one beside
/// the state file `--state` names.
final class DevicesAPI: Sendable, RequestAnswerer {
    let statePath: String?
    let clock: @Sendable () -> Int64
    let router: Router<DevicesAPI>
    /// The limits of every request: the bodies are a token and two short words.
    static let limits = RequestLimits(maxBody: 64 << 10, deadlineMs: 10_000)

    init(statePath: String?, clock: @escaping @Sendable () -> Int64) {
        self.statePath = statePath
        self.clock = clock
        var router = Router<DevicesAPI>(notFound: "no such path: see vitals-serve(7) for the routes")
        router.add(["POST"], "/api/devices/register") { request, _, api in try api.register(request) }
        router.add(["GET"], "/api/devices/count") { _, _, api in .json(.object(try DevicesCommand.count(try api.registry()))) }
        router.add(["DELETE"], "/api/devices/{token}") { _, values, api in
            let unknown = APIError(status: 404, reason: "unknown_device", message: "no device with that token is registered")
            guard let token = try? DevicesCommand.normalized(values[0]),
                let answer = try DevicesCommand.unregister(try api.registry(), token: token)
            else {
                throw unknown
            }
            return .json(.object(answer))
        }
        self.router = router
    }

    /// The registry beside the state file; a 503 when none is configured.
    func registry() throws -> DeviceRegistry {
        guard let statePath else {
            throw APIError(
                status: 503, reason: "no_state", message: "no device list is configured (notify --state)", headers: [("Retry-After", "60")])
        }
        return DeviceRegistry(statePath: statePath)
    }

    func answer(_ request: APIRequest) -> APIResponse {
        router.answer(request, self, log: { _ in })
    }

    /// POST /api/devices/register: `{"device_token": "...", "platform": "ios", "app_version": "..."}`.
    func register(_ request: APIRequest) throws -> APIResponse {
        guard let body = try? JSONParser.parse(request.body).objectValue, let token = body["device_token"]?.stringValue else {
            throw APIError(
                status: 400, reason: "bad_body",
                message: #"the body must be {"device_token": "...", "platform": "ios", "app_version": "..."}"#)
        }
        guard let normalized = try? DevicesCommand.normalized(token) else {
            throw APIError(
                status: 400, reason: "bad_body", message: "device_token must be an even number of hexadecimal digits (64 for APNs)")
        }
        let platform = body["platform"]?.stringValue ?? "ios"
        guard !platform.isEmpty, platform.utf8.count <= 64 else {
            throw APIError(status: 400, reason: "bad_body", message: "platform must be a short word")
        }
        let appVersion = body["app_version"]?.stringValue
        guard (appVersion?.utf8.count ?? 0) <= 64 else {
            throw APIError(status: 400, reason: "bad_body", message: "app_version must be at most 64 bytes")
        }
        return .json(
            .object(
                try DevicesCommand.register(try registry(), token: normalized, platform: platform, appVersion: appVersion, now: clock())))
    }
}

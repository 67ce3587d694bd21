import HTTPTransport
import VitalsKit

/// The state a run shares between its parts: the decider's results are copied in before
/// saving; channels read and change devices and provider tokens through it.
final class StateBox {
    var state: NotifyState
    /// The device list beside a state file, read afresh for each push; nil keeps devices in
    /// `state` (no state file, or one that is not a file).
    var devices: DeviceRegistry?
    init(_ state: NotifyState) { self.state = state }

    /// The registered devices' tokens now.
    func deviceTokens() -> [String] {
        guard let devices else { return state.devices.map(\.token) }
        return ((try? devices.read())?.devices ?? state.devices).map(\.token)
    }

    /// Removes a device Apple said is gone.
    func removeDevice(_ token: String) {
        guard let devices else {
            state.devices.removeAll { $0.token == token }
            return
        }
        _ = try? devices.unregister(token: token)
    }
}

/// A command to run for one delivery: no shell, the arguments as given.
struct ProcessRequest {
    /// A path, or a name looked up in PATH.
    var executable: String
    var arguments: [String]
    /// What the command reads on standard input.
    var input: [UInt8]
    /// Variables added to the environment.
    var environment: [String: String] = [:]
}

/// One try at handing a notification to a channel.
enum AttemptRequest {
    case http(HTTPRequest)
    case process(ProcessRequest)
    /// Resolved without sending anything.
    case resolved(DeliveryVerdict)
}

/// How a command ended.
struct ProcessOutcome {
    /// The exit status, or nil when it was killed by a signal or could not start.
    var exitStatus: Int?
    /// What went wrong, in words (the start failure, the signal, its standard error).
    var error: String?
}

/// What an answer means for a delivery.
enum DeliveryVerdict: Equatable {
    /// Accepted: done.
    case accepted(code: Int?)
    /// Not now: try again later (after `afterMs` when the server said so).
    case retry(code: Int?, error: String, afterMs: Int64?)
    /// Refused for good.
    case failed(code: Int?, error: String)
    /// The push device is gone (APNs 410): removed from the devices; the delivery to it is done.
    case gone(code: Int?, error: String)
}

/// A notification channel: builds each attempt and judges each answer.
protocol Channel: AnyObject {
    /// The URL as written, redacted: the channel's name in records, diagnostics and the state.
    var id: String { get }
    /// Tags from the configuration (`ops,db=URL`).
    var tags: [String] { get }
    /// Whether a notification fans out to several recipients (push devices).
    var fansOut: Bool { get }
    /// Whether monitors newly impacted together may be told in one grouped notification
    /// (isitup's grouping); false for a channel told of each monitor on its own.
    var groupsMonitors: Bool { get }
    /// The recipients a notification fans out to (push device tokens); `[nil]` for one delivery.
    func legs(_ state: StateBox) -> [String?]
    /// The attempt for `notification` (to `leg`), given the wall clock and the time allowed.
    func attempt(_ notification: Notification, leg: String?, state: StateBox, nowMs: Int64, timeoutMs: Int) -> AttemptRequest
    /// The meaning of an HTTP (or SMTP) answer.
    func judge(_ result: HTTPResult, leg: String?, state: StateBox, nowMs: Int64) -> DeliveryVerdict
    /// The meaning of a command's end.
    func judge(_ outcome: ProcessOutcome) -> DeliveryVerdict
}

extension Channel {
    var fansOut: Bool { false }

    var groupsMonitors: Bool { true }

    func legs(_ state: StateBox) -> [String?] { [nil] }

    func judge(_ result: HTTPResult, leg: String?, state: StateBox, nowMs: Int64) -> DeliveryVerdict {
        HTTPJudgement.standard(result, nowMs: nowMs)
    }

    func judge(_ outcome: ProcessOutcome) -> DeliveryVerdict {
        ProcessJudgement.sysexits(outcome)
    }
}

/// The usual meaning of HTTP answers for webhooks.
enum HTTPJudgement {
    /// 2xx accepted; network errors, 408, 425, 429 and 5xx retried (honouring Retry-After);
    /// anything else refused for good.
    static func standard(_ result: HTTPResult, nowMs: Int64) -> DeliveryVerdict {
        if let failure = result.failure {
            return .retry(code: nil, error: "\(failure.rawValue): \(result.curlMessage)", afterMs: nil)
        }
        let code = result.httpCode
        if (200..<300).contains(code) { return .accepted(code: code) }
        let words = "HTTP \(code)" + bodySnippet(result.body)
        if code == 408 || code == 425 || code == 429 || (500..<600).contains(code) {
            return .retry(code: code, error: words, afterMs: retryAfter(result, nowMs: nowMs))
        }
        return .failed(code: code, error: words)
    }

    /// Retry-After as milliseconds from now (`HTTPDate.retryAfterMs`), nil without one.
    static func retryAfter(_ result: HTTPResult, nowMs: Int64) -> Int64? {
        result.header("Retry-After").flatMap { HTTPDate.retryAfterMs($0, nowMs: nowMs) }
    }

    /// `: first line of the body` (at most 200 bytes), or empty.
    static func bodySnippet(_ body: [UInt8]) -> String {
        let line = body.prefix(200).split(separator: 0x0A, omittingEmptySubsequences: true).first.map { Array($0) } ?? []
        let text = String(decoding: line, as: UTF8.self).trimmingSpaces
        return text.isEmpty ? "" : ": " + text
    }
}

/// The usual meaning of a command's exit status (sysexits(3)).
enum ProcessJudgement {
    /// 0 accepted; 75 (EX_TEMPFAIL) retried; a signal or a command that could not start, refused; others refused.
    static func sysexits(_ outcome: ProcessOutcome) -> DeliveryVerdict {
        guard let status = outcome.exitStatus else {
            return .failed(code: nil, error: outcome.error ?? "the command did not finish")
        }
        if status == 0 { return .accepted(code: 0) }
        let words = "exit status \(status)" + (outcome.error.map { ": " + $0 } ?? "")
        if status == 75 { return .retry(code: status, error: words, afterMs: nil) }
        return .failed(code: status, error: words)
    }
}

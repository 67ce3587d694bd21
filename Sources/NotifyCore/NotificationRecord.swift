import VitalsKit

/// What became of one notification on one channel in this run.
struct DeliveryOutcome: Equatable {
    enum Result: String {
        /// The channel accepted it.
        case delivered
        /// Not accepted yet; kept in the state and retried by a later run.
        case pending
        /// Refused for good (or given up after --give-up-after).
        case failed
        /// --dry-run: decided, not sent.
        case dryRun = "dry_run"
    }
    /// The channel, as configured, secrets redacted.
    var channel: String
    var result: Result
    /// Attempts so far (this run and earlier ones).
    var attempts: Int
    /// The last answer's status (HTTP status, SMTP reply code, command exit status).
    var code: Int?
    /// The last failure, in words.
    var error: String?
    /// For pending: not retried before this wall-clock time (ms).
    var nextAttemptAt: Int64?
    /// For push: devices sent to, and device tokens removed because Apple said they are gone.
    var devicesSent: Int?
    var devicesRemoved: Int?
    /// A fallback's delivery: the channel whose delivery failed for good.
    var fallbackFor: String? = nil
}

/// Writes `notification` records.
enum NotificationRecord {
    /// The record of `notification` with its deliveries; `redelivery` marks one decided by an earlier run.
    static func encode(_ notification: Notification, deliveries: [DeliveryOutcome], redelivery: Bool) -> [UInt8] {
        var builder = JSONObjectBuilder(capacity: 768)
        appendCommon(notification, to: &builder)
        if redelivery { builder.bool("redelivery", true) }
        builder.value(
            "deliveries",
            .array(
                deliveries.map { outcome in
                    var object = JSONObject()
                    object["channel"] = .string(outcome.channel)
                    object["result"] = .string(outcome.result.rawValue)
                    object["attempts"] = .integer(outcome.attempts)
                    object["code"] = outcome.code.map { .integer($0) } ?? .null
                    object["error"] = outcome.error.map { .string($0) } ?? .null
                    if let next = outcome.nextAttemptAt { object["next_attempt_at"] = .string(Timestamp.format(milliseconds: next)) }
                    if let sent = outcome.devicesSent { object["devices_sent"] = .integer(sent) }
                    if let removed = outcome.devicesRemoved { object["devices_removed"] = .integer(removed) }
                    if let primary = outcome.fallbackFor { object["fallback_for"] = .string(primary) }
                    return .object(object)
                }))
        return builder.finish()
    }

    /// The notification alone (what webhooks and commands receive): the record without deliveries.
    static func payload(_ notification: Notification) -> [UInt8] {
        var builder = JSONObjectBuilder(capacity: 768)
        appendCommon(notification, to: &builder)
        return builder.finish()
    }

    private static func appendCommon(_ notification: Notification, to builder: inout JSONObjectBuilder) {
        builder.string("type", "notification")
        builder.string("id", notification.id)
        builder.string("at", Timestamp.format(milliseconds: notification.at))
        builder.string("event", notification.event.rawValue)
        builder.bool("grouped", notification.grouped)
        builder.string("key", notification.key)
        builder.string("status", notification.status)
        builder.string("title", notification.title)
        builder.string("body", notification.body)
        if let place = notification.place { builder.string("place", place) }
        if let escalation = notification.escalation { builder.int("escalated_after_ms", Int(escalation)) }
        if let single = notification.single {
            builder.string("monitor", single.monitor)
            builder.string("name", single.name)
            builder.string("previous_status", single.previousStatus)
            builder.string("since", single.since.map { Timestamp.format(milliseconds: $0) })
            if notification.event == .recovered {
                builder.int("duration_ms", single.since.map { Int(notification.at - $0) })
            }
            builder.string("reason", single.reason)
            builder.string("message", single.message)
            builder.string("target", single.target)
            if let dependants = single.dependants { builder.int("dependants", dependants) }
            if let checks = single.checks, notification.statesChecks {
                builder.int("failed_checks", checks.failed)
                builder.int("checks_not_up", checks.notUp)
            }
        }
        builder.value("monitors", .array(notification.monitors.map(monitorObject)))
    }

    private static func monitorObject(_ change: MonitorChange) -> JSONValue {
        var object = JSONObject()
        object["monitor"] = .string(change.monitor)
        object["name"] = .string(change.name)
        object["status"] = .string(change.status)
        object["previous_status"] = change.previousStatus.map { .string($0) } ?? .null
        object["since"] = change.since.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null
        object["reason"] = change.reason.map { .string($0) } ?? .null
        object["message"] = change.message.map { .string($0) } ?? .null
        if let dependants = change.dependants { object["dependants"] = .integer(dependants) }
        return .object(object)
    }
}

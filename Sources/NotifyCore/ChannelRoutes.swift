import VitalsKit

/// The policy parameters every channel takes (notify(1), Escalation): `after=DURATION` reserves a
/// channel for outages and episodes still open after that long; `fallback=TAG` names the channels
/// (tagged TAG, in --config or as `--to TAG=URL`) that are given a delivery to this one that failed
/// for good. A channel named as a fallback is reserved for that: it is told nothing else, but the
/// recovery of what it was told.
struct ChannelRoutes {
    /// Channel id -> the age (ms) an outage must reach before the channel hears of it.
    var escalations: [String: Int64] = [:]
    /// Channel id -> the channels its failed deliveries go to, in order.
    var fallbacks: [String: [String]] = [:]
    /// The channels reserved as fallbacks.
    var fallbackOnly: Set<String> = []

    /// No routes.
    init() {}

    /// The routes of `urls`; a bad duration, or a fallback tag no channel has, is a usage error.
    init(_ urls: [ChannelURL]) throws(UsageError) {
        for parsed in urls {
            if let after = parsed.parameter("after") {
                guard let ms = DurationText.parseMilliseconds(after), ms > 0 else {
                    throw UsageError("'\(parsed.display)': after= takes a duration such as 30m, not '\(after)'")
                }
                escalations[parsed.display] = ms
            }
            guard let tag = parsed.parameter("fallback") else { continue }
            let named = urls.filter { $0.tags.contains(tag) && $0.display != parsed.display }.map(\.display)
            guard !named.isEmpty else {
                throw UsageError(
                    "'\(parsed.display)': fallback=\(tag) names no channel; tag one with --to '\(tag)=URL' or a '\(tag)=URL' line in --config"
                )
            }
            fallbacks[parsed.display] = named
            fallbackOnly.formUnion(named)
        }
        for (channel, _) in fallbacks where fallbackOnly.contains(channel) {
            throw UsageError("'\(channel)' is a fallback and names a fallback of its own; a fallback's failure goes no further")
        }
    }
}

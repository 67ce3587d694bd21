/// How a view pages: how many items a page holds by default and at most. The command line's
/// `--page` and `--per-page` and an API's page parameters read the same limits, so each is
/// written once.
public struct PageLimits: Sendable, Equatable {
    /// Items a page holds when none is asked for.
    public let defaultPerPage: Int
    /// The most a page may hold.
    public let maxPerPage: Int
    /// The highest page number: an offset stays within what a 32-bit page count can reach.
    public static let maxPage = Int(Int32.max)

    /// Limits with their default.
    public init(defaultPerPage: Int, maxPerPage: Int) {
        precondition(1...maxPerPage ~= defaultPerPage, "the default page size must be within 1...maxPerPage")
        self.defaultPerPage = defaultPerPage
        self.maxPerPage = maxPerPage
    }

    /// The page numbers accepted.
    public static var pages: ClosedRange<Int> { 1...maxPage }
    /// The page sizes accepted.
    public var perPage: ClosedRange<Int> { 1...maxPerPage }
}

/// One page of a view: its number, from 1, and its size.
public struct Page: Sendable, Equatable {
    /// The page number, from 1.
    public let number: Int
    /// Items a page holds.
    public let size: Int

    /// A page; `number` and `size` are within their limits (the parsers check them).
    public init(number: Int, size: Int) {
        self.number = number
        self.size = size
    }

    /// The items before it.
    public var offset: Int { (number - 1) * size }
}

/// How far back a view looks from now, by default and at most: the command line's `--since`
/// (a time, or a duration ago) and an API's `hours` read the same limits.
public struct Lookback: Sendable, Equatable {
    /// The span taken when none is asked for, in milliseconds.
    public let defaultMs: Int64
    /// The longest span, in milliseconds.
    public let maxMs: Int64

    /// Limits in whole hours, as OnlineTracker's API takes them.
    public init(defaultHours: Int, maxHours: Int) {
        precondition(1...maxHours ~= defaultHours, "the default span must be within 1...maxHours")
        defaultMs = Int64(defaultHours) * 3_600_000
        maxMs = Int64(maxHours) * 3_600_000
    }

    /// The default in hours.
    public var defaultHours: Int { Int(defaultMs / 3_600_000) }
    /// The hours an API's `hours` parameter accepts.
    public var hours: ClosedRange<Int> { 1...Int(maxMs / 3_600_000) }

    /// `72h, at most 365d`, for help lines and man pages: hours up to four days, days beyond.
    public var limitsText: String {
        func text(_ ms: Int64) -> String { ms < 4 * 86_400_000 || ms % 86_400_000 != 0 ? "\(ms / 3_600_000)h" : "\(ms / 86_400_000)d" }
        return "\(text(defaultMs)), at most \(text(maxMs))"
    }
}

extension OptionSpec {
    /// `--page P` and `--per-page N` for a subcommand whose view pages (`scope: ` starts their help),
    /// with the default page size and the most from `limits`.
    public static func paging(_ scope: String, items noun: String, _ limits: PageLimits) -> [OptionSpec] {
        [
            OptionSpec("page", value: "P", default: "1", help: "\(scope): the page, from 1"),
            OptionSpec(
                "per-page", value: "N", default: String(limits.defaultPerPage),
                help: "\(scope): \(noun) a page, at most \(limits.maxPerPage)"),
        ]
    }
}

extension ParsedOptions {
    /// `--page` and `--per-page` within `limits`; absent, the first page of the default size.
    public func page(_ limits: PageLimits) throws(UsageError) -> Page {
        Page(
            number: try integer("page", default: 1, in: PageLimits.pages),
            size: try integer("per-page", default: limits.defaultPerPage, in: limits.perPage))
    }

    /// A `WHEN` option that starts a view looking back from `now` (`--since 24h`, or an RFC 3339 time):
    /// the span in milliseconds, `limits`' default when absent. A time after `now` or a span beyond
    /// the longest is a usage error naming both.
    public func lookback(_ long: String, now: Int64, _ limits: Lookback) throws(UsageError) -> Int64 {
        guard let from = try time(long, now: now) else { return limits.defaultMs }
        let span = now - from
        guard span > 0 else { throw UsageError("--\(long) wants a time before now (or a duration ago such as 24h), not '\(value(long)!)'") }
        guard span <= limits.maxMs else {
            throw UsageError(
                "--\(long) looks back at most \(DurationText.describe(milliseconds: limits.maxMs)) here, not '\(value(long)!)'")
        }
        return span
    }
}

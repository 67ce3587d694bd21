import VitalsKit

/// `follow`: write the samples the store receives, batch by batch between round marks, from a
/// cursor (`Follower`).
extension StoreRun {
    func follow() throws -> VitalsKit.ExitStatus {
        let tickMs = try options.duration(defaulted: "tick")
        let fromStart = try options.choice("from") == "start"
        let lagMs = try options.duration(defaulted: "lag")
        if clickHouse == nil, options.has("lag") { throw UsageError("--lag applies to a ClickHouse store (--db clickhouse://...)") }
        let cursor = options.value("cursor").map(FollowCursor.init(path:))
        try cursor?.checkPlace()
        let diagnostics = context.diagnostics
        let (clickHouse, database, waitMs, clock) = (self.clickHouse, self.database, self.waitMs, self.clock)
        let settings = Follower.Settings(
            openFeed: { start, appeared in
                if let clickHouse {
                    let store = try ClickHouseSampleStore(location: clickHouse, waitMs: waitMs, create: false, now: clock())
                    return try ClickHouseFollowFeed(store, start: start, fromStart: fromStart || appeared, lagMs: lagMs, now: clock())
                }
                let store = try SQLiteSampleStore(path: database, create: false)
                return try SQLiteFollowFeed(store, start: start, fromStart: fromStart || appeared, diagnostics: diagnostics)
            },
            cursor: cursor, once: options.has("once"), tickMs: tickMs,
            pollMs: clickHouse == nil ? Follower.sqlitePollMs : Follower.clickHousePollMs, clock: clock)
        try Follower(settings, output: context.output, outputFD: context.streams.output, diagnostics: diagnostics).run()
        return .success
    }
}

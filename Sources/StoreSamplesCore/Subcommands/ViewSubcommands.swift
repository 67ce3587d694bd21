import VitalsKit

/// The views on the command line: `overview`, `monitors`, `monitor`, `history`, `results` and
/// `stats`, each the bytes the API answers (`Views`).
extension StoreRun {
    func overview() throws -> VitalsKit.ExitStatus {
        try writer.write(try openViews().1.overview().encoded())
        return .success
    }

    func monitors() throws -> VitalsKit.ExitStatus {
        try emitList(try openViews().1.monitors())
        return .success
    }

    func monitor(_ key: String) throws -> VitalsKit.ExitStatus {
        let (store, views) = try openViews()
        try writer.write(try views.monitor(try findMonitor(store, key)).encoded())
        return .success
    }

    func history(_ key: String) throws -> VitalsKit.ExitStatus {
        let span = try options.lookback("since", now: now, Views.historyLookback)
        let ndjson = try ndjsonFormat()
        let (store, views) = try openViews()
        let record = try findMonitor(store, key)
        var out: [UInt8] = ndjson ? [] : [UInt8(ascii: "[")]
        out.reserveCapacity(1 << 16)
        try views.history(record, spanMs: span, separator: ndjson ? 0x0A : UInt8(ascii: ","), into: &out)
        if !ndjson { out.append(UInt8(ascii: "]")) }
        if !(ndjson && out.isEmpty) { try writer.write(out) }
        return .success
    }

    func results(_ key: String) throws -> VitalsKit.ExitStatus {
        let span = try options.lookback("since", now: now, Views.resultsLookback)
        let page = try options.page(Views.resultsPages)
        let (store, views) = try openViews()
        let record = try findMonitor(store, key)
        try writer.write(try views.results(record, spanMs: span, page: page).encoded())
        return .success
    }

    func stats() throws -> VitalsKit.ExitStatus {
        try writer.write(try openViews().1.stats(from: since).encoded())
        return .success
    }
}

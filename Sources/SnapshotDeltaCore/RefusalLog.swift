import Serving
import VitalsKit

/// The requests nginx refuses itself (the 429 of the rate limit, the 413 of the size cap, a
/// request that did not arrive in 10 s, a path that is no endpoint, a TLS error): nginx never
/// asks the responder about them, so it tells it afterwards, one access-log line each in the
/// responder's refusal FIFO (health-sync.conf: `access_log @REFUSALS@ healthsync_refusal if=$healthsync_refused`).
/// The seed audits network events; these go to the archive's operation log as `network_refusal`
/// entries, counted per status, client and request each second, so a flood of refused requests
/// costs the archive at most `maxEntries` entries a second.
final class RefusalLog: LineSink {
    /// One kind of refusal: what nginx said, to whom, for what.
    struct Key: Hashable {
        var status: Int
        var remoteAddress: String
        var clientSHA1: String?
        var method: String
        var path: String
    }

    let archivePath: String
    let now: @Sendable () -> Int64
    let diagnostics: Diagnostics
    /// The most entries written a second; past them, one entry counts the rest.
    static let maxEntries = 100
    private var counts: [Key: (count: Int, first: Int64, last: Int64)] = [:]
    private var order: [Key] = []
    private var overflow = 0

    init(archivePath: String, now: @escaping @Sendable () -> Int64, diagnostics: Diagnostics) {
        self.archivePath = archivePath
        self.now = now
        self.diagnostics = diagnostics
    }

    /// A line of health-sync.conf's `healthsync_refusal` format:
    /// `vitals-refusal STATUS ADDRESS "REQUEST LINE" client_sha1=HEX`. The request line is the
    /// client's own (`$request`: an error page's internal redirect changes the method and path
    /// nginx would otherwise log); its query is left out of what is kept.
    static func parse(_ message: [UInt8]) -> Key? {
        let text = String(decoding: message, as: UTF8.self)
        guard let marker = text.range(of: "vitals-refusal ") else { return nil }
        var rest = text[marker.upperBound...]
        func word() -> String? {
            guard let space = rest.firstIndex(of: " ") else { return nil }
            defer { rest = rest[rest.index(after: space)...] }
            return String(rest[..<space])
        }
        guard let status = word().flatMap({ Int($0) }), (100...599).contains(status), let address = word(),
            rest.first == "\"", let close = rest.dropFirst().lastIndex(of: "\"")
        else { return nil }
        let request = rest[rest.index(after: rest.startIndex)..<close].split(separator: " ")
        rest = rest[rest.index(after: close)...]
        var sha1: String?
        if let range = rest.range(of: "client_sha1=") {
            let value = rest[range.upperBound...].prefix { $0.isHexDigit }
            if !value.isEmpty { sha1 = value.lowercased() }
        }
        let path = request.count > 1 ? request[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] : "-"
        return Key(
            status: status, remoteAddress: String(address.prefix(64)), clientSHA1: sha1,
            method: request.first.map { String($0.prefix(16)) } ?? "-", path: String(path.prefix(256)))
    }

    /// The word for a status nginx answers itself.
    static func reason(_ status: Int) -> String {
        switch status {
        case 400: return "bad_request"
        case 403: return "not_local"
        case 404: return "not_found"
        case 405: return "method_not_allowed"
        case 408: return "timeout"
        case 413: return "too_large"
        case 414: return "uri_too_long"
        case 429: return "rate_limited"
        case 494: return "headers_too_large"
        case 495: return "certificate_error"
        case 496: return "certificate_required"
        case 497: return "https_required"
        case 499: return "client_closed"
        case 500...599: return "unavailable"
        default: return "refused"
        }
    }

    func received(_ message: [UInt8]) {
        guard let key = RefusalLog.parse(message) else {
            diagnostics.warning("a line in the refusal FIFO is not one of nginx's refusal lines; ignored")
            return
        }
        let time = now()
        if var known = counts[key] {
            known.count += 1
            known.last = time
            counts[key] = known
        } else if counts.count < RefusalLog.maxEntries {
            counts[key] = (1, time, time)
            order.append(key)
        } else {
            overflow += 1
        }
    }

    func tick(final: Bool) {
        guard !counts.isEmpty || overflow > 0 else { return }
        defer {
            counts.removeAll(keepingCapacity: true)
            order.removeAll(keepingCapacity: true)
            overflow = 0
        }
        do {
            let archive = try Archive(path: archivePath, create: false)
            let at = now()
            for key in order {
                guard let seen = counts[key] else { continue }
                let detail = JSONObject([
                    JSONField("status", .integer(key.status)),
                    JSONField("outcome", .string(RefusalLog.reason(key.status))),
                    JSONField("count", .integer(seen.count)),
                    JSONField("remote_addr", .string(key.remoteAddress)),
                    JSONField("client_sha1", key.clientSHA1.map { .string($0) } ?? .null),
                    JSONField("method", .string(key.method)),
                    JSONField("path", .string(key.path)),
                    JSONField("first_at", .string(Timestamp.format(milliseconds: seen.first))),
                    JSONField("last_at", .string(Timestamp.format(milliseconds: seen.last))),
                ])
                _ = try archive.withLoggedChange("network_refusal", snapshotIDs: [], at: at, diagnostics: diagnostics) { ((), detail) }
            }
            if overflow > 0 {
                let detail = JSONObject([JSONField("outcome", .string("more_refusals")), JSONField("count", .integer(overflow))])
                _ = try archive.withLoggedChange("network_refusal", snapshotIDs: [], at: at, diagnostics: diagnostics) { ((), detail) }
            }
        } catch {
            let total = counts.values.reduce(overflow) { $0 + $1.count }
            diagnostics.error("cannot write \(total) of nginx's refusals to the operation log of \(archivePath): \(error)")
        }
    }
}

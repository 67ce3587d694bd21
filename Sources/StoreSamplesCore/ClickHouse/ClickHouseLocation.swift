import VitalsKit

/// Where a ClickHouse store is: `clickhouse://[user[:password]@]host[:port]/database[?options]`.
///
/// The password comes from the URL, else from the file named by `password_file=PATH`, else from
/// `$VITALS_CLICKHOUSE_PASSWORD`; it is never printed (`display` masks it).
struct ClickHouseLocation: Sendable, Equatable {
    /// `http` or `https` (`?secure=1`).
    var scheme = "http"
    var host: String
    var port: Int
    var database: String
    var user: String?
    var password: String?
    /// `?cluster=NAME`: a `Distributed` table over local tables on every shard of the cluster.
    var cluster: String?
    /// `?shards=HOST:PORT,...`: every shard's HTTP endpoint, where store-samples runs the DDL,
    /// mutations and partition drops on the local tables. Without it, a cluster's DDL runs
    /// `ON CLUSTER` (which needs ClickHouse Keeper or ZooKeeper).
    var shards: [String] = []
    /// The URL as given, with the password masked.
    var display: String

    /// The URL prefix: `clickhouse://`.
    static let prefix = "clickhouse://"

    /// Reads a `--db` value starting with `clickhouse://`; `environment` gives
    /// `VITALS_CLICKHOUSE_PASSWORD`, `readFile` a password file's text.
    init(_ text: String, environment: [String: String], readFile: (String) throws -> String) throws {
        let url = URLText(text)
        var display = "clickhouse://"
        if let user = url.redactedUserInfo { display += user + "@" }
        display += url.hostPort + url.path + (url.redactedQuery.map { "?" + $0 } ?? "")
        self.display = display
        guard url.scheme == "clickhouse", !url.host.isEmpty else {
            throw UsageError("--db \(display): expected clickhouse://[user[:password]@]host[:port]/database[?options]")
        }
        host = url.host
        let name = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !name.isEmpty, name.utf8.allSatisfy({ ClickHouseLocation.isNameByte($0) }) else {
            throw UsageError("--db \(display): name a database of letters, digits and '_' after the host (clickhouse://host:8123/vitals)")
        }
        database = name
        if let info = url.userInfo {
            if let colon = info.firstIndex(of: ":") {
                user = URLText.percentDecoded(String(info[..<colon]))
                password = URLText.percentDecoded(String(info[info.index(after: colon)...]))
            } else {
                user = URLText.percentDecoded(info)
            }
        }
        var secure = false
        var passwordFile: String?
        for part in (url.query ?? "").split(separator: "&") where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(pieces[0])
            let value = pieces.count > 1 ? URLText.percentDecoded(String(pieces[1])) : ""
            switch key {
            case "cluster":
                guard !value.isEmpty, value.utf8.allSatisfy({ ClickHouseLocation.isNameByte($0) }) else {
                    throw UsageError("--db \(display): cluster= wants the name of a cluster in the servers' remote_servers")
                }
                cluster = value
            case "shards":
                shards = value.split(separator: ",").map(String.init)
                guard !shards.isEmpty, shards.allSatisfy({ URLText($0).port != nil && !URLText($0).host.isEmpty }) else {
                    throw UsageError("--db \(display): shards= wants every shard's HTTP endpoint as HOST:PORT, comma-separated")
                }
            case "secure": secure = value == "1" || value == "true"
            case "password_file": passwordFile = value
            default:
                throw UsageError("--db \(display): unknown option '\(key)' (cluster, shards, secure, password_file)")
            }
        }
        if !shards.isEmpty, cluster == nil {
            throw UsageError("--db \(display): shards= goes with cluster=NAME")
        }
        scheme = secure ? "https" : "http"
        port = url.port ?? (secure ? 8443 : 8123)
        if password == nil, let passwordFile {
            do {
                password = try readFile(passwordFile).trimmingCharacters(in: .newlines)
            } catch {
                throw ToolError("--db \(display): cannot read the password file \(passwordFile)")
            }
        }
        if password == nil, let fromEnvironment = environment["VITALS_CLICKHOUSE_PASSWORD"], !fromEnvironment.isEmpty {
            password = fromEnvironment
        }
    }

    /// A database, table or cluster name: letters, digits, `_`.
    static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
    }

}

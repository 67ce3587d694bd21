import Foundation
import Testing
import VitalsKit

private let heart = "HKQuantityTypeIdentifierHeartRate"
private let steps = "HKQuantityTypeIdentifierStepCount"
private let sleep = "HKCategoryTypeIdentifierSleepAnalysis"
private let weight = "HKQuantityTypeIdentifierBodyMass"

/// Choosing what is shared. The seed (002): "SyncConfiguration: +Set~HealthDataType~ enabledTypes";
/// the app's "HealthDataTypeToggle: +Bool isEnabled" ("Toggle health data types for sharing"); the
/// server reads them before "HealthKitService.fetchSamples". The seed's SyncConfiguration starts
/// with every HealthDataType enabled.
@Suite("Health Sync serves only the shared types: snapshot-delta share, unshare, shared", .serialized, .hangGuard(minutes: 4))
struct HealthSyncSharingTests {
    /// The responder's processes (scripts/serve's snapshot-delta serve and its worker).
    func responders(_ site: HealthSyncSite) -> Set<pid_t> {
        Set(site.server.processes().filter { $0.command.contains("snapshot-delta") && $0.command.contains(" serve") }.map(\.pid))
    }

    @Test(
        "every type is shared until a choice; a change holds from the next request of the running responder; a request naming an unshared type is refused whole (403)"
    )
    func choose() throws {
        guard try requireGate(servingInstalled, HealthSyncClientTests.gate) else { return }
        let site = try HealthSyncSite(archive: try HealthSyncServeTests.makeArchive())
        try site.pair("reader")
        // The seed's default: every type.
        #expect(try site.client("reader", ["types", "--format", "text"]).lines == [sleep, heart, steps])
        let listed = try site.archive.run(["shared"]).records()
        try expectDocumented(listed)
        #expect(
            listed.map { "\($0.string("type_identifier")!) \($0["shared"]!.jsonText) \($0.string("sharing")!) \($0["count"]!.jsonText)" }
                == ["\(sleep) true all 1", "\(heart) true all 3", "\(steps) true all 2"])
        let pids = responders(site)
        #expect(pids.count == 2, "the responder and its worker: \(site.server.processes())")

        let unshared = try site.archive.run(["unshare", sleep, "--now", "2026-02-02T09:00:00Z"])
        #expect(unshared.status == 0 && unshared.stderr.contains("every type was shared by default"), "\(unshared.stderr)")
        #expect(
            try unshared.records().map {
                "\($0.string("type_identifier")!) \($0["shared"]!.jsonText) \($0.string("sharing")!) \($0.string("shared_at") ?? "-")"
            }
                == [
                    "\(sleep) false chosen -", "\(heart) true chosen 2026-02-02T09:00:00.000Z",
                    "\(steps) true chosen 2026-02-02T09:00:00.000Z",
                ])
        // The very next request, to the same responder: refused, JSON, no data.
        let alone = try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(sleep)"]}"#)
        #expect(alone.status == 403 && alone.body?.string("reason") == "not_shared" && alone.body?["samples"] == nil)
        #expect(alone.body?["types"] == .array([.string(sleep)]) && alone.body?.string("error")?.contains(sleep) == true)
        // Mixed with a shared type: refused whole, nothing of the heart rates either.
        let mixed = try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(heart)","\#(sleep)"]}"#)
        #expect(mixed.status == 403 && mixed.body?["types"] == .array([.string(sleep)]) && mixed.body?["samples"] == nil)
        let shared = try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(heart)"]}"#)
        #expect(shared.status == 200 && shared.body?["samples"]?.arrayValue?.count == 3)
        // The client: the shared types, a fetch of all of them without the sleep stage, and a clear refusal.
        #expect(try site.client("reader", ["types", "--format", "text"]).lines == [heart, steps])
        let everything = try site.client("reader", ["fetch"])
        let fetchedRecords = try everything.records().filter { $0.string("type") == "health_record" }
        #expect(everything.status == 0 && fetchedRecords.count == 5)
        #expect(!everything.stdout.contains(sleep))
        let refused = try site.client("reader", ["fetch", "--types", "\(heart),\(sleep)"])
        #expect(
            refused.status == 2 && refused.stderr.contains("HTTP 403 (not_shared): not shared by this server: \(sleep)"),
            "\(refused.stderr)")
        #expect(!refused.stdout.contains("health_record"))

        // Shared again: the next request has it.
        #expect(try site.archive.run(["share", sleep]).status == 0)
        #expect(try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(sleep)"]}"#).status == 200)
        // A type a later take brings is not shared until it is shared by name.
        let later = HealthLines.record(weight, "2026-01-11T07:00:00Z", value: "70.5", unit: "kg", source: "Scale")
        try site.archive.take([HealthLines.record(heart, "2026-01-10T08:00:00Z", value: "61", unit: "count/min", source: "Watch"), later])
        #expect(try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(weight)"]}"#).status == 403)
        let noted = try site.archive.run(["share", weight, "HKQuantityTypeIdentifierNotYetTaken"])
        #expect(noted.status == 0 && noted.stderr.contains("HKQuantityTypeIdentifierNotYetTaken is in no snapshot yet"))
        #expect(try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(weight)"]}"#).status == 200)
        // Nothing shared, then every type again, including those later takes bring.
        #expect(try site.archive.run(["unshare", "--all"]).records().allSatisfy { $0["shared"] == .bool(false) })
        #expect(try site.curl("reader", "POST", "/api/v1/health/data", #"{"types":["\#(heart)"]}"#).status == 403)
        #expect(try site.client("reader", ["types"]).stdout.isEmpty)
        #expect(
            try site.archive.run(["share", "--all"]).records().allSatisfy { $0["shared"] == .bool(true) && $0.string("sharing") == "all" })
        #expect(
            try site.curl(
                "reader", "POST", "/api/v1/health/data", #"{"types":["\#(heart)","\#(weight)","HKQuantityTypeIdentifierNothing"]}"#
            ).status == 200)
        #expect(responders(site) == pids, "no restart: the same responder read every change")

        // The operation log: each change, and each refusal with the types refused.
        let changes = try site.archive.sql(
            """
            SELECT operation || ' ' || json_extract(detail, '$.types') || ' ' || json_extract(detail, '$.sharing') || ' '
                   || coalesce(json_extract(detail, '$.shared'), 'null')
            FROM operations WHERE operation IN ('share', 'unshare') ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(
            changes == [
                "unshare [\"\(sleep)\"] chosen [\"\(heart)\",\"\(steps)\"]",
                "share [\"\(sleep)\"] chosen [\"\(sleep)\",\"\(heart)\",\"\(steps)\"]",
                "share [\"\(weight)\",\"HKQuantityTypeIdentifierNotYetTaken\"] chosen [\"\(sleep)\",\"\(weight)\",\"\(heart)\",\"HKQuantityTypeIdentifierNotYetTaken\",\"\(steps)\"]",
                "unshare [] chosen []",
                "share [] all null",
            ])
        let refusals = try site.archive.sql(
            """
            SELECT json_extract(detail, '$.refused_types') FROM operations
            WHERE operation = 'health_data' AND json_extract(detail, '$.status') = 403 ORDER BY id
            """
        ).split(separator: "\n").map(String.init)
        #expect(refusals == ["[\"\(sleep)\"]", "[\"\(sleep)\"]", "[\"\(sleep)\"]", "[\"\(weight)\"]", "[\"\(heart)\"]"])
        // Usage: a type that is not an identifier, both types and --all, neither.
        #expect(try site.archive.run(["unshare", "x'; DROP TABLE samples; --"]).status == 64)
        #expect(try site.archive.run(["share", "--all", heart]).status == 64)
        #expect(try site.archive.run(["share"]).status == 64)
        #expect(try site.archive.sql("SELECT count(*) FROM samples") == "7")
    }

    @Test("a version-4 archive with a paired client migrates to version 5 and goes on sharing every type with it")
    func migration() throws {
        let archive = try HealthSyncServeTests.makeArchive()
        let tls = try ScratchDirectory()
        #expect(try run("snapshot-delta", ["cert", "client", "--out", tls.url.path]).status == 0)
        #expect(try run("snapshot-delta", ["cert", "server", "--out", tls.url.path]).status == 0)
        let certificate = try String(contentsOfFile: tls.path("client.crt"), encoding: .utf8)
        let cgi = HealthSyncCGITests()
        let token = try #require(
            try archive.run(["pair", "--server-cert", tls.path("server.crt"), "--format", "ndjson"]).records().first?.string("token"))
        #expect(
            try cgi.cgi(archive.db, path: "/api/v1/pair", body: #"{"token":"\#(token)"}"#, certificate: certificate).head.first
                == "Status: 200 OK")
        // As version 4 left it: no shared_types table.
        _ = try archive.sql("DROP TABLE shared_types; PRAGMA user_version = 4")
        let fetched = try cgi.cgi(
            archive.db, path: "/api/v1/health/data", body: #"{"types":["\#(sleep)","\#(heart)"]}"#, certificate: certificate)
        #expect(fetched.head.first == "Status: 200 OK" && fetched.body?["samples"]?.arrayValue?.count == 4)
        #expect(try archive.sql("PRAGMA user_version") == "5")
        #expect(try archive.run(["shared"]).records().allSatisfy { $0.string("sharing") == "all" && $0["shared"] == .bool(true) })
        #expect(try archive.sql("SELECT count(*) FROM paired_clients") == "1")
    }
}

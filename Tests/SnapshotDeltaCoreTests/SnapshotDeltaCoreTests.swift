import Testing
import VitalsKit

@testable import SnapshotDeltaCore

// Expected digests below were computed outside the code under test, with sha256sum(1):
//   printf '%s' 'HKQuantityTypeIdentifierHeartRate|2|2019-05-10T15:30:00.000Z|2019-05-10T16:45:00.000Z' | sha256sum
// and so on for each one; instants in milliseconds with Python's datetime (UTC, zoneinfo).

/// 2019-05-10T15:30:00Z and 16:45:00Z in ms since the epoch.
let may10 = (start: Int64(1_557_502_200_000), end: Int64(1_557_506_700_000))

func type(
    _ name: String, _ count: Int64, _ earliest: Int64? = nil, _ latest: Int64? = nil, _ quality: Quality = .complete,
    unsupported: Bool = false, yearly: [YearlyCount] = []
) -> TypeCount {
    TypeCount(
        typeIdentifier: name, count: count, earliest: earliest, latest: latest, quality: quality,
        isUnsupported: unsupported, yearly: yearly)
}

func snapshot(
    _ id: String, _ types: [TypeCount], registry: [String]? = nil, timezone: String = "UTC",
    postRestore: Bool = false, token: String? = nil
) -> Snapshot {
    Snapshot(
        id: id, createdAt: 0, trigger: "manual", quality: Quality.aggregate(types.map(\.quality)),
        checksum: Hashing.checksum(types), typeSetHash: Hashing.typeSetHash(registry ?? types.map(\.typeIdentifier)), registry: registry,
        timezone: timezone, exportVersion: nil, exportDate: nil, source: "test", previousSnapshotID: nil,
        isChainStart: false, isPostRestore: postRestore, isPostRestoreInferred: false, isPostRestoreForwarded: false,
        postRestoreSuppressedDeltaID: token, deviceID: "d", recoveredDeviceID: false, samplesArchived: false,
        recordCount: 0, types: types)
}

@Suite("hashing")
struct HashingTests {
    @Test("type hash is SHA-256 of identifier|count|earliest|latest with millisecond ISO 8601 dates")
    func typeHash() {
        #expect(
            Hashing.typeHash("HKQuantityTypeIdentifierHeartRate", count: 2, earliest: may10.start, latest: may10.end)
                == "5d8c2ece2ae7d74752820aa7c797fa6ce57465a03f6bbffe8c6f0c7e9df9d29b")
        #expect(
            Hashing.typeHash("HKQuantityTypeIdentifierStepCount", count: -1, earliest: nil, latest: nil)
                == "ca2ee4cf9854b2d7e3ba4b53fe1af4529f074230d3d5206292104d1c72fb3594")
    }

    @Test("the checksum covers complete types only, in identifier order")
    func checksum() {
        let a = type("A", 1, 1_577_836_800_000, 1_577_836_800_000)
        let b = type("B", 0)
        let partial = type("C", 5, 1, 2, .partial)
        // printf '%s%s' <hash of A> <hash of B> | sha256sum
        let expected = "b3c4bb600f03b5056dcfd651ee4b219dd4e01de0a86e02cfd2dc6e5c1a01dd10"
        #expect(Hashing.checksum([b, partial, a]) == expected)
        #expect(!partial.typeHash.isEmpty, "a partial type has a hash, and is still left out")
    }

    @Test("the type-set hash is SHA-256 of the sorted monitored types, one identifier a line")
    func typeSet() {
        #expect(Hashing.typeSetHash(["C", "A", "B"]) == "2e70d7238a20934f7a8a145e8750ee44d6e043a7a8c9b3a1a0979d640e62af8c")
    }
}

@Suite("quality")
struct QualityTests {
    @Test("aggregation: loading > unauthorized (only if all) > partial > complete")
    func aggregate() {
        #expect(Quality.aggregate([.complete, .loading, .unauthorized]) == .loading)
        #expect(Quality.aggregate([.unauthorized, .unauthorized]) == .unauthorized)
        #expect(Quality.aggregate([.unauthorized, .complete]) == .partial)
        #expect(Quality.aggregate([.failed, .complete]) == .partial)
        #expect(Quality.aggregate([.partial]) == .partial)
        #expect(Quality.aggregate([.complete, .complete]) == .complete)
        #expect(Quality.aggregate([]) == .complete)
    }

    @Test("the count/quality coherence rule corrects an unauthorized or failed count to -1")
    func coherence() {
        let (fixed, corrected) = type("A", 12, 1, 2, .unauthorized).coherent()
        #expect(corrected && fixed.count == -1 && fixed.earliest == nil && fixed.quality == .unauthorized)
        let (kept, untouched) = type("A", 12, 1, 2, .partial).coherent()
        #expect(!untouched && kept.count == 12)
        let (negative, flagged) = type("A", -1).coherent()
        #expect(flagged && negative.quality == .failed)
    }
}

@Suite("deltas")
struct DeltaTests {
    @Test("reason priority: authorization_changed > unsupported > registry_changed > unknown > normal")
    func reasons() {
        let unauthorized = type("A", -1, nil, nil, .unauthorized)
        let unsupported = type("A", -1, nil, nil, .failed, unsupported: true)
        let failed = type("A", -1, nil, nil, .failed)
        let fine = type("A", 3)
        #expect(DeltaBuilder.reason(before: fine, after: unauthorized, registryChanged: true) == .authorizationChanged)
        #expect(DeltaBuilder.reason(before: unsupported, after: unauthorized, registryChanged: true) == .authorizationChanged)
        #expect(DeltaBuilder.reason(before: fine, after: unsupported, registryChanged: true) == .unsupported)
        #expect(DeltaBuilder.reason(before: fine, after: failed, registryChanged: true) == .registryChanged)
        #expect(DeltaBuilder.reason(before: fine, after: failed, registryChanged: false) == .unknown)
        #expect(DeltaBuilder.reason(before: nil, after: fine, registryChanged: false) == .normal)
        #expect(DeltaReason.allCases.sorted() == [.authorizationChanged, .unsupported, .registryChanged, .unknown, .normal])
    }

    @Test("the unavailable-count guard: count_delta 0 when either side is not complete")
    func unavailableGuard() {
        let a = snapshot("a", [type("A", 10, 1, 2), type("B", 4, 1, 2)])
        let b = snapshot("b", [type("A", -1, nil, nil, .failed), type("B", 7, 1, 3, .partial)])
        let delta = DeltaBuilder.delta(id: "d", from: a, to: b, at: 0)
        #expect(delta.types.map(\.countDelta) == [0, 0])
        #expect(delta.types.map(\.transition) == [.unavailable, .increased])
        #expect(delta.detection == .qualityGate)
        #expect(delta.checksumBefore == a.checksum && delta.checksumAfter == b.checksum)
    }

    @Test("the time-zone guard: yearly deltas 0 and a note when the time zone changed")
    func timezoneGuard() throws {
        let a = snapshot(
            "a", [type("A", 2, 1, 2, yearly: [YearlyCount(year: 2019, count: 2, isApproximate: false)])], timezone: "America/Los_Angeles")
        let b = snapshot(
            "b",
            [
                type(
                    "A", 2, 1, 2,
                    yearly: [
                        YearlyCount(year: 2019, count: 1, isApproximate: false),
                        YearlyCount(year: 2020, count: 1, isApproximate: false),
                    ])
            ], timezone: "UTC")
        let delta = DeltaBuilder.delta(id: "d", from: a, to: b, at: 0)
        let zoned = try #require(delta.types.first)
        #expect(zoned.yearly.map(\.delta) == [0, 0])
        #expect(zoned.yearly.map(\.before) == [2, 0] && zoned.yearly.map(\.after) == [1, 1])
        #expect(zoned.yearlyCountNote?.contains("America/Los_Angeles") == true)
    }

    @Test("merge: B-only types dropped, disappeared-then-appeared compared A to C, B's impairment kept")
    func merge() throws {
        let a = snapshot("a", [type("Gone", 5, 1, 2), type("Back", 3, 1, 2), type("Flaky", 10, 1, 2)])
        let b = snapshot("b", [type("OnlyB", 2, 1, 2), type("Flaky", -1, nil, nil, .failed)])
        let c = snapshot("c", [type("Back", 4, 1, 5), type("Flaky", 6, 1, 2)])
        let first = DeltaBuilder.delta(id: "ab", from: a, to: b, at: 0)
        let second = DeltaBuilder.delta(id: "bc", from: b, to: c, at: 0)
        let merged = DeltaBuilder.merge(first, second, id: "ac", from: a, to: c, at: 0)
        try #require(merged.types.map(\.typeIdentifier) == ["Back", "Flaky", "Gone"])
        #expect(merged.mergedFrom == ["ab", "bc"])
        let back = merged.types[0]
        #expect(back.transition == .increased && back.countDelta == 1 && back.reason == .normal)
        let flaky = merged.types[1]
        #expect(flaky.countDelta == 0 && flaky.reason == .unknown, "the failed count in B leaves the merge unavailable")
        #expect(merged.types[2].transition == .disappeared && merged.types[2].countDelta == -5)
        #expect(merged.checksumBefore == Hashing.checksum(a.types) && merged.checksumAfter == Hashing.checksum(c.types))
    }
}

@Suite("anomaly rules")
struct AnomalyTests {
    let day: Int64 = 86_400_000
    func detect(_ a: Snapshot, _ b: Snapshot, rules: AnomalyRules = AnomalyRules()) -> Detection {
        let delta = DeltaBuilder.delta(id: "delta-1", from: a, to: b, at: 0)
        var counter = 0
        return AnomalyDetector.detect(
            previous: a, current: b, delta: delta, rules: rules, at: 0,
            newID: {
                counter += 1
                return "anomaly-\(counter)"
            })
    }

    @Test("historical insertion: more samples with the earliest moved back, or the latest not moved")
    func historicalInsertion() {
        let base = snapshot("a", [type("A", 10, 100 * day, 200 * day), type("B", 10, 100 * day, 200 * day)])
        let found = detect(base, snapshot("b", [type("A", 12, 50 * day, 201 * day), type("B", 11, 100 * day, 200 * day)]))
        #expect(found.anomalies.map(\.kind) == [.historicalInsertion, .historicalInsertion])
        let normal = detect(base, snapshot("b", [type("A", 12, 100 * day, 202 * day), type("B", 10, 100 * day, 200 * day)]))
        #expect(normal.anomalies.isEmpty, "new samples after the latest are ordinary growth")
    }

    @Test("deletion severity by the share lost: info, warning from 10%, critical from 50%")
    func deletion() {
        let base = snapshot("a", [type("A", 100, 0, day), type("B", 100, 0, day), type("C", 100, 0, day)])
        let found = detect(base, snapshot("b", [type("A", 95, 0, day), type("B", 80, 0, day), type("C", 50, 0, day)]))
        #expect(found.anomalies.map(\.severity) == [.info, .warning, .critical])
        #expect(found.anomalies.allSatisfy { $0.kind == .deletion && $0.deltaID == "delta-1" })
    }

    @Test("duplication: more than 50% growth with both ends of the range within a day")
    func duplication() {
        let base = snapshot("a", [type("A", 10, 0, 10 * day)])
        #expect(detect(base, snapshot("b", [type("A", 16, 0, 10 * day + day / 2)])).anomalies.map(\.kind) == [.duplication])
        #expect(
            detect(base, snapshot("b", [type("A", 15, 0, 10 * day)])).anomalies.map(\.kind) == [.historicalInsertion],
            "exactly 50% is not more than 50%")
        #expect(detect(base, snapshot("b", [type("A", 30, 0, 20 * day)])).anomalies.isEmpty)
    }

    @Test("silent replacement: same count, different hash")
    func silentReplacement() {
        let found = detect(snapshot("a", [type("A", 10, 0, day)]), snapshot("b", [type("A", 10, 0, 2 * day)]))
        #expect(found.anomalies.map(\.kind) == [.silentReplacement])
    }

    @Test("sync anomaly: at least 4 types changing by more than 10%, critical, one record")
    func sync() throws {
        let names = ["A", "B", "C", "D", "E"]
        let base = snapshot("a", names.map { type($0, 100, 0, day) })
        let three = detect(base, snapshot("b", names.enumerated().map { type($1, $0 < 3 ? 120 : 100, 0, day + Int64($0) + 1) }))
        #expect(!three.anomalies.contains { $0.kind == .syncAnomaly })
        let four = detect(base, snapshot("b", names.enumerated().map { type($1, $0 < 4 ? 120 : 105, 0, day + 10 * day) }))
        let sync = four.anomalies.filter { $0.kind == .syncAnomaly }
        try #require(sync.count == 1)
        #expect(sync[0].severity == .critical && sync[0].types == ["A", "B", "C", "D"] && sync[0].typeIdentifier == nil)
    }

    @Test("gates: the quality gate, the -1 guard, the registry gate")
    func gates() {
        let base = snapshot("a", [type("A", 100, 0, day), type("B", 100, 0, day)])
        #expect(
            detect(base, snapshot("b", [type("A", 1, 0, day), type("B", -1, nil, nil, .failed)])).anomalies.isEmpty,
            "a partial snapshot stops every rule")
        let registry = snapshot("b", [type("A", 100, 0, day)], registry: ["A"])
        #expect(detect(base, registry).anomalies.isEmpty, "B left the registry: its disappearance is not a deletion")
        #expect(
            detect(base, snapshot("b", [type("A", 100, 0, day)])).anomalies.map(\.kind) == [.deletion],
            "without a registry change, a type that disappears is a deletion")
    }

    @Test("post-restore suppression: the sync anomaly is suppressed once, and the token is used")
    func postRestore() {
        let names = ["A", "B", "C", "D"]
        let base = snapshot("a", names.map { type($0, 100, 0, day) }, postRestore: true)
        let next = snapshot("b", names.map { type($0, 150, 0, 30 * day) })
        let found = detect(base, next)
        #expect(found.consumedPostRestoreToken && found.suppressed == [.syncAnomaly] && found.anomalies.isEmpty)
        let used = snapshot("a", names.map { type($0, 100, 0, day) }, postRestore: true, token: "earlier")
        #expect(detect(used, next).anomalies.map(\.kind) == [.syncAnomaly])
    }
}

@Suite("export reading helpers")
struct ExportHelperTests {
    func scan(_ text: String, atEnd: Bool = true) -> ExportHead.Outcome { ExportHead.scan(Array(text.utf8), atEnd: atEnd) }

    @Test("the internal DTD is blanked with its newlines kept, even a malformed one, and its version noted")
    func head() {
        let text =
            "<?xml version=\"1.0\"?>\n<!DOCTYPE HealthData [\n<!-- HealthKit Export Version: 12 -->\n<!ATTLIST X\n  a CDATA #IMPLIED\n<!ELEMENT Y EMPTY>\n>\n]>\n<HealthData/>"
        guard case .done(let bytes, let version) = scan(text) else {
            Issue.record("not done")
            return
        }
        let out = String(decoding: bytes, as: UTF8.self)
        #expect(version == "12")
        #expect(out.filter { $0 == "\n" }.count == text.filter { $0 == "\n" }.count)
        #expect(!out.contains("DOCTYPE") && !out.contains("ATTLIST") && out.hasSuffix("<HealthData/>"))
        #expect(out.hasPrefix("<?xml version=\"1.0\"?>\n"))
    }

    @Test("a prolog cut short asks for more; no DTD passes through untouched")
    func partial() {
        #expect(scan("<?xml version=\"1.0\"?>\n<!DOCTYPE HealthData [\n<!ELEMENT", atEnd: false) == .needMore)
        #expect(
            scan("<HealthData locale=\"en_US\">", atEnd: false)
                == .done(bytes: Array("<HealthData locale=\"en_US\">".utf8), exportVersion: nil))
    }

    @Test("HealthKit's device description loses its memory address")
    func device() {
        #expect(
            DeviceText.stripped(
                "<<HKDevice: 0x3012772a0>, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2>")
                == "name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,7, software:10.2")
        #expect(DeviceText.stripped("Pixel 8") == "Pixel 8")
    }

    @Test("years in a time zone: an instant before local New Year belongs to the old year")
    func years() throws {
        let calendar = try #require(YearCalendar(identifier: "America/Los_Angeles"))
        // 2020-01-01T07:30:00Z is 2019-12-31 23:30 in Los Angeles; local New Year 2020 is 08:00Z.
        #expect(calendar.year(of: 1_577_863_800_000) == 2019)
        #expect(calendar.newYear(2020) == 1_577_865_600_000)
        #expect(calendar.year(of: 1_577_865_600_000) == 2020)
        let utc = try #require(YearCalendar(identifier: "UTC"))
        #expect(utc.year(of: 1_577_863_800_000) == 2020)
        #expect(utc.year(of: -1) == 1969)
    }

    @Test("activity summary days")
    func days() {
        let text = Array("2016-11-15".utf8)
        let day = text.withUnsafeBufferPointer { AppleDate.parseDay($0) }
        #expect(day?.year == 2016 && day?.start == 1_479_168_000_000)
        let bad = Array("2016-13-15".utf8)
        #expect(bad.withUnsafeBufferPointer { AppleDate.parseDay($0) } == nil)
    }
}

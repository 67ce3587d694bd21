import Serving
import Testing
import VitalsKit

@testable import SnapshotDeltaCore

@Suite("Health Sync's request parsing and sample JSON")
struct HealthSyncAPITests {
    func parse(_ text: String) -> Result<SampleQuery, APIError> {
        Result { () throws(APIError) -> SampleQuery in try HealthSyncAPI.parseQuery(Array(text.utf8)) }
    }

    @Test("a full request: types once each, dates in both spellings, offset and limit")
    func full() throws {
        let query = try parse(
            #"{"types":["A","B","A"],"startDate":"2026-01-10T08:00:00Z","end_date":"2026-01-10T09:00:00.5+01:00","offset":3,"limit":7}"#
        ).get()
        #expect(query.types == ["A", "B"] && query.offset == 3 && query.limit == 7)
        #expect(query.from == 1_768_032_000_000 && query.to == 1_768_032_000_500)
        let defaults = try parse(#"{"types":["A"]}"#).get()
        #expect(defaults.from == nil && defaults.to == nil && defaults.offset == 0 && defaults.limit == 1000)
    }

    @Test(
        "each malformed request is a 400 naming its field",
        arguments: [
            (#"[]"#, "JSON object"), (#"{}"#, "types"), (#"{"types":[]}"#, "types"), (#"{"types":[1]}"#, "types"),
            (#"{"types":["a b"]}"#, "types"), (#"{"types":["a'--"]}"#, "types"),
            (#"{"types":["\#(String(repeating: "a", count: 129))"]}"#, "types"),
            (#"{"types":["A"],"limit":0}"#, "limit"), (#"{"types":["A"],"limit":10001}"#, "limit"),
            (#"{"types":["A"],"limit":1.5}"#, "limit"),
            (#"{"types":["A"],"offset":-1}"#, "offset"), (#"{"types":["A"],"startDate":5}"#, "startDate"),
            (#"{"types":["A"],"endDate":"2026-02-30T00:00:00Z"}"#, "endDate"),
            (#"{"types":["A"],"startDate":"2026-01-02T00:00:00Z","endDate":"2026-01-01T00:00:00Z"}"#, "startDate"),
        ])
    func refused(body: String, field: String) {
        guard case .failure(let error) = parse(body) else {
            Issue.record("accepted: \(body)")
            return
        }
        #expect(error.status == 400 && error.reason == "bad_request" && error.message.contains(field), "\(error.message)")
    }

    @Test("65 types are too many; 64 are fine")
    func typeCount() {
        let names = (0..<65).map { "\"T\($0)\"" }
        #expect((try? parse(#"{"types":[\#(names.joined(separator: ","))]}"#).get()) == nil)
        #expect((try? parse(#"{"types":[\#(names.dropLast().joined(separator: ","))]}"#).get())?.types.count == 64)
    }

    func sample(value: String?, uuid: String? = nil, unit: String? = "count", identity: (Int64, Int64)? = (42, 0)) -> Archive.ArchivedSample
    {
        Archive.ArchivedSample(
            typeIdentifier: "HKQuantityTypeIdentifierStepCount", start: 1_768_032_000_999, end: 1_768_032_060_000,
            created: nil, value: value, unit: unit, source: nil, sourceVersion: nil, device: nil, uuid: uuid,
            firstSeenSnapshotID: nil, verifiedAt: 0, disappearedSnapshotID: nil, disappearedAt: nil, metadata: nil,
            identity: identity)
    }

    @Test("a sample in the seed's fields: whole-second UTC dates, a number, empty strings for missing text")
    func sampleJSON() {
        let object = HealthSampleJSON.object(sample(value: "12.5"))
        #expect(object.fields.map(\.key) == ["id", "type", "startDate", "endDate", "value", "unit", "sourceName"])
        #expect(object["startDate"]?.stringValue == "2026-01-10T08:00:00Z" && object["endDate"]?.stringValue == "2026-01-10T08:01:00Z")
        #expect(object["value"] == .number("12.5") && object["unit"]?.stringValue == "count" && object["sourceName"]?.stringValue == "")
        let category = HealthSampleJSON.object(sample(value: "HKCategoryValueSleepAnalysisAsleepCore"))
        #expect(category["value"] == .number("0") && category["valueText"]?.stringValue == "HKCategoryValueSleepAnalysisAsleepCore")
        #expect(HealthSampleJSON.object(sample(value: nil))["value"] == .number("0"))
    }

    @Test("ids: the export's UUID when it has one, else a stable version-8 UUID from the sample's identity")
    func ids() {
        #expect(
            HealthSampleJSON.id(sample(value: "1", uuid: "0c4a2d8e-1b2f-4c3d-9e4f-5a6b7c8d9e0f")) == "0C4A2D8E-1B2F-4C3D-9E4F-5A6B7C8D9E0F")
        let made = HealthSampleJSON.id(sample(value: "1"))
        #expect(made == HealthSampleJSON.id(sample(value: "1")))
        #expect(made != HealthSampleJSON.id(sample(value: "1", identity: (42, 1))))
        #expect(HealthSampleJSON.isUUID(made) && Array(made)[14] == "8" && "89AB".contains(Array(made)[19]))
        #expect(HealthSampleJSON.id(sample(value: "1", uuid: "not-a-uuid")) == made)
    }

    @Test("tokens: 26 Base32 characters, different each time; only well-formed text has their shape")
    func tokens() {
        let tokens = Set((0..<100).map { _ in PairingToken.generate() })
        #expect(tokens.count == 100 && tokens.allSatisfy(PairingToken.isWellFormed))
        #expect(!PairingToken.isWellFormed("ABCDEFGHIJKLMNOPQRSTUVWXYZ") && !PairingToken.isWellFormed("short"))
        #expect(PairingToken.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

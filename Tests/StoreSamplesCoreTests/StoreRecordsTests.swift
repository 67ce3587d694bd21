import Testing
import VitalsKit

@testable import StoreSamplesCore

@Suite("the stores' shared model: monitor metadata, agent admission, status codes")
struct StoreRecordsTests {
    @Test("a sample's metadata replaces what it states and keeps what it leaves out or gives as null; unchanged says so")
    func metadataTake() throws {
        var metadata = MonitorMetadata()
        let first =
            #"{"type":"sample","monitor":"api","at":"2026-01-27T10:30:00Z","status":"up","name":"A\"PI","kind":"https","target":"https://a/","check_interval":60,"config":{"method":"GET"},"enabled":false,"description":"Zürich"}"#
        #expect(try withSample(first) { metadata.take($0) })
        #expect(
            metadata
                == MonitorMetadata(
                    name: "A\"PI", kind: "https", target: "https://a/", agent: nil, description: "Zürich",
                    checkInterval: 60, config: #"{"method":"GET"}"#, enabled: false))
        #expect(try withSample(first) { metadata.take($0) } == false, "the same sample again changes nothing")
        // The name written with an escape it need not have is the same name.
        let escaped = #"{"type":"sample","monitor":"api","at":"2026-01-27T10:31:00Z","status":"up","name":"A\"P\u0049"}"#
        #expect(try withSample(escaped) { metadata.take($0) } == false)
        let partial =
            #"{"type":"sample","monitor":"api","at":"2026-01-27T10:32:00Z","status":"up","name":null,"kind":"ping","agent":"paris","enabled":true}"#
        #expect(try withSample(partial) { metadata.take($0) })
        #expect(
            metadata
                == MonitorMetadata(
                    name: "A\"PI", kind: "ping", target: "https://a/", agent: "paris", description: "Zürich",
                    checkInterval: 60, config: #"{"method":"GET"}"#, enabled: true))
        let interval = #"{"type":"sample","monitor":"api","at":"2026-01-27T10:33:00Z","status":"up","check_interval":59.6}"#
        #expect(try withSample(interval) { metadata.take($0) } == false, "59.6 s rounds to the 60 held")
        let longer = #"{"type":"sample","monitor":"api","at":"2026-01-27T10:34:00Z","status":"up","check_interval":300}"#
        #expect(try withSample(longer) { metadata.take($0) })
        #expect(metadata.checkInterval == 300)
    }

    @Test("remote records: an agent is required, a rejected one refused, a pending one held; the user's own pass as they are")
    func admission() throws {
        let line = #"{"type":"sample","monitor":"api","at":"2026-01-27T10:30:00Z","status":"up","agent":"paris"}"#
        let anonymous = #"{"type":"sample","monitor":"api","at":"2026-01-27T10:30:00Z","status":"up"}"#
        let own = IngestPolicy()
        #expect(try withSample(line) { sample in try own.admit(sample, record: "sample") { _ in .rejected } } == (nil, false))
        let remote = IngestPolicy(remote: true)
        for (status, held) in [(AgentStatus.pending, true), (.approved, false)] {
            let admitted = try withSample(line) { sample in try remote.admit(sample, record: "sample") { _ in status } }
            #expect(admitted.agent == "paris" && admitted.held == held)
        }
        let refused = try withSample(line) { sample in
            #expect(throws: StoreRefusal.self) { try remote.admit(sample, record: "monitor record") { _ in .rejected } }
            do { _ = try remote.admit(sample, record: "monitor record") { _ in .rejected } } catch let error as StoreRefusal {
                return error.message
            }
            return ""
        }
        #expect(refused == "agent 'paris' is rejected: its monitor records are refused (store-samples agents approve paris lets them in)")
        try withSample(anonymous) { sample in
            #expect(throws: StoreRefusal.self) { try remote.admit(sample, record: "sample") { _ in .approved } }
        }
        #expect(own.statusOfNewAgent("x") == .approved)
        #expect(remote.statusOfNewAgent("x") == .pending)
        #expect(IngestPolicy(remote: true, autoApprove: true).statusOfNewAgent("x") == .approved)
        #expect(IngestPolicy(remote: true, approvedAgents: ["x"]).statusOfNewAgent("x") == .approved)
        #expect(IngestPolicy(remote: true, approvedAgents: ["x"]).statusOfNewAgent("y") == .pending)
    }

    @Test("status codes: one mapping for both stores, 0 to 4 in the vocabulary's order; anything else an error")
    func statusCodes() throws {
        #expect(SampleStatus.allCases.map(\.storeCode) == [0, 1, 2, 3, 4])
        for status in SampleStatus.allCases { #expect(try SampleStatus(storeCode: Int64(status.storeCode)) == status) }
        #expect(throws: ToolError.self) { try SampleStatus(storeCode: 5) }
        #expect(throws: ToolError.self) { try SampleStatus(storeCode: -1) }
        #expect(try AgentStatus(stored: "approved") == .approved)
        #expect(throws: ToolError.self) { try AgentStatus(stored: "Approved") }
    }

    @Test("agent sightings: each agent's span and name; written again only past what was written or with a name")
    func sightings() throws {
        var sightings = AgentSightings()
        for (minute, extra) in [(30, ""), (10, ""), (20, #","agent_name":"Paris""#)] {
            try withSample(#"{"type":"sample","monitor":"m","at":"2026-01-27T10:\#(minute):00Z","status":"up","agent":"paris"\#(extra)}"#) {
                sightings.note($0)
            }
        }
        try withSample(#"{"type":"sample","monitor":"m","at":"2026-01-27T10:00:00Z","status":"up","agent":"tokyo"}"#) { sightings.note($0) }
        try withSample(#"{"type":"sample","monitor":"m","at":"2026-01-27T10:00:00Z","status":"up"}"#) { sightings.note($0) }
        let base: Int64 = 1_769_508_000_000  // 2026-01-27T10:00:00Z
        let all = sightings.toWrite(beyond: [:]).sorted { $0.agent < $1.agent }
        #expect(all.map(\.agent) == ["paris", "tokyo"])
        #expect(all[0].span == AgentSpan(base + 600_000, base + 1_800_000) && all[0].name == "Paris")
        let written = ["paris": AgentSpan(base, base + 3_600_000), "tokyo": AgentSpan(base, base + 60_000)]
        #expect(sightings.toWrite(beyond: written).map(\.agent) == ["paris"], "tokyo's span is held; paris gives a name")
    }
}

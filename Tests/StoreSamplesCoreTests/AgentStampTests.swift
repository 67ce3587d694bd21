import Testing
import VitalsKit

@testable import StoreSamplesCore

@Suite("whose a received record is: one rule, decided by the store's own reader")
struct AgentStampTests {
    func verdict(_ line: String, agent: String = "tokyo") -> (AgentStamp.Verdict, String?) {
        var reader = SampleLine()
        var stamped: [UInt8] = []
        let bytes = Array(line.utf8)
        return LineBytes.with(bytes) { line in
            _ = reader.read(line)
            let verdict = AgentStamp.apply(agent: agent, line: line, reader: reader, into: &stamped)
            return (verdict, verdict == .stamped ? String(decoding: stamped, as: UTF8.self) : nil)
        }
    }

    @Test("no agent: the token's is added as the last field; null: replaced in place")
    func stamps() {
        let base = #"{"type":"sample","monitor":"m","at":"2026-01-01T00:00:00Z","status":"up""#
        #expect(verdict(base + "}").1 == base + #","agent":"tokyo"}"#)
        #expect(verdict(base + #","agent":null,"x":1}"#).1 == base + #","agent":"tokyo","x":1}"#)
        #expect(verdict(base + "}  ", agent: #"a"b"#).1 == base + #","agent":"a\"b"}  "#, "the agent is written as a JSON string")
        #expect(verdict(#"{}"#).1 == #"{"agent":"tokyo"}"#)
    }

    @Test("the token's agent as written is kept; another, a twice-named or an escaped key is refused")
    func refuses() {
        let base = #"{"type":"sample","monitor":"m","at":"2026-01-01T00:00:00Z","status":"up""#
        #expect(verdict(base + #","agent":"tokyo"}"#).0 == .asWritten)
        #expect(verdict(base + #","agent":"t\u006fkyo"}"#).0 == .asWritten, "the same agent written with an escape")
        #expect(verdict(base + #","agent":"paris"}"#).0 == .refused(#"the record names agent "paris"; this token is agent "tokyo""#))
        #expect(
            verdict(base + #","agent":"tokyo\u0000"}"#).0 == .refused(#"the record names agent "tokyo\u0000"; this token is agent "tokyo""#)
        )
        #expect(verdict(base + #","agent":"tokyo","agent":"paris"}"#).0 == .refused("the record names 'agent' more than once"))
        #expect(
            verdict(base + #","\u0061gent":"paris"}"#).0
                == .refused(#"the record's 'agent' key is written with escapes; write it as "agent""#))
        #expect(verdict(base + #","agent":"tokyo","\u0061gent":"paris"}"#).0 == .refused("the record names 'agent' more than once"))
    }
}

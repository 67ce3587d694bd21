import Testing
import VitalsKit

@testable import StoreSamplesCore

/// What a stored sample looks like when it is passed on: its bytes, with the views' integer id
/// added as the last field unless the line states one of its own at the top level.
@Suite("passing a stored sample on")
struct PassingOnTests {
    /// Reads `text` as the ingest does (spine and the store's own fields in one pass), then passes it on.
    func passedOn(_ text: String, id: Int64) -> String {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { line in
            var reader = SampleLine()
            var own = StoredFields()
            _ = reader.read(line, extra: &own)
            var out: [UInt8] = []
            Ingester.appendPassingOn(line, monitorID: id, hasMonitorID: own.monitorID != nil, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
    }

    @Test("the id goes last, before the closing brace, and trailing blanks go")
    func added() {
        #expect(
            passedOn(#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up"}"#, id: 7)
                == #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","monitor_id":7}"#)
        #expect(
            passedOn("{\"type\":\"sample\",\"monitor\":\"a\",\"at\":\"2026-01-27T10:30:00Z\",\"status\":\"up\"} \t\r", id: 12)
                == #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","monitor_id":12}"#)
    }

    @Test("a line with its own top-level monitor_id goes on unchanged")
    func kept() {
        let line = #"{"type":"sample","monitor":"a","monitor_id":99,"at":"2026-01-27T10:30:00Z","status":"up"}"#
        #expect(passedOn(line, id: 7) == line)
    }

    @Test("monitor_id met only inside a string or a nested object is not the line's own: the id is added")
    func nested() {
        #expect(
            passedOn(#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","message":"\"monitor_id\""}"#, id: 3)
                == #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","message":"\"monitor_id\"","monitor_id":3}"#)
        #expect(
            passedOn(#"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","config":{"monitor_id":1}}"#, id: 4)
                == #"{"type":"sample","monitor":"a","at":"2026-01-27T10:30:00Z","status":"up","config":{"monitor_id":1},"monitor_id":4}"#)
    }
}

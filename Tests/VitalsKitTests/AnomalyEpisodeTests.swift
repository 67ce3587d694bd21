import Testing

@testable import VitalsKit

@Suite("AnomalyEpisodeState: the state of a sample's anomaly.episode")
struct AnomalyEpisodeTests {
    /// The state read from `line`'s `anomaly` field.
    func state(_ line: String) throws -> AnomalyEpisodeState? {
        let bytes = Array(line.utf8)
        return try LineBytes.with(bytes) { line in
            let field = try #require(
                try JSONParser.scanObject(line).first { field in
                    String(decoding: line[field.keyStart..<field.keyEnd], as: UTF8.self) == "anomaly"
                })
            return AnomalyEpisodeState.read(line, field)
        }
    }

    @Test("the compact form detect-anomaly writes, and any other form of the same object")
    func forms() throws {
        let sample = "{\"type\":\"sample\",\"monitor\":\"api\",\"anomaly\":"
        #expect(try state(sample + "{\"verdict\":\"degrading\",\"score\":0.8,\"episode\":{\"state\":\"onset\",\"id\":1}}}") == .onset)
        #expect(try state(sample + "{\"verdict\":\"degrading\",\"score\":0.1,\"episode\":{\"state\":\"ongoing\",\"id\":1}}}") == .ongoing)
        #expect(try state(sample + "{\"verdict\":\"stable\",\"score\":0,\"episode\":{\"state\":\"end\",\"id\":1}}}") == .end)
        #expect(try state(sample + "{\"verdict\":\"stable\",\"score\":0,\"episode\":null}}") == nil)
        // Spaces, another key order, escapes: parsed.
        #expect(try state(sample + "{ \"episode\" : { \"id\" : 2, \"state\" : \"onset\" } }}") == .onset)
        #expect(try state(sample + "{\"episode\":{\"id\":2,\"state\":\"\\u006fngoing\"}}}") == .ongoing)
        // No episode, an unknown state, not an object: none.
        #expect(try state(sample + "{\"verdict\":\"stable\",\"detector\":\"seed\",\"score\":0}}") == nil)
        #expect(try state(sample + "{\"episode\":{\"state\":\"later\"}}}") == nil)
        #expect(try state(sample + "\"episode\"}") == nil)
        #expect(try state(sample + "null}") == nil)
    }
}

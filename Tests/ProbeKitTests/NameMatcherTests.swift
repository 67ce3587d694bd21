import Testing

@testable import ProbeKit

@Suite("isitup name matching")
struct NameMatcherTests {
    let targets: [(name: String, host: String)] = [
        ("Spidey's Arcade", "arcade.example.com"),
        ("Portfolio", "me.example.com"),
        ("Port", "port.example.net"),
        ("IoTHINC VITC", "vitc.example.org"),
    ]

    @Test("normalization: lowercase, trimmed, non-alphanumerics to one space")
    func normalize() {
        #expect(NameMatcher.normalize("  Spidey's  Arcade! ") == "spidey s arcade")
        #expect(NameMatcher.normalize("me.example.com") == "me example com")
    }

    @Test(
        "order: exact name, exact host, partial name, partial host",
        arguments: [
            ("port", 2), ("PORTFOLIO", 1), ("me.example.com", 1), ("spidey", 0), ("vitc", 3), ("example org", 3), ("arcade example", 0),
        ])
    func order(query: String, index: Int) {
        #expect(NameMatcher.bestMatch(query, in: targets) == index)
    }

    @Test("no match, and the closest names for the message")
    func none() {
        #expect(NameMatcher.bestMatch("zzz", in: targets) == nil)
        #expect(NameMatcher.bestMatch("  ", in: targets) == nil)
        #expect(NameMatcher.closestNames("portfolo", among: targets.map(\.name)).first == "Portfolio")
    }
}

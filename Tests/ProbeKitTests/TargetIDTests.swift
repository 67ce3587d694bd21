import Testing

@testable import ProbeKit

@Suite("monitor ids")
struct TargetIDTests {
    @Test(
        "derived ids are readable slugs without secrets",
        arguments: [
            ("https://example.com/", "example.com"),
            ("https://Example.com:8443/a/b?x=1", "example.com-8443-a-b-x-1"),
            ("http://example.com/health", "http-example.com-health"),
            ("https://user:pw@example.com/?token=abc", "example.com-token"),
        ])
    func derived(url: String, id: String) {
        #expect(TargetIDs.derive(from: url) == id)
    }

    @Test("long derived ids end in a hash so they stay unique")
    func long() {
        let a = TargetIDs.derive(from: "https://example.com/" + String(repeating: "x", count: 200) + "a")
        let b = TargetIDs.derive(from: "https://example.com/" + String(repeating: "x", count: 200) + "b")
        #expect(a.count == 80 && b.count == 80 && a != b)
    }

    @Test("ids are trimmed; duplicates get -2, -3 and name the first")
    func duplicates() {
        #expect(TargetIDs.normalize("  a b ") == "a b")
        #expect(TargetIDs.normalize("   ") == nil)
        var ids = TargetIDs()
        #expect(ids.register("x", source: "f", line: 1).id == "x")
        let second = ids.register("x", source: "f", line: 4)
        #expect(second.id == "x-2" && second.firstSeen?.line == 1)
        #expect(ids.register("x-3", source: "f", line: 5).id == "x-3")
        #expect(ids.register("x", source: "f", line: 6).id == "x-4", "a suffix already taken is skipped")
    }
}

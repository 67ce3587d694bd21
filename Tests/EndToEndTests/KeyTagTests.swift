import Foundation
import Testing

/// One key-dispatch idiom: every reader of a line's fields switches on `SampleLine.tag` (a key's
/// length and first byte in one integer, `0x4_6E` for "name") and confirms the name with
/// `SampleLine.key(_:is:)`. The tags are written by hand, so that the switch is one jump; this
/// test reads every one in the sources and holds it to the name beside it, and finds no switch on
/// the (length, first byte) pair left but the one a measurement kept.
@Suite("key tags agree with their names")
struct KeyTagTests {
    static func sources() throws -> [(path: String, text: String)] {
        let root = Binaries.repositoryRoot.appendingPathComponent("Sources")
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        return try paths.map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    @Test("each `case 0xL_BB where SampleLine.key(key, is: NAME)` (`Self.key` in the spine): L is NAME's length, BB its first byte")
    func tagsMatchNames() throws {
        let pattern = try NSRegularExpression(
            pattern: #"case 0x([0-9A-F]+)_([0-9A-F]{2}) where (?:SampleLine|Self)\.key\(key, is: "([^"]+)"\)"#)
        var checked = 0
        for (path, text) in try KeyTagTests.sources() {
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let part = { (index: Int) in String(text[Range(match.range(at: index), in: text)!]) }
                let name = part(3)
                #expect(Int(part(1), radix: 16) == name.utf8.count, "\(path): \(part(0)): the length of \(name) is \(name.utf8.count)")
                #expect(UInt8(part(2), radix: 16) == name.utf8.first, "\(path): \(part(0)): \(name) starts with \(name.prefix(1))")
                checked += 1
            }
        }
        // The spine's seven, the store's thirteen, notify's eight, digest's six.
        #expect(checked == 34, "tags checked: \(checked)")
    }

    @Test("no reader switches on the (length, first byte) pair but detect-anomaly's, which carries its figure")
    func oneIdiom() throws {
        for (path, text) in try KeyTagTests.sources() where text.contains("switch (count, key[0])") {
            #expect(
                path.hasSuffix("AnomalyFilter.swift") && text.contains("3.5% of detect-anomaly's"),
                "\(path) switches on the pair; use SampleLine.tag")
        }
    }
}

import Testing
import VitalsCrypto

@testable import HTTPTransport

/// The body inspector reads a body in the pieces curl hands over and keeps none of it:
/// a text that spans pieces is still found, and the digest is the whole body's.
@Suite("body inspection in pieces")
struct BodyInspectorTests {
    func inspect(_ pieces: [String], content: String?, digest: DigestKind? = nil) -> BodyInspector {
        let inspector = BodyInspector(content: content.map { Array($0.utf8) }, digest: digest)
        for piece in pieces {
            Array(piece.utf8).withUnsafeBufferPointer { inspector.read($0) }
        }
        return inspector
    }

    typealias DigestKind = DigestStream.Kind

    @Test("content is found within a piece, across two pieces, and across pieces shorter than it")
    func contentAcrossPieces() {
        #expect(inspect(["xxTHE-ENDyy"], content: "THE-END").found)
        #expect(inspect(["abc", "def"], content: "cd").found)
        #expect(inspect(["xxTHE", "-EN", "Dyy"], content: "THE-END").found)
        #expect(inspect(["T", "H", "E", "-", "E", "N", "D"], content: "THE-END").found)
        #expect(!inspect(["abc", "def"], content: "ce").found)
        #expect(!inspect(["THE-EN", "d"], content: "THE-END").found, "case matters")
        #expect(!inspect([], content: "x").found)
        #expect(inspect(["anything"], content: nil).found, "nothing sought is nothing missing")
    }

    @Test("the digest over pieces is the whole body's: FIPS 180-2's and RFC 1321's 'abc' vectors")
    func digestOverPieces() {
        #expect(
            inspect(["a", "bc"], content: nil, digest: .sha256).finishDigest()
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(inspect(["ab", "", "c"], content: nil, digest: .md5).finishDigest() == "900150983cd24fb0d6963f7d28e17f72")
        #expect(inspect(["abc"], content: nil).finishDigest() == nil)
    }
}

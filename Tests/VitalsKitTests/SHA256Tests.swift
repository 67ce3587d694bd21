import Testing
import VitalsCrypto

@Suite("SHA-256")
struct SHA256Tests {
    // FIPS 180-2 test vectors.
    @Test("known vectors")
    func vectors() {
        #expect(SHA256.hex(SHA256.digest("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(SHA256.digest("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}

import Testing
import VitalsCrypto

@Suite("HMAC-SHA256, Base64, ES256")
struct CryptoTests {
    // RFC 4231, test cases 1, 2 and 6 (a key longer than the block size).
    @Test("HMAC-SHA256 known vectors")
    func hmac() {
        let key1 = [UInt8](repeating: 0x0b, count: 20)
        #expect(
            SHA256.hex(HMACSHA256.authenticationCode(key: key1, message: Array("Hi There".utf8)))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            SHA256.hex(HMACSHA256.authenticationCode(key: "Jefe", message: "what do ya want for nothing?"))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let key6 = [UInt8](repeating: 0xaa, count: 131)
        #expect(
            SHA256.hex(
                HMACSHA256.authenticationCode(key: key6, message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        // GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
        #expect(
            SHA256.hex(HMACSHA256.authenticationCode(key: "It's a Secret to Everybody", message: "Hello, World!"))
                == "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
    }

    // RFC 4648 §10.
    @Test("Base64 known vectors, both alphabets, and decoding")
    func base64() {
        let vectors = [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.encode(Array(plain.utf8), url: true) == encoded.replacingOccurrences(of: "=", with: ""))
            #expect(Base64.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64.encode([0xfb, 0xff]) == "+/8=")
        #expect(Base64.encode([0xfb, 0xff], url: true) == "-_8")
        #expect(Base64.decode("-_8") == [0xfb, 0xff])
        #expect(Base64.decode("Zm9v!") == nil)
        #expect(Base64.decode("Z") == nil)
    }

    // RFC 7515 Appendix A.3: the ES256 example signature verifies with its JWK, and a
    // changed message does not.
    @Test("ES256 verifies RFC 7515's example and rejects a changed message")
    func rfc7515() throws {
        let x = try #require(Base64.decode("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"))
        let y = try #require(Base64.decode("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"))
        let input = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        let signature = try #require(
            Base64.decode("DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"))
        #expect(signature.count == 64)
        #expect(try ES256.verify(signature: signature, message: Array(input.utf8), x: x, y: y))
        #expect(try !ES256.verify(signature: signature, message: Array((input + "x").utf8), x: x, y: y))
        // DER and raw forms convert both ways.
        #expect(try ES256.rawSignature(fromDER: ES256.derSignature(fromRaw: signature)) == signature)
    }

    // A P-256 key in PKCS#8 PEM, as Apple's .p8 files are (made with
    // `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
    static let p8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHipikBWlqzLyCFCS
        w4CHsrJYYW15j1TZbhIxzURGkruhRANCAASi0DQY/ddknER5YZV3v5EHY/Hfl0Fy
        TmBlAfRRw4tySdTtHREclxvKOVgQ5n40xduy/NBLYHuVEiLAt5+HML+N
        -----END PRIVATE KEY-----
        """

    @Test("a .p8 key signs JWTs whose ES256 signature verifies with its own public key")
    func signAndVerify() throws {
        let key = try ES256PrivateKey(pem: Array(CryptoTests.p8.utf8))
        let (x, y) = try key.publicCoordinates()
        let token = try key.jwt(headerJSON: #"{"alg":"ES256","kid":"ABC123DEFG"}"#, claimsJSON: #"{"iss":"DEF123GHIJ","iat":1437179036}"#)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(Base64.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        let signature = try #require(Base64.decode(parts[2]))
        #expect(signature.count == 64)
        #expect(try ES256.verify(signature: signature, message: Array((parts[0] + "." + parts[1]).utf8), x: x, y: y))
        #expect(try !ES256.verify(signature: signature, message: Array((parts[0] + "." + parts[0]).utf8), x: x, y: y))
    }

    static let p384 = """
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAxNvjlDXijDpKM8an/
        pEz0MtFNi1Jn/H7wqNGMSbYiXGIqlZNhDkZVa1WOTDBTaFqhZANiAAQJX3aUPqPN
        zPcEqCE1/1/7Pe7y4jfUacY6oOmpGleE+tFwNUl2OYT+94m7H+NMOONYAtPv2Zrz
        SZLN+pcZsNp+ZlAVPpbZL5YfkI8DHI9h5MGm6Qklr34kQqos7yFD42s=
        -----END PRIVATE KEY-----
        """

    @Test("keys that are not P-256 PEM are refused with words")
    func badKeys() throws {
        #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: Array("not a key".utf8)) }
        #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: Array(CryptoTests.p384.utf8)) }
    }
}

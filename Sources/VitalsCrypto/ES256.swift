import CCrypto

// Unsafe pointers here are C interop (OpenSSL's libcrypto takes and fills raw buffers): kept.

/// Why a key could not be used or a signature made.
public struct CryptoError: Error, CustomStringConvertible {
    /// What went wrong, in words.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// An ECDSA P-256 private key (an APNs `.p8` key: PKCS#8 PEM) that signs ES256 JSON Web Tokens (RFC 7518 §3.4).
public final class ES256PrivateKey {
    private let key: OpaquePointer

    /// Reads a PEM private key (`-----BEGIN PRIVATE KEY-----`, or SEC 1 `EC PRIVATE KEY`); it must be on P-256.
    public init(pem: [UInt8]) throws {
        guard let loaded = ES256PrivateKey.readKey(pem) else {
            throw CryptoError("not a PEM private key (expected -----BEGIN PRIVATE KEY-----, as Apple's .p8 files are)")
        }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC, EVP_PKEY_get_bits(loaded) == 256 else {
            EVP_PKEY_free(loaded)
            throw CryptoError("the key is not an elliptic-curve P-256 key, which ES256 needs")
        }
        key = loaded
    }

    deinit { EVP_PKEY_free(key) }

    private static func readKey(_ pem: [UInt8]) -> OpaquePointer? {
        pem.withUnsafeBytes { bytes -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
    }

    /// The public key's affine coordinates (32 bytes each), as a JWK's `x` and `y`.
    public func publicCoordinates() throws -> (x: [UInt8], y: [UInt8]) {
        let length = i2d_PUBKEY(key, nil)
        guard length >= 65 else { throw CryptoError("cannot encode the public key") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_PUBKEY(key, &cursor)
        }
        let point = der.suffix(64)
        return (Array(point.prefix(32)), Array(point.suffix(32)))
    }

    /// The 64-byte JWS signature (R then S, each 32 bytes big-endian) of SHA-256(`message`).
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw CryptoError("cannot start signing: \(lastError())")
        }
        var length = 0
        let ok = message.withUnsafeBufferPointer { EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }
        guard ok == 1 else { throw CryptoError("cannot sign: \(lastError())") }
        var der = [UInt8](repeating: 0, count: length)
        let signed = der.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer { EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        guard signed == 1 else { throw CryptoError("cannot sign: \(lastError())") }
        return try ES256.rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// A signed JWT: `base64url(header).base64url(claims).base64url(signature)`, with the JSON
    /// texts given as they are to be signed.
    public func jwt(headerJSON: String, claimsJSON: String) throws -> String {
        let signingInput = Base64.encode(Array(headerJSON.utf8), url: true) + "." + Base64.encode(Array(claimsJSON.utf8), url: true)
        let signature = try sign(Array(signingInput.utf8))
        return signingInput + "." + Base64.encode(signature, url: true)
    }
}

/// ES256 helpers: signature encodings and verification (for tests and for checking a key).
public enum ES256 {
    /// Converts a DER `ECDSA-Sig-Value` into the 64-byte R‖S form JWS uses.
    public static func rawSignature(fromDER der: [UInt8]) throws -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else { throw CryptoError("not a DER ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var out = [UInt8](repeating: 0, count: 64)
        let written = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let r, let s, let base = buffer.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard written else { throw CryptoError("the signature does not fit P-256") }
        return out
    }

    /// Converts a 64-byte R‖S signature into DER.
    public static func derSignature(fromRaw raw: [UInt8]) throws -> [UInt8] {
        guard raw.count == 64 else { throw CryptoError("an ES256 signature has 64 bytes, not \(raw.count)") }
        guard let signature = ECDSA_SIG_new() else { throw CryptoError("out of memory") }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else { throw CryptoError("cannot build the signature") }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { throw CryptoError("cannot encode the signature") }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }

    /// Whether `signature` (R‖S) is a valid ES256 signature of `message` by the P-256 public
    /// key with affine coordinates `x` and `y` (32 bytes each, as in a JWK).
    public static func verify(signature: [UInt8], message: [UInt8], x: [UInt8], y: [UInt8]) throws -> Bool {
        guard x.count == 32, y.count == 32 else { throw CryptoError("P-256 coordinates have 32 bytes each") }
        // A SubjectPublicKeyInfo for id-ecPublicKey on prime256v1, then the uncompressed point.
        let prefix: [UInt8] = [
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
            0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ]
        let spki = prefix + x + y
        let parsed: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key = parsed else { throw CryptoError("not a point on P-256") }
        defer { EVP_PKEY_free(key) }
        let der = try derSignature(fromRaw: signature)
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("out of memory") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { throw CryptoError("cannot start verifying") }
        let result = der.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { EVP_DigestVerify(context, sig.baseAddress, sig.count, $0.baseAddress, $0.count) }
        }
        ERR_clear_error()
        return result == 1
    }
}

private func lastError() -> String {
    let code = ERR_get_error()
    guard code != 0 else { return "unknown libcrypto error" }
    var buffer = [UInt8](repeating: 0, count: 256)
    buffer.withUnsafeMutableBufferPointer { out in
        out.withMemoryRebound(to: CChar.self) { ERR_error_string_n(code, $0.baseAddress, $0.count) }
    }
    ERR_clear_error()
    return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
}

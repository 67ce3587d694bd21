import CCrypto

// Unsafe pointers here are C interop (OpenSSL's libcrypto takes and fills raw buffers): kept.

/// HMAC-SHA256 (RFC 2104) through libcrypto: webhook signatures (GitHub's
/// `X-Hub-Signature-256`, Standard Webhooks).
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { messageBytes in
                out.withUnsafeMutableBufferPointer { digest in
                    // A zero-length key or message still needs a valid pointer.
                    var empty: UInt8 = 0
                    withUnsafePointer(to: &empty) { fallback in
                        _ = HMAC(
                            EVP_sha256(), UnsafeRawPointer(keyBytes.baseAddress ?? fallback), Int32(keyBytes.count),
                            messageBytes.baseAddress ?? fallback, messageBytes.count, digest.baseAddress, &length)
                    }
                }
            }
        }
        return Array(out.prefix(Int(length)))
    }

    /// The code of a string's UTF-8 bytes under a string key.
    public static func authenticationCode(key: String, message: String) -> [UInt8] {
        authenticationCode(key: Array(key.utf8), message: Array(message.utf8))
    }
}

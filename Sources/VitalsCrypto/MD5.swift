import CCrypto

// Unsafe pointers here are C interop (OpenSSL's libcrypto takes and fills raw buffers): kept.

/// MD5 through libcrypto's EVP interface, for checking bodies against hashes other systems
/// stored (OnlineTracker keeps a body's MD5). Not for anything that needs collision resistance.
public enum MD5 {
    /// The 16-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { digest in
                _ = EVP_Digest(input.baseAddress, input.count, digest.baseAddress, &length, EVP_md5(), nil)
            }
        }
        return out
    }

    /// Lowercase hex MD5 of `bytes`.
    public static func hexDigest(_ bytes: [UInt8]) -> String { SHA256.hex(digest(bytes)) }
}

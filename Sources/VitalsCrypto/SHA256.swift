import CCrypto

// Unsafe pointers here are C interop (OpenSSL's libcrypto takes and fills raw buffers): kept.

/// SHA-256 through OpenSSL's libcrypto (the only importer of CCrypto).
public struct SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        out.withUnsafeMutableBufferPointer { digest in
            _ = CCrypto.SHA256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, digest.baseAddress)
        }
        return out
    }

    /// The 32-byte digest of a byte array.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// The digest of a string's UTF-8 bytes.
    public static func digest(_ text: String) -> [UInt8] {
        digest(Array(text.utf8))
    }

    /// Lowercase hexadecimal of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Lowercase hex SHA-256 of `bytes`.
    public static func hexDigest(_ bytes: [UInt8]) -> String { hex(digest(bytes)) }
}

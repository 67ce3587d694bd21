import CCrypto

// Unsafe pointers here are C interop (OpenSSL's libcrypto takes and fills raw buffers): kept.

/// A digest computed over bytes that arrive in pieces (a response body as curl hands it
/// over), through libcrypto's EVP interface: memory does not grow with the input.
public final class DigestStream {
    /// The digests a body can be checked against.
    public enum Kind: Sendable, Equatable {
        case sha256
        /// Only for comparing with hashes other systems stored (OnlineTracker keeps MD5s).
        case md5
    }

    private let context: OpaquePointer

    /// Starts a digest of `kind`.
    public init(_ kind: Kind) {
        guard let context = EVP_MD_CTX_new() else { fatalError("libcrypto could not allocate a digest context") }
        self.context = context
        EVP_DigestInit_ex(context, kind == .sha256 ? EVP_sha256() : EVP_md5(), nil)
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    /// Adds `bytes`.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest of everything added, in lowercase hexadecimal; the stream is done after it.
    public func finishHex() -> String {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        out.withUnsafeMutableBufferPointer { _ = EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        return SHA256.hex(Array(out.prefix(Int(length))))
    }
}

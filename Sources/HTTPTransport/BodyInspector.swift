import VitalsCrypto

// Unsafe pointers here are C interop (libcurl hands each piece of a body over as a raw buffer): kept.

/// Reads a response body as it arrives, keeping none of it: whether a text occurs in it, and
/// its digest. Memory is the length of the text sought, whatever the body's size.
final class BodyInspector {
    private let needle: [UInt8]
    /// The last `needle.count - 1` bytes seen, for a match that spans two pieces.
    private var carry: [UInt8] = []
    private(set) var found: Bool
    private let digest: DigestStream?

    init(content: [UInt8]?, digest kind: DigestStream.Kind?) {
        needle = content ?? []
        found = content == nil || needle.isEmpty
        digest = kind.map { DigestStream($0) }
        carry.reserveCapacity(max(0, needle.count - 1) * 2)
    }

    /// Reads the next piece of the body.
    func read(_ piece: UnsafeBufferPointer<UInt8>) {
        digest?.update(UnsafeRawBufferPointer(piece))
        guard !found, piece.count > 0 else { return }
        let keep = needle.count - 1
        if !carry.isEmpty {
            // A match starting in the carried tail and ending in this piece.
            let joined = carry + piece.prefix(keep)
            if joined.withUnsafeBufferPointer({ BodyInspector.contains($0, needle) }) {
                found = true
                return
            }
        }
        if BodyInspector.contains(piece, needle) {
            found = true
            return
        }
        if piece.count >= keep {
            carry = Array(piece.suffix(keep))
        } else {
            carry = Array((carry + piece).suffix(keep))
        }
    }

    /// The digest of the body read, in lowercase hexadecimal (nil when none was asked for).
    func finishDigest() -> String? { digest?.finishHex() }

    /// Whether `needle` occurs in `haystack`.
    static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard haystack.count >= needle.count else { return false }
        let first = needle[0]
        let last = haystack.count - needle.count
        var index = 0
        while index <= last {
            if haystack[index] == first {
                var match = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    match = false
                    break
                }
                if match { return true }
            }
            index += 1
        }
        return false
    }
}

/// An X.509 certificate read from PEM (or DER), for the two facts pairing needs: the SHA-256
/// fingerprint of the whole certificate and the SHA-256 of its public key (what curl's
/// `--pinnedpubkey sha256//...` and HPKP-style pins name).
///
/// Only the DER structure down to `subjectPublicKeyInfo` is walked; nothing is verified here.
public struct Certificate: Sendable, Equatable {
    /// The certificate's DER bytes.
    public let der: [UInt8]
    /// The DER bytes of its `subjectPublicKeyInfo`.
    public let subjectPublicKeyInfo: [UInt8]

    /// Reads the first certificate of PEM text (`-----BEGIN CERTIFICATE-----`); whitespace
    /// inside the Base64 (tabs from nginx's `$ssl_client_cert`, line breaks) is ignored.
    public init?(pem: String) {
        let text = Array(pem.utf8)
        guard let start = Certificate.find(Array("-----BEGIN CERTIFICATE-----".utf8), in: text, from: 0),
            let stop = Certificate.find(Array("-----END CERTIFICATE-----".utf8), in: text, from: start.upperBound)
        else { return nil }
        let body = text[start.upperBound..<stop.lowerBound].filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard let der = Base64.decode(String(decoding: body, as: UTF8.self)) else { return nil }
        self.init(der: der)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from offset: Int) -> Range<Int>? {
        guard haystack.count >= needle.count, offset <= haystack.count - needle.count else { return nil }
        for index in offset...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<index + needle.count]) == needle { return index..<index + needle.count }
        }
        return nil
    }

    /// Reads DER bytes.
    public init?(der: [UInt8]) {
        guard let spki = Certificate.findSubjectPublicKeyInfo(der) else { return nil }
        self.der = der
        subjectPublicKeyInfo = spki
    }

    /// The SHA-256 of the DER certificate, lowercase hex without separators (64 characters).
    public var sha256Fingerprint: String { SHA256.hexDigest(der) }

    /// curl's public key pin: `sha256//` and the Base64 SHA-256 of the `subjectPublicKeyInfo`.
    public var publicKeyPin: String { "sha256//" + Base64.encode(SHA256.digest(subjectPublicKeyInfo)) }

    /// A fingerprint as colon-separated uppercase pairs (`AB:CD:...`), as openssl prints it.
    public static func colonSeparated(_ hex: String) -> String {
        var pairs: [String] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            pairs.append(String(hex[index..<next]).uppercased())
            index = next
        }
        return pairs.joined(separator: ":")
    }

    /// A fingerprint written by a user (any case, colons or not) in the canonical form:
    /// 64 lowercase hex digits; nil when it is not one.
    public static func normalizedFingerprint(_ text: String) -> String? {
        let digits = text.lowercased().filter { $0 != ":" }
        guard digits.count == 64, digits.allSatisfy({ $0.isHexDigit }) else { return nil }
        return digits
    }

    // MARK: - DER

    /// One DER element: its tag, where its contents start and end, and where it ends.
    private struct Element {
        var tag: UInt8
        var contentStart: Int
        var end: Int
    }

    private static func element(_ bytes: [UInt8], at offset: Int, limit: Int) -> Element? {
        guard offset + 2 <= limit else { return nil }
        let tag = bytes[offset]
        var index = offset + 1
        let first = bytes[index]
        index += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count >= 1, count <= 4, index + count <= limit else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length >= 0, index + length <= limit else { return nil }
        return Element(tag: tag, contentStart: index, end: index + length)
    }

    /// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
    /// signature, issuer, validity, subject, subjectPublicKeyInfo, ... }, ... }
    private static func findSubjectPublicKeyInfo(_ der: [UInt8]) -> [UInt8]? {
        guard let certificate = element(der, at: 0, limit: der.count), certificate.tag == 0x30, certificate.end == der.count,
            let tbs = element(der, at: certificate.contentStart, limit: certificate.end), tbs.tag == 0x30
        else { return nil }
        var offset = tbs.contentStart
        guard var field = element(der, at: offset, limit: tbs.end) else { return nil }
        if field.tag == 0xA0 {
            offset = field.end
            guard let next = element(der, at: offset, limit: tbs.end) else { return nil }
            field = next
        }
        // serialNumber, signature, issuer, validity, subject: skip five.
        for _ in 0..<5 {
            offset = field.end
            guard let next = element(der, at: offset, limit: tbs.end) else { return nil }
            field = next
        }
        guard field.tag == 0x30 else { return nil }
        return Array(der[offset..<field.end])
    }
}

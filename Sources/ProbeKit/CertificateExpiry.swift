import HTTPTransport
import VitalsKit

/// A certificate chain's expiry judged against OnlineTracker's two thresholds: probe-http's
/// https and ssl kinds and probe-ping's tls targets judge it alike.
public struct CertificateExpiry: Sendable {
    /// OpenSSL's X509_V_ERR_CERT_HAS_EXPIRED.
    static let expiredVerifyCode = 10

    /// When the earliest certificate in the chain expires (seconds since 1970), if any was seen.
    let earliest: Int64?
    /// The time it is judged against (seconds since 1970).
    public let nowSeconds: Int64

    /// Judges the chain whose certificates expire at `expiries` (seconds) at `nowSeconds`.
    public init(expiries: [Int64], nowSeconds: Int64) {
        earliest = expiries.min()
        self.nowSeconds = nowSeconds
    }

    /// Whole days left, rounded down (negative once expired); nil when no certificate was seen.
    public var days: Int? { earliest.map { Int(CertificateExpiry.floorDivide($0 - nowSeconds, 86_400)) } }

    /// Whether the earliest certificate has expired.
    public var expired: Bool { earliest.map { $0 <= nowSeconds } ?? false }

    /// Whether a failed handshake was refused only because the certificate expired: a server
    /// answering wrongly (down), not a failure to probe it (error).
    public func refusedHandshake(_ result: HTTPResult) -> Bool {
        result.failure == .tls && (result.verifyResult == CertificateExpiry.expiredVerifyCode || (expired && result.curlCode == 60))
    }

    /// `down` when expired or under `warningDays` left, `degraded` under `okDays`, nil when fine
    /// or when no certificate was seen.
    public func status(okDays: Int, warningDays: Int) -> SampleStatus? {
        guard let days else { return nil }
        if expired || days < warningDays { return .down }
        if days < okDays { return .degraded }
        return nil
    }

    /// `Certificate expires in 12 days`, `Certificate expired at 2026-01-02T03:04:05Z`.
    public var message: String {
        guard let earliest, let days else { return "Certificate expiry unknown" }
        if earliest <= nowSeconds {
            return "Certificate expired at " + Timestamp.formatSeconds(milliseconds: earliest * 1000)
        }
        return "Certificate expires in \(days) day\(days == 1 ? "" : "s")"
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && (value < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

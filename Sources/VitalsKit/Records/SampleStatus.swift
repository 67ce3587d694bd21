/// The status vocabulary of a `sample`: OnlineTracker's four plus isitup's `error`.
public enum SampleStatus: String, Sendable, CaseIterable {
    /// Answered as expected, within the thresholds.
    case up
    /// Answered, but slowly or with a certificate close to expiry (isitup's `degrading`).
    case degraded
    /// Answered wrongly: unexpected status, missing content, wrong hash, expired certificate, far too slow.
    case down
    /// The probe could not complete: DNS, connection, TLS, timeout, protocol.
    case error
    /// Not known (no data yet).
    case unknown

    /// How bad the status is, for "worst of" rules: up < unknown < degraded < down < error.
    public var severity: Int {
        switch self {
        case .up: return 0
        case .unknown: return 1
        case .degraded: return 2
        case .down: return 3
        case .error: return 4
        }
    }

    /// Whether the status counts as failing (`down` or `error`).
    public var isFailure: Bool { self == .down || self == .error }
}

/// Why a sample is not `up`: a closed vocabulary, with words in the sample's `message`.
public enum SampleReason: String, Sendable, CaseIterable {
    /// The name did not resolve.
    case dns
    /// The connection was refused or could not be made.
    case connect
    /// The connection was reset by the server after it was made.
    case reset
    /// TLS failed: handshake, verification, pin, client certificate, version.
    case tls
    /// The probe ran out of time.
    case timeout
    /// The HTTP status was not an expected one.
    case httpStatus = "http_status"
    /// The expected content was not in the body.
    case content
    /// The body's SHA-256 was not the expected one.
    case bodyHash = "body_hash"
    /// The certificate is expired or inside the warning band.
    case certExpiry = "cert_expiry"
    /// The latency is above a threshold.
    case latency
    /// Too many redirects (or a redirect loop).
    case redirects
    /// The server sent more than the limits allow (headers, or a body a check needs).
    case tooLarge = "too_large"
    /// The server's answer was not valid HTTP, or the connection closed without one.
    case `protocol`
    /// The system did not allow the probe (ICMP sockets, file access).
    case permission
    /// More echo requests went unanswered than the allowed loss (probe-ping).
    case loss
}

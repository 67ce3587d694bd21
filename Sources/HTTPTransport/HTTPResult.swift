extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}

/// Why a request could not complete, classified from curl's result.
public enum TransportFailure: String, Sendable {
    case dns
    case connect
    case reset
    case tls
    case timeout
    case redirects
    case tooLarge = "too_large"
    case `protocol`
}

/// Times of one request, in milliseconds from its start, as curl measured them
/// (0 for a phase that did not happen).
public struct HTTPTimings: Sendable, Equatable {
    /// Name resolved.
    public var nameLookup: Double = 0
    /// TCP connected.
    public var connect: Double = 0
    /// TLS handshake done (0 without TLS).
    public var appConnect: Double = 0
    /// Request about to be sent.
    public var preTransfer: Double = 0
    /// First response byte received.
    public var startTransfer: Double = 0
    /// Everything done.
    public var total: Double = 0
    /// Spent in redirects before the final request.
    public var redirect: Double = 0

    /// Creates empty timings.
    public init() {}
}

/// What came back from one request.
public struct HTTPResult: Sendable {
    /// curl's result code (0 for success).
    public var curlCode: Int = 0
    /// curl's words for a failure.
    public var curlMessage: String = ""
    /// The classified failure, nil when an HTTP response (or, for connect-only, a connection) was had.
    public var failure: TransportFailure?
    /// The final HTTP status code (0 when none arrived).
    public var httpCode: Int = 0
    /// Phase times.
    public var timings = HTTPTimings()
    /// Body bytes received (counted even when dropped).
    public var bodyBytes: Int = 0
    /// The body, when the policy collects it.
    public var body: [UInt8] = []
    /// What an `inspect` body policy found (nil under the other policies).
    public var inspection: BodyInspection?
    /// Reading stopped at the body limit (the body may be longer).
    public var stoppedAtLimit = false
    /// Response header bytes received.
    public var headerBytes: Int = 0
    /// The server's address.
    public var remoteIP: String?
    /// The local address the connection was made from.
    public var localIP: String?
    /// `1.0`, `1.1`, `2` or `3`.
    public var httpVersion: String?
    /// `notAfter` of each certificate the server sent, seconds since the epoch.
    public var certificateExpiries: [Int64] = []
    /// The TLS verification result (0 = verified or not checked); OpenSSL's X509_V_* codes.
    public var verifyResult: Int = 0
    /// Redirects followed.
    public var redirectCount: Int = 0
    /// The system's errno for a failed connection (ECONNREFUSED, ...), 0 when none.
    public var osErrno: Int = 0
    /// Header lines of the final response (or SMTP reply lines) when the request kept them.
    public var responseHeaders: [String] = []

    /// The value of the first kept header named `name` (case-insensitive), trimmed.
    public func header(_ name: String) -> String? {
        let prefix = name.lowercased() + ":"
        for line in responseHeaders where line.lowercased().hasPrefix(prefix) {
            return String(line.dropFirst(prefix.count)).trimmingCharacters(in: " \t\r\n")
        }
        return nil
    }

    /// Creates an empty result.
    public init() {}
}

/// What reading a body under the `inspect` policy found.
public struct BodyInspection: Sendable, Equatable {
    /// Body bytes read (at most the limit).
    public var bytes: Int
    /// Whether the content sought occurs in them (true when none was sought).
    public var contentFound: Bool
    /// Their digest in lowercase hexadecimal (nil when none was asked for).
    public var digest: String?

    /// An inspection's findings.
    public init(bytes: Int, contentFound: Bool, digest: String?) {
        self.bytes = bytes
        self.contentFound = contentFound
        self.digest = digest
    }
}

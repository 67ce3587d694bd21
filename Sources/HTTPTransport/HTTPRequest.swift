/// Which address family a request may use.
public enum IPFamily: String, Sendable {
    case any
    case v4 = "4"
    case v6 = "6"
}

/// What to do with a response body.
public enum BodyPolicy: Sendable, Equatable {
    /// Ask for no body (HEAD) or read none (connect-only).
    case none
    /// Read and drop the body, stopping after `limit` bytes.
    case discard(limit: Int)
    /// Keep the body up to `limit` bytes, then stop reading.
    case collect(limit: Int)
}

/// The lowest TLS version a request accepts.
public enum TLSVersion: String, Sendable {
    case v1_2 = "1.2"
    case v1_3 = "1.3"
}

/// TLS settings of one request.
public struct TLSOptions: Sendable, Equatable {
    /// Verify the server's certificate chain and name (off only when asked: `insecure`).
    public var verify = true
    /// A CA bundle (PEM) to trust instead of the system's.
    public var caFile: String?
    /// A client certificate (PEM) for mutual TLS.
    public var clientCertificate: String?
    /// The client certificate's private key (PEM).
    public var clientKey: String?
    /// A public-key pin, `sha256//BASE64[;sha256//...]` or a PEM/DER file, checked even when `verify` is off.
    public var pinnedPublicKey: String?
    /// The lowest TLS version accepted.
    public var minimumVersion: TLSVersion?
    /// Collect each certificate's expiry (for `tls_expiry_days`).
    public var collectCertificates = true

    /// Default settings: verify, system CAs, collect certificate expiry.
    public init() {}
}

/// One HTTP request as the engine runs it: a fresh connection, bounded in time and size.
public struct HTTPRequest: Sendable {
    /// The URL (http or https).
    public var url: String
    /// The method (`HEAD`, `GET`, `POST`, ...).
    public var method: String
    /// Extra request headers, `Name: value`.
    public var headers: [String] = []
    /// A request body, if any.
    public var body: [UInt8]?
    /// The whole request's time budget in milliseconds, DNS to last byte.
    public var timeoutMs: Int
    /// Redirects to follow; 0 follows none.
    public var maxRedirects: Int = 5
    /// Address family.
    public var ipFamily: IPFamily = .any
    /// What to do with the body.
    public var bodyPolicy: BodyPolicy = .none
    /// Response header bytes accepted before the request is stopped as `too_large`.
    public var maxHeaderBytes: Int = 256 * 1024
    /// TLS settings.
    public var tls = TLSOptions()
    /// Only connect (and handshake), send no request: for certificate checks.
    public var connectOnly = false
    /// The User-Agent header.
    public var userAgent: String

    /// Creates a request.
    public init(url: String, method: String, timeoutMs: Int, userAgent: String) {
        self.url = url
        self.method = method
        self.timeoutMs = timeoutMs
        self.userAgent = userAgent
    }
}

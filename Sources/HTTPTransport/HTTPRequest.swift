import VitalsCrypto

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
    /// Read the body up to `limit` bytes, then stop, keeping none of it: whether `content`
    /// occurs in what was read, and the `digest` of it (see `HTTPResult.inspection`).
    case inspect(limit: Int, content: [UInt8]?, digest: DigestStream.Kind?)
}

/// The lowest TLS version a request accepts.
// swift-format-ignore: AlwaysUseLowerCamelCase
// The names spell the protocol versions (TLS 1.2, 1.3), which camel case would blur.
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
    /// The SHA-256 of the whole server certificate (64 hex digits, the leaf): a request whose
    /// server shows another certificate fails as `tls`. Checked once the answer is in (the key pin
    /// above is what curl checks in the handshake, before anything is sent); needs
    /// `collectCertificates` and a fresh connection (curl shows no certificate for a reused one,
    /// and the request then fails as well).
    public var pinnedCertificateSHA256: String?
    /// The lowest TLS version accepted.
    public var minimumVersion: TLSVersion?
    /// Collect each certificate's expiry (for `tls_expiry_days`).
    public var collectCertificates = true

    /// Default settings: verify, system CAs, collect certificate expiry.
    public init() {}
}

/// The HTTP version a request asks for.
// swift-format-ignore: AlwaysUseLowerCamelCase
// The names spell the protocol versions (HTTP/1.1, HTTP/2), which camel case would blur.
public enum HTTPVersionChoice: String, Sendable {
    /// HTTP/1.1 only.
    case http1_1 = "1.1"
    /// HTTP/2 over TLS (negotiated with ALPN), as APNs requires.
    case http2 = "2"
}

/// What an SMTP request sends: the envelope, and the guarantees it insists on.
public struct MailEnvelope: Sendable, Equatable {
    /// The envelope sender (MAIL FROM).
    public var from: String
    /// The envelope recipients (RCPT TO).
    public var recipients: [String]
    /// Insist on TLS: STARTTLS must succeed (libcurl's CURLUSESSL_ALL), or nothing is sent.
    /// Without it libcurl silently stays in clear text when the server offers no STARTTLS.
    public var requireTLS = true
    /// Insist on logging in: when the server does not offer AUTH (libcurl then skips it
    /// silently), the transfer is stopped before MAIL FROM.
    public var requireAuth = false

    /// Creates an envelope.
    public init(from: String, recipients: [String]) {
        self.from = from
        self.recipients = recipients
    }
}

/// One HTTP request as the engine runs it: a fresh connection (unless `reuseConnection`),
/// bounded in time and size.
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
    /// The protocols the URL may use (libcurl's names): `http,https` unless set; `smtp,smtps` for mail.
    public var protocols = "http,https"
    /// The HTTP version to ask for (nil: libcurl's default).
    public var httpVersion: HTTPVersionChoice?
    /// Keep the response's header lines in the result (the final response's, for HTTP; every
    /// server reply line, for SMTP).
    public var keepResponseHeaders = false
    /// A user name and password for the protocol's own login (HTTP Basic, SMTP AUTH).
    public var username: String?
    public var password: String?
    /// Send mail: with an `smtp://` or `smtps://` URL, `body` is uploaded as the message.
    public var mail: MailEnvelope?
    /// Keep the connection open afterwards and take an open one to the same server if the engine
    /// has one (a database client's requests; a probe measures a fresh connection each time).
    public var reuseConnection = false

    /// Creates a request.
    public init(url: String, method: String, timeoutMs: Int, userAgent: String) {
        self.url = url
        self.method = method
        self.timeoutMs = timeoutMs
        self.userAgent = userAgent
    }
}

import HTTPTransport
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a connection that failed before an answer means in a sample, for probe-http's
/// requests and probe-ping's tcp connections alike: its `reason` and its message.
public enum TransportRules {
    /// The reason a transport failure maps to.
    public static func reason(for failure: TransportFailure) -> SampleReason {
        switch failure {
        case .dns: return .dns
        case .connect: return .connect
        case .reset: return .reset
        case .tls: return .tls
        case .timeout: return .timeout
        case .redirects: return .redirects
        case .tooLarge: return .tooLarge
        case .protocol: return .protocol
        }
    }

    /// A transport failure in words: `Connection refused by HOST port N`, `Request timeout after 5s (connecting)`.
    /// - Parameters:
    ///   - host: the host asked for (lowercased, without brackets), `port` its port.
    ///   - tls: whether a TLS handshake was part of the request (names that phase of a timeout).
    ///   - timeoutMs: the time budget, `maxRedirects` the redirects allowed.
    public static func message(
        _ failure: TransportFailure, result: HTTPResult, host: String, port: Int, tls: Bool,
        timeoutMs: Int, maxRedirects: Int
    ) -> String {
        let timings = result.timings
        switch failure {
        case .dns:
            return "DNS lookup failed for \(host)"
        case .connect:
            let endpoint = "\(host) port \(port)"
            switch Int32(result.osErrno) {
            case ECONNREFUSED: return "Connection refused by \(endpoint)"
            case ENETUNREACH: return "Network unreachable for \(endpoint)"
            case EHOSTUNREACH: return "Host unreachable: \(endpoint)"
            case EADDRNOTAVAIL: return "No usable address for \(endpoint)"
            default: return "Connection failed: " + trimCurl(result.curlMessage)
            }
        case .reset:
            return "Connection reset by the server"
        case .tls:
            return "TLS failed: " + trimCurl(result.curlMessage)
        case .timeout:
            let phase: String
            if timings.nameLookup == 0 {
                phase = "resolving the name"
            } else if timings.connect == 0 {
                phase = "connecting"
            } else if tls && timings.appConnect == 0 {
                phase = "in the TLS handshake"
            } else if timings.startTransfer == 0 {
                phase = "waiting for the response"
            } else {
                phase = "reading the response"
            }
            return "Request timeout after \(DurationText.describe(milliseconds: Int64(timeoutMs))) (\(phase))"
        case .redirects:
            return "Too many redirects (more than \(maxRedirects))"
        case .tooLarge:
            // Our own limit on all the headers stops the transfer with a write error; curl's limit on one
            // line is its "out of memory" (or, from libcurl 8.6, "too large").
            if result.curlCode == 23 || result.headerBytes > 256 * 1024 {
                return "The server sent more than \(SizeWords.describe(256 * 1024)) of response headers"
            }
            return "The server sent a response header line longer than curl accepts (\(SizeWords.describe(100 * 1024)))"
        case .protocol:
            if result.curlCode == 52 { return "Empty reply from the server" }
            if result.curlCode == 8 || result.curlCode == 1 { return "Not an HTTP response: " + trimCurl(result.curlMessage) }
            return "Protocol error: " + trimCurl(result.curlMessage)
        }
    }

    private static func trimCurl(_ message: String) -> String {
        var text = message.trimmingSpaces
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

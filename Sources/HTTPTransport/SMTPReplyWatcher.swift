/// Watches an SMTP conversation's replies for mail's login guarantee: the EHLO reply that counts
/// (the one after STARTTLS when TLS is negotiated that way, else the first) must offer AUTH
/// when a login is required, or the transfer stops there, before MAIL FROM (libcurl skips AUTH
/// silently when the server does not offer it). The one part of the transport that is not HTTP.
struct SMTPReplyWatcher {
    let envelope: MailEnvelope
    /// Whether the connection begins in clear text and is upgraded with STARTTLS (`smtp:` with TLS required).
    let upgradesWithStartTLS: Bool
    /// 220 replies seen: the greeting, then STARTTLS's go-ahead.
    private var readyReplies = 0
    /// Whether the EHLO reply being read offers AUTH.
    private var offersAuth = false
    private var awaitingEHLO = false
    /// Whether the transfer was stopped because the server offered no AUTH.
    private(set) var authMissing = false

    init(envelope: MailEnvelope, url: String) {
        self.envelope = envelope
        self.upgradesWithStartTLS = envelope.requireTLS && url.lowercased().hasPrefix("smtp:")
    }

    /// Reads one reply line; false stops the transfer.
    mutating func observe(_ line: String) -> Bool {
        let bytes = Array(line.utf8)
        guard bytes.count >= 3 else { return true }
        let code = String(decoding: bytes[0..<3], as: UTF8.self)
        let last = bytes.count == 3 || bytes[3] == UInt8(ascii: " ")
        if code == "220" {
            if last {
                readyReplies += 1
                awaitingEHLO = true
                offersAuth = false
            }
            return true
        }
        guard code == "250", awaitingEHLO else { return true }
        if bytes.count > 4 {
            let words = String(decoding: bytes[4...], as: UTF8.self).uppercased()
            if words.hasPrefix("AUTH ") || words.hasPrefix("AUTH=") { offersAuth = true }
        }
        guard last else { return true }
        awaitingEHLO = false
        if envelope.requireAuth, readyReplies == (upgradesWithStartTLS ? 2 : 1), !offersAuth {
            authMissing = true
            return false
        }
        return true
    }
}

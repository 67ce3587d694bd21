import Foundation
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where an agent's remote store is: `https://HOST[:PORT][/PATH]?token_file=FILE[&cacert=FILE]`, the
/// server's `POST /api/samples` (nginx in front of `store-samples serve`; see vitals-serve(7)).
///
/// The agent's bearer token comes from the file `token_file=` names (its first line), else from
/// `$VITALS_AGENT_TOKEN`; it is never printed: messages show `display`, the URL with secrets masked.
struct RemoteLocation: Sendable, Equatable {
    /// The URL the batches are posted to: `https://HOST:PORT[/PATH]/api/samples`.
    let endpoint: String
    /// The bearer token (`Authorization: Bearer TOKEN`).
    let token: String
    /// A CA bundle (PEM) to trust instead of the system's (`cacert=`).
    let caFile: String?
    /// The URL as given, with its secrets masked (`Redaction.url`), for messages.
    let display: String
    /// The spool's sub-folder for this server: `HOST_PORT`, then `_PATH` when the URL has a path,
    /// each byte outside `A-Z a-z 0-9 . -` written as `_`.
    let spoolName: String

    /// Whether a `--db` value names a remote store (`https://`, or `http://`, which is refused).
    static func isRemote(_ text: String) -> Bool {
        let scheme = URLText(text).scheme
        return scheme == "https" || scheme == "http"
    }

    /// Reads a `--db` value `isRemote` accepted; `environment` gives `VITALS_AGENT_TOKEN`.
    init(_ text: String, environment: [String: String]) throws {
        let url = URLText(text)
        let display = Redaction.url(text)
        self.display = display
        guard url.scheme == "https" else {
            throw UsageError("--db \(display): a remote store is reached over HTTPS only (its agent's token must not travel in clear)")
        }
        guard url.userInfo == nil else {
            throw UsageError(
                "--db \(display): no user or password in a remote store's URL: the agent's token comes from token_file=FILE or $VITALS_AGENT_TOKEN"
            )
        }
        guard url.fragment == nil else { throw UsageError("--db \(display): a remote store's URL has no #fragment") }
        let portWritten = url.hostPort.hasSuffix("]") ? false : url.hostPort.contains(":")
        guard !url.host.isEmpty, url.host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), !portWritten || url.port != nil,
            (1...65_535).contains(url.port ?? 443)
        else {
            throw UsageError("--db \(display): expected https://HOST[:PORT][/PATH]?token_file=FILE[&cacert=FILE]")
        }
        var path = url.path
        while path.hasSuffix("/") { path.removeLast() }
        if path.hasSuffix("/api/samples") { path.removeLast("/api/samples".count) }
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw UsageError("--db \(display): the path may hold no spaces or control characters")
        }
        var tokenFile: String?
        var caFile: String?
        for part in (url.query ?? "").split(separator: "&") where !part.isEmpty {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = pieces.count > 1 ? URLText.percentDecoded(String(pieces[1])) : ""
            switch pieces[0] {
            case "token_file" where !value.isEmpty: tokenFile = value
            case "cacert" where !value.isEmpty: caFile = value
            default:
                throw UsageError("--db \(display): '\(pieces[0])' is not an option of a remote store (token_file=FILE, cacert=FILE)")
            }
        }
        let host = url.host.contains(":") ? "[\(url.host)]" : url.host
        let port = url.port ?? 443
        endpoint = "https://\(host):\(port)\(path)/api/samples"
        // A CA file that cannot be read would fail every request as a certificate not trusted.
        if let caFile, access(caFile, R_OK) != 0 {
            throw ToolError("--db \(display): cannot read the CA file \(caFile) (cacert=): \(String(cString: strerror(errno)))")
        }
        self.caFile = caFile
        spoolName = RemoteLocation.folderName(url.host + "_\(port)" + (path.isEmpty ? "" : "_" + path.dropFirst()))
        if let tokenFile {
            token = try RemoteLocation.readToken(file: tokenFile, display: display)
        } else if let fromEnvironment = environment["VITALS_AGENT_TOKEN"], !fromEnvironment.isEmpty {
            guard let valid = RemoteLocation.validToken(fromEnvironment) else {
                throw UsageError("$VITALS_AGENT_TOKEN does not hold a token (visible ASCII, as store-samples agents token prints)")
            }
            token = valid
        } else {
            throw UsageError(
                "--db \(display): a remote store wants the agent's token: ?token_file=FILE (a file holding what "
                    + "store-samples agents token ID printed on the server) or $VITALS_AGENT_TOKEN")
        }
    }

    /// `text` with every byte outside `A-Z a-z 0-9 . -` written as `_`: a name for one folder.
    static func folderName(_ text: String) -> String {
        String(
            decoding: text.utf8.map { byte in
                URLText.isUnreserved(byte) && byte != UInt8(ascii: "~") ? byte : UInt8(ascii: "_")
            }, as: UTF8.self)
    }

    /// The token a file holds: its first line, trimmed. The file must be a regular file of this
    /// user's (or root's) that other users can neither read nor write, and that its group cannot
    /// write (as ssh asks of a key): a token others can read is theirs to send samples with, and
    /// one another user owns is theirs to change.
    static func readToken(file: String, display: String) throws -> String {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ToolError("--db \(display): cannot read the token file \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ToolError("--db \(display): the token file \(file) is not a regular file")
        }
        switch OwnerCheck.refusal(of: info, forbidding: 0o026) {
        case nil: break
        case .foreignOwner(let owner):
            throw ToolError(
                "--db \(display): the token file \(file) belongs to user \(owner), not to this user: refused "
                    + "(its owner can change it; make this user a token of its own)")
        case .openMode(let mode):
            throw ToolError(
                "--db \(display): the token file \(file) is open to other users (mode \(OwnerCheck.octal(mode))): "
                    + "run chmod 600 \(file), and make a new token if others may have read it")
        }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0,
            let line = String(decoding: bytes[0..<count], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first,
            let token = validToken(String(line))
        else {
            throw ToolError(
                "--db \(display): the token file \(file) does not hold a token (one line of visible ASCII, as store-samples agents token prints)"
            )
        }
        return token
    }

    /// `text` trimmed of spaces, tabs and a carriage return, when what is left is a token: 1 to 1,024
    /// visible ASCII characters (no space or control character, which would break the header).
    static func validToken(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: CharacterSet(charactersIn: " \t\r"))
        guard (1...1024).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return trimmed
    }
}

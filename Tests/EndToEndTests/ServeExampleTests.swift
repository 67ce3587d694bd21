import FixtureServer
import Foundation
import Testing
import VitalsKit

/// vitals-serve(7)'s EXAMPLES, run as the page shows them. They are not `$ ` examples (they
/// start a server, read it with curl, and make a token on one machine and use it on another), so
/// `ExampleTests` does not run them; here each command is taken from the page and run in bash in
/// a scratch folder, with what only a real deployment has put in its place: the server on a port
/// free now rather than 8443 (`localhost:8443` and `server:8443` name it), started through
/// `ServeHandle` (the example's `&`), and a self-signed certificate for localhost as cert.pem.
@Suite("vitals-serve(7)'s examples run", .serialized, .hangGuard(minutes: 3))
struct ServeExampleTests {
    /// The commands of each example block (`.EX` to `.EE`) of the page's EXAMPLES, in plain text:
    /// comments dropped, a line ending in `|` joined to the next.
    static func blocks() throws -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in manSection(try readPage("man/man7/vitals-serve.7"), "EXAMPLES") {
            switch line {
            case ".EX": current = []
            case ".EE":
                blocks.append(current ?? [])
                current = nil
            default:
                guard var commands = current else { continue }
                var text = plainRoff(line).replacingOccurrences(of: "\\(aq", with: "'")
                if let comment = text.range(of: " #") ?? (text.hasPrefix("#") ? text.startIndex..<text.startIndex : nil) {
                    text = String(text[..<comment.lowerBound])
                }
                text = text.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty else { continue }
                if let last = commands.last, last.hasSuffix("|") {
                    commands[commands.count - 1] = last + " " + text
                } else {
                    commands.append(text)
                }
                current = commands
            }
        }
        return blocks
    }

    @Test("the page's commands are the ones run here: scripts/serve and curl, then a token, its file and an agent's pipe")
    func commandsAreKnown() throws {
        let blocks = try ServeExampleTests.blocks()
        #expect(blocks.map(\.count) == [2, 3], "\(blocks)")
        #expect(blocks.first?.first?.hasPrefix("scripts/serve ") == true && blocks.first?.first?.hasSuffix(" &") == true)
        #expect(blocks.first?.last?.hasPrefix("curl ") == true)
        #expect(blocks.last?.first?.hasPrefix("store-samples ") == true && blocks.last?.last?.contains(" | store-samples ") == true)
    }

    @Test("the server starts as shown, curl reads the overview, and an agent's samples arrive with its token")
    func examples() throws {
        guard try requireGate(servingInstalled, "nginx is needed (apt-get install nginx)") else { return }
        let blocks = try ServeExampleTests.blocks()
        try #require(blocks.map(\.count) == [2, 3], "\(blocks)")
        let scratch = try ScratchDirectory()
        let certificates = try TestCertificates()
        let (cert, key) = try certificates.selfSigned(named: "localhost", daysLeft: 30)
        try FileManager.default.copyItem(atPath: cert, toPath: scratch.path("cert.pem"))
        try FileManager.default.copyItem(atPath: key, toPath: scratch.path("key.pem"))
        let fixtures = try FixtureServer()
        try scratch.write("targets.ndjson", #"{"id":"api","name":"api","url":"\#(fixtures.baseURL)/ok"}"# + "\n")
        // The server: the first command's arguments, its files in the scratch folder.
        var words = blocks[0][0].split(separator: " ").map(String.init)
        try #require(words.first == "scripts/serve" && words.last == "&")
        words = words.dropFirst().dropLast().map { ["cert.pem", "key.pem", "vitals.db"].contains($0) ? scratch.path($0) : $0 }
        let server = try ServeHandle(site: "onlinetracker", words, scratch: scratch)
        defer { server.stop() }
        // The agent's spool stays in the scratch folder too.
        let environment = ["XDG_STATE_HOME": scratch.path("state"), "HOME": scratch.path("home")]
        func example(_ command: String, stdin: String = "") throws -> RunResult {
            let local =
                command
                .replacingOccurrences(of: "localhost:8443", with: "localhost:\(server.port)")
                .replacingOccurrences(of: "server:8443", with: "localhost:\(server.port)")
            return try runProcess(
                "/bin/bash", ["-c", "set -o pipefail\n" + local], stdin: stdin, environment: toolEnvironment(environment),
                directory: scratch.url)
        }
        let overview = try example(blocks[0][1])
        #expect(overview.status == 0, "\(blocks[0][1]): \(overview.stderr)")
        #expect(try JSONParser.parse(overview.stdout).objectValue?.int("total_monitors") == 0, "\(overview.stdout)")
        // The token, printed once on the server; pasted into agent.token; then the agent's pipe.
        let token = try example(blocks[1][0])
        #expect(token.status == 0 && !token.stdout.isEmpty, "\(blocks[1][0]): \(token.stderr)")
        // Run as root, the server reads as the serving user, and the token file root just made
        // (mode 0600) is root's: handed over, as a root deployment must (chown) too.
        try giveToServingUser([scratch.url.path])
        #expect(try example(blocks[1][1], stdin: token.stdout).status == 0)
        var info = stat()
        #expect(stat(scratch.path("agent.token"), &info) == 0 && info.st_mode & 0o777 == 0o600, "the token file is private")
        let agent = try example(blocks[1][2])
        #expect(agent.status == 0, "\(blocks[1][2]): \(agent.stderr)")
        #expect(try sqlite(scratch.path("vitals.db"), "SELECT count(*) FROM samples WHERE agent = 'tokyo'") == "1")
        let after = try example(blocks[0][1])
        #expect(try JSONParser.parse(after.stdout).objectValue?.int("total_monitors") == 1, "\(after.stdout)")
    }
}

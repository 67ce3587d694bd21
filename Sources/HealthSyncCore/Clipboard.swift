import VitalsKit

/// The clipboard's text, where the machine has one (the seed's CLI reads the QR text from it):
/// `pbpaste` on macOS; on Linux `wl-paste` under Wayland, `xclip` or `xsel` under X11.
enum Clipboard {
    /// The readers to try, in order, for this environment.
    static func readers(environment: [String: String]) -> [[String]] {
        #if os(macOS)
            return [["pbpaste"]]
        #else
            var readers: [[String]] = []
            if environment["WAYLAND_DISPLAY"].map({ !$0.isEmpty }) == true { readers.append(["wl-paste", "--no-newline"]) }
            if environment["DISPLAY"].map({ !$0.isEmpty }) == true {
                readers.append(["xclip", "-out", "-selection", "clipboard"])
                readers.append(["xsel", "--clipboard", "--output"])
            }
            return readers
        #endif
    }

    /// The clipboard's text; an error that says why there is none.
    static func text(environment: [String: String]) throws -> String {
        let readers = readers(environment: environment)
        guard !readers.isEmpty else {
            throw ToolError("no clipboard here (no DISPLAY or WAYLAND_DISPLAY): give the pairing text as an argument or on standard input")
        }
        var tried: [String] = []
        for reader in readers {
            guard let result = try? ChildProcess.run(reader, timeoutMs: 5_000) else {
                tried.append("\(reader[0]) (not installed)")
                continue
            }
            if result.succeeded, !result.output.isEmpty { return String(decoding: result.output.prefix(65_536), as: UTF8.self) }
            tried.append("\(reader[0]) (\(result.succeeded ? "empty" : "failed"))")
        }
        throw ToolError("the clipboard holds no pairing text: tried " + tried.joined(separator: ", "))
    }
}

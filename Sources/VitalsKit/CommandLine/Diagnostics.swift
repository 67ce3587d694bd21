/// Where a tool reports problems: `tool: file:line: message` on stderr, counted.
///
/// Libraries never write to stderr themselves; they report through a `Diagnostics`
/// the command owns, and the command decides the exit status from the count.
public final class Diagnostics {
    /// The tool name that starts every line.
    public let tool: String
    private let fd: Int32
    /// How many errors were reported (warnings are not counted).
    public private(set) var errorCount = 0
    /// How many warnings were reported.
    public private(set) var warningCount = 0
    /// With `capture`, the errors about input lines, in order: what a caller that answers for the
    /// input (the API that receives samples) tells its client. (Not kept otherwise: a stream runs for
    /// as long as it likes.)
    public private(set) var lineErrors: [(line: Int, message: String)] = []
    /// When set, lines are collected here instead of written (for in-process tests).
    public private(set) var captured: [String] = []
    private let capture: Bool
    /// A progress line on the same stream: each diagnostic is written above it.
    public var progress: ProgressLine?

    /// Creates a sink writing to `fd` (stderr by default).
    public init(tool: String, fd: Int32 = 2, capture: Bool = false) {
        self.tool = tool
        self.fd = fd
        self.capture = capture
    }

    /// Reports an error about input at `source` line `line`.
    public func error(_ message: String, source: String, line: Int) {
        errorCount += 1
        if capture { lineErrors.append((line, message)) }
        emit("\(source):\(line): \(message)")
    }

    /// Reports an error that is not tied to an input line.
    public func error(_ message: String) {
        errorCount += 1
        emit(message)
    }

    /// Reports a warning about input at `source` line `line`; it does not change the exit status.
    public func warning(_ message: String, source: String, line: Int) {
        warningCount += 1
        emit("\(source):\(line): warning: \(message)")
    }

    /// Reports a warning not tied to an input line.
    public func warning(_ message: String) {
        warningCount += 1
        emit("warning: \(message)")
    }

    /// Writes an informational line (a summary) without counting it.
    public func note(_ message: String) {
        emit(message)
    }

    private func emit(_ text: String) {
        let line = "\(tool): \(text)\n"
        if capture {
            captured.append(line)
        } else if let progress {
            progress.writeAbove(line)
        } else {
            Streams.writeAll(fd, line)
        }
    }
}

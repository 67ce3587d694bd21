/// The inputs named on a command line: each operand a file, `-` (or none at all) standard input.
public struct Inputs {
    /// The operands as given (`["-"]` when none).
    public let paths: [String]
    private let stdin: Int32

    /// Creates the input list for `operands`.
    public init(_ operands: [String], stdin: Int32) {
        self.paths = operands.isEmpty ? ["-"] : operands
        self.stdin = stdin
    }

    /// Calls `body` with a reader for each input in turn. A file that cannot be opened is
    /// reported to `diagnostics` and skipped; the others are still read.
    public func forEach(diagnostics: Diagnostics, _ body: (LineReader) throws -> Void) rethrows {
        for path in paths {
            if Signals.stopRequested { return }
            let reader: LineReader
            do {
                reader = try LineReader.open(path, stdin: stdin)
            } catch {
                diagnostics.error(error.message)
                continue
            }
            try body(reader)
            if let problem = reader.readError {
                diagnostics.error("error reading \(reader.source): \(problem)")
            }
        }
    }
}

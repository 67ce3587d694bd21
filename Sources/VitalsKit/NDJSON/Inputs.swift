#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// The inputs' total size when every one is a regular file (standard input redirected from one
    /// included), else nil: how much reading there is, for a progress line.
    public var totalBytes: Int64? { Inputs.totalBytes(paths, stdin: stdin) }

    /// The total size of `paths` (`-` is `stdin`) when every one is a regular file, else nil.
    public static func totalBytes(_ paths: [String], stdin: Int32) -> Int64? {
        var total: Int64 = 0
        for path in paths {
            var info = stat()
            guard (path == "-" ? fstat(stdin, &info) : stat(path, &info)) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
            total += Int64(info.st_size)
        }
        return total
    }

    /// Calls `body` with a reader for each input in turn. A file that cannot be opened is
    /// reported to `diagnostics` and skipped; the others are still read.
    public func forEach(diagnostics: Diagnostics, _ body: (LineReader) throws -> Void) rethrows {
        try forEach(report: { diagnostics.error($0) }, body)
    }

    /// Like `forEach(diagnostics:_:)`, handing each problem's message (a file that cannot be
    /// opened, a read error after a file's last line) to `report`, in input order: for a
    /// reader on another thread than the one that writes diagnostics.
    public func forEach(report: (String) throws -> Void, _ body: (LineReader) throws -> Void) rethrows {
        for path in paths {
            if Signals.stopRequested { return }
            let reader: LineReader
            do {
                reader = try LineReader.open(path, stdin: stdin)
            } catch {
                try report(error.message)
                continue
            }
            try body(reader)
            if let problem = reader.readError {
                try report("error reading \(reader.source): \(problem)")
            }
        }
    }
}

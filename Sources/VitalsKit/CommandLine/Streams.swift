#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (write(2)): kept.

/// The three standard streams a tool runs with, as file descriptors.
///
/// Executables pass the process's own; tests pass pipes, so a tool can run in-process.
public struct Streams: Sendable {
    /// Where records are read from when no file is named.
    public var input: Int32
    /// Where records are written.
    public var output: Int32
    /// Where diagnostics are written.
    public var error: Int32

    /// Creates streams over the given descriptors.
    public init(input: Int32, output: Int32, error: Int32) {
        self.input = input
        self.output = output
        self.error = error
    }

    /// The process's standard input, output and error.
    public static let standard = Streams(input: 0, output: 1, error: 2)

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR. Returns false on failure
    /// (EPIPE included), with `errno` set.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var base = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(fd, base, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            remaining -= written
            base += written
        }
        return true
    }

    /// Writes a string to `fd` in one call where the system allows.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }
}

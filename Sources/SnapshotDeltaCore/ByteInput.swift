#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VitalsKit

/// One input read in large chunks with `read(2)`: a file, or standard input. The first
/// chunk can be looked at before it is consumed (to tell XML from NDJSON).
public final class ByteInput {
    /// The name diagnostics use (`export.xml`, `<stdin>`).
    public let source: String
    /// The descriptor.
    public let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var pending = 0
    /// Set when reading stopped because SIGINT or SIGTERM arrived.
    public private(set) var interrupted = false
    /// Set when `read(2)` failed.
    public private(set) var readError: String?

    /// Reads from `fd`; `ownsDescriptor` closes it at the end.
    public init(fd: Int32, source: String, ownsDescriptor: Bool, chunkSize: Int = 1 << 20) {
        self.fd = fd
        self.source = source
        self.ownsDescriptor = ownsDescriptor
        self.capacity = chunkSize
        self.buffer = .allocate(capacity: chunkSize)
    }

    deinit {
        buffer.deallocate()
        if ownsDescriptor { close(fd) }
    }

    /// Opens `path` (`-` is `stdin`).
    public static func open(_ path: String, stdin: Int32) throws(ToolError) -> ByteInput {
        if path == "-" { return ByteInput(fd: stdin, source: "<stdin>", ownsDescriptor: false) }
        let fd = openReadOnly(path)
        if fd < 0 { throw ToolError("cannot open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw ToolError("cannot read \(path): it is a directory")
        }
        return ByteInput(fd: fd, source: path, ownsDescriptor: true)
    }

    /// The first non-blank byte of the input (after a UTF-8 byte order mark), without consuming
    /// anything; nil for an empty input.
    public func firstSignificantByte() -> UInt8? {
        while true {
            var index = 0
            if pending >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { index = 3 }
            while index < pending, buffer[index] == 0x20 || buffer[index] == 0x0A || buffer[index] == 0x0D || buffer[index] == 0x09 {
                index += 1
            }
            if index < pending { return buffer[index] }
            if pending == capacity || !fill() { return nil }
        }
    }

    /// Reads more into the pending part of the buffer; false at the end, on error or on interrupt.
    private func fill() -> Bool {
        while true {
            let count = read(fd, buffer + pending, capacity - pending)
            if count > 0 {
                pending += count
                return true
            }
            if count == 0 { return false }
            if errno == EINTR {
                if Signals.stopRequested {
                    interrupted = true
                    return false
                }
                continue
            }
            readError = String(cString: strerror(errno))
            return false
        }
    }

    /// The next chunk (valid until the next call), or nil at the end of input, on a read
    /// error (`readError`) or on SIGINT/SIGTERM (`interrupted`).
    public func next() -> UnsafeBufferPointer<UInt8>? {
        if pending > 0 {
            let chunk = UnsafeBufferPointer(start: buffer, count: pending)
            pending = 0
            return chunk
        }
        if Signals.stopRequested {
            interrupted = true
            return nil
        }
        guard fill() else { return nil }
        let chunk = UnsafeBufferPointer(start: buffer, count: pending)
        pending = 0
        return chunk
    }
}

private func openReadOnly(_ path: String) -> Int32 { open(path, O_RDONLY | O_CLOEXEC) }

import Foundation
import Testing

/// A tool run with its standard error (and, if asked, its standard output) on a pseudo-terminal,
/// as a person at a terminal runs it: what the terminal received is read from the master side.
///
/// The terminal is raw (no `\n` to `\r\n` translation) and 200 columns wide, so what the tool wrote
/// arrives byte for byte and no progress line is cut to the width.
final class TerminalRun: @unchecked Sendable {  // the bytes received are behind a lock
    private let master: Int32
    private let pid: pid_t
    private let stdoutRead: Int32
    private let collected = CollectedOutput()
    private let group = DispatchGroup()
    private let terminalLock = NSLock()
    private var terminalBytes = Data()
    private let terminalClosed = DispatchSemaphore(value: 0)

    /// Starts `tool` (a built tool's name, or a program's path) with `arguments`; standard input is the file `stdinFile`
    /// (or empty), standard output a pipe unless `stdoutOnTerminal`.
    init(
        _ tool: String, _ arguments: [String], stdinFile: String? = nil, stdoutOnTerminal: Bool = false,
        environment: [String: String] = [:], directory: URL? = nil
    ) throws {
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 128)
        guard master >= 0, let grant = PTY.grant, let unlock = PTY.unlock, let pathOf = PTY.name,
            grant(master) == 0, unlock(master) == 0, pathOf(master, &name, name.count) == 0
        else {
            throw TestFailure("no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let slave = open(
            String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw TestFailure("cannot open the terminal's slave side: \(String(cString: strerror(errno)))") }
        defer { close(slave) }
        var attributes = termios()
        tcgetattr(slave, &attributes)
        cfmakeraw(&attributes)
        tcsetattr(slave, TCSANOW, &attributes)
        var size = winsize(ws_row: 40, ws_col: 200, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)

        let input = open(stdinFile ?? "/dev/null", O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw TestFailure("cannot open \(stdinFile ?? "/dev/null")") }
        defer { close(input) }
        var output: [Int32] = [-1, -1]
        guard let pipe2 = GlibcExtras.pipe2, pipe2(&output, O_CLOEXEC) == 0 else { throw TestFailure("pipe2: \(errno)") }
        stdoutRead = output[0]
        do {
            pid = try spawnClean(
                [tool.hasPrefix("/") ? tool : Binaries.path(tool)] + arguments, environment: toolEnvironment(environment),
                descriptors: (input, stdoutOnTerminal ? slave : output[1], slave), directory: directory?.path)
        } catch {
            close(output[0])
            close(output[1])
            throw error
        }
        close(output[1])
        group.enter()
        DispatchQueue.global().async { [stdoutRead, collected, group] in
            collected.set(readToEnd(stdoutRead), error: false)
            close(stdoutRead)
            group.leave()
        }
        // Once the child has exited and this side's copy of the slave is closed, the master reads EIO.
        DispatchQueue.global().async { [self] in
            _ = readToEnd(master) { [self] bytes in
                terminalLock.lock()
                terminalBytes.append(contentsOf: bytes)
                terminalLock.unlock()
            }
            terminalClosed.signal()
        }
    }

    /// What the terminal has received so far.
    var terminal: String {
        terminalLock.lock()
        defer { terminalLock.unlock() }
        return String(decoding: terminalBytes, as: UTF8.self)
    }

    /// Waits until the terminal has received something that satisfies `condition` (a hang guard of
    /// `limit` seconds only: the wait ends on what arrives).
    func wait(limit: TimeInterval = 60, until condition: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(limit)
        while Date() < deadline {
            if condition(terminal) { return true }
            var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 50)
        }
        return condition(terminal)
    }

    /// Sends `signal` (if any), waits for the exit and the end of both outputs.
    func finish(signal: Int32? = nil) -> (status: Int32, stdout: String, terminal: String) {
        if let signal { kill(pid, signal) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        group.wait()
        terminalClosed.wait()
        close(master)
        let code = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : status & 0x7F
        return (code, String(decoding: collected.get().0, as: UTF8.self), terminal)
    }
}

/// The progress frames a terminal received: each `\r TEXT ESC[K` with text, in order.
func progressFrames(_ terminal: String) -> [String] {
    var frames: [String] = []
    for piece in terminal.components(separatedBy: "\r").dropFirst() {
        guard let end = piece.range(of: "\u{1B}[K") else { continue }
        let text = String(piece[..<end.lowerBound])
        if !text.isEmpty { frames.append(text) }
    }
    return frames
}

/// The pseudo-terminal calls of glibc that Swift's Glibc module leaves out (they need _XOPEN_SOURCE).
private enum PTY {
    typealias Call = @convention(c) (Int32) -> Int32
    typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32
    static let grant: Call? = GlibcExtras.symbol("grantpt")
    static let unlock: Call? = GlibcExtras.symbol("unlockpt")
    static let name: Name? = GlibcExtras.symbol("ptsname_r")
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One line of progress on standard error, redrawn in place (`\r`, then erase to the end of the line).
///
/// A tool makes one with `ToolContext.progressLine(_:)`, which gives nil unless progress is wanted
/// (`--progress`, or standard error a terminal without `--no-progress`), so a run without it costs one
/// optional check per update. Updates are cheap: `update` reads the monotonic clock and draws at most
/// every `interval`; callers call it per chunk read or per record written, never per byte. The first
/// update draws at once and `finish` draws the last state before erasing the line, so what a run ends
/// with is always shown once. Diagnostics and records written to the same terminal erase the line
/// first and draw it again after (see `Diagnostics.progress` and `RecordWriter.progress`), so the
/// line never mixes into them; nothing of it ever reaches standard output.
public final class ProgressLine {
    /// Where the line is drawn (standard error).
    public let fd: Int32
    /// The least time between two draws.
    public var intervalNs: UInt64 = 200_000_000
    /// When the line was made (the start of the work it follows).
    public let startNs: UInt64
    /// The text last drawn (without the control characters), empty before the first draw.
    public private(set) var text = ""
    /// Whether the line currently holds text.
    public private(set) var isShown = false
    private var lastDrawNs: UInt64 = 0
    private var drawn = false
    /// Set by `finish`: the line stays erased.
    private var finished = false

    /// A line on `fd`.
    public init(fd: Int32) {
        self.fd = fd
        self.startNs = Clock.monotonicNanoseconds()
    }

    /// Whether a run wants progress: `--progress` forces it, `--no-progress` refuses it, and
    /// otherwise it shows when `auto` holds and `fd` is a terminal.
    public static func wanted(_ options: ParsedOptions, fd: Int32, auto: Bool = true) -> Bool {
        if options.has("no-progress") { return false }
        if options.has("progress") { return true }
        return auto && isatty(fd) == 1
    }

    /// Seconds since the line was made.
    public var elapsedSeconds: Double { Double(Clock.monotonicNanoseconds() - startNs) / 1e9 }

    /// Draws `make()` when `interval` has passed since the last draw (and on the first call).
    @inline(__always)
    public func update(_ make: () -> String) {
        let now = Clock.monotonicNanoseconds()
        if drawn && now &- lastDrawNs < intervalNs { return }
        lastDrawNs = now
        draw(make())
    }

    /// Draws `text` now, whatever the interval.
    public func draw(_ text: String) {
        guard !finished else { return }
        drawn = true
        self.text = ProgressLine.fit(text, columns: ProgressLine.columns(fd))
        isShown = true
        Streams.writeAll(fd, "\r" + self.text + "\u{1B}[K")
    }

    /// Erases the line (the text is kept for `redraw`).
    public func hide() {
        guard isShown else { return }
        isShown = false
        Streams.writeAll(fd, "\r\u{1B}[K")
    }

    /// Draws the last text again after `hide`.
    public func redraw() {
        guard drawn, !isShown, !finished else { return }
        isShown = true
        Streams.writeAll(fd, "\r" + text + "\u{1B}[K")
    }

    /// Writes `line` (a diagnostic, newline-terminated) where the progress line is, and the progress
    /// line after it, in one write.
    public func writeAbove(_ line: String) {
        guard isShown else {
            Streams.writeAll(fd, line)
            return
        }
        Streams.writeAll(fd, "\r\u{1B}[K" + line + "\r" + text + "\u{1B}[K")
    }

    /// The end of the work: draws `last` (its final state) and erases the line, leaving the terminal as it was.
    public func finish(_ last: String?) {
        if let last { draw(last) }
        hide()
        finished = true
    }

    /// The terminal's width in columns, or 80 when `fd` is not a terminal.
    static func columns(_ fd: Int32) -> Int {
        var size = winsize()
        #if canImport(Glibc)
            let request = UInt(TIOCGWINSZ)
        #else
            let request = TIOCGWINSZ
        #endif
        guard ioctl(fd, request, &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `text` cut to fit one line of `columns` (one column kept free, so the cursor never wraps).
    static func fit(_ text: String, columns: Int) -> String {
        let room = max(1, columns - 1)
        guard text.count > room else { return text }
        return String(text.prefix(max(0, room - 1))) + "…"
    }
}

/// Words for progress lines: sizes, counts, rates and times as people read them.
public enum ProgressText {
    /// `812 B`, `41.5 KB`, `412 MB`, `1.02 GB` (powers of 1000, three significant digits).
    public static func bytes(_ count: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 999.5, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        if unit == 0 { return "\(count) B" }
        let digits = value < 9.995 ? 2 : (value < 99.95 ? 1 : 0)
        return fixed(value, digits: digits) + " " + units[unit]
    }

    /// `1,023,456`.
    public static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// `45 s`, `3 min 05 s`, `2 h 10 min`: a time still to go.
    public static func duration(seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min " + (whole % 60 < 10 ? "0" : "") + "\(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    /// How far reading is: `412 MB/1.02 GB 40%, 1,023,456 records, 25.6 MB/s, 24 s left`
    /// (without a total: `412 MB, 1,023,456 records, 25.6 MB/s`).
    public static func reading(bytes: Int64, of total: Int64?, items: Int, noun: String, seconds: Double) -> String {
        var parts: [String] = []
        if let total, total > 0 {
            let percent = min(100, Int(Double(bytes) * 100 / Double(total)))
            parts.append("\(ProgressText.bytes(bytes))/\(ProgressText.bytes(total)) \(percent)%")
        } else {
            parts.append(ProgressText.bytes(bytes))
        }
        parts.append("\(count(items)) \(noun)")
        if seconds >= 0.05, bytes > 0 {
            let rate = Double(bytes) / seconds
            parts.append(ProgressText.bytes(Int64(rate)) + "/s")
            if let total, total > bytes { parts.append(duration(seconds: Double(total - bytes) / rate) + " left") }
        }
        return parts.joined(separator: ", ")
    }

    private static func fixed(_ value: Double, digits: Int) -> String {
        let scale = [1.0, 10.0, 100.0][digits]
        let scaled = Int64((value * scale).rounded())
        if digits == 0 { return String(scaled) }
        let whole = scaled / Int64(scale)
        var fraction = String(scaled % Int64(scale))
        while fraction.count < digits { fraction = "0" + fraction }
        return "\(whole).\(fraction)"
    }
}

extension ToolContext {
    /// A progress line on standard error for this run, or nil when none is wanted (see
    /// `ProgressLine.wanted`; `auto` false shows it only with `--progress`). Diagnostics go above
    /// it, and records written to the same terminal erase it first.
    public func progressLine(_ options: ParsedOptions, auto: Bool = true) -> ProgressLine? {
        guard ProgressLine.wanted(options, fd: streams.error, auto: auto) else { return nil }
        let line = ProgressLine(fd: streams.error)
        diagnostics.progress = line
        if isatty(streams.output) == 1 { output.progress = line }
        return line
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The two clocks tools use: wall time for records, monotonic time for measuring.
public enum Clock {
    /// Milliseconds since the Unix epoch, UTC (for `at` fields).
    public static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// Nanoseconds on a clock that never jumps (for durations and timers).
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Milliseconds on the monotonic clock.
    public static func monotonicMilliseconds() -> Int64 {
        Int64(monotonicNanoseconds() / 1_000_000)
    }
}

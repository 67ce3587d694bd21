/// The exit statuses of every vitals tool: a closed set, written in every man page.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    /// Everything asked for was done (a broken pipe downstream counts as done).
    case success = 0
    /// A verdict the user asked to fail on (`--exit-status`): something down, an anomaly, a delta.
    case verdict = 1
    /// An error: bad input lines, an unreadable file, a failed write, a failed delivery.
    case failure = 2
    /// The command line was wrong; nothing was done.
    case usage = 64
    /// Nothing was lost, but not everything is done yet: kept to be finished by a later run
    /// (sysexits' EX_TEMPFAIL, as a mail queue says of mail it holds). store-samples says so of
    /// samples safely spooled for a server it could not reach.
    case deferred = 75
    /// Stopped by SIGINT.
    case interrupted = 130
    /// Stopped by SIGTERM.
    case terminated = 143

    /// The more serious of two statuses, for tools that accumulate outcomes.
    public func worst(_ other: ExitStatus) -> ExitStatus {
        func rank(_ status: ExitStatus) -> Int {
            switch status {
            case .success: return 0
            case .verdict: return 1
            case .deferred: return 2
            case .failure: return 3
            case .usage: return 4
            case .terminated: return 5
            case .interrupted: return 6
            }
        }
        return rank(other) > rank(self) ? other : self
    }
}

import HTTPTransport
import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How a read is tried again (the seed: "Network Errors → Retry with Backoff"): after a 429 (as
/// long as its Retry-After asks, else the backoff), a 5xx answer, or a connection that failed,
/// was reset or timed out, at most `retries` times a request, waiting 1 s, then twice as long each
/// time, at most 30 s. A server that shows another key (TLS), a name that does not resolve, and
/// every other answer are not tried again: waiting cannot change them.
struct RetryPolicy {
    /// `--retries`: tries after the first, per request.
    var retries: Int
    /// The first wait, doubled each time.
    static let firstWaitMs: Int64 = 1000
    /// The longest wait of the backoff.
    static let maxWaitMs: Int64 = 30_000
    /// The longest Retry-After honoured; one asking longer is a refusal.
    static let maxRetryAfterMs: Int64 = 300_000
    /// The statuses tried again.
    static let transientStatuses: Set<Int> = [429, 500, 502, 503, 504]
    /// The transport failures tried again.
    static let transientFailures: Set<TransportFailure> = [.connect, .reset, .timeout]

    /// The wait before retry number `attempt` (1 for the first) when the server named none.
    static func backoffMs(_ attempt: Int) -> Int64 {
        min(maxWaitMs, firstWaitMs << Int64(min(attempt - 1, 20)))
    }
}

/// What the retries of a run came to, for the note at the end.
struct RetryTally {
    var retries = 0
    var waitedMs: Int64 = 0
    /// Whether the rate limit was met (said once, when first met).
    var rateLimited = false
}

extension Client {
    /// Sends a read through `connection` and returns its answer, trying again as `policy` says;
    /// `what` names the request in notes ("page 3"). Throws what the last try threw, or returns
    /// its answer, when the tries run out or a stop is asked for.
    func patiently(
        _ connection: SyncConnection, _ method: String, _ path: String, body: JSONObject? = nil, what: String,
        policy: RetryPolicy, tally: inout RetryTally
    ) throws -> SyncConnection.Answer {
        var attempt = 0
        while true {
            let waitMs: Int64
            do {
                let answer = try connection.request(method, path, body: body)
                guard RetryPolicy.transientStatuses.contains(answer.status), attempt < policy.retries else { return answer }
                attempt += 1
                if answer.status == 429 {
                    waitMs = answer.retryAfterMs ?? RetryPolicy.backoffMs(attempt)
                    guard waitMs <= RetryPolicy.maxRetryAfterMs else { return answer }
                    if !tally.rateLimited {
                        tally.rateLimited = true
                        context.diagnostics.note(
                            "\(connection.server) is at its rate limit (429) at \(what): waiting as it asks"
                                + " (\(DurationText.describe(milliseconds: waitMs))) before each request it refuses")
                    }
                } else {
                    waitMs = RetryPolicy.backoffMs(attempt)
                    context.diagnostics.note(
                        "\(connection.server) answered HTTP \(answer.status) at \(what); trying again in "
                            + "\(DurationText.describe(milliseconds: waitMs)) (\(attempt) of \(policy.retries))")
                }
            } catch let error as ToolError {
                guard let failure = connection.lastFailure, RetryPolicy.transientFailures.contains(failure), attempt < policy.retries
                else { throw error }
                attempt += 1
                waitMs = RetryPolicy.backoffMs(attempt)
                context.diagnostics.note(
                    "\(error.message) at \(what); trying again in \(DurationText.describe(milliseconds: waitMs)) (\(attempt) of \(policy.retries))"
                )
            }
            tally.retries += 1
            tally.waitedMs += waitMs
            guard Client.sleep(milliseconds: waitMs) else { throw ToolError("stopped while waiting to try \(what) again") }
        }
    }

    /// Waits `milliseconds`, woken early by SIGINT or SIGTERM; false when a stop was asked for.
    static func sleep(milliseconds: Int64) -> Bool {
        let end = Clock.monotonicMilliseconds() + milliseconds
        while !Signals.stopRequested {
            let left = end - Clock.monotonicMilliseconds()
            if left <= 0 { return true }
            var descriptor = pollfd(fd: Signals.wakeFD, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, Int32(clamping: min(left, 1000)))
        }
        return false
    }
}

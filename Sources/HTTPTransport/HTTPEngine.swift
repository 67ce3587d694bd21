import CCurl

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (libcurl's multi interface speaks in raw pointers): kept.

/// A finished request: the caller's token and what came back.
public struct HTTPCompletion: Sendable {
    /// The token given to `submit`.
    public var token: Int
    /// The result.
    public var result: HTTPResult
}

/// A descriptor of the caller's that `HTTPEngine.step` waits on beside curl's.
public struct WaitDescriptor: Sendable {
    /// The descriptor.
    public var fd: Int32
    /// Wait for it to be readable.
    public var readable: Bool
    /// Wait for it to be writable.
    public var writable: Bool
    /// Set by `step`: readable, writable or in error when it returned.
    public var ready = false

    /// Creates a descriptor to wait on.
    public init(fd: Int32, readable: Bool = true, writable: Bool = false) {
        self.fd = fd
        self.readable = readable
        self.writable = writable
    }
}

/// Runs many HTTP requests at once on one thread with libcurl's multi interface.
///
/// The engine and its curl handles belong to the thread that created it; it is driven by
/// calling `step`, which waits for network activity (or its wake descriptor) and returns the
/// requests that finished. A request gets a fresh connection, a fresh DNS lookup and a full TLS
/// handshake, so its timings are what a new client sees, unless it asks to reuse a connection
/// (a database client's); the engine keeps up to 16 open for those. Easy handles are pooled.
public final class HTTPEngine {
    /// Requests in flight at most; the rest wait in order.
    public let maxInFlight: Int
    private let multi: UnsafeMutableRawPointer
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Requests not started yet, from `waitingHead` on; a started one's slot is emptied at once
    /// (a request body can be megabytes, and the slots before the head are dropped only now and then).
    private var waiting: [(HTTPRequest, Int)?] = []
    private var waitingHead = 0

    /// A descriptor whose becoming readable ends a wait in `step` (the tools' stop-signal pipe), or -1.
    public let wakeFD: Int32

    /// Creates an engine allowing `maxInFlight` requests at once; a wait ends as soon as `wakeFD`
    /// is readable (pass the tool's stop-signal pipe, `Signals.wakeFD`, so SIGINT is seen at once).
    public init(maxInFlight: Int, wakeFD: Int32) {
        HTTPEngine.globalInit
        self.wakeFD = wakeFD
        self.maxInFlight = max(1, maxInFlight)
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 16)
    }

    deinit {
        for (handle, transfer) in active {
            curl_multi_remove_handle(multi, handle)
            transfer.release()
            curl_easy_cleanup(handle)
        }
        for handle in idleHandles { curl_easy_cleanup(handle) }
        curl_multi_cleanup(multi)
    }

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    /// The libcurl version line, e.g. `libcurl/7.88.1 OpenSSL/3.0.19 ...`.
    public static var curlVersion: String {
        globalInit
        guard let text = curl_version() else { return "unknown" }
        return String(cString: text)
    }

    /// Requests submitted and not yet completed (waiting or in flight).
    public var pendingCount: Int { active.count + waiting.count - waitingHead }

    /// Requests in flight now.
    public var inFlightCount: Int { active.count }

    /// Queues a request; it starts when a slot is free. `token` comes back with its completion.
    public func submit(_ request: HTTPRequest, token: Int) {
        waiting.append((request, token))
    }

    /// Takes the body bytes a request in flight (`BodyPolicy.collect`) has received so far, with
    /// the HTTP status they came under, so a caller can read a long answer as it comes with
    /// bounded memory: the limit applies to the bytes held, and the completion's body holds only
    /// what came after the last drain. No bytes (status 0) for a request not in flight.
    public func drainBody(token: Int) -> (httpCode: Int, bytes: [UInt8]) {
        guard let (handle, transfer) = active.first(where: { $0.value.token == token }), !transfer.body.isEmpty else { return (0, []) }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var taken: [UInt8] = []
        swap(&taken, &transfer.body)
        return (status, taken)
    }

    /// Starts what fits, waits up to `timeoutMs` for activity (or the signal wake pipe), and
    /// returns the requests that finished (possibly none).
    public func step(timeoutMs: Int) -> [HTTPCompletion] {
        var none: [WaitDescriptor] = []
        return step(timeoutMs: timeoutMs, alsoWaitingOn: &none)
    }

    /// Like `step(timeoutMs:)`, also waiting on the caller's own descriptors (a tool that
    /// drives other sockets beside curl's on the same thread): their `ready` flags tell which
    /// became readable or writable.
    public func step(timeoutMs: Int, alsoWaitingOn extra: inout [WaitDescriptor]) -> [HTTPCompletion] {
        startWaiting()
        var completions = performAndCollect()
        // curl_multi_poll waits on the wake pipe even with no transfers, so an idle
        // watcher sleeps until its next probe is due instead of spinning.
        var waits: [curl_waitfd] = []
        waits.reserveCapacity(extra.count + 1)
        if wakeFD >= 0 {
            waits.append(curl_waitfd(fd: wakeFD, events: Int16(CURL_WAIT_POLLIN), revents: 0))
        }
        for descriptor in extra {
            let events = (descriptor.readable ? Int16(CURL_WAIT_POLLIN) : 0) | (descriptor.writable ? Int16(CURL_WAIT_POLLOUT) : 0)
            waits.append(curl_waitfd(fd: descriptor.fd, events: events, revents: 0))
        }
        let offset = waits.count - extra.count
        if !completions.isEmpty || timeoutMs <= 0 {
            // No wait: look at the caller's descriptors without blocking, so `ready` is still true to the moment.
            if !extra.isEmpty {
                var fds = extra.map {
                    pollfd(fd: $0.fd, events: ($0.readable ? Int16(POLLIN) : 0) | ($0.writable ? Int16(POLLOUT) : 0), revents: 0)
                }
                _ = poll(&fds, nfds_t(fds.count), 0)
                for index in extra.indices { extra[index].ready = fds[index].revents != 0 }
            }
            return completions
        }
        var ready: Int32 = 0
        _ = curl_multi_poll(multi, &waits, UInt32(waits.count), Int32(clamping: timeoutMs), &ready)
        for index in extra.indices { extra[index].ready = waits[offset + index].revents != 0 }
        completions = performAndCollect()
        startWaiting()
        return completions
    }

    /// Abandons every waiting and in-flight request (for a clean stop); they complete no more.
    public func cancelAll() {
        waiting.removeAll()
        waitingHead = 0
        for (handle, transfer) in active {
            curl_multi_remove_handle(multi, handle)
            transfer.release()
            curl_easy_reset(handle)
            idleHandles.append(handle)
        }
        active.removeAll()
    }

    // MARK: - Internals

    private func startWaiting() {
        while active.count < maxInFlight, waitingHead < waiting.count {
            let (request, token) = waiting[waitingHead]!
            waiting[waitingHead] = nil
            waitingHead += 1
            start(request, token: token)
        }
        if waitingHead > 1024, waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func start(_ request: HTTPRequest, token: Int) {
        let handle: UnsafeMutableRawPointer
        if let reused = idleHandles.popLast() {
            handle = reused
        } else {
            guard let created = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
            handle = created
        }
        let transfer = Transfer(request: request, token: token)
        if let problem = transfer.configure(handle) {
            var result = HTTPResult()
            result.curlCode = Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue)
            result.curlMessage = problem
            result.failure = .protocol
            transfer.release()
            curl_easy_reset(handle)
            idleHandles.append(handle)
            earlyCompletions.append(HTTPCompletion(token: token, result: result))
            return
        }
        active[handle] = transfer
        curl_multi_add_handle(multi, handle)
    }

    private var earlyCompletions: [HTTPCompletion] = []

    private func performAndCollect() -> [HTTPCompletion] {
        var running: Int32 = 0
        _ = curl_multi_perform(multi, &running)
        var completions = earlyCompletions
        earlyCompletions.removeAll()
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard ccurl_msg_is_done(message) != 0, let handle = ccurl_msg_handle(message) else { continue }
            let code = ccurl_msg_result(message)
            guard let transfer = active.removeValue(forKey: handle) else { continue }
            curl_multi_remove_handle(multi, handle)
            let result = transfer.finish(handle, code: code)
            completions.append(HTTPCompletion(token: transfer.token, result: result))
            transfer.release()
            curl_easy_reset(handle)
            idleHandles.append(handle)
        }
        return completions
    }
}

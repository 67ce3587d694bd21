import CCurl
import VitalsCrypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (libcurl's callbacks hand over raw buffers and a context pointer): kept.

private let bodyCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveBody(data, size * count)
}

private let headerCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.receiveHeader(data, size * count)
}

private let readCallback: ccurl_data_callback = { data, size, count, context in
    guard let context, let data else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.supplyUpload(data, size * count)
}

/// Rewinds the body, as curl asks when it sends it again (a reused connection found closed).
private let seekCallback: ccurl_seek_callback = { context, offset, origin in
    guard let context else { return CURL_SEEKFUNC_FAIL }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.seekUpload(offset, origin) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL
}

/// One request's state while curl runs it: its handle's options, the body and headers as they
/// arrive, and the result read back from curl. Owned by the engine's thread.
final class Transfer {
    let request: HTTPRequest
    let token: Int
    var body: [UInt8] = []
    var bodyBytes = 0
    /// Under the `inspect` policy: the reader of the body, and the bytes it read.
    var inspector: BodyInspector?
    var inspectedBytes = 0
    var headerBytes = 0
    var stoppedAtLimit = false
    var headerLimitHit = false
    var headerList: UnsafeMutablePointer<curl_slist>?
    var recipientList: UnsafeMutablePointer<curl_slist>?
    var responseHeaders: [String] = []
    var uploadOffset = 0
    /// SMTP: the replies watched for mail's login guarantee (nil for HTTP).
    var smtp: SMTPReplyWatcher?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var retained: Unmanaged<Transfer>?

    init(request: HTTPRequest, token: Int) {
        self.request = request
        self.token = token
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        errorBuffer.deallocate()
    }

    /// Drops curl-owned resources and the engine's reference.
    func release() {
        if let headerList {
            curl_slist_free_all(headerList)
            self.headerList = nil
        }
        if let recipientList {
            curl_slist_free_all(recipientList)
            self.recipientList = nil
        }
        retained?.release()
        retained = nil
    }

    func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int {
        switch request.bodyPolicy {
        case .none:
            bodyBytes += length
            return length
        case .discard(let limit):
            if bodyBytes >= limit {
                stoppedAtLimit = true
                return 0
            }
            bodyBytes += length
            return length
        case .collect(let limit):
            let room = limit - body.count
            if room <= 0 {
                stoppedAtLimit = true
                return 0
            }
            if let data {
                let take = min(room, length)
                data.withMemoryRebound(to: UInt8.self, capacity: take) {
                    body.append(contentsOf: UnsafeBufferPointer(start: $0, count: take))
                }
            }
            bodyBytes += length
            if length > room {
                stoppedAtLimit = true
                return 0
            }
            return length
        case .inspect(let limit, let content, let digest):
            let room = limit - inspectedBytes
            if room <= 0 {
                stoppedAtLimit = true
                return 0
            }
            if inspector == nil { inspector = BodyInspector(content: content, digest: digest) }
            if let data {
                let take = min(room, length)
                data.withMemoryRebound(to: UInt8.self, capacity: take) {
                    inspector?.read(UnsafeBufferPointer(start: $0, count: take))
                }
                inspectedBytes += take
            }
            bodyBytes += length
            if length > room {
                stoppedAtLimit = true
                return 0
            }
            return length
        }
    }

    func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int {
        headerBytes += length
        if headerBytes > request.maxHeaderBytes {
            headerLimitHit = true
            return 0
        }
        guard request.keepResponseHeaders || request.mail != nil, let data else { return length }
        var line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        while line.hasSuffix("\n") || line.hasSuffix("\r") { line.removeLast() }
        if let mail = request.mail {
            responseHeaders.append(line)
            if smtp == nil { smtp = SMTPReplyWatcher(envelope: mail, url: request.url) }
            return smtp!.observe(line) ? length : 0
        }
        if line.hasPrefix("HTTP/") { responseHeaders.removeAll() }
        if !line.isEmpty { responseHeaders.append(line) }
        return length
    }

    func supplyUpload(_ data: UnsafeMutablePointer<CChar>, _ room: Int) -> Int {
        guard let body = request.body, uploadOffset < body.count else { return 0 }
        let take = min(room, body.count - uploadOffset)
        body.withUnsafeBufferPointer { source in
            data.withMemoryRebound(to: UInt8.self, capacity: take) { target in
                target.update(from: source.baseAddress! + uploadOffset, count: take)
            }
        }
        uploadOffset += take
        return take
    }

    func seekUpload(_ offset: curl_off_t, _ origin: Int32) -> Bool {
        guard origin == SEEK_SET, offset >= 0, offset <= request.body?.count ?? 0 else { return false }
        uploadOffset = Int(offset)
        return true
    }

    /// Sets every option on `handle`; returns a message when an option is refused.
    func configure(_ handle: UnsafeMutableRawPointer) -> String? {
        let context = Unmanaged.passRetained(self)
        retained = context
        var failed: String?
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK, failed == nil {
                failed = "\(what): \(String(cString: curl_easy_strerror(code)))"
            }
        }
        check(ccurl_setopt_string(handle, CURLOPT_URL, request.url), "URL")
        check(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        check(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "ERRORBUFFER")
        check(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, request.protocols), "protocols")
        check(ccurl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"), "redirect protocols")
        check(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, max(1, request.timeoutMs)), "timeout")
        check(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, max(1, request.timeoutMs)), "connect timeout")
        if !request.reuseConnection {
            check(ccurl_setopt_long(handle, CURLOPT_FRESH_CONNECT, 1), "fresh connect")
            check(ccurl_setopt_long(handle, CURLOPT_FORBID_REUSE, 1), "forbid reuse")
            check(ccurl_setopt_long(handle, CURLOPT_DNS_CACHE_TIMEOUT, 0), "DNS cache")
            check(ccurl_setopt_long(handle, CURLOPT_SSL_SESSIONID_CACHE, 0), "TLS session cache")
        }
        check(ccurl_setopt_string(handle, CURLOPT_USERAGENT, request.userAgent), "user agent")
        switch request.ipFamily {
        case .any: break
        case .v4: check(ccurl_setopt_long(handle, CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4)), "IPv4")
        case .v6: check(ccurl_setopt_long(handle, CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6)), "IPv6")
        }
        if request.maxRedirects > 0 {
            check(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1), "follow redirects")
            check(ccurl_setopt_long(handle, CURLOPT_MAXREDIRS, request.maxRedirects), "max redirects")
        }
        check(ccurl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, bodyCallback), "body callback")
        check(ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context.toOpaque()), "body context")
        check(ccurl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, headerCallback), "header callback")
        check(ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context.toOpaque()), "header context")

        if let user = request.username { check(ccurl_setopt_string(handle, CURLOPT_USERNAME, user), "user name") }
        if let password = request.password { check(ccurl_setopt_string(handle, CURLOPT_PASSWORD, password), "password") }
        switch request.httpVersion {
        case .http2?: check(ccurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)), "HTTP/2")
        case .http1_1?: check(ccurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)), "HTTP/1.1")
        case nil: break
        }
        if let mail = request.mail {
            check(ccurl_setopt_string(handle, CURLOPT_MAIL_FROM, "<\(mail.from)>"), "mail from")
            var list: UnsafeMutablePointer<curl_slist>?
            for recipient in mail.recipients { list = curl_slist_append(list, "<\(recipient)>") }
            recipientList = list
            check(ccurl_setopt_slist(handle, CURLOPT_MAIL_RCPT, list), "mail recipients")
            check(ccurl_setopt_long(handle, CURLOPT_UPLOAD, 1), "upload")
            check(ccurl_setopt_callback(handle, CURLOPT_READFUNCTION, readCallback), "read callback")
            check(ccurl_setopt_pointer(handle, CURLOPT_READDATA, context.toOpaque()), "read context")
            check(ccurl_setopt_off_t(handle, CURLOPT_INFILESIZE_LARGE, curl_off_t(request.body?.count ?? 0)), "upload size")
            if mail.requireTLS { check(ccurl_setopt_long(handle, CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue)), "require TLS") }
        } else if request.connectOnly {
            check(ccurl_setopt_long(handle, CURLOPT_CONNECT_ONLY, 1), "connect only")
        } else {
            switch request.method {
            case "HEAD": check(ccurl_setopt_long(handle, CURLOPT_NOBODY, 1), "HEAD")
            case "GET": check(ccurl_setopt_long(handle, CURLOPT_HTTPGET, 1), "GET")
            default:
                check(ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method), "method")
            }
            if let body = request.body {
                // curl reads the body from the request as it sends it (the read callback), so no
                // copy is made: COPYPOSTFIELDS copied every body whole, a third 16 MiB buffer
                // beside a ClickHouse ingest's two, and an agent's batch beside the spool's.
                // Its size goes first, so curl sends a Content-Length, never chunks.
                check(ccurl_setopt_long(handle, CURLOPT_POST, 1), "POST")
                check(ccurl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "request body size")
                check(ccurl_setopt_callback(handle, CURLOPT_READFUNCTION, readCallback), "read callback")
                check(ccurl_setopt_pointer(handle, CURLOPT_READDATA, context.toOpaque()), "read context")
                check(ccurl_setopt_seek_callback(handle, seekCallback), "seek callback")
                check(ccurl_setopt_pointer(handle, CURLOPT_SEEKDATA, context.toOpaque()), "seek context")
                if request.method != "POST" {
                    check(ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method), "method")
                }
            }
        }
        if !request.headers.isEmpty {
            var list: UnsafeMutablePointer<curl_slist>?
            for header in request.headers {
                list = curl_slist_append(list, header)
            }
            headerList = list
            check(ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list), "headers")
        }
        let tls = request.tls
        if !tls.verify {
            check(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0), "verify peer")
            check(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0), "verify host")
        }
        if let caFile = tls.caFile { check(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile), "CA file") }
        if let cert = tls.clientCertificate { check(ccurl_setopt_string(handle, CURLOPT_SSLCERT, cert), "client certificate") }
        if let key = tls.clientKey { check(ccurl_setopt_string(handle, CURLOPT_SSLKEY, key), "client key") }
        if let pin = tls.pinnedPublicKey { check(ccurl_setopt_string(handle, CURLOPT_PINNEDPUBLICKEY, pin), "pinned public key") }
        switch tls.minimumVersion {
        case .v1_3?: check(ccurl_setopt_long(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_3)), "TLS 1.3")
        case .v1_2?: check(ccurl_setopt_long(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)), "TLS 1.2")
        case nil: break
        }
        if tls.collectCertificates, request.url.lowercased().hasPrefix("https:") {
            check(ccurl_setopt_long(handle, CURLOPT_CERTINFO, 1), "certificate info")
        }
        return failed
    }

    /// Reads everything curl knows about the finished transfer.
    func finish(_ handle: UnsafeMutableRawPointer, code: CURLcode) -> HTTPResult {
        var result = HTTPResult()
        result.curlCode = Int(code.rawValue)
        var status = 0
        var number = 0
        if ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &number) == CURLE_OK { status = number }
        result.httpCode = status
        func time(_ info: CURLINFO) -> Double {
            var micros: curl_off_t = 0
            _ = ccurl_getinfo_off_t(handle, info, &micros)
            return Double(micros) / 1000
        }
        result.timings.nameLookup = time(CURLINFO_NAMELOOKUP_TIME_T)
        result.timings.connect = time(CURLINFO_CONNECT_TIME_T)
        result.timings.appConnect = time(CURLINFO_APPCONNECT_TIME_T)
        result.timings.preTransfer = time(CURLINFO_PRETRANSFER_TIME_T)
        result.timings.startTransfer = time(CURLINFO_STARTTRANSFER_TIME_T)
        result.timings.total = time(CURLINFO_TOTAL_TIME_T)
        result.timings.redirect = time(CURLINFO_REDIRECT_TIME_T)
        var text: UnsafeMutablePointer<CChar>?
        if ccurl_getinfo_string(handle, CURLINFO_PRIMARY_IP, &text) == CURLE_OK, let text, text.pointee != 0 {
            result.remoteIP = String(cString: text)
        }
        text = nil
        if ccurl_getinfo_string(handle, CURLINFO_LOCAL_IP, &text) == CURLE_OK, let text, text.pointee != 0 {
            result.localIP = String(cString: text)
        }
        if ccurl_getinfo_long(handle, CURLINFO_HTTP_VERSION, &number) == CURLE_OK {
            switch number {
            case CURL_HTTP_VERSION_1_0: result.httpVersion = "1.0"
            case CURL_HTTP_VERSION_1_1: result.httpVersion = "1.1"
            case CURL_HTTP_VERSION_2_0: result.httpVersion = "2"
            case 30: result.httpVersion = "3"
            default: break
            }
        }
        if ccurl_getinfo_long(handle, CURLINFO_SSL_VERIFYRESULT, &number) == CURLE_OK { result.verifyResult = number }
        if ccurl_getinfo_long(handle, CURLINFO_REDIRECT_COUNT, &number) == CURLE_OK { result.redirectCount = number }
        if ccurl_getinfo_long(handle, CURLINFO_OS_ERRNO, &number) == CURLE_OK { result.osErrno = number }
        var certificates: UnsafeMutablePointer<curl_certinfo>?
        var leafPEM: String?
        if request.tls.collectCertificates, ccurl_getinfo_certinfo(handle, &certificates) == CURLE_OK, let certificates {
            let count = Int(certificates.pointee.num_of_certs)
            if count > 0, let lists = certificates.pointee.certinfo {
                for index in 0..<count {
                    var node = lists[index]
                    while let entry = node {
                        if let data = entry.pointee.data, strncmp(data, "Expire date:", 12) == 0 {
                            let seconds = curl_getdate(data + 12, nil)
                            if seconds > 0 { result.certificateExpiries.append(Int64(seconds)) }
                        } else if index == 0, request.tls.pinnedCertificateSHA256 != nil, let data = entry.pointee.data,
                            strncmp(data, "Cert:", 5) == 0
                        {
                            leafPEM = String(cString: data + 5)
                        }
                        node = entry.pointee.next
                    }
                }
            }
        }
        result.body = body
        result.bodyBytes = bodyBytes
        if case .inspect(_, let content, let digest) = request.bodyPolicy {
            let inspector = inspector ?? BodyInspector(content: content, digest: digest)
            result.inspection = BodyInspection(bytes: inspectedBytes, contentFound: inspector.found, digest: inspector.finishDigest())
        }
        result.headerBytes = headerBytes
        result.stoppedAtLimit = stoppedAtLimit
        result.responseHeaders = responseHeaders
        let message = String(cString: errorBuffer)
        result.curlMessage = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        result.failure = classify(code, message: result.curlMessage, connected: result.timings.connect > 0)
        if let pinned = request.tls.pinnedCertificateSHA256, result.failure == nil,
            request.url.lowercased().hasPrefix("https:")
        {
            let shown = leafPEM.flatMap { Certificate(pem: $0) }?.sha256Fingerprint
            if shown != pinned.lowercased() {
                result.failure = .tls
                result.curlMessage =
                    shown.map { "the server's certificate has the SHA-256 \($0), not the pinned \(pinned.lowercased())" }
                    ?? "the server's certificate could not be read to check its pinned SHA-256"
            }
        }
        if smtp?.authMissing == true {
            result.curlMessage = "the server did not offer AUTH, so nothing was sent (a login was asked for)"
            result.failure = .protocol
        }
        return result
    }

    private func classify(_ code: CURLcode, message: String, connected: Bool) -> TransportFailure? {
        switch code {
        case CURLE_OK:
            return nil
        case CURLE_WRITE_ERROR:
            if headerLimitHit { return .tooLarge }
            return stoppedAtLimit ? nil : .protocol
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dns
        case CURLE_COULDNT_CONNECT:
            return .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_TOO_MANY_REDIRECTS:
            return .redirects
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge
        case CURLE_OUT_OF_MEMORY where connected:
            // curl refuses a response header line over its own limit (100 KiB) as "out of memory"
            // (libcurl before 8.6; later ones say CURLE_TOO_LARGE): what the server sent, not our memory.
            return .tooLarge
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CLIENTCERT:
            return .tls
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            let lower = message.lowercased()
            if lower.contains("ssl") || lower.contains("tls") || lower.contains("alert") || lower.contains("certificate") {
                return .tls
            }
            if lower.contains("reset") || lower.contains("broken pipe") { return .reset }
            return .protocol
        default:
            // CURLE_TOO_LARGE (100, libcurl 8.6 and later): a header line or the headers over curl's limits.
            if code.rawValue == 100 { return .tooLarge }
            return .protocol
        }
    }
}

import VitalsKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Unsafe pointers here are C interop (read(2) and write(2) on the standard streams): kept.

/// One request as a CGI program receives it (RFC 3875), for web servers that run a program per
/// request: the parameters in the environment, the body on standard input. A thin adapter over
/// the same router the FastCGI responder runs, so both answer alike; `serve` is the way to run an
/// API behind nginx (vitals-serve(7)).
public enum CGIAdapter {
    /// Reads this process's request: the environment, and CONTENT_LENGTH bytes from `input`, at
    /// most `maxBody` (a larger body is a 413 before anything is read).
    public static func read(environment: [String: String], input: Int32, maxBody: Int) throws(APIError) -> APIRequest {
        let length = Int(environment["CONTENT_LENGTH"] ?? "") ?? 0
        guard length <= maxBody else {
            throw APIError(status: 413, reason: "too_large", message: "the request body is larger than \(maxBody) bytes")
        }
        var body = [UInt8](repeating: 0, count: max(length, 0))
        var got = 0
        while got < body.count {
            let n = body.withUnsafeMutableBytes { readBytes(input, $0.baseAddress! + got, $0.count - got) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            got += n
        }
        guard got == body.count else {
            throw APIError(status: 400, reason: "short_body", message: "the body ended after \(got) of \(length) bytes")
        }
        return APIRequest(parameters: environment, body: body)
    }

    /// Answers this process's request with `answer` and writes the response to `output`; the exit
    /// status is a failure for a 5xx answer.
    public static func serve(
        environment: [String: String], input: Int32, output: Int32, maxBody: Int,
        _ answer: (APIRequest) -> APIResponse
    ) -> ExitStatus {
        let response: APIResponse
        do {
            response = answer(try read(environment: environment, input: input, maxBody: maxBody))
        } catch {
            response = error.response
        }
        let bytes = response.serialized()
        _ = bytes.withUnsafeBytes { Streams.writeAll(output, $0) }
        return response.status >= 500 ? .failure : .success
    }
}

/// read(2), named apart from the adapter's own `read`.
@inline(__always)
func readBytes(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        return Glibc.read(fd, buffer, count)
    #else
        return Darwin.read(fd, buffer, count)
    #endif
}

import Foundation
import Testing

/// FastCGI's records in python3, from the specification (FastCGI 1.0, §3 and §5): `record`,
/// name-value `pairs`, a `stream` of records ending with its empty one, and `read_answer`.
let fastCGIPythonCodec = #"""
    import json, os, socket, struct, sys, time
    def record(kind, request, content):
        padding = (8 - len(content) % 8) % 8
        return struct.pack(">BBHHBx", 1, kind, request, len(content), padding) + content + b"\0" * padding
    def pairs(values):
        out = b""
        for name, value in values.items():
            name, value = name.encode(), value.encode()
            for length in (len(name), len(value)):
                out += bytes([length]) if length < 128 else struct.pack(">I", length | 0x80000000)
            out += name + value
        return out
    def stream(kind, data):
        out = b""
        for start in range(0, len(data), 65535):
            out += record(kind, 1, data[start:start + 65535])
        return out + record(kind, 1, b"")
    def read_answer(connection):
        """The STDOUT stream of one answer, and whether END_REQUEST came before the connection closed."""
        answer, buffered = b"", b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return answer, False
            buffered += chunk
            while len(buffered) >= 8:
                _, kind, _, length, padding = struct.unpack(">BBHHBx", buffered[:8])
                if len(buffered) < 8 + length + padding:
                    break
                if kind == 6:
                    answer += buffered[8:8 + length]
                buffered = buffered[8 + length + padding:]
                if kind == 3:
                    return answer, True
    """# + "\n"

/// A FastCGI client written from the specification (FastCGI 1.0, §3 and §5), independent of the
/// responder's own codec: python3, run as any user, to talk to a responder's socket directly, as
/// a local user or a misconfigured web server would.
///
/// `python3 -c fastCGIClient SOCKET PARAMS_JSON BODY_FILE [PAUSE_AFTER_BYTES PAUSE_FILE]` prints
/// the STDOUT stream of the answer (the CGI head and body), or `ERROR <exception>` when it cannot
/// connect or the connection breaks. With PAUSE_AFTER_BYTES it sends that many bytes of the body,
/// creates PAUSE_FILE, and waits until PAUSE_FILE is removed before sending the rest.
let fastCGIClient =
    fastCGIPythonCodec + #"""
        try:
            path, params = sys.argv[1], json.loads(sys.argv[2])
            body = open(sys.argv[3], "rb").read()
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(path)
            head = record(1, 1, struct.pack(">HB5x", 1, 0)) + stream(4, pairs(params))
            data = stream(5, body)
            if len(sys.argv) > 5:
                # The head and the first bytes of the body's first record, then wait.
                cut = 8 + int(sys.argv[4])
                connection.sendall(head + data[:cut])
                open(sys.argv[5], "w").close()
                while os.path.exists(sys.argv[5]):
                    time.sleep(0.01)
                try:
                    if data[cut:]:
                        connection.sendall(data[cut:])
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the responder answered before taking the rest: its answer is read below
            else:
                try:
                    connection.sendall(head + data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the responder answered and closed before taking it all (a body over its limit)
            answer, ended = read_answer(connection)
            sys.stdout.write(answer.decode("utf-8", "replace") + ("" if ended else "ERROR connection closed before END_REQUEST"))
        except Exception as error:
            sys.stdout.write("ERROR %s: %s" % (type(error).__name__, error))
        """#

/// One FastCGI request to the socket at `socket`, sent by python3 as `user` (nil: this process's
/// user; a name: through runuser, as root only). The CGI answer, or a line starting `ERROR`.
func fastCGIRequest(
    socket: String, parameters: [String: String], body: String = "", as user: String? = nil,
    scratch: ScratchDirectory
) throws -> String {
    let bodyFile = try scratch.write("fcgi-body-\(UUID().uuidString)", body)
    if user != nil { try giveToServingUser([bodyFile]) }
    var parameters = parameters
    parameters["CONTENT_LENGTH"] = parameters["CONTENT_LENGTH"] ?? String(body.utf8.count)
    let json = String(decoding: try JSONSerialization.data(withJSONObject: parameters), as: UTF8.self)
    let argv = ["-c", fastCGIClient, socket, json, bodyFile]
    let result =
        user.map { name in
            (try? runProcess("/usr/sbin/runuser", ["-u", name, "--", "/usr/bin/python3"] + argv, stdin: "", environment: toolEnvironment()))
        } ?? (try? runProcess("/usr/bin/python3", argv, stdin: "", environment: toolEnvironment()))
    guard let result else { throw TestFailure("python3 could not be run") }
    return result.stdout + (result.status == 0 ? "" : "ERROR python3 exited \(result.status): \(result.stderr)")
}

/// Starts python3 sending one FastCGI request's first `cut` bytes of the body's records (after
/// the head), then making the file `pause` and waiting until it is gone to send the rest; the
/// answer is its standard output (`output`) once the process ends.
func startPausingFastCGIClient(socket: String, json: String, bodyFile: String, cut: Int, pause: String) throws -> Spawned {
    try Spawned(["/usr/bin/python3", "-c", fastCGIClient, socket, json, bodyFile, String(cut), pause])
}

/// The status of a CGI answer (`Status: 404 Not Found` → 404), or nil.
func cgiStatus(_ answer: String) -> Int? {
    guard answer.hasPrefix("Status: ") else { return nil }
    return Int(answer.dropFirst(8).prefix(3))
}

#!/usr/bin/env python3
"""A TLS HTTP server for probe-http's end-to-end tests.

Prints its base URL on the first line of standard output, then serves HEAD and GET
until killed: /bytes/N answers N bytes, any other path a short text. Options choose the
certificate, whether a client certificate is required, the highest TLS version offered,
and a pause before each handshake (a slow server before the first byte of a request).

With --post-answers FILE it also takes POSTs, as a scripted stand-in for vitals' POST
/api/samples: FILE is a JSON list of answers given in turn (the last one again and again),
each {"status": N, "headers": {...}, "body": "..."}, where the body "@api" is the API's
answer for the lines posted (all stored) and "@huge" is 8 MiB of "x". With --post-log FILE
each POST appends a JSON line: its time, path, whether it had an Authorization header,
and its lines and bytes.
"""
import argparse
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_HEAD(self):
        self.reply(False)

    def do_GET(self):
        self.reply(True)

    def do_POST(self):
        options = self.server.options
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        lines = body.count(b"\n")
        with self.server.lock:
            if options.post_log:
                with open(options.post_log, "a") as log:
                    entry = {"t": time.time(), "path": self.path, "authorization": "Authorization" in self.headers,
                             "lines": lines, "bytes": len(body)}
                    log.write(json.dumps(entry) + "\n")
            with open(options.post_answers) as f:
                answers = json.load(f)
            answer = answers[min(self.server.posts, len(answers) - 1)]
            self.server.posts += 1
        text = answer.get("body", "")
        if text == "@api":
            text = json.dumps({"agent": "a", "agent_status": "approved", "stored": lines, "duplicates": 0, "refused": []})
        payload = b"x" * (8 << 20) if text == "@huge" else text.encode()
        self.send_response(answer["status"])
        for name, value in answer.get("headers", {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def reply(self, with_body):
        body = b"tls ok\n"
        parts = self.path.split("?", 1)[0].split("/")
        if len(parts) == 3 and parts[1] == "bytes" and parts[2].isdigit():
            body = bytes((index * 31 + 7) & 0xFF for index in range(int(parts[2])))
        peer = self.connection.getpeercert()
        if peer:
            subject = dict(item[0] for item in peer.get("subject", ()))
            body = ("tls ok, client " + subject.get("commonName", "?") + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    """Handshakes in each connection's own thread; a refused handshake drains the
    client's request before closing, so the client reads the alert instead of a reset."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, address, handler, context, handshake_delay, options):
        super().__init__(address, handler)
        self.context = context
        self.handshake_delay = handshake_delay
        self.options = options
        self.lock = threading.Lock()
        self.posts = 0

    def finish_request(self, request, client_address):
        time.sleep(self.handshake_delay)
        tls = self.context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
        except (ssl.SSLError, OSError):
            # The alert is on its way; read what the client still sends (its request)
            # until it closes, so closing here is a FIN, not a reset that could overtake it.
            try:
                raw = socket.socket(fileno=os.dup(tls.fileno()))
                raw.settimeout(2)
                while raw.recv(65536):
                    pass
                raw.close()
            except OSError:
                pass
            tls.close()
            return
        self.RequestHandlerClass(tls, client_address, self)
        try:
            tls.unwrap()
        except (ssl.SSLError, OSError):
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--client-ca")
    parser.add_argument("--max-tls", choices=["1.2", "1.3"])
    parser.add_argument("--handshake-delay", type=float, default=0, help="seconds to wait before each handshake")
    parser.add_argument("--post-answers", help="a JSON list of answers to POSTs, given in turn")
    parser.add_argument("--post-log", help="a file each POST appends a JSON line to")
    options = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options.cert, options.key)
    if options.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(options.client_ca)
    if options.max_tls == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2

    server = Server(("127.0.0.1", 0), Handler, context, options.handshake_delay, options)
    print(f"https://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

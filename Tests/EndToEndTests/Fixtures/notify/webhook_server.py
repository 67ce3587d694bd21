#!/usr/bin/python3
"""A webhook receiver for notify's end-to-end tests: JSON webhooks, ntfy, Slack, Discord, Teams.

Prints its base URL on the first line of standard output, then serves until killed.
Every request is appended to the --log file as one JSON line (method, path, headers,
body, and whether each signature it carries verifies) BEFORE it is answered, so a test
that waited for notify to exit can read them all.

Answers are scripted per path: --script /hook=503,429@2,200 answers 503, then 429 with
Retry-After: 2, then 200; when a script runs out the path answers 200 (204 for paths
under /api/webhooks/, as Discord does). The signatures are checked with Python's own
hmac module, independently of notify's code:
  GitHub           X-Hub-Signature-256: sha256=HEX(HMAC-SHA256(secret, body))
  Standard Webhooks webhook-signature: v1,BASE64(HMAC-SHA256(base64decode(secret without whsec_),
                   "{webhook-id}.{webhook-timestamp}.{body}"))
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import ssl
import sys
import threading


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--script", action="append", default=[])
    parser.add_argument("--github-secret")
    parser.add_argument("--standard-secret")
    parser.add_argument("--cert")
    parser.add_argument("--key")
    options = parser.parse_args()

    scripts = {}
    for item in options.script:
        path, answers = item.split("=", 1)
        scripts[path] = [answer for answer in answers.split(",") if answer]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            with lock:
                queue = scripts.get(path, [])
                answer = queue.pop(0) if queue else ("204" if path.startswith("/api/webhooks/") else "200")
                code, _, retry_after = answer.partition("@")
                entry = {
                    "method": self.command,
                    "path": self.path,
                    "headers": {name.lower(): value for name, value in self.headers.items()},
                    "body": body.decode("utf-8", "replace"),
                    "github": verify_github(self.headers, body, options.github_secret),
                    "standard": verify_standard(self.headers, body, options.standard_secret),
                    "answered": int(code),
                }
                with open(options.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")
            reply = b"" if code == "204" else json.dumps({"answer": int(code)}).encode()
            self.send_response(int(code))
            if retry_after:
                self.send_header("Retry-After", retry_after)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    scheme = "http"
    if options.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(options.cert, options.key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"{scheme}://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def verify_github(headers, body, secret):
    signature = headers.get("X-Hub-Signature-256")
    if signature is None or secret is None:
        return None
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def verify_standard(headers, body, secret):
    signature = headers.get("webhook-signature")
    if signature is None or secret is None:
        return None
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    signed = f"{headers.get('webhook-id')}.{headers.get('webhook-timestamp')}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest("v1," + expected, part) for part in signature.split(" "))


if __name__ == "__main__":
    sys.exit(main())

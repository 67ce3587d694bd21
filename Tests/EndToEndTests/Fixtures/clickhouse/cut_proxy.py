#!/usr/bin/env python3
"""A TCP proxy for one HTTP request per connection that can lose an answer on purpose.

Usage: cut_proxy.py UPSTREAM_PORT PORT_FILE LOG_FILE CUT_MARK [CERT KEY CA]
Listens on 127.0.0.1 (an ephemeral port, written to PORT_FILE once listening) and forwards each
connection to 127.0.0.1:UPSTREAM_PORT. The first request whose request line contains CUT_MARK is
forwarded whole, the server's answer is awaited (so the server has done the work), and then the
client's connection is closed without a byte of it: a timeout after the server stored the data.
Every request line is appended to LOG_FILE, with " CUT" after the one whose answer was dropped.
With CERT, KEY and CA, both sides speak TLS: the proxy shows CERT (and KEY) to its clients and
trusts CA for the upstream server (an agent's HTTPS in front of nginx).
With CUT_PROXY_SKIP=N in the environment the first N requests with CUT_MARK pass untouched; with
CUT_PROXY_HOLD=1 the request cut is never forwarded: its connection is held open, unanswered, so
the client is caught in the middle of a request ("HELD" in the log).
"""
import os
import socket
import ssl
import sys
import threading

# The test runner's Foundation Process learns that the shell which started us ended when a socket
# it gave the shell closes; we inherited that socket, so close every inherited descriptor but the
# standard three.
os.closerange(3, os.sysconf("SC_OPEN_MAX"))

upstream_port = int(sys.argv[1])
port_file, log_file, mark = sys.argv[2], sys.argv[3], sys.argv[4].encode()
client_tls = upstream_tls = None
if len(sys.argv) > 7:
    client_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client_tls.load_cert_chain(sys.argv[5], sys.argv[6])
    upstream_tls = ssl.create_default_context(cafile=sys.argv[7])
lock = threading.Lock()
cut_done = False
skip = int(os.environ.get("CUT_PROXY_SKIP", "0"))
hold = os.environ.get("CUT_PROXY_HOLD") == "1"


def read_request(client):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = client.recv(65536)
        if not chunk:
            break
        body += chunk
    # One request per connection: the server is asked to close after its answer, so the answer's
    # end is the connection's end for both sides.
    lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body


def handle(client):
    global cut_done, skip
    try:
        if client_tls:
            client = client_tls.wrap_socket(client, server_side=True)
        request = read_request(client)
        line = request.split(b"\r\n", 1)[0]
        with lock:
            cut = not cut_done and mark in line and skip == 0
            if mark in line and skip > 0:
                skip -= 1
            cut_done = cut_done or cut
            with open(log_file, "ab") as log:
                log.write(line + ((b" HELD" if hold else b" CUT") if cut else b"") + b"\n")
        if cut and hold:
            threading.Event().wait()  # never forwarded, never answered

        server = socket.create_connection(("127.0.0.1", upstream_port))
        if upstream_tls:
            server = upstream_tls.wrap_socket(server, server_hostname="127.0.0.1")
        server.sendall(request)
        if cut:
            server.recv(65536)  # the server answered: it has the data
            server.close()
            return
        while True:
            chunk = server.recv(65536)
            if not chunk:
                break
            client.sendall(chunk)
        server.close()
    except (OSError, ssl.SSLError):
        pass
    finally:
        client.close()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
with open(port_file + ".tmp", "w") as f:
    f.write(str(listener.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    connection, _ = listener.accept()
    threading.Thread(target=handle, args=(connection,), daemon=True).start()

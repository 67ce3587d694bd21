#!/usr/bin/python3
"""An SMTP server for notify's end-to-end tests, on Debian's python3-aiosmtpd.

Prints smtp://127.0.0.1:PORT on its first line once it listens, then serves until killed.
Each accepted message is appended to --log as one JSON line: the envelope, the message,
whether the session was under TLS, and the user that logged in (None when nobody did).
  --starttls CERT KEY   offer STARTTLS (and require it before AUTH)
  --implicit CERT KEY   TLS from the first byte (smtps)
  --auth USER:PASSWORD  offer AUTH PLAIN/LOGIN and accept only this login
"""
import argparse
import json
import socket
import ssl
import sys
import threading

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--starttls", nargs=2)
    parser.add_argument("--implicit", nargs=2)
    parser.add_argument("--auth")
    options = parser.parse_args()
    lock = threading.Lock()
    logins = {}

    class Handler:
        async def handle_EHLO(self, server, session, envelope, hostname, responses):
            # Without --auth the server offers no AUTH at all (aiosmtpd would list an empty one).
            session.host_name = hostname
            if options.auth is None:
                return [line for line in responses if not line.startswith("250-AUTH")]
            return responses

        async def handle_DATA(self, server, session, envelope):
            entry = {
                "mail_from": envelope.mail_from,
                "rcpt_tos": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace"),
                "tls": session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None,
                "login": logins.get(id(session)),
            }
            with lock:
                with open(options.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry) + "\n")
            return "250 Message accepted"

    def authenticator(server, session, envelope, mechanism, auth_data):
        if not isinstance(auth_data, LoginPassword) or options.auth is None:
            return AuthResult(success=False, handled=False)
        user, _, password = options.auth.partition(":")
        if auth_data.login.decode() == user and auth_data.password.decode() == password:
            logins[id(session)] = user
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    def context(pair):
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(pair[0], pair[1])
        return tls

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    parameters = {}
    if options.starttls:
        parameters["tls_context"] = context(options.starttls)
        parameters["require_starttls"] = True
    if options.auth:
        parameters["authenticator"] = authenticator
        # Implicit TLS is TLS already; aiosmtpd only counts STARTTLS as TLS for AUTH.
        parameters["auth_require_tls"] = bool(options.starttls)
    controller = Controller(Handler(), hostname="127.0.0.1", port=port,
                            ssl_context=context(options.implicit) if options.implicit else None,
                            server_hostname="localhost", **parameters)
    controller.start()
    print(f"{'smtps' if options.implicit else 'smtp'}://127.0.0.1:{port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())

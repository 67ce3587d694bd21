#!/usr/bin/python3
"""A fake APNs for notify's end-to-end tests: TLS and HTTP/2 on Debian's python3-hypercorn.

Prints https://127.0.0.1:PORT on its first line once it listens, then serves until killed.
Each request is checked as Apple would and appended to --log as one JSON line before it is
answered: the HTTP version, the device token, the apns-* headers, the payload and its size,
and the provider token's header and claims, verified with python3-jwt against the public
half of the .p8 key (--key-file).

Answers are scripted per device token: --script TOKEN=403:ExpiredProviderToken,200 answers
403 with that reason, then 200; when a script runs out the token gets 200. Requests that are
not what Apple accepts get Apple's answer instead: 403 InvalidProviderToken for a token that
does not verify, 400 BadTopic, 400 MissingTopic, 413 PayloadTooLarge, 405 for a method but POST.
"""
import argparse
import asyncio
import json
import socket
import sys
import threading

import jwt
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from hypercorn.asyncio import serve
from hypercorn.config import Config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--key-file", required=True, help="the .p8 key notify signs with")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--script", action="append", default=[])
    options = parser.parse_args()

    with open(options.key_file, "rb") as handle:
        public_key = load_pem_private_key(handle.read(), password=None).public_key()
    scripts = {}
    for item in options.script:
        token, answers = item.split("=", 1)
        scripts[token] = answers.split(",")
    lock = threading.Lock()

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        token = scope["path"].rsplit("/", 1)[-1]
        entry = {"http_version": scope["http_version"], "method": scope["method"], "path": scope["path"],
                 "token": token, "headers": headers, "size": len(body), "body": body.decode("utf-8", "replace")}
        code, reason = 200, None
        try:
            entry["payload"] = json.loads(body)
        except ValueError:
            entry["payload"] = None
        authorization = headers.get("authorization", "")
        provider = authorization[len("bearer "):] if authorization.lower().startswith("bearer ") else None
        try:
            entry["jwt_header"] = jwt.get_unverified_header(provider)
            entry["jwt_claims"] = jwt.decode(provider, public_key, algorithms=["ES256"], options={"verify_iat": False})
            entry["jwt_ok"] = entry["jwt_header"].get("kid") == options.key_id and entry["jwt_claims"].get("iss") == options.team_id
        except Exception as problem:  # any failure to verify is Apple's InvalidProviderToken
            entry["jwt_ok"] = False
            entry["jwt_error"] = str(problem)
        if scope["method"] != "POST":
            code, reason = 405, "MethodNotAllowed"
        elif not entry["jwt_ok"]:
            code, reason = 403, "InvalidProviderToken"
        elif "apns-topic" not in headers:
            code, reason = 400, "MissingTopic"
        elif headers["apns-topic"] != options.topic:
            code, reason = 400, "BadTopic"
        elif len(body) > 4096:
            code, reason = 413, "PayloadTooLarge"
        else:
            with lock:
                queue = scripts.get(token, [])
                if queue:
                    answer = queue.pop(0)
                    code_text, _, reason = answer.partition(":")
                    code, reason = int(code_text), reason or None
        entry["answered"] = code
        entry["reason"] = reason
        with lock:
            with open(options.log, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")
        reply = json.dumps({"reason": reason}).encode() if reason else b""
        response_headers = [(b"apns-id", headers.get("apns-id", "").encode())]
        if reply:
            response_headers.append((b"content-type", b"application/json"))
        await send({"type": "http.response.start", "status": code, "headers": response_headers})
        await send({"type": "http.response.body", "body": reply})

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.certfile = options.cert
    config.keyfile = options.key
    config.alpn_protocols = ["h2"]
    config.accesslog = None
    config.errorlog = "-"
    print(f"https://127.0.0.1:{listener.getsockname()[1]}", flush=True)
    asyncio.run(serve(app, config))


if __name__ == "__main__":
    sys.exit(main())

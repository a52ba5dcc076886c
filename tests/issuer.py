"""A test OAuth issuer: an RSA key made in the test, its JWKS and an RFC 7662 endpoint on 127.0.0.1.

Served by the standard library's HTTP server in a thread (as fake_openai.py serves the LLM);
it counts the requests it answers so tests can check the JWKS is cached.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://issuer.test/realms/memory"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    """Signs access tokens and serves ``/jwks.json`` and ``/introspect`` (token -> claims set by the test)."""

    def __init__(self) -> None:
        self.key = rsa_key()
        self.kid = uuid.uuid4().hex[:8]
        self.requests: list[str] = []
        self.introspection: dict[str, dict[str, Any]] = {}  # opaque token -> RFC 7662 answer
        self.jwks_status = 200  # set to 503 for an issuer that is briefly down
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                issuer.requests.append(self.path)
                if self.path == "/jwks.json" and issuer.jwks_status != 200:
                    self._send(issuer.jwks_status, {"error": "unavailable"})
                elif self.path == "/jwks.json":
                    jwk = jwt.algorithms.RSAAlgorithm.to_jwk(issuer.key.public_key(), as_dict=True)
                    self._send(200, {"keys": [{**jwk, "kid": issuer.kid, "use": "sig", "alg": "RS256"}]})
                else:
                    self._send(404, {})

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                issuer.requests.append(self.path)
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                if self.headers.get("Authorization") != "Basic bWVtb3J5OnMzY3JldA==":  # memory:s3cret
                    self._send(401, {"error": "invalid_client"})
                    return
                self._send(200, issuer.introspection.get(form["token"][0], {"active": False}))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def token(self, audience: str, sub: str = "alice", scope: str = "memory", key: Any = None,
              algorithm: str = "RS256", **claims: Any) -> str:
        """A signed access token; ``claims`` override or add (``exp=None`` leaves exp out)."""
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": audience, "sub": sub, "scope": scope, "iat": now, "exp": now + 600,
                   "azp": "claude"}
        payload.update(claims)
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key or self.key, algorithm=algorithm, headers={"kid": self.kid})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

"""A round-robin HTTP proxy for tests: each request goes to the next backend in turn, as a load
balancer without sticky sessions sends them.

A stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (OS-chosen port) in a thread; each request is
forwarded whole with httpx and its reply returned whole (the servers behind it answer JSON, not
streams). ``served`` records, per request, the JSON-RPC method (``tools/call:<tool>`` for tool
calls) and the backend port that answered it.
"""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

import httpx

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


class RoundRobin:
    """``with RoundRobin([port, ...]) as proxy:`` then send to ``proxy.url``."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.served: list[tuple[str, int]] = []  # (method, backend port) per request, in order
        self._turn = itertools.cycle(backends)
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60.0)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with proxy._lock:
                    port = next(proxy._turn)
                    proxy.served.append((_method(body, self.command), port))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                reply = proxy._client.request(self.command, f"http://127.0.0.1:{port}{self.path}",
                                              headers=headers, content=body)
                self.send_response(reply.status_code)
                for key, value in reply.headers.items():
                    if key.lower() not in _HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = do_POST = do_DELETE = _forward

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="round-robin proxy", daemon=True)

    def tool_calls(self) -> list[tuple[str, int]]:
        """(tool, backend port) of every ``tools/call`` so far, in order."""
        with self._lock:
            return [(method.split(":", 1)[1], port) for method, port in self.served if method.startswith("tools/call:")]

    def __enter__(self) -> RoundRobin:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
        self._client.close()


def _method(body: bytes, verb: str) -> str:
    """The JSON-RPC method of a request body (``tools/call:<tool>`` for a tool call), else the HTTP verb."""
    try:
        message = json.loads(body)
    except ValueError:
        return verb
    if not isinstance(message, dict) or "method" not in message:
        return verb
    if message["method"] == "tools/call":
        return f"tools/call:{message['params']['name']}"
    return str(message["method"])

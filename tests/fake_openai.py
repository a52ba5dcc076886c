"""A real-HTTP fake of the OpenAI chat and embeddings API for tests.

The fake is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (OS-chosen port) running in a
background thread. The real ``openai`` client talks to it over HTTP; the fake records every
request and replays scripted replies. Stopping it releases any request held by a scripted delay.
A profile (``fake_profiles.PROFILES``) makes it answer as one kind of server does: the
``response_format`` it refuses, its error bodies, its usage fields, reasoning in the content.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

try:
    from fake_profiles import (MAX_TOKENS_REFUSAL, PROFILES, openai_error, refusal_body, request_mode, usage_body,
                               with_think)
except ImportError:  # tests/ imported as a package
    from tests.fake_profiles import (MAX_TOKENS_REFUSAL, PROFILES, openai_error, refusal_body, request_mode, usage_body,
                                     with_think)

@dataclass
class ChatReply:
    """One scripted chat completion reply.

    Attributes:
        content: The assistant message content.
        status: HTTP status; non-200 answers with an OpenAI-style error body.
        delay_s: Hold the response this long (released early when the fake stops).
        prompt_tokens: ``usage.prompt_tokens``.
        completion_tokens: ``usage.completion_tokens``.
        cached_tokens: ``usage.prompt_tokens_details.cached_tokens``.
        reasoning_tokens: ``usage.completion_tokens_details.reasoning_tokens``.
        model: The ``model`` field of the response.
        raw_body: If set, the whole 200 response body, sent as it is (a broken server or proxy).
        finish_reason: ``choices[0].finish_reason``; ``length`` is a reply cut at ``max_tokens``.
    """

    content: str = ""
    status: int = 200
    delay_s: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    model: str = "fake-chat"
    raw_body: str | None = None
    finish_reason: str = "stop"


@dataclass
class Recorded:
    """A request the fake received.

    Attributes:
        path: The request path, e.g. ``/v1/chat/completions``.
        body: The parsed JSON body (empty dict when there is none or it is not a JSON object).
        headers: Request headers with lower-cased names.
    """

    path: str
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


def default_embedding(text: str, dim: int) -> list[float]:
    """Returns a deterministic pseudo-random unit vector of length ``dim`` seeded by sha256(text)."""
    rng = random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest(), "big"))
    vec = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class FakeOpenAI:
    """A scripted OpenAI-compatible HTTP server; use as a context manager.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        requests: Every request in arrival order.
        embedding_delay_s: Hold each embeddings request this long (released on stop).
        embedding_status: If set, embeddings answer this HTTP status with an error body.
        profile: The name of the server profile chat requests are answered as (``fake_profiles``).
    """

    def __init__(self, *, embedding_dim: int = 384, embedding_model: str = "fake-embed",
                 profile: str = "openai") -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        self.profile = profile
        self.embedding_dim = embedding_dim
        self.embedding_model = embedding_model
        self.embedding_delay_s: float = 0.0
        self.embedding_status: int | None = None
        self.requests: list[Recorded] = []
        self.base_url = ""
        self._queue: deque[ChatReply] = deque()
        self._chat_handler: Callable[[dict[str, Any]], ChatReply] | None = None
        self._embed_fn: Callable[[str], list[float]] = lambda t: default_embedding(t, self.embedding_dim)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def script_chat(self, *replies: ChatReply) -> None:
        """Appends replies to the FIFO queue; each chat request pops one."""
        with self._lock:
            self._queue.extend(replies)

    def set_chat_handler(self, fn: Callable[[dict[str, Any]], ChatReply]) -> None:
        """Computes chat replies from the request body when the queue is empty."""
        self._chat_handler = fn

    def set_embedding_fn(self, fn: Callable[[str], list[float]]) -> None:
        """Replaces the text -> vector function used by ``/v1/embeddings``."""
        self._embed_fn = fn

    def chat_requests(self) -> list[Recorded]:
        """Returns the recorded ``/v1/chat/completions`` requests."""
        return [r for r in list(self.requests) if r.path == "/v1/chat/completions"]

    def embedding_requests(self) -> list[Recorded]:
        """Returns the recorded ``/v1/embeddings`` requests."""
        return [r for r in list(self.requests) if r.path == "/v1/embeddings"]

    def start(self) -> FakeOpenAI:
        """Binds a free port on 127.0.0.1 and serves in a daemon thread."""
        fake = self

        class Handler(_Handler):
            owner = fake

        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving, releases held requests and closes open connections promptly."""
        self._stopping.set()
        if self._server is None:
            return
        self._server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # unblocks keep-alive reads
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        """Starts the server."""
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """Stops the server."""
        self.stop()

    def _hold(self, seconds: float) -> bool:
        """Waits up to ``seconds``; returns False if the fake is stopping."""
        if seconds > 0:
            self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any] | None:
        profile = PROFILES[self.profile]
        if request_mode(body) in profile.refuses:  # refused before any reply is generated or popped
            return profile.refusal_status, refusal_body(profile, body)
        if profile.refuses_max_tokens and "max_tokens" in body:
            return 400, {"error": {"message": MAX_TOKENS_REFUSAL, "type": "invalid_request_error",
                                   "param": "max_tokens", "code": "unsupported_parameter"}}
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self._chat_handler is not None:
            try:
                reply = self._chat_handler(body)
            except Exception as exc:  # surface handler bugs to the client as a 500
                return 500, openai_error(500, f"chat handler raised {exc!r}")
        if reply is None:
            return 500, openai_error(500, "no scripted reply")
        if not self._hold(reply.delay_s):
            return None
        if reply.status != 200:
            return reply.status, profile.error(reply.status, f"scripted error {reply.status}")
        if reply.raw_body is not None:
            return 200, _Raw(reply.raw_body)
        completion: dict[str, Any] = {
            "id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": reply.model,
            "choices": [{"index": 0, "finish_reason": reply.finish_reason, "logprobs": None,
                         "message": {"role": "assistant", "content": with_think(profile, reply.content)}}],
        }
        usage = usage_body(profile, reply.prompt_tokens, reply.completion_tokens, reply.cached_tokens,
                           reply.reasoning_tokens)
        if usage is not None:
            completion["usage"] = usage
        return 200, completion

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        if not self._hold(self.embedding_delay_s):
            return None
        if self.embedding_status is not None:
            return self.embedding_status, openai_error(self.embedding_status, "scripted embeddings error")
        raw = body.get("input", [])
        texts = [raw] if isinstance(raw, str) else [t if isinstance(t, str) else json.dumps(t) for t in raw]
        data = []
        for i, text in enumerate(texts):
            vec = [float(v) for v in self._embed_fn(text)]
            emb: Any = vec
            if body.get("encoding_format") == "base64":  # the openai client's default
                emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(t.split()) for t in texts)
        return 200, {"object": "list", "data": data, "model": body.get("model") or self.embedding_model,
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


class _Raw(str):
    """A response body sent as it is."""


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 handler with Content-Length on every response."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    owner: FakeOpenAI
    timeout = 10  # idle keep-alive connections end on their own

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._conns.add(self.connection)

    def finish(self) -> None:
        with self.owner._lock:
            self.owner._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:  # peer already gone
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silences per-request logging."""

    def _send(self, status: int, payload: Any) -> None:
        """Sends ``payload`` as JSON; a str as text/plain; a ``_Raw`` as it is, labelled JSON."""
        kind = "application/json" if isinstance(payload, _Raw) or not isinstance(payload, str) else "text/plain"
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:
            parsed = {}
        body = parsed if isinstance(parsed, dict) else {}
        path = self.path.split("?", 1)[0]
        with self.owner._lock:
            self.owner.requests.append(Recorded(path, body, {k.lower(): v for k, v in self.headers.items()}))
        return body

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._record()
        if self.path.split("?", 1)[0] != "/v1/models":
            self._send(404, openai_error(404, f"unknown path {self.path}"))
            return
        models = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                  for m in ("fake-chat", self.owner.embedding_model)]
        self._send(200, {"object": "list", "data": models})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = self._record()
        path = self.path.split("?", 1)[0]
        routes = {"/v1/chat/completions": self.owner._chat, "/v1/embeddings": self.owner._embeddings}
        route = routes.get(path)
        result = route(body) if route else (404, openai_error(404, f"unknown path {path}"))
        if result is None:  # released by stop: drop the connection without a reply
            self.close_connection = True
            return
        try:
            self._send(*result)
        except OSError:
            self.close_connection = True

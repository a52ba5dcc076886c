"""Bound the MCP sessions each client may hold open: an ASGI layer in front of the HTTP app.

The SDK's session manager bounds sessions only in total (``max_sessions``; past it every new
client gets 503) and expires them only when idle (``session_idle_timeout``). One client that
opens sessions and never closes them (10,000 ``initialize`` calls) filled the total and took
every later client's service with it. This layer keeps at most ``max_per_client`` sessions per
client: opening one more closes that client's least recently used session first (it answers 404
from then on, and the MCP specification has a client that gets 404 start a new session). A
client is the verified identity of its token when auth is configured (this layer then runs inside
the SDK's authentication, so every token an OAuth user refreshes to counts as one client), else its
bearer token when the request has one (the SHA-256 of the token, never the token itself as the
key), else its address; the SDK's own limits still apply on top.

It acts only through the SDK's public HTTP behaviour: it reads the ``mcp-session-id`` a response
assigns, and closes a session by sending the app the ``DELETE`` a client would send, with the
headers of the request that opened it (Host, Origin and Authorization pass the same checks).
Its own table forgets a session when it is deleted, answers 404, or has had no request for the
idle timeout (the SDK has expired it by then), so the table stays as small as the SDK's.

Limits: a POST without a session id counts as opening one, so it may close the client's oldest
session even when it then fails (only that client's own). Without auth configured a bearer token
is whatever the client sends, so a client can take a fresh key per request; the SDK's total bound
(``http.max_sessions``) still holds. With auth, an unknown token gets 401 and opens nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import principal_components
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SessionBounds", "client_key"]

logger = logging.getLogger(__name__)

_SESSION_HEADER = b"mcp-session-id"
_KEPT_HEADERS = (b"host", b"origin", b"authorization")  # what a DELETE needs to pass the app's checks


def client_key(scope: Scope) -> str:
    """Who a request is from: ``principal:<client_id, issuer, subject>`` of its verified token (with
    auth: the identity the SDK binds a session to, the same for every token an OAuth user refreshes
    to), else ``bearer:<sha256 of the token, 32 hex>`` when it carries a bearer token, else
    ``addr:<client address>``."""
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return "principal:" + json.dumps(principal_components(user.access_token))
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return "bearer:" + hashlib.sha256(value[7:].strip()).hexdigest()[:32]
    client = scope.get("client")
    return f"addr:{client[0] if client else 'unknown'}"


@dataclass
class _Session:
    key: str
    opener: Scope  # the opening request's scope, trimmed to what a DELETE needs
    last_used_s: float
    in_flight: int = 0


@dataclass
class _Table:
    """Open sessions, least recently used first, overall and per client."""

    sessions: OrderedDict[str, _Session] = field(default_factory=OrderedDict)
    by_key: dict[str, OrderedDict[str, None]] = field(default_factory=dict)

    def add(self, session_id: str, session: _Session) -> None:
        self.sessions[session_id] = session
        self.by_key.setdefault(session.key, OrderedDict())[session_id] = None

    def touch(self, session_id: str, now_s: float) -> None:
        session = self.sessions[session_id]
        session.last_used_s = now_s
        self.sessions.move_to_end(session_id)
        self.by_key[session.key].move_to_end(session_id)

    def drop(self, session_id: str) -> _Session | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            mine = self.by_key[session.key]
            mine.pop(session_id, None)
            if not mine:
                del self.by_key[session.key]
        return session

    def count(self, key: str) -> int:
        return len(self.by_key.get(key, ()))

    def oldest(self, key: str) -> str:
        return next(iter(self.by_key[key]))


class SessionBounds:
    """ASGI middleware: at most ``max_per_client`` open MCP sessions per client (see the module).

    Args:
        app: the HTTP app (the SDK's streamable HTTP app).
        max_per_client: open sessions one client may hold; opening one more closes its least
            recently used one.
        idle_timeout_s: the SDK's idle timeout, in seconds; after it without a request a session
            is forgotten here too.
        clock: monotonic seconds (a seam for tests).
    """

    def __init__(
        self, app: ASGIApp, max_per_client: int, idle_timeout_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_per_client < 1:
            raise ValueError("max_per_client must be at least 1")
        self.app = app
        self.max_per_client = max_per_client
        self.idle_timeout_s = idle_timeout_s
        self._clock = clock
        self._table = _Table()
        self.evicted = 0  # sessions closed to make room, since start (for logs and tests)

    def open_sessions(self, key: str | None = None) -> int:
        """Sessions open, of one client or (``key`` None) of all."""
        return len(self._table.sessions) if key is None else self._table.count(key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = next((v.decode("latin-1") for k, v in scope["headers"] if k == _SESSION_HEADER), None)
        if session_id is None:
            await self._serve_without_session(scope, receive, send)
        else:
            await self._serve_in_session(session_id, scope, receive, send)

    async def _serve_without_session(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = client_key(scope)
        opens = scope["method"] == "POST"
        if opens:
            self._forget_idle()
            await self._evict(key, keep=self.max_per_client - 1)  # room for the one this may open
        assigned: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                assigned.extend(v.decode("latin-1") for k, v in message.get("headers", ()) if k == _SESSION_HEADER)
            await send(message)

        await self.app(scope, receive, watch if opens else send)
        if assigned:
            self._table.add(assigned[0], _Session(key, _opener(scope), self._clock()))
            await self._evict(key, keep=self.max_per_client)  # others opened at the same moment

    async def _serve_in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._table.sessions.get(session_id)
        if session is None:
            await self.app(scope, receive, send)
            return
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        self._table.touch(session_id, self._clock())
        session.in_flight += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            session.in_flight -= 1
            if session_id in self._table.sessions:
                gone = status and (status[0] == 404 or (scope["method"] == "DELETE" and status[0] < 400))
                if gone:
                    self._table.drop(session_id)
                else:
                    self._table.touch(session_id, self._clock())

    def _forget_idle(self) -> None:
        """Forget sessions without a request for the idle timeout: the SDK has closed them."""
        deadline = self._clock() - self.idle_timeout_s
        table = self._table
        for session_id in list(table.sessions):
            session = table.sessions[session_id]
            if session.last_used_s > deadline:
                break  # least recently used first: the rest are newer
            if session.in_flight == 0:
                table.drop(session_id)

    async def _evict(self, key: str, keep: int) -> None:
        """Close ``key``'s least recently used sessions until it has at most ``keep``."""
        while self._table.count(key) > keep:
            session_id = self._table.oldest(key)
            session = self._table.drop(session_id)
            assert session is not None
            self.evicted += 1
            logger.info("closing session %s… of %s: it holds more than %d sessions", session_id[:8], key[:15],
                        self.max_per_client)
            with anyio.CancelScope(shield=True):
                await _delete(self.app, session.opener, session_id)


def _opener(scope: Scope) -> Scope:
    return {
        "type": "http",
        "asgi": scope.get("asgi", {"version": "3.0"}),
        "http_version": scope.get("http_version", "1.1"),
        "scheme": scope.get("scheme", "http"),
        "path": scope["path"],
        "raw_path": scope.get("raw_path") or scope["path"].encode(),
        "root_path": scope.get("root_path", ""),
        "query_string": b"",
        "headers": [(k, v) for k, v in scope["headers"] if k in _KEPT_HEADERS],
        "client": scope.get("client"),
        "server": scope.get("server"),
        "state": {},
        # inside authentication: the DELETE carries the opener's verified identity (its token may have expired)
        **{key: scope[key] for key in ("user", "auth") if key in scope},
    }


async def _delete(app: ASGIApp, opener: Scope, session_id: str) -> int | None:
    """Send ``app`` the DELETE that ends ``session_id``, as its client would; returns the status."""
    scope = {**opener, "method": "DELETE", "state": {},
             "headers": [*opener["headers"], (_SESSION_HEADER, session_id.encode("latin-1"))]}
    answered = anyio.Event()
    status: list[int] = []
    sent_body = False

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            answered.set()

    await app(scope, receive, send)
    answered.set()
    return status[0] if status else None

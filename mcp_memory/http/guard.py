"""The HTTP app's outermost layer: Host and Origin checks on every path, security headers on every
response, and a last answer for an error that escapes every route.

It runs before routing, authentication and the SDK, so nothing a foreign Host sends reaches them: a
request whose Host is not accepted gets 421 (a foreign Origin 403) on every path, ``/health`` and a
path with a trailing slash included; a slash redirect therefore only ever names an accepted Host.
The checks are the SDK's ``TransportSecurityMiddleware`` with the settings ``/mcp`` is served with
(``mcp_memory.http.app.transport_security``). Every response, refusals, redirects, 404s and 500s
included, carries ``SECURITY_HEADERS``: a strict Content-Security-Policy (scripts and styles only
from this server, no inline script), ``nosniff``, ``no-store``, no referrer, no framing.
"""

from __future__ import annotations

import logging

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "Guard"]

logger = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),  # page URLs carry session names and queries
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
_NAMES = {name for name, _ in SECURITY_HEADERS}
INTERNAL_ERROR = "internal error: the server could not answer this request; its log says why"


class Guard:
    """ASGI middleware, the outermost of the app: Host/Origin checks, headers, and a 500 of last resort.

    An exception that escapes ``app`` before the response started is logged (with its traceback, on
    the server's log only) and answered ``500 {"error": INTERNAL_ERROR}``; after the response started
    there is nothing left to answer, and the exception goes on to the server.

    Args:
        app: the app to guard.
        security: the settings ``/mcp`` is served with.
    """

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": kept + SECURITY_HEADERS}
            await send(message)

        refused = await self.check.validate_request(Request(scope, receive), is_post=False)
        if refused is not None:
            await refused(scope, receive, with_headers)
            return
        try:
            await self.app(scope, receive, with_headers)
        except Exception:
            if started:
                raise
            logger.exception("%s %s failed; answered 500", scope.get("method"), scope.get("path"))
            await JSONResponse({"error": INTERNAL_ERROR}, status_code=500)(scope, receive, with_headers)

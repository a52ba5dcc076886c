"""The page at ``/``: four static files served by the server itself, and the routes of its JSON API.

Every route here goes through ``Hardened``: the Host and Origin checks the SDK applies to ``/mcp``
(its ``TransportSecurityMiddleware``, with the same ``TransportSecuritySettings``), and headers that
keep a browser from running, framing, sniffing or caching anything: a strict Content-Security-Policy
(scripts and styles only from this server, no inline script), ``nosniff``, ``no-store``, no referrer.
The static files hold no data and need no token (a browser cannot send a bearer header when it opens
a URL); every ``/api/`` route needs one when ``[auth]`` is configured (``mcp_memory.http.api``).
"""

from __future__ import annotations

from importlib import resources

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Hardened", "static_routes"]

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
_STATIC = {  # URL path -> (file in mcp_memory/http/static, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/style.css": ("style.css", "text/css; charset=utf-8"),
    "/page/icon.svg": ("icon.svg", "image/svg+xml"),  # named by the page, so no browser asks for /favicon.ico
}


class Hardened:
    """ASGI wrapper: the SDK's Host/Origin checks first (421 for another Host, 403 for another
    Origin, nothing else runs), then 405 for a method other than GET and HEAD, then ``app``; every
    response, a refusal included, gets ``SECURITY_HEADERS``. Its route takes every method, so that
    the 405 is this wrapper's (Starlette's own would go out without the headers).

    Args:
        app: the route's ASGI app.
        security: the settings ``/mcp`` is served with (``mcp_memory.http.app.transport_security``).
    """

    METHODS = ("GET", "HEAD")

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message = {**message, "headers": kept + SECURITY_HEADERS}
            await send(message)

        refused = await self.check.validate_request(Request(scope, receive), is_post=False)
        if refused is not None:
            await refused(scope, receive, with_headers)
            return
        if scope["method"] not in self.METHODS:
            not_allowed = PlainTextResponse("Method Not Allowed", 405, headers={"Allow": ", ".join(self.METHODS)})
            await not_allowed(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)


def _file(name: str) -> bytes:
    return resources.files("mcp_memory.http").joinpath("static", name).read_bytes()


def static_routes(security: TransportSecuritySettings) -> list[Route]:
    """``/`` (the page, for every view: ``/?session=S``, ``&q=QUERY``, ``&audit=ID``), its script,
    stylesheet and icon."""
    routes = []
    for path, (name, content_type) in _STATIC.items():
        body = _file(name)  # read once: they are part of the installed package

        async def serve(scope: Scope, receive: Receive, send: Send, body: bytes = body, kind: str = content_type) -> None:
            await Response(body, media_type=kind)(scope, receive, send)

        routes.append(Route(path, Hardened(serve, security)))  # every method: Hardened answers 405 itself
    return routes

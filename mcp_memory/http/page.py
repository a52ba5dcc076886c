"""The page at ``/``: four static files served by the server itself, and the routes of its JSON API.

Every route here answers GET and HEAD only (``ReadOnly``). The Host and Origin checks and the
security headers (a strict Content-Security-Policy, ``nosniff``, ``no-store``, no referrer) are the
whole app's, in its outermost layer (``mcp_memory.http.guard``), so they hold for these routes too.
The static files hold no data and need no token (a browser cannot send a bearer header when it opens
a URL); every ``/api/`` route needs one when ``[auth]`` is configured (``mcp_memory.http.api``).
"""

from __future__ import annotations

from importlib import resources

from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["ReadOnly", "static_routes"]

_STATIC = {  # URL path -> (file in mcp_memory/http/static, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/page/style.css": ("style.css", "text/css; charset=utf-8"),
    "/page/icon.svg": ("icon.svg", "image/svg+xml"),  # named by the page, so no browser asks for /favicon.ico
}


class ReadOnly:
    """ASGI wrapper: 405 for a method other than GET and HEAD, else ``app``. Its route takes every
    method, so that the 405 names the methods allowed (the guard adds the security headers)."""

    METHODS = ("GET", "HEAD")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in self.METHODS:
            not_allowed = PlainTextResponse("Method Not Allowed", 405, headers={"Allow": ", ".join(self.METHODS)})
            await not_allowed(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _file(name: str) -> bytes:
    return resources.files("mcp_memory.http").joinpath("static", name).read_bytes()


def static_routes() -> list[Route]:
    """``/`` (the page, for every view: ``/?session=S``, ``&q=QUERY``, ``&audit=ID``), its script,
    stylesheet and icon."""
    routes = []
    for path, (name, content_type) in _STATIC.items():
        body = _file(name)  # read once: they are part of the installed package

        async def serve(scope: Scope, receive: Receive, send: Send, body: bytes = body, kind: str = content_type) -> None:
            await Response(body, media_type=kind)(scope, receive, send)

        routes.append(Route(path, ReadOnly(serve)))  # every method: ReadOnly answers 405 itself
    return routes

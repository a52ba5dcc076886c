"""``GET /metrics``: the server's Prometheus metrics (observe/metrics.py) in the text exposition format.

Behind the same bearer check as ``/mcp`` when ``[auth]`` is configured (the SDK's
``RequireAuthMiddleware`` over the verifier of http/auth.py): any valid token may read them,
whatever its sessions, since no metric names a session, a memory or a caller's text. With
``[metrics] public = true`` no token is needed. Host and Origin are checked as for ``/mcp``
(421 for a Host outside the accepted names, 403 for a foreign Origin), with or without a token.
"""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_memory.observe.metrics import Metrics
from mcp_memory.settings import Settings

__all__ = ["metrics_route"]


class _Scrape:
    """The ASGI app behind the route: host checks, then the exposition of ``metrics``."""

    def __init__(self, metrics: Metrics, security: TransportSecuritySettings) -> None:
        self._metrics = metrics
        self._checks = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = await self._checks.validate_request(Request(scope, receive))
        response = refused or Response(generate_latest(self._metrics.registry), media_type=CONTENT_TYPE_LATEST)
        await response(scope, receive, send)


def metrics_route(metrics: Metrics, settings: Settings, security: TransportSecuritySettings) -> Route:
    """The ``/metrics`` route for an app whose transport security is ``security``."""
    scrape = _Scrape(metrics, security)
    app: ASGIApp = scrape
    if settings.auth.enabled and not settings.metrics.public:
        oauth = settings.auth.oauth
        # the same 401 challenge as /mcp; no scope is required, any verified token will do
        resource = build_resource_metadata_url(oauth.resource_url) if oauth else None  # type: ignore[arg-type]
        app = RequireAuthMiddleware(scrape, [], resource)
    return Route("/metrics", endpoint=app, methods=["GET"])

"""Build and serve the streamable HTTP app (``mcp-memory serve --transport http``)."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware

from mcp_memory.deps import Deps
from mcp_memory.errors import ConfigError
from mcp_memory.access.gate import Gate
from mcp_memory.http.api import PageApi
from mcp_memory.http.auth import OneAuthorization, sdk_auth, token_verifier
from mcp_memory.http.guard import Guard
from mcp_memory.http.page import static_routes
from mcp_memory.http.metrics import metrics_route
from mcp_memory.http.sessions import SessionBounds
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

if TYPE_CHECKING:
    import uvicorn

__all__ = ["build_http_app", "check_binding", "serve_http", "transport_security"]

logger = logging.getLogger("mcp_memory")

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); any other name counts as public."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(settings: Settings, host: str, insecure_no_auth: bool) -> None:
    """Refuse a non-loopback bind without authentication, unless the operator insists.

    Raises:
        ConfigError: ``host`` is not loopback, no ``[auth]`` is configured and
            ``insecure_no_auth`` is False (one line saying how to add a token).
    """
    if is_loopback(host) or settings.auth.enabled:
        return
    if not insecure_no_auth:
        raise ConfigError(
            f"refusing to serve on {host} without authentication: create a token with "
            "`mcp-memory token new --name NAME --sessions 'PATTERN'` and paste its [[auth.tokens]] entry into "
            "config.toml, then start with --config config.toml (or configure [auth.oauth]), or pass "
            "--insecure-no-auth"
        )
    logger.warning("serving on %s WITHOUT authentication (--insecure-no-auth): anyone who reaches the port "
                   "can read and delete every session", host)


def _bracketed(host: str) -> str:
    """An IPv6 address as it appears in a Host header ([::1]); names and IPv4 as they are."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _own_names() -> list[str]:
    """This machine's host name, its fully qualified name and every interface address: the names
    a client on the network can use for a server bound to every address (0.0.0.0 or ::)."""
    import socket

    import psutil

    names = [socket.gethostname(), socket.getfqdn()]
    for addresses in psutil.net_if_addrs().values():
        names += [a.address.split("%")[0] for a in addresses if a.family in (socket.AF_INET, socket.AF_INET6)]
    return [_bracketed(name) for name in names if name]


def transport_security(settings: Settings, host: str) -> TransportSecuritySettings:
    """The SDK's Host and Origin checks, on for every bind address.

    Accepted Host names: the loopback names, the bind address (for 0.0.0.0 or ``::``, this
    machine's host name and interface addresses too, the names clients on the network use),
    the host of ``auth.oauth.resource_url``, and ``[http] allowed_hosts`` (a proxy's public name);
    each with and without a port. Origins: their ``http``/``https`` origins plus ``[http]
    allowed_origins``. A request with another Host gets 421, another Origin 403: a DNS-rebinding
    page's Host is its own domain, never one of these.
    """
    bound = [_bracketed(host), *(_own_names() if host.strip("[]") in ("0.0.0.0", "::") else [])]
    names = list(dict.fromkeys([*_LOOPBACK_NAMES, *bound]))
    if settings.auth.oauth is not None and (public := urlsplit(settings.auth.oauth.resource_url).hostname):
        names.append(_bracketed(public))
    hosts = list(dict.fromkeys([h for n in names for h in (n, f"{n}:*")] + (settings.http.allowed_hosts or [])))
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts if "/" not in h]
    origins = list(dict.fromkeys(origins + (settings.http.allowed_origins or [])))
    if not is_loopback(host):
        logger.info("accepting Host %s (add names clients use to [http] allowed_hosts)", ", ".join(names))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def build_http_app(settings: Settings, deps: Deps, host: str, stateless: bool, json_response: bool = True) -> Starlette:
    """The Starlette app serving MCP at ``/mcp`` (and ``/health``, ``/metrics``), and the read-only page
    at ``/`` with its API under ``/api/`` (``http/page.py``, ``http/api.py``), over ``deps``; every
    request passes ``Guard`` first (Host and Origin checks, security headers, a 500 of last resort).

    Args:
        settings: the loaded settings.
        deps: started dependencies shared by every request.
        host: the bind address (the SDK derives its DNS-rebinding defaults from it).
        stateless: no MCP sessions; every request stands alone. Otherwise sessions are bounded
            (``http.max_sessions`` in total, ``http.max_sessions_per_client`` per client: see
            ``http/sessions.py``) and closed after ``http.session_idle_timeout_s`` without a request.
        json_response: one JSON body per POST instead of an SSE stream.
    """
    gate = Gate.for_http(settings)  # one gate: the page's API counts against a token's rate limit as tools do
    server = build_server(settings, deps, gate=gate, auth=sdk_auth(settings.auth),
                          token_verifier=token_verifier(settings.auth))
    security = transport_security(settings, host)
    page = static_routes() + PageApi(settings, deps, gate).routes()
    if stateless:
        app = server.streamable_http_app(stateless_http=True, json_response=json_response, host=host,
                                         transport_security=security)
        app.router.routes.extend(page)
        app.router.routes.append(metrics_route(deps.metrics, settings, security))
        if settings.auth.enabled:
            app.add_middleware(OneAuthorization)
        app.add_middleware(Guard, security=security)  # outermost: before routing, auth and the SDK
        return app
    http = settings.http
    app = server.streamable_http_app(
        json_response=json_response, host=host, transport_security=security,
        session_idle_timeout=http.session_idle_timeout_s, max_sessions=http.max_sessions,
    )
    app.router.routes.extend(page)
    app.router.routes.append(metrics_route(deps.metrics, settings, security))
    if settings.auth.enabled:
        app.add_middleware(OneAuthorization)  # before the SDK reads the first of several
    # Inside the SDK's authentication (after its middleware, not around it): a client is then its
    # verified identity, not the text of its token, which an OAuth user can refresh at will.
    app.user_middleware.append(Middleware(SessionBounds, max_per_client=http.max_sessions_per_client,
                                          idle_timeout_s=http.session_idle_timeout_s))
    app.add_middleware(Guard, security=security)  # outermost: before routing, auth and the SDK
    return app


async def _announce_when_listening(http: uvicorn.Server, host: str, port: int) -> None:
    """Log where MCP is served once uvicorn has bound the port (not before: a taken port logs only its error)."""
    while not http.started:
        await asyncio.sleep(0.02)
    logger.info("serving MCP at http://%s:%d/mcp (health at /health, metrics at /metrics, the page at /)", host,
                port)


async def serve_http(
    settings: Settings, host: str, port: int, stateless: bool, json_response: bool = True,
    insecure_no_auth: bool = False,
) -> None:
    """Serve streamable HTTP until stopped.

    ``json_response``: answer each POST with one ``application/json`` body rather than an SSE
    stream. No tool sends anything before its result, so the stream only cost time: 1.05-1.06x p50
    with one client and 1.12-1.15x recalls/s at concurrency 10 (benchmarks/RESULTS.md); the MCP
    specification (transports, streamable HTTP) requires clients to accept both.

    Raises:
        ConfigError: the port could not be bound, or a non-loopback ``host`` without auth (``check_binding``).
    """
    import uvicorn

    check_binding(settings, host, insecure_no_auth)
    deps = Deps(settings)
    await deps.start()  # fail before listening: no healthy endpoint on a broken start
    await deps.ready()
    app = build_http_app(settings, deps, host, stateless, json_response)
    # log_config=None: uvicorn's own lines go through our handler too (one format, --log-format json)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", log_config=None)
    http = uvicorn.Server(config)
    announce = asyncio.create_task(_announce_when_listening(http, host, port))
    try:
        await http.serve()
    except SystemExit:
        if http.started:
            raise
    finally:
        announce.cancel()
        await deps.close()
    if not http.started:  # uvicorn logs the bind error and exits instead of raising it
        raise ConfigError(f"could not listen on {host}:{port} (see the error above); pick another --port")

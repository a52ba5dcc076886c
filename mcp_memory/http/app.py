"""Build and serve the streamable HTTP app (``mcp-memory serve --transport http``)."""

from __future__ import annotations

import logging

from starlette.applications import Starlette

from mcp_memory.deps import Deps
from mcp_memory.errors import ConfigError
from mcp_memory.http.sessions import SessionBounds
from mcp_memory.server import build_server
from mcp_memory.settings import Settings

__all__ = ["build_http_app", "serve_http"]

logger = logging.getLogger("mcp_memory")


def build_http_app(settings: Settings, deps: Deps, host: str, stateless: bool, json_response: bool = True) -> Starlette:
    """The Starlette app serving MCP at ``/mcp`` (and ``/health``) over ``deps``.

    Args:
        settings: the loaded settings.
        deps: started dependencies shared by every request.
        host: the bind address (the SDK derives its DNS-rebinding defaults from it).
        stateless: no MCP sessions; every request stands alone. Otherwise sessions are bounded
            (``http.max_sessions`` in total, ``http.max_sessions_per_client`` per client: see
            ``http/sessions.py``) and closed after ``http.session_idle_timeout_s`` without a request.
        json_response: one JSON body per POST instead of an SSE stream.
    """
    server = build_server(settings, deps)
    if stateless:
        return server.streamable_http_app(stateless_http=True, json_response=json_response, host=host)
    http = settings.http
    app = server.streamable_http_app(
        json_response=json_response, host=host,
        session_idle_timeout=http.session_idle_timeout_s, max_sessions=http.max_sessions,
    )
    app.add_middleware(SessionBounds, max_per_client=http.max_sessions_per_client,
                       idle_timeout_s=http.session_idle_timeout_s)
    return app


async def serve_http(settings: Settings, host: str, port: int, stateless: bool, json_response: bool = True) -> None:
    """Serve streamable HTTP until stopped.

    ``json_response``: answer each POST with one ``application/json`` body rather than an SSE
    stream. No tool sends anything before its result, so the stream only cost time: 1.05-1.06x p50
    with one client and 1.12-1.15x recalls/s at concurrency 10 (benchmarks/RESULTS.md); the MCP
    specification (transports, streamable HTTP) requires clients to accept both.

    Raises:
        ConfigError: the port could not be bound.
    """
    import uvicorn

    deps = Deps(settings)
    await deps.start()  # fail before listening: no healthy endpoint on a broken start
    await deps.ready()
    app = build_http_app(settings, deps, host, stateless, json_response)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    logger.info("serving MCP at http://%s:%d/mcp (health at /health)", host, port)
    try:
        await http.serve()
    except SystemExit:
        if http.started:
            raise
    finally:
        await deps.close()
    if not http.started:  # uvicorn logs the bind error and exits instead of raising it
        raise ConfigError(f"could not listen on {host}:{port} (see the error above); pick another --port")

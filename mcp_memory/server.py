"""build_server(settings) -> MCPServer: the five tools (tools.py) served with a lifespan and health routes.

Every tool is built with ``arguments.checked_tool`` (strict argument types; nested models inlined,
since strict clients reject ``$ref``), and every call passes ``observe.calls``.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings as SdkAuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp_memory import __version__
from mcp_memory.access.gate import Gate
from mcp_memory.arguments import checked_tool
from mcp_memory.deps import Deps
from mcp_memory.jsonrpc import AnswerEveryRequest
from mcp_memory.observe.calls import CallObserver
from mcp_memory.settings import Settings
from mcp_memory.tools import ANNOTATIONS, build_tools

__all__ = ["build_server"]

INSTRUCTIONS = (
    "Long-term memory. Store facts, events and preferences worth keeping with store_memory (raw text, and "
    "occurred_at when it happened), and look them up with recall_memory before answering questions about the "
    "past. When a new fact replaces an older one, pass the older memory_id in store_memory's supersedes: "
    "recall then prefers the current fact and keeps the old one as history. Every call names a session (a user, "
    "project, task or agent); memories never cross sessions."
)


class _Server(MCPServer):
    """An MCPServer whose streamable HTTP app answers every JSON-RPC request (jsonrpc.py), and whose
    every tool call is timed, counted and logged in one place (observe/calls.py)."""

    calls: CallObserver

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        return await self.calls.observe(name, arguments, lambda: MCPServer.call_tool(self, name, arguments, context))

    def streamable_http_app(self, **kwargs: Any) -> Starlette:
        app = super().streamable_http_app(**kwargs)
        # Inside the SDK's authentication middleware (when auth is on), so the token is checked before
        # the body: a caller without a known token gets the SDK's 401, whatever it sent.
        app.user_middleware.append(Middleware(AnswerEveryRequest, path=kwargs.get("streamable_http_path", "/mcp")))
        return app


def build_server(
    settings: Settings,
    deps: Deps | None = None,
    *,
    gate: Gate | None = None,
    auth: SdkAuthSettings | None = None,
    token_verifier: TokenVerifier | None = None,
) -> MCPServer:
    """Build the MCP server.

    Args:
        settings: the configuration.
        deps: started resources to share (tests, several servers in one process); when None
            the server starts its own in the background at start-up and closes them on exit.
        gate: who may use which session; None: stdio's rules (``[stdio] sessions``).
        auth, token_verifier: the SDK's bearer-token wiring for HTTP (``mcp_memory.http.auth``).

    Returns:
        An MCPServer; run it with ``run_stdio_async`` or serve ``streamable_http_app()``.
    """
    owned = deps is None
    resources = deps or Deps(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[Deps]:
        async with anyio.create_task_group() as group:
            group.start_soon(resources.start)
            try:
                yield resources
            finally:
                group.cancel_scope.cancel()
                if owned:
                    with anyio.CancelScope(shield=True):
                        await resources.close()

    server = _Server(
        name="mcp-memory",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        tools=[checked_tool(fn, ANNOTATIONS[fn.__name__])
               for fn in build_tools(settings, resources, gate or Gate.for_stdio(settings))],
        log_level=settings.log_level,
        auth=auth,
        token_verifier=token_verifier,
    )

    server.calls = CallObserver(resources.metrics, ANNOTATIONS)

    @server.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> JSONResponse:
        """Readiness: 200 only when started and PostgreSQL answers a bounded SELECT 1; else 503 and why."""
        status = await resources.health()
        return JSONResponse(status, status_code=200 if status["status"] == "ready" else 503)

    @server.custom_route("/health/live", methods=["GET"])
    async def live(_: Request) -> JSONResponse:
        """Liveness: the process runs and answers HTTP (restart it only when this fails)."""
        return JSONResponse({"status": "live"})

    return server

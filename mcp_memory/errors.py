"""Errors raised by mcp-memory, drawn as a tree.

    McpMemoryError                 base; its message is what an agent or operator reads
    ├── InvalidInput               a tool argument broke a rule; names the field and the limit
    ├── NotFound                   a named thing does not exist in the caller's session
    ├── Forbidden                  the caller's token may not use this session or this tool
    ├── RateLimited                the caller's token made too many calls; says when to retry
    ├── ConfigError                settings that cannot work (bad URL, missing model, ...)
    ├── SchemaError                the database does not fit this server (pgvector too old, model changed)
    └── ProviderError              an outside service failed
        ├── DatabaseUnavailable    PostgreSQL could not be reached or dropped the connection
        ├── StatementTimeout       a statement ran past statement_timeout_ms and PostgreSQL stopped it
        ├── EmbeddingError         the embedding model or endpoint failed
        └── ChatError              the LLM endpoint failed or answered nonsense
            └── MalformedReply     it answered, but not with the JSON asked for (after one repair)

``McpMemoryError`` subclasses the MCP SDK's ``ToolError`` so that a tool which raises one
reaches the client as an ``isError`` result carrying this message; any other exception is
reported by the SDK as "Error executing tool X" with its text hidden.
"""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError

__all__ = [
    "ChatError",
    "ConfigError",
    "DatabaseUnavailable",
    "EmbeddingError",
    "Forbidden",
    "InvalidInput",
    "MalformedReply",
    "McpMemoryError",
    "NotFound",
    "ProviderError",
    "RateLimited",
    "SchemaError",
    "StatementTimeout",
]


class McpMemoryError(ToolError):
    """Base of every error this package raises on purpose."""


class InvalidInput(McpMemoryError, ValueError):
    """A tool argument broke a rule. The message names the field and the limit."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"{field}: {problem}")


class NotFound(McpMemoryError, LookupError):
    """A memory or other named thing does not exist in the caller's session."""


class Forbidden(McpMemoryError, PermissionError):
    """The caller's token may not do this: a session outside its patterns, or a delete without can_delete."""


class RateLimited(McpMemoryError):
    """The caller's token went over its calls per minute; ``retry_after_s`` says when one more is allowed."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(message)


class ConfigError(McpMemoryError):
    """The settings cannot work; the message says which key and what to set."""


class SchemaError(McpMemoryError):
    """The database does not fit this server (extension too old, embedding model changed)."""


class ProviderError(McpMemoryError):
    """An outside service (database, embedding model, LLM endpoint) failed."""


class DatabaseUnavailable(ProviderError):
    """PostgreSQL could not be reached or closed the connection; the call may be retried."""


class StatementTimeout(ProviderError):
    """PostgreSQL stopped a statement at ``statement_timeout_ms`` (its transaction, if any, rolled back)."""


class EmbeddingError(ProviderError):
    """The embedding model could not load, or the embedding endpoint failed."""


class ChatError(ProviderError):
    """The LLM endpoint failed, timed out, or answered with something unusable."""


class MalformedReply(ChatError):
    """The LLM answered, but not with the JSON object asked for, even after one repair request."""

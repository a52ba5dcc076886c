"""The call hook's labels: a fixed error kind per failure, a session hash that is not the name."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError

from mcp_memory import errors
from mcp_memory.observe.calls import error_kind, session_hash


def _wrapped(cause: BaseException) -> ToolError:
    """As the SDK raises it: a ToolError whose cause is what the tool raised."""
    try:
        raise ToolError("Error executing tool recall_memory: ...") from cause
    except ToolError as exc:
        return exc


@pytest.mark.parametrize(("raised", "kind"), [
    (errors.InvalidInput("query", "must not be empty"), "invalid_input"),
    (errors.Forbidden("session: no"), "forbidden"),
    (errors.RateLimited("rate limit", 3), "rate_limited"),
    (errors.DatabaseUnavailable("down"), "database_unavailable"),
    (errors.StatementTimeout("slow"), "statement_timeout"),
    (errors.MalformedReply("not JSON"), "malformed_reply"),
])
def test_an_error_of_ours_is_counted_by_its_class_also_behind_the_sdk_wrapper(raised, kind) -> None:
    assert error_kind(raised) == kind
    assert error_kind(_wrapped(raised)) == kind


def test_failures_that_are_not_ours_get_one_of_three_fixed_kinds() -> None:
    assert error_kind(ToolError("Unknown tool: x" * 50)) == "tool_error"  # the caller's text never becomes a label
    assert error_kind(UnexpectedToolError("Error executing tool x")) == "internal"
    assert error_kind(RuntimeError("boom")) == "internal"
    assert error_kind(asyncio.CancelledError()) == "cancelled"


def test_a_session_is_logged_as_the_first_12_hex_digits_of_its_sha256() -> None:
    assert session_hash("team:alpha:notes") == hashlib.sha256(b"team:alpha:notes").hexdigest()[:12]
    assert session_hash("caf\u00e9") == hashlib.sha256("caf\u00e9".encode()).hexdigest()[:12]
    assert session_hash(None) == "-" and session_hash(5) == "-"

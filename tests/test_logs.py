"""Log lines of real servers: one line per tool call at INFO, with no session name, content or
query text; ``--log-format json``; the SDK's per-session line only at DEBUG."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from processes import (  # noqa: F401 - fresh_db and spawn are fixtures
    CALL_TIMEOUT_S,
    Spawner,
    fresh_db,
    free_port,
    raw_caller,
    sdk_caller,
    spawn,
)

pytestmark = pytest.mark.anyio

SESSION = "logs:carol-private-session"
CONTENT = "Carol keeps the spare key under the blue flowerpot"
QUERY = "where does carol keep the spare key"
CALL_LINE = re.compile(r" INFO mcp_memory\.calls: tool call request_id=(?P<id>[0-9a-f]{16}) tool=(?P<tool>\S+) "
                       r"session=(?P<session>\S+) duration_ms=(?P<ms>[0-9.]+) outcome=(?P<outcome>\S+)$")


def hashed(session: str) -> str:
    return hashlib.sha256(session.encode()).hexdigest()[:12]


async def _three_calls(call) -> None:
    stored = await call("store_memory", {"session": SESSION, "content": CONTENT})
    assert not stored.is_error, stored.text
    recalled = await call("recall_memory", {"session": SESSION, "query": QUERY})
    assert not recalled.is_error, recalled.text
    assert (await call("store_memory", {"session": SESSION, "content": "  "})).is_error


@asynccontextmanager
async def _logged_client(spawner: Spawner, database_url: str, level: str) -> AsyncIterator[tuple[Client, Path]]:
    """A legacy SDK client of an HTTP server logging at ``level``, and that server's log file."""
    port = free_port()
    server = spawner.http(spawner.data_dir(), port, "--log-level", level, MCP_MEMORY_DATABASE_URL=database_url)
    server.wait_healthy(port)
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(CALL_TIMEOUT_S)) as http:
        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode="legacy",
                          read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client, server.log_path


@pytest.fixture
async def http_client(spawn: Spawner, fresh_db: str) -> AsyncIterator[tuple[Client, Path]]:
    async with _logged_client(spawn, fresh_db, "INFO") as connected:
        yield connected


async def test_each_http_tool_call_logs_one_info_line_without_session_name_content_or_query(http_client) -> None:
    client, log_path = http_client
    await _three_calls(sdk_caller(client))

    stderr = log_path.read_text(encoding="utf-8")
    lines = [match.groupdict() for line in stderr.splitlines() if (match := CALL_LINE.search(line))]
    assert [(line["tool"], line["session"], line["outcome"]) for line in lines] == [
        ("store_memory", hashed(SESSION), "ok"),
        ("recall_memory", hashed(SESSION), "ok"),
        ("store_memory", hashed(SESSION), "invalid_input"),
    ]
    assert len({line["id"] for line in lines}) == 3  # a request id of its own per call
    assert all(float(line["ms"]) > 0 for line in lines)
    assert SESSION not in stderr and CONTENT not in stderr and QUERY not in stderr
    assert "Created new transport" not in stderr  # the SDK's per-session line is DEBUG


async def test_json_log_format_writes_one_object_per_line_with_the_call_fields(spawn: Spawner, fresh_db: str) -> None:
    server = spawn.stdio(spawn.data_dir(), "--log-format", "json", MCP_MEMORY_DATABASE_URL=fresh_db)
    server.initialize("2025-06-18")
    await _three_calls(raw_caller(server))
    server.close_stdin()
    assert server.wait() == 0

    records = [json.loads(line) for line in server.stderr.splitlines()]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= record.keys() for record in records)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"]) for record in records)
    calls = [record for record in records if record["logger"] == "mcp_memory.calls"]
    assert [(c["level"], c["message"], c["tool"], c["session"], c["outcome"]) for c in calls] == [
        ("INFO", "tool call", "store_memory", hashed(SESSION), "ok"),
        ("INFO", "tool call", "recall_memory", hashed(SESSION), "ok"),
        ("INFO", "tool call", "store_memory", hashed(SESSION), "invalid_input"),
    ]
    assert all(isinstance(c["duration_ms"], float) and re.fullmatch(r"[0-9a-f]{16}", c["request_id"]) for c in calls)
    stderr = server.stderr
    assert SESSION not in stderr and CONTENT not in stderr and QUERY not in stderr


async def test_the_sdk_new_transport_line_is_logged_at_debug(spawn: Spawner, fresh_db: str) -> None:
    async with _logged_client(spawn, fresh_db, "DEBUG") as (client, log_path):
        assert not (await client.call_tool("usage_stats", {})).is_error

    created = [line for line in log_path.read_text(encoding="utf-8").splitlines() if "Created new transport" in line]
    assert len(created) == 1 and " DEBUG mcp.server.streamable_http_manager: " in created[0], created

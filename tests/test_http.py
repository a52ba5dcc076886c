"""``mcp-memory serve --transport http`` as a real process.

Tools over streamable HTTP in both protocol eras, a restart under a live session id, two
servers writing to one database at once, and PostgreSQL killing the server's connections.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx
import pytest
from mcp import Client
from processes import (  # noqa: F401 - fresh_db and spawn are fixtures
    TOOL_NAMES,
    ServerProcess,
    Spawner,
    exercise_every_tool,
    free_port,
    fresh_db,
    sdk_caller,
    spawn,
)

pytestmark = pytest.mark.anyio

CALL_TIMEOUT_S = 60


def _mcp_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def http_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One HTTP server on the shared database for the tool tests; yields its port."""
    spawner = Spawner(tmp_path_factory.mktemp("http-logs"))
    try:
        port = free_port()
        server = spawner.http(spawner.data_dir(), port, MCP_MEMORY_DATABASE_URL=pg_url)
        server.wait_healthy(port)
        yield port
    finally:
        spawner.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_tool_works_over_streamable_http(mode: str, http_server: int) -> None:
    health = httpx.get(f"http://127.0.0.1:{http_server}/health", timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ready"
    async with Client(_mcp_url(http_server), mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOL_NAMES
        await exercise_every_tool(sdk_caller(client), f"s-http-{mode}-{uuid.uuid4().hex[:8]}")


def _post(port: int, message: dict[str, Any], session_id: str | None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
    return httpx.post(_mcp_url(port), json=message, headers=headers, timeout=CALL_TIMEOUT_S)


def _result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a streamable-HTTP response (a JSON body or an SSE stream)."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        return response.json()["result"]
    data = [line[len("data:"):] for line in response.text.splitlines() if line.startswith("data:")]
    messages = [json.loads(item) for item in data if item.strip()]
    [answer] = [m for m in messages if "result" in m or "error" in m]
    return answer["result"]


@pytest.mark.parametrize(("args", "content_type"), [
    ((), "application/json"), (("--json-response",), "application/json"), (("--sse",), "text/event-stream")])
async def test_each_request_gets_one_json_body_unless_sse_is_asked_for(
    pg_url: str, spawn: Spawner, args: tuple[str, ...], content_type: str
) -> None:
    """JSON bodies by default (1.06-1.12x faster than an SSE stream per request, in
    benchmarks/RESULTS.md); ``--sse`` streams. The SDK client takes both and works with every tool."""
    port = free_port()
    server = spawn.http(spawn.data_dir("body"), port, *args, MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    init = _post(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, None)
    assert init.headers["content-type"].startswith(content_type)
    assert _result(init)["protocolVersion"] == "2025-11-25"
    async with Client(_mcp_url(port), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as client:
        await exercise_every_tool(sdk_caller(client), f"s-http-body-{uuid.uuid4().hex[:8]}")


async def test_a_restarted_server_answers_a_stale_session_with_404_and_keeps_the_memory(
    pg_url: str, spawn: Spawner
) -> None:
    """B35."""
    port = free_port()
    data_dir = spawn.data_dir("data")
    session = f"s-http-{uuid.uuid4().hex[:8]}"
    before = spawn.http(data_dir, port, MCP_MEMORY_DATABASE_URL=pg_url)
    before.wait_healthy(port)
    init = _post(port, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}, None)
    assert _result(init)["protocolVersion"] == "2025-11-25"
    old_session_id = init.headers["mcp-session-id"]
    assert _post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, old_session_id).status_code == 202
    store = _post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "store_memory", "arguments": {"session": session, "content": "Gym locker code is 4417"}}},
        old_session_id)
    memory_id = _result(store)["structuredContent"]["memory_id"]

    before.proc.terminate()
    assert before.wait() == 0
    after = spawn.http(data_dir, port, MCP_MEMORY_DATABASE_URL=pg_url)
    after.wait_healthy(port)

    stale = _post(port, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "recall_memory", "arguments": {"session": session, "query": "locker code"}}}, old_session_id)
    assert stale.status_code == 404, (stale.status_code, stale.text)

    async with Client(_mcp_url(port), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as client:
        recalled = await client.call_tool("recall_memory", {"session": session, "query": "locker code"})
    assert not recalled.is_error
    assert recalled.structured_content["memories"][0]["memory_id"] == memory_id


def _start_on(spawn: Spawner, data_dir: Path, url: str) -> tuple[ServerProcess, int]:
    port = free_port()
    return spawn.http(data_dir, port, MCP_MEMORY_DATABASE_URL=url), port


async def test_two_http_servers_on_one_database_lose_no_concurrent_write(
    fresh_db: str, spawn: Spawner
) -> None:
    """B09: 50 stores to P1 and 25 to P2, mixed with 20 recalls, all at once."""
    p1, port1 = _start_on(spawn, spawn.data_dir("p1"), fresh_db)
    p2, port2 = _start_on(spawn, spawn.data_dir("p2"), fresh_db)  # both start (and migrate) at the same time
    p1.wait_healthy(port1)
    p2.wait_healthy(port2)

    stored: dict[int, str] = {}
    recalls: list[int] = []
    errors: list[str] = []
    async with (
        Client(_mcp_url(port1), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as c1,
        Client(_mcp_url(port2), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as c2,
    ):

        async def store(client: Client, i: int) -> None:
            result = await client.call_tool(
                "store_memory", {"session": "s-c", "content": f"fact #{i}: locker {i} holds box {i}"})
            if result.is_error:
                errors.append(f"store {i}: {result.content}")
            else:
                stored[i] = result.structured_content["memory_id"]

        async def recall(client: Client, i: int) -> None:
            result = await client.call_tool("recall_memory", {"session": "s-c", "query": f"locker {i}", "top_k": 5})
            if result.is_error:
                errors.append(f"recall {i}: {result.content}")
            else:
                recalls.append(i)

        recall_after = {k * 75 // 20: k for k in range(20)}  # 20 recalls spread among the 75 stores
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for i in range(75):
                    group.start_soon(store, c1 if i < 50 else c2, i)
                    if i in recall_after:
                        group.start_soon(recall, c1 if recall_after[i] % 2 else c2, i)

        assert errors == []
        assert len(recalls) == 20
        assert sorted(stored) == list(range(75))
        assert len(set(stored.values())) == 75

        for client in (c1, c2):
            result = await client.call_tool("recall_memory", {"session": "s-c", "query": "locker 63", "top_k": 5})
            contents = [m["content"] for m in result.structured_content["memories"]]
            assert "fact #63: locker 63 holds box 63" in contents, contents

    connection = await asyncpg.connect(fresh_db)
    try:
        ids = {str(row["memory_id"]) for row in await connection.fetch(
            "SELECT memory_id FROM memories WHERE session = 's-c'")}
    finally:
        await connection.close()
    assert ids == set(stored.values())


async def test_the_server_recovers_when_postgresql_kills_its_connections(
    fresh_db: str, spawn: Spawner
) -> None:
    """B21."""
    server, port = _start_on(spawn, spawn.data_dir("data"), fresh_db)
    server.wait_healthy(port)
    async with Client(_mcp_url(port), mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as client:
        stored = await client.call_tool(
            "store_memory", {"session": "s-db", "content": "Boiler service is due in October"})
        assert not stored.is_error

        admin = await asyncpg.connect(fresh_db)
        try:
            killed = await admin.fetch(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        finally:
            await admin.close()
        assert killed and all(row[0] for row in killed), "the server's pooled connections were terminated"

        recalled = await client.call_tool("recall_memory", {"session": "s-db", "query": "boiler service"})
        assert not recalled.is_error, recalled.content
        assert recalled.structured_content["memories"][0]["memory_id"] == stored.structured_content["memory_id"]
        chimney = await client.call_tool(
            "store_memory", {"session": "s-db", "content": "Chimney sweep booked for November"})
        assert not chimney.is_error, chimney.content
        again = await client.call_tool("recall_memory", {"session": "s-db", "query": "chimney sweep"})
        assert again.structured_content["memories"][0]["memory_id"] == chimney.structured_content["memory_id"]

    assert server.proc.poll() is None, "the server process stays alive"
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200

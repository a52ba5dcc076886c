"""MCP sessions over HTTP are bounded per client and expire when idle (http/sessions.py).

An attack opened 10,000 sessions and never closed them: every later client got 503 and RSS grew
from 238 to 611 MB. Now a client (its bearer token, else its address) holds at most
``http.max_sessions_per_client`` sessions; opening another closes its least recently used one. The
memory figures are in benchmarks/RESULTS.md (benchmarks/sessions.py), not here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from processes import ServerProcess, Spawner, exercise_every_tool, free_port, sdk_caller, wait_until

from mcp_memory.http.sessions import SessionBounds

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
START_TIMEOUT_S = 240  # the first start in a data directory rewrites the model to int8; the CPU is shared


@pytest.fixture(scope="module")
def spawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spawner]:
    """Servers for this module, all on one data directory (the model is prepared once)."""
    spawner = Spawner(tmp_path_factory.mktemp("session-logs"))
    try:
        yield spawner
    finally:
        spawner.close()


def _serve(spawn: Spawner, pg_url: str, **settings: str) -> tuple[int, ServerProcess]:
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, MCP_MEMORY_DATABASE_URL=pg_url, **settings)
    server.wait_healthy(port, START_TIMEOUT_S)
    return port, server


def _post(port: int, message: dict[str, Any], session_id: str | None = None, token: str | None = None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session_id is not None:
        headers |= {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(f"http://127.0.0.1:{port}/mcp", json=message, headers=headers, timeout=TIMEOUT_S)


def _open(port: int, token: str | None = None) -> str:
    response = _post(port, INITIALIZE, token=token)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


def _alive(port: int, session_id: str, token: str | None = None) -> bool:
    status = _post(port, PING, session_id, token).status_code
    assert status in (200, 404), status
    return status == 200


async def test_a_client_past_its_session_bound_loses_its_oldest_sessions_and_others_are_served(
    pg_url: str, spawn: Spawner
) -> None:
    port, _ = _serve(spawn, pg_url, MCP_MEMORY_HTTP__MAX_SESSIONS_PER_CLIENT="3", MCP_MEMORY_HTTP__MAX_SESSIONS="8")

    flood = [_open(port) for _ in range(12)]  # one address, never closed
    assert [_alive(port, session_id) for session_id in flood] == [False] * 9 + [True] * 3

    # Another key (a bearer token's hash) has a bound of its own and leaves the address's sessions alone.
    other = [_open(port, token="token-b") for _ in range(4)]
    assert [_alive(port, session_id, "token-b") for session_id in other] == [False, True, True, True]
    assert [_alive(port, session_id) for session_id in flood[-3:]] == [True] * 3

    # Using a session keeps it: the least recently *used* one goes first.
    assert _alive(port, flood[-3])
    newest = _open(port)
    assert [_alive(port, s) for s in (flood[-3], flood[-2], flood[-1], newest)] == [True, False, True, True]

    # A legitimate client from the same address is served in full.
    async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", read_timeout_seconds=TIMEOUT_S) as client:
        await exercise_every_tool(sdk_caller(client), f"s-bound-{uuid.uuid4().hex[:8]}")

    # The client closed its session on exit, so the address holds 2. The total stays the SDK's bound:
    # 2 (address) + 3 (token-b) + 3 (token-c) fill 8, and a client with a session of none gets 503.
    assert [_post(port, INITIALIZE, token="token-c").status_code for _ in range(3)] == [200, 200, 200]
    refused = _post(port, INITIALIZE, token="token-d")
    assert refused.status_code == 503 and "Too many open sessions" in refused.text
    assert _alive(port, _open(port, token="token-b"), "token-b")  # at its own bound: its oldest makes room


async def test_an_idle_session_is_closed_after_the_configured_timeout_and_the_sdk_says_so_at_debug(
        pg_url: str, spawn: Spawner) -> None:
    """The SDK's "Session ... idle timeout" line came at INFO, one per session, though its other
    per-session lines are at DEBUG (observe/logs.py)."""
    port, server = _serve(spawn, pg_url, MCP_MEMORY_HTTP__SESSION_IDLE_TIMEOUT_S="1", MCP_MEMORY_LOG_LEVEL="DEBUG")

    session_id = _open(port)
    # Watched in the server's log, since any request to the session would keep it alive.
    wait_until(lambda: f"Session {session_id} idle timeout" in server.stderr, 30, "the idle session to be closed")
    said = [line for line in server.stderr.splitlines() if f"Session {session_id} idle timeout" in line]
    assert len(said) == 1 and " DEBUG mcp.server.streamable_http_manager: " in said[0], said
    assert not _alive(port, session_id)
    gone = [line for line in server.stderr.splitlines() if "Rejected request with unknown or expired session" in line]
    assert len(gone) == 1 and " DEBUG mcp.server.streamable_http_manager: " in gone[0], gone
    assert _alive(port, _open(port))


async def test_the_bound_forgets_sessions_the_sdk_has_expired_so_its_table_stays_small() -> None:
    """Many clients of one session each: after the idle timeout the table holds only the new one."""
    now = [0.0]
    opened: list[str] = []

    async def sdk_stand_in(scope: Any, receive: Any, send: Any) -> None:  # a new session id per POST without one
        headers = []
        if scope["method"] == "POST" and not any(k == b"mcp-session-id" for k, _ in scope["headers"]):
            opened.append(uuid.uuid4().hex)
            headers.append((b"mcp-session-id", opened[-1].encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    async def post(bounds: SessionBounds, address: str) -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            pass

        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [(b"host", b"127.0.0.1")],
                 "client": (address, 5000)}
        await bounds(scope, receive, send)

    bounds = SessionBounds(sdk_stand_in, max_per_client=2, idle_timeout_s=10, clock=lambda: now[0])
    for number in range(50):
        await post(bounds, f"10.0.0.{number}")
    assert bounds.open_sessions() == 50 and bounds.open_sessions("addr:10.0.0.7") == 1

    now[0] = 10.5
    await post(bounds, "10.0.1.1")
    assert bounds.open_sessions() == 1 and len(opened) == 51

"""``mcp-memory serve`` on stdio, spawned as a real process: every protocol version, clean stdout, slow providers.

Most servers here use the shared embedded PostgreSQL (``pg_url``) so no test pays for initdb;
the B25 test runs a fresh data directory on purpose.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from processes import (  # noqa: F401 - fresh_db and spawn are fixtures
    MCP_MEMORY,
    TOOL_NAMES,
    Spawner,
    exercise_every_tool,
    free_port,
    fresh_db,
    raw_caller,
    sdk_caller,
    server_env,
    spawn,
    wait_until,
)

pytestmark = pytest.mark.anyio


def _session() -> str:
    return f"s-stdio-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_tool_works_through_the_sdk_client_over_stdio(
    mode: str, pg_url: str, tmp_path: Path, spawn: Spawner
) -> None:
    env = server_env(spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=pg_url)
    params = StdioServerParameters(command=MCP_MEMORY, args=["serve"], env=env)
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=60) as client:
            # legacy mode offers the newest handshake version (2025-11-25); the other adopts 2026-07-28 directly
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            tools = await client.list_tools()
            assert {tool.name for tool in tools.tools} == TOOL_NAMES
            await exercise_every_tool(sdk_caller(client), _session())


async def test_every_tool_works_over_raw_json_rpc_with_handshake_2025_06_18(pg_url: str, spawn: Spawner) -> None:
    server = spawn.stdio(spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=pg_url)
    initialized = server.initialize("2025-06-18")
    assert initialized["protocolVersion"] == "2025-06-18"
    assert initialized["serverInfo"]["name"] == "mcp-memory"
    assert {tool["name"] for tool in server.call("tools/list")["tools"]} == TOOL_NAMES
    await exercise_every_tool(raw_caller(server), _session())
    server.close_stdin()
    assert server.wait() == 0


async def test_stdout_carries_only_json_rpc_on_a_first_run_with_debug_logging(spawn: Spawner) -> None:
    """B25: a fresh data directory (initdb runs), DEBUG logs; every stdout line is one JSON-RPC 2.0 message."""
    data_dir = spawn.data_dir("fresh")
    server = spawn.stdio(data_dir, MCP_MEMORY_LOG_LEVEL="DEBUG")
    server.initialize("2025-11-25")
    assert {tool["name"] for tool in server.call("tools/list")["tools"]} == TOOL_NAMES
    await exercise_every_tool(raw_caller(server), "s-b25")
    server.close_stdin()
    assert server.wait() == 0

    assert (data_dir / "pg" / "PG_VERSION").exists(), "the embedded cluster was initialised by this run"
    assert len(server.lines) >= 10
    for line in server.lines:
        message = json.loads(line)
        assert isinstance(message, dict) and message["jsonrpc"] == "2.0", line
        assert ("id" in message) or ("method" in message), line
    assert "DEBUG" in server.stderr, "debug logs go to stderr"


async def test_handshake_and_tools_list_are_answered_while_an_embedding_request_is_pending(
    fresh_db: str, spawn: Spawner
) -> None:
    """B32 (and B20 step 4): a provider that holds each request never blocks the other requests.

    Once the store's embedding request is held by the fake, tools/list and other tools answer
    while the store has not; stopping the fake makes the provider unreachable, and the store
    fails with an error naming the provider instead of falling back to another model.
    """
    fake = FakeOpenAI(embedding_dim=384, embedding_model="slow-384").start()
    fake.embedding_delay_s = 60.0  # released by fake.stop(); the test never waits for it
    try:
        server = spawn.stdio(
            spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=fresh_db, MCP_MEMORY_EMBEDDING__PROVIDER="openai",
            MCP_MEMORY_EMBEDDING__BASE_URL=fake.base_url, MCP_MEMORY_EMBEDDING__MODEL="slow-384",
            MCP_MEMORY_EMBEDDING__DIM="384",
        )
        server.initialize("2025-11-25")
        store_id = server.request("tools/call", {"name": "store_memory",
                                                 "arguments": {"session": "s-slow", "content": "hello"}})
        wait_until(lambda: len(fake.embedding_requests()) == 1, 60, "the store's embedding request")

        tools = server.call("tools/list")
        assert {tool["name"] for tool in tools["tools"]} == TOOL_NAMES
        audits = server.tool("list_audits", {"session": "s-slow"})
        assert not audits.get("isError") and audits["structuredContent"]["audits"] == []
        usage = server.tool("usage_stats", {})
        assert not usage.get("isError")
        assert store_id not in server.answered, "store_memory must still be waiting for its embedding"

        fake.stop()  # the held request is dropped and the provider is now unreachable
        store = server.response(store_id)["result"]
        assert store["isError"] is True
        text = store["content"][0]["text"]
        assert fake.base_url in text and "slow-384" in text, text
        recall = server.tool("recall_memory", {"session": "s-slow", "query": "hello"})  # keyword lists only
        assert not recall.get("isError") and recall["structuredContent"]["memories"] == [], recall
        audit = server.tool("list_audits", {"session": "s-slow", "kind": "recall"})["structuredContent"]["audits"][0]
        assert fake.base_url in audit["detail"]["embed_note"], audit
        server.close_stdin()
        assert server.wait() == 0
    finally:
        fake.stop()


async def test_a_model_that_cannot_be_downloaded_fails_the_call_with_an_actionable_error(
    pg_url: str, spawn: Spawner
) -> None:
    """B34: a non-default fastembed model, an empty cache and a dead proxy: no hang, a clear error.

    fastembed retries its downloads with sleeps of 3, 9 and 27 seconds, so the error arrives
    after about 40-45 s; tools/list answers at once meanwhile.
    """
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    server = spawn.stdio(
        spawn.data_dir("data"), MCP_MEMORY_DATABASE_URL=pg_url, MCP_MEMORY_EMBEDDING__MODEL="BAAI/bge-small-en-v1.5",
        HTTPS_PROXY=dead_proxy, HTTP_PROXY=dead_proxy, https_proxy=dead_proxy, http_proxy=dead_proxy,
        NO_PROXY="", no_proxy="",
    )
    server.initialize("2025-11-25")
    started = time.monotonic()
    store_id = server.request("tools/call", {"name": "store_memory",
                                             "arguments": {"session": "s-nomodel", "content": "hello"}})
    assert {tool["name"] for tool in server.call("tools/list")["tools"]} == TOOL_NAMES
    assert store_id not in server.answered

    store = server.response(store_id, timeout_s=120)["result"]
    elapsed_s = time.monotonic() - started
    assert store["isError"] is True
    text = store["content"][0]["text"]
    assert "BAAI/bge-small-en-v1.5" in text, text
    # the offline extra only carries the default model, so it is not offered for this one
    assert "needs network access" in text and "MCP_MEMORY_EMBEDDING__MODEL_PATH" in text, text
    assert "offline extra" not in text, text
    assert "TaskGroup" not in text, text
    assert elapsed_s < 90, f"the download attempts took {elapsed_s:.0f} s"
    assert {tool["name"] for tool in server.call("tools/list")["tools"]} == TOOL_NAMES
    server.close_stdin()
    assert server.wait() == 0

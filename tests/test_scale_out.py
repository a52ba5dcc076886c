"""Several ``mcp-memory serve`` processes on one PostgreSQL, as behind a load balancer
(docs/scale-out.md).

Four servers share one database: A and B keep MCP sessions for legacy clients, C and D are
``--stateless``. tests/round_robin.py alternates requests between two of them: a legacy client
needs C and D; a 2026-07-28 client (every request a self-contained POST, no ``Mcp-Session-Id``)
works with either pair. Every write acknowledged by one process is seen by the
next read on any other: recall on another process finds a memory the moment its store returned
(the other process's vector copy learns of it from the session's version row,
embedding/vector_cache.py) and never returns one deleted elsewhere. A process SIGKILLed under load
loses no acknowledged memory: its writers fail over to the others with the same idempotency key
(tests/writers.py), and every acknowledged memory_id is then found by recall and by
``mcp-memory export`` through the survivors.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from processes import MCP_MEMORY, ServerProcess, Spawner, create_database, drop_database, free_port, server_env, wait_until
from round_robin import RoundRobin
from writers import Writers

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60
START_TIMEOUT_S = 180  # four servers load the model at once on a shared 2-core machine
FLOAT32 = {"MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION": "false"}  # no int8 rewrite per data dir (4 s, 480 MB each)

# A fact and a question that shares no word with it: only the vector list can find it, so a
# process whose vector copy missed the store would not return it.
PAIRS = [
    ("The cat naps on the windowsill every afternoon", "where does the kitten sleep during the day?"),
    ("My dentist appointment moved to Thursday morning", "when is the tooth doctor visit?"),
    ("We planted three apple trees behind the garage", "what fruit did they grow in the yard?"),
    ("Grandma bakes cinnamon rolls for every birthday", "which pastry appears at celebrations?"),
]
FILLER = [f"Inventory line {n}: crate {n} of copper fittings shelved in aisle {n % 7}" for n in range(30)]


@pytest.fixture(scope="module")
async def shared_db(pg_url: str) -> AsyncIterator[str]:
    url = await create_database(pg_url)
    try:
        yield url
    finally:
        await drop_database(pg_url, url)


@pytest.fixture(scope="module")
def servers(shared_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """A and B keep sessions, C and D are --stateless; all on ``shared_db``. Yields name -> port."""
    spawner = Spawner(tmp_path_factory.mktemp("scale-out-logs"))
    try:
        started: dict[str, tuple[int, ServerProcess]] = {}
        for name in "ABCD":
            port = free_port()
            args = ["--stateless"] if name in "CD" else []
            started[name] = port, spawner.http(spawner.data_dir(name), port, *args,
                                               MCP_MEMORY_DATABASE_URL=shared_db, **FLOAT32)
        for port, server in started.values():
            server.wait_healthy(port, START_TIMEOUT_S)
        yield {name: port for name, (port, _) in started.items()}
    finally:
        spawner.close()


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def _recalled(client: Client, session: str, query: str) -> list[str]:
    found = await _call(client, "recall_memory", {"session": session, "query": query, "top_k": 5})
    return [memory["memory_id"] for memory in found["memories"]]


async def test_a_store_on_one_process_is_recalled_at_once_on_another_and_a_delete_is_never_returned(
    servers: dict[str, int],
) -> None:
    session = f"scale-{uuid.uuid4().hex[:8]}"
    async with (
        Client(_url(servers["A"]), mode="2026-07-28", read_timeout_seconds=TIMEOUT_S) as a,
        Client(_url(servers["B"]), mode="2026-07-28", read_timeout_seconds=TIMEOUT_S) as b,
    ):
        for text in FILLER:
            await _call(a, "store_memory", {"session": session, "content": text})
        assert await _recalled(b, session, "copper fittings in aisle 3")  # B now holds a copy of the session

        stored: dict[str, str] = {}
        for number, (fact, question) in enumerate(PAIRS):
            writer, reader = (a, b) if number % 2 == 0 else (b, a)
            memory_id = (await _call(writer, "store_memory", {"session": session, "content": fact}))["memory_id"]
            stored[fact] = memory_id
            assert memory_id in await _recalled(reader, session, question), (fact, "not seen by the other process")

        for number, (fact, question) in enumerate(PAIRS):
            deleter, reader = (a, b) if number % 2 == 0 else (b, a)
            assert await _call(deleter, "delete_memory", {"session": session, "memory_id": stored[fact]}) == {
                "deleted": True, "count": 1}
            assert stored[fact] not in await _recalled(reader, session, question)
            assert stored[fact] not in await _recalled(reader, session, fact)  # its own words, the nearest vector

        # The whole session deleted on one process and refilled: the other sees only the new memory.
        assert (await _call(a, "delete_memory", {"session": session, "all": True, "confirm": session}))["count"] == 30
        fact, question = PAIRS[0]
        again = (await _call(a, "store_memory", {"session": session, "content": fact}))["memory_id"]
        assert await _recalled(b, session, question) == [again]


@pytest.mark.parametrize(
    ("mode", "backends"),
    [
        ("legacy", "CD"),  # MCP sessions need sticky routing, or --stateless as here
        ("2026-07-28", "CD"),
        ("2026-07-28", "AB"),  # every 2026-07-28 request stands alone: no stickiness needed, even without --stateless
    ],
)
async def test_a_client_behind_a_round_robin_proxy_reads_its_writes_on_every_step(
    servers: dict[str, int], mode: str, backends: str
) -> None:
    session = f"scale-rr-{uuid.uuid4().hex[:8]}"
    fact, question = PAIRS[1]
    with RoundRobin([servers[name] for name in backends]) as proxy:
        async with Client(proxy.url, mode=mode, read_timeout_seconds=TIMEOUT_S) as client:
            for text in FILLER[:10]:
                await _call(client, "store_memory", {"session": session, "content": text})
            await _recalled(client, session, "copper fittings")  # loads a copy on one process
            await _recalled(client, session, "copper fittings")  # and on the other
            memory_id = (await _call(client, "store_memory", {"session": session, "content": fact}))["memory_id"]
            first = await _recalled(client, session, question)
            await _call(client, "delete_memory", {"session": session, "memory_id": memory_id})
            second = await _recalled(client, session, fact)
            third = await _recalled(client, session, question)
        calls = proxy.tool_calls()
    assert memory_id in first
    assert memory_id not in second and memory_id not in third
    steps = calls[-5:]
    assert [tool for tool, _ in steps] == ["store_memory", "recall_memory", "delete_memory", "recall_memory",
                                           "recall_memory"]
    assert all(port != following for (_, port), (_, following) in zip(steps, steps[1:])), steps  # each on the other


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
async def test_a_process_sigkilled_under_load_loses_no_acknowledged_memory(
    servers: dict[str, int], shared_db: str, tmp_path: Path
) -> None:
    spawner = Spawner(tmp_path)
    try:
        port = free_port()
        victim = spawner.http(spawner.data_dir("victim"), port, "--stateless",
                              MCP_MEMORY_DATABASE_URL=shared_db, **FLOAT32)
        victim.wait_healthy(port, START_TIMEOUT_S)
        urls = [_url(port), _url(servers["C"]), _url(servers["D"])]
        prefix = f"scale-kill-{uuid.uuid4().hex[:6]}"
        writers = Writers(urls, 6, sessions=3, prefix=prefix, seed=5, give_up_s=120)
        writers.start()
        try:
            # The writers are threads: waiting here blocks only this test's event loop.
            wait_until(lambda: writers.acknowledged_by(urls[0]) >= 5, 120, "5 writes acknowledged by the victim")
            victim.kill()  # SIGKILL, in the middle of the load
            before = writers.acknowledged
            wait_until(lambda: writers.acknowledged >= before + 12, 120, "12 more writes through the survivors")
        finally:
            await anyio.to_thread.run_sync(writers.stop, 150.0)
    finally:
        spawner.close()

    acknowledged = [write for write in writers.writes if write.ids]
    print({"acknowledged": len(acknowledged), "by_victim": sum(w.acknowledged_by.count(urls[0]) for w in acknowledged),
           "retries": writers.retries, "replays": writers.replays})
    assert writers.errors == []
    assert len(acknowledged) == len(writers.writes)  # every write in flight at the kill was acknowledged elsewhere
    assert any(urls[0] in w.acknowledged_by for w in acknowledged)
    assert all(len(write.ids) == 1 for write in acknowledged)  # a retry never stored a second copy

    async with Client(_url(servers["C"]), mode="legacy", read_timeout_seconds=TIMEOUT_S) as survivor:
        for write in acknowledged:
            assert next(iter(write.ids)) in await _recalled(survivor, write.session, write.content), write

    exported = tmp_path / "export.jsonl"
    with anyio.fail_after(TIMEOUT_S):
        result = await anyio.run_process(
            [MCP_MEMORY, "export", "--sessions-like", f"{prefix}-*", "-o", str(exported)],
            env=server_env(tmp_path / "cli", MCP_MEMORY_DATABASE_URL=shared_db), check=False)
    assert result.returncode == 0, result.stderr.decode()
    _, *lines = (json.loads(line) for line in exported.read_text().splitlines())
    assert sorted(line["memory_id"] for line in lines) == sorted(next(iter(w.ids)) for w in acknowledged)

"""mcp-memory on a real Citus cluster (tests/citus_cluster.py): a coordinator and two workers.

The server distributes its tables itself (db/citus.py); doctor shows it. Faults: a worker stopped
with ``pg_ctl -m immediate`` fails the calls of its sessions promptly with a retryable error while
the other worker's sessions answer, and loses nothing acknowledged; a third worker added and the
shards rebalanced while four writers store loses and duplicates nothing. The tools themselves run
on the cluster through the modules marked ``backends("single", "citus")``.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import asyncpg
import pytest
from citus_cluster import Cluster, Node
from conftest import make_settings
from mcp import Client
from tools import served

from mcp_memory.db.citus import REFERENCE_TABLES, SESSION_TABLES
from mcp_memory.deps import Deps
from mcp_memory.doctor import run_checks

pytestmark = [pytest.mark.anyio, pytest.mark.backends("citus")]

PROMPT_S = 5.0  # a call that needs a stopped worker answers within this


async def _fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(url)
    try:
        return await connection.fetch(sql, *args)
    finally:
        await connection.close()


async def _layout(url: str) -> dict[str, tuple[str, str, int]]:
    rows = await _fetch(url, "SELECT table_name::text AS name, citus_table_type AS kind, distribution_column AS col,"
                        " colocation_id FROM citus_tables")
    return {row["name"]: (row["kind"], row["col"], row["colocation_id"]) for row in rows}


async def _worker_of(cluster: Cluster, session: str) -> int:
    """The port of the worker that holds ``session``'s shard group."""
    rows = await _fetch(cluster.url, "SELECT nodeport FROM citus_shards WHERE table_name = 'memories'::regclass"
                        " AND shardid = get_shard_id_for_distribution_column('memories', $1::text)", session)
    return int(rows[0]["nodeport"])


async def _sessions_by_worker(cluster: Cluster, count: int) -> dict[int, list[str]]:
    """``count`` session names held by each worker."""
    found: dict[int, list[str]] = {worker.port: [] for worker in cluster.workers}
    number = 0
    while any(len(names) < count for names in found.values()):
        name = f"c-{number}"
        number += 1
        port = await _worker_of(cluster, name)
        if port in found and len(found[port]) < count:
            found[port].append(name)
    return found


async def test_the_server_distributes_every_session_table_by_session_colocated_and_the_rest_as_reference_tables(
    pg_url: str, deps: Deps
) -> None:
    layout = await _layout(pg_url)
    home = layout["memories"][2]
    assert {table: layout[table] for table in SESSION_TABLES} == {table: ("distributed", "session", home)
                                                                  for table in SESSION_TABLES}
    assert {table: layout[table][0] for table in REFERENCE_TABLES} == dict.fromkeys(REFERENCE_TABLES, "reference")
    assert set(layout) == {*SESSION_TABLES, *REFERENCE_TABLES}  # every table of ours is one or the other


async def test_doctor_shows_the_distribution_and_fails_on_a_table_not_colocated_until_a_start_distributes_it(
    pg_url: str, deps: Deps, citus_cluster: Cluster, work_dir
) -> None:
    checks = {check.name: check for check in await run_checks(deps, "127.0.0.1")}
    assert checks["citus"].status == "ok", checks["citus"]
    assert checks["citus"].detail.startswith("Citus 14.0.1, 2 worker(s)") and "2 worker(s)" in checks["citus"].detail
    assert all(f"127.0.0.1:{worker.port}" in checks["citus"].detail for worker in citus_cluster.workers)

    await _fetch(pg_url, "SELECT undistribute_table('llm_usage')")  # an operator's change, say
    try:
        checks = {check.name: check for check in await run_checks(deps, "127.0.0.1")}
        assert checks["citus"].status == "fail" and "llm_usage (local)" in checks["citus"].detail, checks["citus"]
        off = Deps(make_settings(pg_url, work_dir, distribute=False))  # distribute = false: left as it is
        try:
            assert {c.name: c.status for c in await run_checks(off, "127.0.0.1")}["citus"] == "fail"
        finally:
            await off.close()
    finally:
        again = Deps(make_settings(pg_url, work_dir))  # the next start distributes it again
        try:
            assert {c.name: c.status for c in await run_checks(again, "127.0.0.1")}["citus"] == "ok"
        finally:
            await again.close()
    assert (await _layout(pg_url))["llm_usage"] == ("distributed", "session", (await _layout(pg_url))["memories"][2])


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str, Any, float]:
    started = time.monotonic()
    result = await client.call_tool(tool, arguments)
    text = " ".join(getattr(part, "text", "") for part in result.content)
    return result.is_error, text, result.structured_content, time.monotonic() - started


async def test_a_stopped_worker_fails_its_sessions_promptly_and_retryably_the_other_answers_and_nothing_is_lost(
    client: Client, citus_cluster: Cluster
) -> None:
    sessions = await _sessions_by_worker(citus_cluster, 1)
    down: Node = citus_cluster.workers[0]
    [lost_session], [live_session] = sessions[down.port], sessions[citus_cluster.workers[1].port]
    acknowledged: dict[str, list[str]] = {lost_session: [], live_session: []}
    for session in acknowledged:
        for fact in ("My sister lives in Lisbon", "The spare key is under the blue pot"):
            failed, text, stored, _ = await _call(client, "store_memory", {"session": session, "content": fact})
            assert not failed, text
            acknowledged[session].append(stored["memory_id"])

    await anyio.to_thread.run_sync(citus_cluster.stop, down)
    try:
        for tool, arguments in [
            ("recall_memory", {"session": lost_session, "query": "where does my sister live?"}),
            ("store_memory", {"session": lost_session, "content": "Stored while the worker was down"}),
            ("delete_memory", {"session": lost_session, "memory_id": acknowledged[lost_session][0]}),
            ("list_audits", {"session": lost_session}),
            ("usage_stats", {}),  # sums every session: it needs every worker
        ]:
            failed, text, _, elapsed_s = await _call(client, tool, arguments)
            assert failed, f"{tool} answered as if nothing were wrong: {text[:300]}"
            assert "database unavailable" in text and "retry" in text, f"{tool}: {text}"
            assert elapsed_s < PROMPT_S, f"{tool} took {elapsed_s:.1f} s"
        failed, text, stored, _ = await _call(client, "store_memory", {"session": live_session, "content": "The boiler is serviced in October"})
        assert not failed, text
        acknowledged[live_session].append(stored["memory_id"])
        failed, text, found, _ = await _call(client, "recall_memory", {"session": live_session, "query": "boiler service"})
        assert not failed, text
        assert stored["memory_id"] in [m["memory_id"] for m in found["memories"]]
        failed, text, _, _ = await _call(client, "list_audits", {"session": live_session})
        assert not failed, text
    finally:
        await anyio.to_thread.run_sync(citus_cluster.start, down)

    for session, ids in acknowledged.items():
        for _attempt in range(3):  # the coordinator's first statement to a restarted worker may find its old connection gone
            failed, text, found, _ = await _call(client, "recall_memory", {"session": session, "query": "sister boiler key", "top_k": 10})
            if not failed:
                break
        assert not failed, text
        assert set(ids) <= {m["memory_id"] for m in found["memories"]}, session


async def test_a_third_worker_and_a_rebalance_under_four_writers_lose_and_duplicate_nothing(
    client: Client, citus_cluster: Cluster
) -> None:
    """Four writers store with idempotency keys (a failed call is retried with the same key, as a
    client would) while a new worker is added and the shards are moved to it."""
    acknowledged: dict[str, dict[str, str]] = {}  # session -> idempotency key -> memory_id
    rebalanced = anyio.Event()
    deadline_s = 120.0

    async def writer(number: int) -> None:
        written = 0
        while not rebalanced.is_set() or written < 8:
            session, key = f"r{number}-{written // 10}", f"w{number}-{written}"  # at most 10 a session
            arguments = {"session": session, "content": f"Writer {number}, note {written}: parcel {written} left depot {number}",
                         "idempotency_key": key}
            started = time.monotonic()
            while True:  # each call is bounded by the server (statement_timeout_ms); the retries by the deadline
                failed, text, stored, _ = await _call(client, "store_memory", arguments)
                if not failed:
                    break
                assert "retry" in text, text
                assert time.monotonic() - started < deadline_s, f"{key}: still failing after {deadline_s} s: {text}"
            acknowledged.setdefault(session, {})[key] = stored["memory_id"]
            written += 1

    new = await citus_cluster.add_worker()
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        for number in range(4):
            group.start_soon(writer, number)
        await _fetch(citus_cluster.url, "SELECT citus_rebalance_start()")
        with anyio.fail_after(deadline_s):
            await _fetch(citus_cluster.url, "SELECT citus_rebalance_wait()")
        rebalanced.set()
    moved = await _fetch(citus_cluster.url, "SELECT count(*) AS n FROM citus_shards WHERE nodeport = $1", new.port)
    assert moved[0]["n"] > 0, "no shard moved to the new worker"
    jobs = await _fetch(citus_cluster.url, "SELECT state::text FROM pg_dist_background_job ORDER BY job_id DESC LIMIT 1")
    assert jobs[0]["state"] == "finished", jobs

    total = sum(len(keys) for keys in acknowledged.values())
    assert total >= 32, total
    for session, keys in acknowledged.items():
        rows = await _fetch(citus_cluster.url, "SELECT memory_id::text AS id FROM memories WHERE session = $1", session)
        stored = [row["id"] for row in rows]
        assert sorted(stored) == sorted(keys.values()), session  # every acknowledged memory once, nothing else
        failed, text, listed, _ = await _call(client, "recall_memory", {"session": session, "query": "parcel depot", "top_k": 50})
        assert not failed, text
        assert {m["memory_id"] for m in listed["memories"]} == set(keys.values()), session
    print(f"rebalance: {total} memories acknowledged by 4 writers in {time.monotonic() - started:.1f} s, "
          f"{moved[0]['n']} shards on the new worker")

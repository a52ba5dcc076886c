"""A statement cancelled mid-flight (a recall's task group cancelling its other lists when one
fails, a client that disconnects during a tool call) never leaves a pooled connection holding
locks: before the fix, a connection whose prepare reply arrived in the same event-loop pass as
the cancellation went back to the pool with its backend "active"/ClientRead inside an unfinished
extended-protocol exchange, holding ACCESS SHARE locks until the connection was next used, so the
tests' TRUNCATE (and any ALTER, VACUUM FULL or migration) waited for ever."""

from __future__ import annotations

import select

import anyio
import anyio.lowlevel
import asyncpg
import pytest

from databases import lock_every_table
from mcp_memory.db.pool import open_pool
from mcp_memory.db.repository import Repository
from mcp_memory.errors import DatabaseUnavailable
from mcp_memory.models import Plan
from mcp_memory.pipeline.search import search

pytestmark = pytest.mark.anyio


async def test_a_statement_cancelled_as_its_reply_arrives_leaves_no_lock_behind(deps, pg_url):
    """Deterministic: the loop is held until the reply to recent()'s Parse/Describe sits in the
    socket, then the task group is cancelled in the loop pass that reads it. asyncpg 0.32 drops a
    reply whose waiter was cancelled and, finding no waiter any more, sends no cancel and no Sync."""
    pool = await open_pool(pg_url, 1, 1)
    checker = await asyncpg.connect(pg_url, server_settings={"lock_timeout": "5s"}, command_timeout=30)
    try:
        repository = Repository(pool, "m")
        assert await repository.count("s-cancel") == 0  # the pool's one connection is open
        async with pool.acquire() as connection:
            first_pid = connection.get_server_pid()
            sock = connection._transport.get_extra_info("socket")  # read only: to wait for the reply
        async with anyio.create_task_group() as group:
            group.start_soon(repository.recent, "s-cancel", 5)  # a statement this connection never prepared
            await anyio.lowlevel.checkpoint()  # recent() sends Parse/Describe/Flush and waits
            readable, _, _ = select.select([sock], [], [], 5.0)  # the loop is held: the reply stays unread
            assert readable, "recent() sent nothing within 5 s"
            await anyio.lowlevel.checkpoint()  # the next pass runs this step first, then reads the reply
            group.cancel_scope.cancel()
        await lock_every_table(checker)
        assert await checker.fetchval("SELECT count(*) FROM pg_locks WHERE pid = $1", first_pid) == 0
        assert await repository.recent("s-cancel", 5) == []  # the pool still serves
    finally:
        await pool.close()
        await checker.close()


async def test_recalls_cancelled_by_a_failing_embedder_leave_every_table_free(client, deps, pg_url):
    """The search task group cancels its database lists when the embedder fails; 20 such
    recalls in a row left one or two backends holding locks (every run before the fix). An
    EmbeddingError only drops the vector lists since issue 11, so the embedder fails otherwise."""
    ready = await deps.ready()

    async def embed(texts: list[str]) -> list:
        raise DatabaseUnavailable("database unavailable: the embedder's cache is gone")

    checker = await asyncpg.connect(pg_url, server_settings={"lock_timeout": "5s"}, command_timeout=30)
    try:
        for number in range(20):
            plan = Plan(queries=[f"ferry {number} to A-{number}771"])
            with pytest.raises(DatabaseUnavailable):
                await search(ready.repository, ready.vectors, f"s-fail-{number}", plan, embed, ready.settings.recall)
            await lock_every_table(checker)
    finally:
        await checker.close()

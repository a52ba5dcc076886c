"""Second-round attacks on the vector copies (their one-second look-back, their neighbours, counters
that start again, windows changed alone) and on the search task group's error handling, written by
a second engineer; each sequence now gives what PostgreSQL gives."""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import UTC, datetime, timedelta

import anyio
import asyncpg
import numpy as np
import pytest
from pgvector.asyncpg import register_vector

from mcp_memory.db import postings
from mcp_memory.errors import DatabaseUnavailable, EmbeddingError
from mcp_memory.embedding.vector_cache import VectorCache

pytestmark = pytest.mark.anyio

DIM = 384


# What migration 014 asks of an operator who changed memories or windows by hand: count the sessions again.
RECOUNT = (
    "DELETE FROM memory_stats WHERE session IN ({sessions});"
    " INSERT INTO memory_stats (session, n, total_length, changes)"
    " SELECT session, count(*), sum(length(search_text)), count(*) FROM memories WHERE session IN ({sessions})"
    " GROUP BY session"
)


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


async def raw_insert(conn, session, vectors, model, created_at="now()", occurred_at=None) -> str:
    mid = uuid.uuid4()
    content = f"raw {mid}"
    length = await conn.fetchval(  # with its derived rows, as the repository stores (db/postings.py)
        "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, created_at, embedding,"
        f" embedding_model) VALUES ($1, $2, $3, $4, $5, {created_at}, $6, $7) RETURNING length(search_text)",
        session, mid, content, hashlib.sha256(content.encode()).digest(),
        occurred_at or datetime.now(UTC), vectors[0], model,
    )
    await postings.added(conn, session, mid, length)
    for no, vec in enumerate(vectors[1:], 1):
        await conn.execute("INSERT INTO memory_chunks VALUES ($1, $2, $3, $4)", session, mid, no, vec)
    return str(mid)


async def same_as_postgres(repo, cache: VectorCache, session: str, queries, limit: int) -> None:
    held = await cache.nearest(repo, session, queries, limit, 800)
    scanned = await repo.vector_search(session, queries, limit, 800, exact=True)
    for h, s in zip(held, scanned, strict=True):
        assert [m for m, _ in h] == [m for m, _ in s], (h, s)
    version = await repo.session_version(session)
    copy = cache._copies.get(session)
    if copy is not None and copy.version == version:
        rows = await repo.session_vectors(session, None)
        live = set(rows.memory_ids)
        assert copy.known == live, ("stale ids", copy.known - live, "missing", live - copy.known)
        assert copy.rows == len(rows.memory_ids)
        ids = sorted(live)
        for span in (1, 2):
            for gap in (0.0, 0.5, 5.0, 3600.0):
                a = cache.neighbours(session, ids, span, gap)
                b = await repo.neighbours(session, ids, span, gap)
                assert a == b, (span, gap)


# --- the look-back: random writers whose transactions start and commit in any order ---------

@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_lookback_fuzz_with_held_open_transactions(client, deps, pg_url, seed):
    ready = await deps.ready()
    repo, model = ready.repository, ready.embedder.model
    rng = np.random.default_rng(seed)
    rnd = random.Random(seed)
    caches = [VectorCache(64 << 20, 20_000), VectorCache(64 << 20, 20_000)]
    session = f"fz{seed}"
    queries = [unit(rng) for _ in range(3)]
    conns = [await asyncpg.connect(pg_url) for _ in range(4)]
    for c in conns:
        await register_vector(c)
    open_tx: dict[int, object] = {}
    live: list[str] = []
    base = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        for step in range(60):
            op = rnd.random()
            free = [i for i in range(len(conns)) if i not in open_tx]
            if op < 0.25 and free:  # start a transaction: its created_at is fixed now
                i = rnd.choice(free)
                tx = conns[i].transaction()
                await tx.start()
                await conns[i].execute("SELECT now()")
                open_tx[i] = tx
            elif op < 0.5 and open_tx:  # insert inside an open transaction, commit in random order
                i = rnd.choice(list(open_tx))
                windows = [unit(rng) for _ in range(rnd.choice([1, 1, 3]))]
                live.append(await raw_insert(conns[i], session, windows, model,
                                             occurred_at=base + timedelta(seconds=rnd.randrange(0, 20))))
                await open_tx.pop(i).commit()  # at once: an uncommitted insert locks the stats row
            elif op < 0.6 and open_tx:
                i = rnd.choice(list(open_tx))
                await open_tx.pop(i).commit()
            elif op < 0.72 and live:
                victim = live.pop(rnd.randrange(len(live)))
                await repo.delete(session, victim)
            elif op < 0.8:  # created_at exactly a second before / equal to the newest
                newest = await conns[0].fetchval("SELECT max(created_at) FROM memories WHERE session = $1", session)
                if newest is not None and free:
                    delta = rnd.choice(["0", "1 second", "0.5 second", "1.000001 second"])
                    i = rnd.choice(free)
                    live.append(await raw_insert(conns[i], session, [unit(rng)], model,
                                                 created_at=f"'{newest.isoformat()}'::timestamptz - interval '{delta}'",
                                                 occurred_at=base + timedelta(seconds=rnd.randrange(0, 20))))
            else:
                await anyio.sleep(rnd.choice([0.0, 0.3, 0.6, 1.1]))
            for cache in caches:
                if rnd.random() < 0.7:
                    await same_as_postgres(repo, cache, session, queries, rnd.choice([1, 4, 50]))
        for tx in open_tx.values():
            await tx.commit()
        for cache in caches:
            await same_as_postgres(repo, cache, session, queries, 50)
    finally:
        for c in conns:
            await c.close()


# --- a counter that starts again: memory_stats emptied with the tables -----------------------

async def test_memory_stats_truncated_with_the_tables_then_a_restore_and_a_store(client, deps, pg_url):
    """An operator empties everything (memory_stats too) and restores a backup row (COPY keeps its
    old created_at); one more store makes n and changes look like 'one insert since the copy'."""
    ready = await deps.ready()
    repo, model = ready.repository, ready.embedder.model
    rng = np.random.default_rng(5)
    q = unit(rng)
    cache = VectorCache(64 << 20, 20_000)
    admin = await asyncpg.connect(pg_url)
    await register_vector(admin)
    try:
        a = await raw_insert(admin, "s-reset", [q], model)  # copy: {A}, n=1 changes=1
        await same_as_postgres(repo, cache, "s-reset", [q], 5)
        await admin.execute("TRUNCATE memories, memory_chunks, memory_terms, memory_grams, memory_supersessions, memory_stats")
        restored = await raw_insert(admin, "s-reset", [unit(rng)], model, created_at="now() - interval '1 day'")
        b = await raw_insert(admin, "s-reset", [unit(rng)], model)  # n=2 changes=2; delta = {B}
    finally:
        await admin.close()
    held = [m for m, _ in (await cache.nearest(repo, "s-reset", [q], 5, 800))[0]]
    scanned = [m for m, _ in (await repo.vector_search("s-reset", [q], 5, 800, exact=True))[0]]
    assert a not in held and restored in held, (held, scanned, a, restored, b)


# --- error handling in the search task group ----------------------------------------------

async def test_the_unwrapped_error_keeps_its_cause_for_the_log(client, deps):
    """search() re-raises the first McpMemoryError of its task group; `raise ... from None` also
    wipes that error's own __cause__ (the OpenAI/asyncpg exception the operator needs). An
    EmbeddingError only drops the vector lists now (issue 11), so the failing list raises another
    McpMemoryError."""
    from mcp_memory.models import Plan
    from mcp_memory.pipeline.search import search

    ready = await deps.ready()

    async def embed(texts):
        try:
            raise ConnectionError("connect to 10.0.0.7:8080 refused")
        except ConnectionError as exc:
            raise DatabaseUnavailable("database unavailable") from exc

    with pytest.raises(DatabaseUnavailable) as caught:
        await search(ready.repository, ready.vectors, "s-cause", Plan(queries=["ferry"]), embed, ready.settings.recall)
    assert isinstance(caught.value.__cause__, ConnectionError), caught.value.__cause__


async def test_an_embedding_failure_in_search_is_logged_with_its_cause(client, deps, caplog):
    from mcp_memory.models import Plan
    from mcp_memory.pipeline.search import search

    ready = await deps.ready()

    async def embed(texts):
        try:
            raise ConnectionError("connect to 10.0.0.7:8080 refused")
        except ConnectionError as exc:
            raise EmbeddingError("embedding provider failed") from exc

    searched = await search(ready.repository, ready.vectors, "s-cause", Plan(queries=["ferry"]), embed,
                            ready.settings.recall)
    assert searched.embed_note == "embedding failed, keyword lists only: embedding provider failed"
    assert any("10.0.0.7:8080 refused" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


async def test_chunk_rows_removed_without_their_memory_are_seen(client, deps, pg_url):
    """Windows deleted by hand, then the session's memory_stats row (what migration 014 asks of an
    operator who changes rows by hand): the copy is read again instead of ranking by windows that are gone."""
    ready = await deps.ready()
    repo, model = ready.repository, ready.embedder.model
    rng = np.random.default_rng(8)
    q = unit(rng)
    cache = VectorCache(64 << 20, 20_000)
    admin = await asyncpg.connect(pg_url)
    await register_vector(admin)
    try:
        long_id = await raw_insert(admin, "s-ch", [unit(rng), q], model)  # its 2nd window is the query
        await raw_insert(admin, "s-ch", [unit(rng)], model)
        await same_as_postgres(repo, cache, "s-ch", [q], 1)
        await admin.execute("DELETE FROM memory_chunks WHERE session = 's-ch'")
        await admin.execute(RECOUNT.format(sessions="'s-ch'"))  # the step of migration 014
    finally:
        await admin.close()
    held = await cache.nearest(repo, "s-ch", [q], 1, 800)
    scanned = await repo.vector_search("s-ch", [q], 1, 800, exact=True)
    assert abs(held[0][0][1] - scanned[0][0][1]) < 1e-5, (held, scanned, long_id)

"""Sequences that once fooled the in-process vector copies (vector_cache.py, migration 006), found by
a second engineer trying to break them; each now gives the lists PostgreSQL gives."""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import UTC, datetime

import anyio
import asyncpg
import numpy as np
import pytest
from pgvector.asyncpg import register_vector

from mcp_memory.db import postings
from mcp_memory.models import NewMemory
from mcp_memory.embedding.vector_cache import VectorCache
from databases import database_at

pytestmark = pytest.mark.anyio

DIM = 384
RNG = np.random.default_rng(7)


# What migration 014 asks of an operator who changed memories or windows by hand: count the sessions again.
RECOUNT = (
    "DELETE FROM memory_stats WHERE session IN ({sessions});"
    " INSERT INTO memory_stats (session, n, total_length, changes)"
    " SELECT session, count(*), sum(length(search_text)), count(*) FROM memories WHERE session IN ({sessions})"
    " GROUP BY session"
)


def unit(seed: int | None = None, near: np.ndarray | None = None, cos: float | None = None) -> np.ndarray:
    v = (np.random.default_rng(seed) if seed is not None else RNG).normal(size=DIM)
    v /= np.linalg.norm(v)
    if near is not None:  # a vector at cosine `cos` from `near`
        v -= (v @ near) * near
        v /= np.linalg.norm(v)
        v = cos * near + np.sqrt(1 - cos * cos) * v
    return v.astype(np.float32)


async def put(repo, session: str, vectors: list[np.ndarray], content: str | None = None) -> str:
    content = content or f"memory {uuid.uuid4()}"
    memory = NewMemory(
        session=session, content=content, occurred_at=datetime.now(UTC), metadata={}, importance=None,
        content_hash=hashlib.sha256(content.encode()).digest(),
    )
    return (await repo.insert_memory(memory, vectors)).memory_id


async def truth(repo, session: str, query: np.ndarray, limit: int) -> list[str]:
    """Brute force from every window in the database, float64."""
    snap = await repo.session_vectors(session, None)
    best: dict[str, float] = {}
    q = query.astype(np.float64) / np.linalg.norm(query)
    for mid, v in zip(snap.memory_ids, snap.embeddings.astype(np.float64), strict=True):
        d = 1 - (v / np.linalg.norm(v)) @ q
        best[mid] = min(best.get(mid, 9.0), d)
    return [m for m, _ in sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:limit]]


def ids(hits):
    return [m for m, _ in hits]


async def _insert_raw(connection, session, vector, model, created_at="now()"):
    mid = uuid.uuid4()
    content = f"raw {mid}"
    length = await connection.fetchval(  # with its derived rows, as the repository stores (db/postings.py)
        "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, created_at, embedding,"
        f" embedding_model) VALUES ($1, $2, $3, $4, now(), {created_at}, $5, $6) RETURNING length(search_text)",
        session, mid, content, hashlib.sha256(content.encode()).digest(), vector, model,
    )
    if await connection.fetchval("SELECT count(*) FROM schema_migrations WHERE version = 14"):
        await postings.added(connection, session, mid, length)  # before migration 014 the triggers do it
    return str(mid)


# --- 1. TRUNCATE restarts `changes`, so the append test can be fooled -----------------------

async def test_truncate_then_late_commit_then_store_drops_the_truncated_memory(client, deps, pg_url):
    ready = await deps.ready()
    repo, model = ready.repository, ready.embedder.model
    cache = VectorCache(64 << 20, 20_000)
    q = unit(1)
    late = await asyncpg.connect(pg_url)
    await register_vector(late)
    admin = await asyncpg.connect(pg_url)
    try:
        tx = late.transaction()
        await tx.start()
        await late.execute("SELECT now()")  # created_at fixed before X's
        x = await put(repo, "s-t", [unit(near=q, cos=0.9)])
        assert ids((await cache.nearest(repo, "s-t", [q], 5, 800))[0]) == [x]  # copy {X}: n=1 changes=1
        await admin.execute("TRUNCATE memories, memory_chunks, memory_terms, memory_grams, memory_supersessions, memory_stats")
        y = await _insert_raw(late, "s-t", unit(near=q, cos=0.5), model)
        await tx.commit()  # n=1 changes=1 again
        z = await put(repo, "s-t", [unit(near=q, cos=0.3)])  # n=2 changes=2; delta since X = {Z}
    finally:
        await late.close()
        await admin.close()
    held = ids((await cache.nearest(repo, "s-t", [q], 5, 800))[0])
    assert held == await truth(repo, "s-t", q, 5) == [y, z], (held, x)  # cache returns [x, z]


async def test_truncate_and_restore_with_original_created_at_reloads_the_copy(client, deps, pg_url):
    """An operator empties the tables and restores a backup (COPY keeps created_at)."""
    ready = await deps.ready()
    repo, model = ready.repository, ready.embedder.model
    cache = VectorCache(64 << 20, 20_000)
    q = unit(2)
    for cos in (0.9, 0.8):
        await put(repo, "s-r", [unit(near=q, cos=cos)])
    await cache.nearest(repo, "s-r", [q], 5, 800)  # copy: n=2 changes=2
    admin = await asyncpg.connect(pg_url)
    await register_vector(admin)
    try:
        await admin.execute("TRUNCATE memories, memory_chunks, memory_terms, memory_grams, memory_supersessions, memory_stats")
        for cos in (0.7, 0.6):  # two rows from the backup, created last year
            await _insert_raw(admin, "s-r", unit(near=q, cos=cos), model, "now() - interval '1 year'")
    finally:
        await admin.close()
    # n=2 changes=2, new version, nothing newer than the copy -> extend(empty) -> reshape ValueError
    held = ids((await cache.nearest(repo, "s-r", [q], 5, 800))[0])
    assert held == await truth(repo, "s-r", q, 5)


# --- 2. memory_stats_replace does not count a memory updated INTO a session -----------------

async def test_memories_moved_into_a_session_count_as_changes(client, deps, pg_url):
    ready = await deps.ready()
    repo = ready.repository
    cache = VectorCache(64 << 20, 20_000)
    q = unit(3)
    stop = ["the", "and of the", "it is"]  # no lexemes: no memory_terms rows to block the move
    w_old = await put(repo, "other", [unit(near=q, cos=0.95)], stop[0])
    x1 = await put(repo, "s-m", [unit(near=q, cos=0.9)])
    x2 = await put(repo, "s-m", [unit(near=q, cos=0.8)])
    await cache.nearest(repo, "s-m", [q], 5, 800)  # copy {x1, x2}
    w_new = await put(repo, "other", [unit(near=q, cos=0.7)], stop[1])
    admin = await asyncpg.connect(pg_url)
    try:
        await admin.execute("UPDATE memories SET session = 's-m' WHERE memory_id = $1", uuid.UUID(w_old))
        await admin.execute("DELETE FROM memories WHERE memory_id = $1", uuid.UUID(x1))
        await admin.execute("UPDATE memories SET session = 's-m' WHERE memory_id = $1", uuid.UUID(w_new))
        await admin.execute(RECOUNT.format(sessions="'s-m', 'other'"))  # the step of migration 014
    finally:
        await admin.close()
    held = ids((await cache.nearest(repo, "s-m", [q], 5, 800))[0])
    assert held == await truth(repo, "s-m", q, 5) == [w_old, x2, w_new], (held, x1)


# --- 3. PostgreSQL's "exact" scan limits chunk ROWS, not memories ---------------------------

async def test_exact_scan_in_postgres_finds_a_memory_behind_another_memorys_windows(client, deps):
    ready = await deps.ready()
    repo = ready.repository
    cache = VectorCache(64 << 20, 20_000)
    q = unit(4)
    a = await put(repo, "s-c", [unit(5)] + [unit(near=q, cos=0.99) for _ in range(3)])  # 3 near windows
    b = await put(repo, "s-c", [unit(6), unit(near=q, cos=0.8)])  # its 2nd window is 2nd best overall
    await put(repo, "s-c", [unit(near=q, cos=0.6)])
    await put(repo, "s-c", [unit(7)])
    held = ids((await cache.nearest(repo, "s-c", [q], 2, 800))[0])
    scanned = ids((await repo.vector_search("s-c", [q], 2, 800, exact=True))[0])
    assert held == await truth(repo, "s-c", q, 2) == [a, b]
    assert scanned == held, scanned  # PostgreSQL gives [a, c]


# --- 4. What held: random concurrent traffic, two servers, small budget, exact_max crossing --

async def test_random_concurrent_traffic_matches_brute_force(client, deps):
    ready = await deps.ready()
    repo = ready.repository
    servers = [VectorCache(40 * 1700, 25), VectorCache(64 << 20, 25), VectorCache(0, 25)]
    sessions = ["r0", "r1", "r2"]
    live: dict[str, list[str]] = {s: [] for s in sessions}
    rnd = random.Random(11)
    queries = [unit(100 + i) for i in range(3)]

    async def writer(s: str) -> None:
        for _ in range(4):
            if live[s] and rnd.random() < 0.35:
                victim = live[s].pop(rnd.randrange(len(live[s])))
                await repo.delete(s, victim)
            else:
                windows = [unit() for _ in range(rnd.choice([1, 1, 1, 3]))]
                live[s].append(await put(repo, s, windows))

    async def reader(cache: VectorCache, s: str) -> None:
        for _ in range(3):
            await cache.nearest(repo, s, queries, rnd.choice([1, 5, 40]), 800)

    for _round in range(25):
        async with anyio.create_task_group() as group:
            for s in sessions:
                group.start_soon(writer, s)
                for cache in servers:
                    group.start_soon(reader, cache, s)
        for s in sessions:
            version = await repo.session_version(s)
            for cache in servers:
                for limit in (1, 7, 60):
                    got = await cache.nearest(repo, s, queries, limit, 800)
                    if version.memories > 25:  # HNSW: only check nothing foreign or deleted
                        assert all(set(ids(h)) <= set(live[s]) for h in got)
                        continue
                    for query, hits in zip(queries, got, strict=True):
                        assert ids(hits) == await truth(repo, s, query, limit)
            assert sum(c.nbytes for c in servers[:1]) <= 40 * 1700


async def test_a_database_upgraded_from_005_is_cached_correctly(pg_url):
    from mcp_memory.db import migrate as migrations
    from mcp_memory.db.repository import Repository

    async with database_at(pg_url, 5, DIM) as url:
        c = await asyncpg.connect(url)
        await register_vector(c)
        made = [await _insert_raw(c, s, unit(), "m") for s in ("u1", "u1", "u1", "u2", "u3")]
        await c.execute("INSERT INTO memory_chunks VALUES ('u1', $1, 1, $2)", uuid.UUID(made[0]), unit())
        await c.execute("DELETE FROM memories WHERE session = 'u3'")  # row gone at 005
        await c.close()
        await migrations.migrate(url, "m", DIM)
        pool = await asyncpg.create_pool(url, min_size=1, max_size=4, init=register_vector)
        repo = Repository(pool, "m")
        cache = VectorCache(64 << 20, 20_000)
        q = unit(9)
        for s in ("u1", "u2", "u3"):
            assert ids((await cache.nearest(repo, s, [q], 5, 800))[0]) == await truth(repo, s, q, 5)
        for s in ("u1", "u3"):
            await put(repo, s, [unit(), unit()])
        await repo.delete("u2", made[3])
        for s in ("u1", "u2", "u3"):
            assert ids((await cache.nearest(repo, s, [q], 5, 800))[0]) == await truth(repo, s, q, 5)
        await pool.close()

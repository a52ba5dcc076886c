"""The in-process copies of sessions' vectors give exactly the lists PostgreSQL gives, after
every kind of change made through any server."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest
from pgvector.asyncpg import register_vector

from mcp_memory.db import postings
from mcp_memory.embedding.vector_cache import VectorCache
from mcp_memory.models import RecallFilter

pytestmark = pytest.mark.anyio

TEXTS = [
    "The landlord will fix the heating on Friday",
    "My sister adopted a grey kitten called Miso",
    "The quarterly report is due to finance on the 14th",
    "I started learning the cello in March",
    "Our team moved the stand-up meeting to 9:30",
    "The dentist appointment was moved to Tuesday afternoon",
]
# Longer than the model reads, so it is stored with later windows in memory_chunks.
LONG = "Notes from the boiler inspection. " + " ".join(
    f"Radiator {i} in room {i + 3} was bled and the pressure reset to {i % 3 + 1} bar." for i in range(40)
)
QUERIES = ["when is the heating getting repaired?", "what did the boiler inspection find?", "pets"]


async def _store(client, session: str, content: str) -> str:
    result = await client.call_tool("store_memory", {"session": session, "content": content})
    return result.structured_content["memory_id"]


async def _assert_same_as_postgres(ready, cache: VectorCache, session: str, limit: int = 5) -> list[list[str]]:
    vectors = await ready.embedder.embed_batch(QUERIES)
    held = await cache.nearest(ready.repository, session, vectors, limit, 800)
    scanned = await ready.repository.vector_search(session, vectors, limit, 800, exact=True)
    for from_memory, from_postgres in zip(held, scanned, strict=True):
        assert [memory_id for memory_id, _ in from_memory] == [memory_id for memory_id, _ in from_postgres]
        for (_, a), (_, b) in zip(from_memory, from_postgres, strict=True):
            assert a == pytest.approx(b, abs=1e-5)
    return [[memory_id for memory_id, _ in hits] for hits in held]


async def test_the_copy_follows_inserts_deletes_and_a_session_emptied_and_refilled(client, deps):
    ready = await deps.ready()
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    ids = [await _store(client, "s-copy", text) for text in TEXTS[:4]]
    long_id = await _store(client, "s-copy", LONG)
    first = await _assert_same_as_postgres(ready, cache, "s-copy")
    assert first[0][0] == ids[0] and first[1][0] == long_id  # the long memory is found once, by a window
    assert cache.nbytes > 0

    added = await _store(client, "s-copy", TEXTS[4])  # stored without the cache knowing, as by another server
    assert added in (await _assert_same_as_postgres(ready, cache, "s-copy", limit=10))[0]

    await client.call_tool("delete_memory", {"session": "s-copy", "memory_id": ids[0]})
    after_delete = await _assert_same_as_postgres(ready, cache, "s-copy", limit=10)
    assert all(ids[0] not in hits for hits in after_delete)

    # Emptied and refilled: the session's stats row stays, its counts go on, the copy is replaced.
    await client.call_tool("delete_memory", {"session": "s-copy", "all": True, "confirm": "s-copy"})
    refilled = [await _store(client, "s-copy", f"{text} (again)") for text in TEXTS[:5]]
    after_refill = await _assert_same_as_postgres(ready, cache, "s-copy", limit=10)
    assert set(after_refill[0]) == set(refilled)


async def test_an_insert_that_started_earlier_and_committed_later_is_not_missed(client, deps, pg_url):
    """A transaction's created_at is its start: a memory committed after the copy took in a later
    one is older than the copy's newest. Within a second it is appended like any new memory
    (concurrent stores do this all the time); older than that, the change count catches it and
    the session is reloaded."""
    ready = await deps.ready()
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    await _store(client, "s-late", TEXTS[1])
    [late, older] = await ready.embedder.embed_batch([TEXTS[0], TEXTS[3]])
    late_id, older_id = uuid.uuid4(), uuid.uuid4()
    insert = (
        "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, created_at, embedding,"
        " embedding_model) VALUES ('s-late', $1, $2, $3, now(), {created_at}, $4, $5) RETURNING length(search_text)"
    )
    connection = await asyncpg.connect(pg_url)
    await register_vector(connection)
    try:
        transaction = connection.transaction()
        await transaction.start()
        await connection.execute("SELECT now()")  # its created_at is fixed from here
        await _store(client, "s-late", TEXTS[2])  # committed by another writer meanwhile
        await _assert_same_as_postgres(ready, cache, "s-late")
        length = await connection.fetchval(
            insert.format(created_at="now()"),
            late_id, TEXTS[0], hashlib.sha256(TEXTS[0].encode()).digest(), late, ready.embedder.model,
        )
        await postings.added(connection, "s-late", late_id, length)  # as the repository stores
        await transaction.commit()
        hits = await _assert_same_as_postgres(ready, cache, "s-late")
        assert hits[0][0] == str(late_id)
        assert (cache.loads, cache.appends) == (1, 1)

        async with connection.transaction():  # committed now, but started (so it says) a minute ago
            length = await connection.fetchval(
                insert.format(created_at="now() - interval '1 minute'"),
                older_id, TEXTS[3], hashlib.sha256(TEXTS[3].encode()).digest(), older, ready.embedder.model,
            )
            await postings.added(connection, "s-late", older_id, length)
    finally:
        await connection.close()
    vectors = await ready.embedder.embed_batch([TEXTS[3]])
    held = await cache.nearest(ready.repository, "s-late", vectors, 5, 800)
    assert held[0][0][0] == str(older_id)
    assert (cache.loads, cache.appends) == (2, 1)


async def test_sessions_over_the_budget_or_the_exact_limit_are_searched_in_postgres(client, deps):
    ready = await deps.ready()
    for text in TEXTS:
        await _store(client, "s-a", text)
        await _store(client, "s-b", f"{text}, said Ana")
    none = VectorCache(budget_bytes=0, exact_max=20_000)
    await _assert_same_as_postgres(ready, none, "s-a")
    assert none.nbytes == 0

    one_session = VectorCache(budget_bytes=6 * 384 * 4 + 6 * 400, exact_max=20_000)
    for session in ("s-a", "s-b", "s-a", "s-b"):  # each copy pushes the other out
        await _assert_same_as_postgres(ready, one_session, session)
        assert 0 < one_session.nbytes <= 6 * 384 * 4 + 6 * 400

    hnsw = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=3)  # 6 memories: HNSW, never copied
    vectors = await ready.embedder.embed_batch(QUERIES)
    assert await hnsw.nearest(ready.repository, "s-a", vectors, 5, 800) == await ready.repository.vector_search(
        "s-a", vectors, 5, 800, exact=False
    )
    assert hnsw.nbytes == 0
    assert await hnsw.nearest(ready.repository, "s-none", vectors, 5, 800) == [[], [], []]


async def test_a_truncated_and_refilled_session_is_not_taken_for_the_old_one(client, deps, pg_url):
    """TRUNCATE (an operator emptying the tables) restarts the session's change count; the same
    count of new memories must not look like the copy's."""
    ready = await deps.ready()
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    for text in TEXTS[:3]:
        await _store(client, "s-trunc", text)
    await _assert_same_as_postgres(ready, cache, "s-trunc")
    connection = await asyncpg.connect(pg_url)
    try:
        await connection.execute(
            "TRUNCATE memories, memory_chunks, memory_terms, memory_grams, memory_supersessions, memory_stats"
        )
    finally:
        await connection.close()
    refilled = [await _store(client, "s-trunc", text) for text in TEXTS[3:6]]
    hits = await _assert_same_as_postgres(ready, cache, "s-trunc")
    assert set(hits[0]) == set(refilled)


async def test_neighbours_from_the_copy_match_postgres_after_every_change(client, deps):
    """Chronological neighbours (for score spreading) come from the copy's timeline: the same sets
    PostgreSQL returns, with ties on occurred_at broken by storage order and the gap respected."""
    ready = await deps.ready()
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    times = ["09:00", "09:00", "09:10", "09:30", "12:00", "12:00", "12:05", "15:00"]
    ids = []
    for i, (text, at) in enumerate(zip(TEXTS + ["We booked the ferry", "The ferry was late"], times, strict=True)):
        result = await client.call_tool(
            "store_memory", {"session": "s-time", "content": f"{text} ({i})", "occurred_at": f"2026-03-0{1 + i // 6}T{at}:00Z"}
        )
        ids.append(result.structured_content["memory_id"])

    async def same() -> None:
        await _assert_same_as_postgres(ready, cache, "s-time")
        for span in (1, 2, 3):
            for gap in (0.0, 600.0, 3600.0):
                held = cache.neighbours("s-time", ids, span, gap)
                scanned = await ready.repository.neighbours("s-time", ids, span, gap)
                assert held is not None
                assert {k: sorted(v) for k, v in held.items()} == {k: sorted(v) for k, v in scanned.items()}

    await same()
    extra = await client.call_tool(
        "store_memory", {"session": "s-time", "content": "A late note about the ferry", "occurred_at": "2026-03-01T09:05:00Z"}
    )
    ids.append(extra.structured_content["memory_id"])
    await same()
    await client.call_tool("delete_memory", {"session": "s-time", "memory_id": ids[2]})
    await same()
    assert VectorCache(0, 20_000).neighbours("s-time", ids, 2, 3600.0) is None  # no copy: ask PostgreSQL


async def test_the_recent_list_from_the_copy_is_postgres_list_with_every_time_filter(client, deps):
    """The recent list comes from the copy's timeline when the copy is at the session's version: the
    same ids in the same order as PostgreSQL's (latest occurred_at first, ties by storage order), inside
    since and until at either end, exact times included; not at all for a stale copy or a metadata filter."""
    ready = await deps.ready()
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    times = ["09:00", "09:00", "09:10", "09:30", "12:00", "12:00", "12:05", "15:00"]
    for i, (text, at) in enumerate(zip(TEXTS + ["We booked the ferry", "The ferry was late"], times, strict=True)):
        await client.call_tool(
            "store_memory", {"session": "s-recent", "content": f"{text} ({i})", "occurred_at": f"2026-03-0{1 + i // 6}T{at}:00Z"}
        )
    await _assert_same_as_postgres(ready, cache, "s-recent")
    version = await ready.repository.session_version("s-recent")
    at = [datetime(2026, 3, 1, 9, 10, tzinfo=UTC), datetime(2026, 3, 1, 12, 0, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)]
    filters = [None, RecallFilter(), *(RecallFilter(since=t) for t in at), *(RecallFilter(until=t) for t in at),
               RecallFilter(since=at[0], until=at[1]), RecallFilter(since=at[1], until=at[0])]
    for limit in (1, 3, 5, 8, 20):
        for where in filters:
            held = cache.recent("s-recent", limit, version, where)
            assert held == await ready.repository.recent("s-recent", limit, where), (limit, where)
    assert cache.recent("s-recent", 20, version) == list(reversed(
        await ready.repository.in_window("s-recent", datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC), 20)
    ))
    assert cache.recent("s-recent", 5, version, RecallFilter(metadata={"a": 1})) is None  # the copy holds no metadata
    await _store(client, "s-recent", "A note stored after the copy was taken")
    assert cache.recent("s-recent", 5, await ready.repository.session_version("s-recent")) is None  # stale: ask PostgreSQL

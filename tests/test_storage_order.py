"""Memories that share one occurred_at (a date per conversation) keep the order they were stored
in wherever recall orders by time: neighbours (from PostgreSQL and from the in-process copy), the
recent list and the time window."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp_memory.embedding.vector_cache import VectorCache

pytestmark = pytest.mark.anyio

AT = "2026-03-01T00:00:00Z"
TURNS = [
    "Ann: Guess what, I finally adopted a dog!",
    "Bob: No way! What breed is it?",
    "Ann: A beagle, from the shelter on Elm Street.",
    "Bob: What did you call him?",
    "Ann: Biscuit, because of his colour.",
    "Bob: Great name. Is he house-trained yet?",
    "Ann: Almost, he only chewed one shoe so far.",
    "Bob: My cousin had a beagle, they howl a lot.",
    "Ann: Oh he does, every evening at six.",
    "Bob: Bring him to the park on Sunday?",
    "Ann: Deal, see you at ten by the fountain.",
    "Bob: See you then!",
]


async def _store_in_order(client, session: str) -> list[str]:
    """Store every turn with one occurred_at, one call after the other; their ids in that order."""
    ids = []
    for turn in TURNS:
        result = await client.call_tool("store_memory", {"session": session, "content": turn, "occurred_at": AT})
        ids.append(result.structured_content["memory_id"])
    return ids


def _expected(ids: list[str], place: int, span: int) -> list[str]:
    """The neighbours of ids[place] in storage order: the nearest before first, then those after."""
    return [*reversed(ids[max(place - span, 0) : place]), *ids[place + 1 : place + 1 + span]]


async def test_neighbours_of_memories_with_one_time_follow_storage_order_in_postgres(client, deps):
    ready = await deps.ready()
    ids = await _store_in_order(client, "s-order")
    found = await ready.repository.neighbours("s-order", ids, 2, 3600.0)
    assert {anchor: sorted(near) for anchor, near in found.items()} == {
        anchor: sorted(_expected(ids, place, 2)) for place, anchor in enumerate(ids)
    }


async def test_neighbours_of_memories_with_one_time_follow_storage_order_in_the_copy(client, deps):
    ready = await deps.ready()
    ids = await _store_in_order(client, "s-order")
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    await cache.nearest(ready.repository, "s-order", await ready.embedder.embed_batch(["dog"]), 5, 800)
    held = cache.neighbours("s-order", ids, 2, 3600.0)
    assert held == {anchor: _expected(ids, place, 2) for place, anchor in enumerate(ids)}
    # a memory stored later with the same time goes after all of them, in the copy as in PostgreSQL
    last = await client.call_tool("store_memory", {"session": "s-order", "content": "Ann: Bye!", "occurred_at": AT})
    ids.append(last.structured_content["memory_id"])
    await cache.nearest(ready.repository, "s-order", await ready.embedder.embed_batch(["dog"]), 5, 800)
    assert cache.appends == 1
    assert cache.neighbours("s-order", [ids[-1]], 2, 3600.0) == {ids[-1]: [ids[-2], ids[-3]]}
    scanned = await ready.repository.neighbours("s-order", [ids[-1]], 2, 3600.0)
    assert scanned == {ids[-1]: [ids[-2], ids[-3]]}


async def test_recent_list_of_memories_with_one_time_is_the_last_stored_first(client, deps):
    ready = await deps.ready()
    ids = await _store_in_order(client, "s-order")
    assert await ready.repository.recent("s-order", 5) == list(reversed(ids))[:5]
    await client.call_tool("recall_memory", {"session": "s-order", "query": "what is the dog called?"})
    audit = await client.call_tool("list_audits", {"session": "s-order", "limit": 1})
    assert audit.structured_content["audits"][0]["detail"]["candidates"]["recent"] == list(reversed(ids))[:10]


async def test_time_window_of_memories_with_one_time_lists_them_in_storage_order(client, deps):
    ready = await deps.ready()
    ids = await _store_in_order(client, "s-order")
    at = datetime(2026, 3, 1, tzinfo=UTC)
    assert await ready.repository.in_window("s-order", at, at, 20) == ids
    assert await ready.repository.in_window("s-order", at, at, 4) == ids[:4]


async def test_deleting_a_memory_in_the_middle_keeps_the_others_in_storage_order(client, deps):
    ready = await deps.ready()
    ids = await _store_in_order(client, "s-order")
    cache = VectorCache(budget_bytes=64 * 1024 * 1024, exact_max=20_000)
    await cache.nearest(ready.repository, "s-order", await ready.embedder.embed_batch(["dog"]), 5, 800)
    gone = ids.pop(5)
    deleted = await client.call_tool("delete_memory", {"session": "s-order", "memory_id": gone})
    assert deleted.structured_content["count"] == 1
    await cache.nearest(ready.repository, "s-order", await ready.embedder.embed_batch(["dog"]), 5, 800)

    expected = {anchor: _expected(ids, place, 2) for place, anchor in enumerate(ids)}
    assert cache.neighbours("s-order", ids, 2, 3600.0) == expected
    scanned = await ready.repository.neighbours("s-order", ids, 2, 3600.0)
    assert {anchor: sorted(near) for anchor, near in scanned.items()} == {
        anchor: sorted(near) for anchor, near in expected.items()
    }
    assert await ready.repository.recent("s-order", 20) == list(reversed(ids))
    at = datetime(2026, 3, 1, tzinfo=UTC)
    assert await ready.repository.in_window("s-order", at, at, 20) == ids

"""store_memory(idempotency_key=...): a retry returns the first call's memory_id and stores nothing new.

The first reply may have been lost (the retry repeats a call that committed), two retries may race
(both in flight at once: one stores, the other answers with its id), and a key reused for another
memory is an error naming ``idempotency_key``. Keys are per session; a deleted memory's key stays
(a late retry is an error, never a resurrection), a deleted session's keys go with it.
"""

from __future__ import annotations

from typing import Any

import anyio
import asyncpg
import pytest
from mcp import Client

from mcp_memory.db.idempotency import KeyRow
from mcp_memory.db.repository import StoredRow
from mcp_memory.deps import Deps
from mcp_memory.errors import InvalidInput
from mcp_memory.pipeline.store import store
from mcp_memory.pipeline.validate import new_memory

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

KEY = "4b1f0c6e-retry-key"


async def _counts(pg_url: str, session: str) -> tuple[int, int]:
    """(memories, idempotency keys) of ``session``."""
    connection = await asyncpg.connect(pg_url)
    try:
        memories = await connection.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)
        keys = await connection.fetchval("SELECT count(*) FROM idempotency_keys WHERE session = $1", session)
        return memories, keys
    finally:
        await connection.close()


async def _store(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("store_memory", arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def _error(client: Client, **arguments: Any) -> str:
    result = await client.call_tool("store_memory", arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text


async def test_a_retry_with_the_same_key_returns_the_first_memory_id_and_stores_nothing(client, pg_url):
    first = await _store(client, session="s-idem", content="The boiler is serviced in October",
                         idempotency_key=KEY, occurred_at="2025-03-14T09:30:00+01:00")
    # the first reply was lost: the client only retries
    again = await _store(client, session="s-idem", content="The boiler is serviced in October",
                         idempotency_key=KEY, occurred_at="2025-03-14T08:30:00Z")  # the same instant

    assert first["replayed"] is False and first["deduplicated"] is False
    assert again == {**first, "replayed": True, "deduplicated": True}
    assert await _counts(pg_url, "s-idem") == (1, 1)


async def test_a_retry_without_occurred_at_replays_although_now_has_moved_on(client, pg_url):
    first = await _store(client, session="s-idem", content="Lunch with Dana", idempotency_key=KEY)
    again = await _store(client, session="s-idem", content="Lunch with Dana", idempotency_key=KEY)

    assert again["memory_id"] == first["memory_id"] and again["occurred_at"] == first["occurred_at"]
    assert again["replayed"] is True
    assert await _counts(pg_url, "s-idem") == (1, 1)


async def test_a_replay_reports_the_ids_the_first_call_marked_superseded(client):
    old = await _store(client, session="s-idem", content="Alice lives in Berlin")
    arguments = {"session": "s-idem", "content": "Alice moved to Lisbon", "supersedes": [old["memory_id"]],
                 "idempotency_key": KEY}
    first = await _store(client, **arguments)
    again = await _store(client, **arguments)

    assert first["superseded"] == [old["memory_id"]]
    assert again["superseded"] == [old["memory_id"]] and again["memory_id"] == first["memory_id"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"content": "The boiler is serviced in November"}, "different content"),
        ({"occurred_at": "2024-01-01"}, "other occurred_at"),
        ({"metadata": {"source": "mail"}}, "other occurred_at, metadata"),
        ({"importance": 0.9}, "importance"),
    ],
)
async def test_the_same_key_with_other_arguments_is_an_error_naming_idempotency_key(client, pg_url, change, expected):
    first = {"session": "s-idem", "content": "The boiler is serviced in October", "idempotency_key": KEY}
    await _store(client, **first)

    text = await _error(client, **{**first, **change})

    assert "idempotency_key: " in text and expected in text and "\n" not in text
    assert "nothing was stored" in text
    assert await _counts(pg_url, "s-idem") == (1, 1)


async def test_keys_are_per_session(client, pg_url):
    one = await _store(client, session="s-one", content="Shared words", idempotency_key=KEY)
    two = await _store(client, session="s-two", content="Other words", idempotency_key=KEY)

    assert one["memory_id"] != two["memory_id"] and not two["replayed"]
    assert await _counts(pg_url, "s-one") == (1, 1) and await _counts(pg_url, "s-two") == (1, 1)


async def test_the_same_content_under_a_new_key_is_deduplicated_not_replayed(client, pg_url):
    first = await _store(client, session="s-idem", content="Dentist on Friday", idempotency_key="key-a")
    second = await _store(client, session="s-idem", content="Dentist on Friday", idempotency_key="key-b")

    assert second["memory_id"] == first["memory_id"]
    assert second["deduplicated"] is True and second["replayed"] is False
    assert await _counts(pg_url, "s-idem") == (1, 2)


async def test_a_retry_after_the_memory_was_deleted_is_an_error_and_stores_nothing(client, pg_url):
    first = await _store(client, session="s-idem", content="Spare key under the blue pot", idempotency_key=KEY)
    deleted = await client.call_tool("delete_memory", {"session": "s-idem", "memory_id": first["memory_id"]})
    assert not deleted.is_error and deleted.structured_content["count"] == 1

    text = await _error(client, session="s-idem", content="Spare key under the blue pot", idempotency_key=KEY)

    assert "idempotency_key: " in text and first["memory_id"] in text and "was deleted" in text
    assert await _counts(pg_url, "s-idem") == (0, 1)


async def test_deleting_the_session_forgets_its_keys(client, pg_url):
    first = await _store(client, session="s-idem", content="Spare key under the blue pot", idempotency_key=KEY)
    deleted = await client.call_tool("delete_memory", {"session": "s-idem", "all": True, "confirm": "s-idem"})
    assert not deleted.is_error
    assert await _counts(pg_url, "s-idem") == (0, 0)

    again = await _store(client, session="s-idem", content="Spare key under the blue pot", idempotency_key=KEY)

    assert again["memory_id"] != first["memory_id"] and again["replayed"] is False
    assert await _counts(pg_url, "s-idem") == (1, 1)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("", "1..128 characters"), ("k" * 129, "129 characters; the limit is 128"), ("a\nb", "control characters")],
)
async def test_a_bad_key_is_rejected_naming_idempotency_key(client, pg_url, key, expected):
    text = await _error(client, session="s-idem", content="Anything", idempotency_key=key)

    assert "idempotency_key: " in text and expected in text
    assert await _counts(pg_url, "s-idem") == (0, 0)


async def test_a_key_of_128_characters_is_accepted(client, pg_url):
    stored = await _store(client, session="s-idem", content="Anything", idempotency_key="k" * 128)
    assert stored["replayed"] is False
    assert await _counts(pg_url, "s-idem") == (1, 1)


async def test_racing_retries_over_mcp_store_one_memory_and_all_get_its_id(client, pg_url):
    results: list[dict[str, Any]] = []

    async def attempt() -> None:
        results.append(await _store(client, session="s-race", content="Racing retries of one store",
                                    idempotency_key=KEY))

    async with anyio.create_task_group() as group:
        for _ in range(8):
            group.start_soon(attempt)

    assert len({r["memory_id"] for r in results}) == 1
    assert sum(not r["replayed"] for r in results) <= 1  # the first one, unless it lost the race to a replay
    assert await _counts(pg_url, "s-race") == (1, 1)


async def test_racing_stores_that_all_passed_the_first_look_commit_one_memory(deps: Deps, empty_tables, pg_url):
    """Every call embeds before the first commits, so all pass the key look-up: the primary key decides."""
    ready = await deps.ready()
    outcomes: list[Any] = []

    async def attempt(content: str, key: str = KEY) -> None:
        try:
            outcomes.append(await store(ready, "s-race", content, idempotency_key=key))
        except InvalidInput as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(attempt, "One content raced six times")
    ids = {outcome.memory_id for outcome in outcomes}
    assert len(ids) == 1 and sum(not o.replayed for o in outcomes) == 1
    assert await _counts(pg_url, "s-race") == (1, 1)

    async with anyio.create_task_group() as group:  # a new key, different contents: one wins
        for number in range(6):
            group.start_soon(attempt, f"Content number {number}", "another-key")
    errors = [o for o in outcomes[6:] if isinstance(o, InvalidInput)]
    assert len(errors) == 5 and all(e.field == "idempotency_key" for e in errors)
    assert all("different content" in str(e) for e in errors)
    assert await _counts(pg_url, "s-race") == (2, 2)


async def test_two_inserts_with_one_key_in_flight_at_once_commit_one_memory_and_the_other_gets_its_row(
    deps: Deps, empty_tables, pg_url
):
    """Below the look-up store_memory does first: the primary key alone decides a race."""
    ready = await deps.ready()
    memory = new_memory("s-race", "Raced below the look-up", None, None, None, ready.settings.limits,
                        idempotency_key=KEY)
    vectors = await ready.embedder.embed_batch(ready.embedder.windows(memory.content))
    rows: list[Any] = []

    async def insert() -> None:
        rows.append(await ready.repository.insert_memory(memory, vectors))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(insert)

    stored = [row for row in rows if isinstance(row, StoredRow)]
    earlier = [row for row in rows if isinstance(row, KeyRow)]
    assert len(stored) == 1 and len(earlier) == 3
    assert {row.memory_id for row in earlier} == {stored[0].memory_id}
    assert await _counts(pg_url, "s-race") == (1, 1)

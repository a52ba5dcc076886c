"""A recall's work is bounded by its query: term caps per list, and a timeout on every statement.

Issue 11: a 4,000-character query of identifier-like words (``word0 word1 ...``) took 14 s in a
300-memory session; the identifier list ran ``word_similarity`` for every term on every memory.
"""

from __future__ import annotations

import random
import time

import anyio
import asyncpg
import pytest

from benchmarks.query_cost import adversarial_query, memory_text
from conftest import make_settings
from tools import call, served, store

pytestmark = pytest.mark.anyio

MEMORIES = 120
SMALL = 10
BOUND_S = 2.0  # before the caps: 8.5 s (120 memories, loaded 2-core machine); after: 0.3-0.5 s


async def _fill(client, session: str, count: int = MEMORIES) -> None:
    rng = random.Random(11)
    for i in range(count):
        await call(client, "store_memory", {"session": session, "content": memory_text(rng, i)})


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
async def test_a_query_of_513_identifiers_at_the_length_limit_answers_within_two_seconds(
    pg_url, tmp_path, empty_tables
):
    query = adversarial_query(4000)
    async with served(make_settings(pg_url, tmp_path)) as client:
        await _fill(client, "s")
        await call(client, "recall_memory", {"session": "s", "query": "which build failed with E17?"})

        started = time.perf_counter()
        recalled = await call(client, "recall_memory", {"session": "s", "query": query})
        elapsed = time.perf_counter() - started

    assert len(query) == 3993 and len(query.split()) == 513
    assert recalled["memories"], "the capped lists still find memories naming some of the words"
    assert elapsed < BOUND_S, f"{elapsed:.2f} s"


async def test_a_statement_past_statement_timeout_ms_is_a_clear_error(pg_url, tmp_path, empty_tables):
    async with served(make_settings(pg_url, tmp_path)) as client:  # stores under the default timeout: at 20 ms
        await _fill(client, "s")  # a store on a loaded machine could itself be stopped (seen once in CI)
    settings = make_settings(pg_url, tmp_path, statement_timeout_ms=20,
                             recall={"max_identifier_terms": 1000, "max_keyword_terms": 1000})
    async with served(settings) as client:
        result = await client.call_tool("recall_memory", {"session": "s", "query": adversarial_query(4000)})

    assert result.is_error
    assert result.content[0].text == (
        "Error executing tool recall_memory: the database stopped a statement of this call at statement_timeout_ms; "
        "retry, or use a shorter query (canceling statement due to statement timeout)"
    )


async def test_the_identifier_list_matches_only_the_four_longest_identifiers_of_a_query(client):
    codes = ["alpha-1111111111", "bravo-22222222", "carlo-333333", "delta-44444", "echo-5555", "foxy-666"]
    ids = {code: await store(client, "s", f"Ticket {code} was closed.") for code in codes}

    await call(client, "recall_memory", {"session": "s", "query": "status of " + " ".join(reversed(codes))})
    audits = await call(client, "list_audits", {"session": "s", "kind": "recall", "limit": 1})

    assert set(audits["audits"][0]["detail"]["candidates"]["trigram:id"]) == {ids[code] for code in codes[:4]}



async def test_deleting_a_whole_session_is_not_cut_short_by_statement_timeout_ms(pg_url, tmp_path, empty_tables):
    """statement_timeout_ms bounds what a recall can cost; it must not make a session undeletable when its
    delete takes longer (a big session, or here a row another transaction holds for 0.5 s: the lock,
    not the session's size, makes it outlast the timeout, so a few memories do)."""
    async with served(make_settings(pg_url, tmp_path)) as client:
        await _fill(client, "big", SMALL)

    holder = await asyncpg.connect(pg_url)
    try:
        async with served(make_settings(pg_url, tmp_path, statement_timeout_ms=100)) as client:
            async with anyio.create_task_group() as group:
                held = holder.transaction()
                await held.start()
                await holder.execute("SELECT 1 FROM memories WHERE session = 'big' LIMIT 1 FOR UPDATE")

                async def release() -> None:
                    await anyio.sleep(0.5)  # the scenario: a transaction that outlasts the statement timeout
                    await held.rollback()

                group.start_soon(release)
                deleted = await call(client, "delete_memory", {"session": "big", "all": True, "confirm": "big"})
    finally:
        await holder.close()

    assert deleted == {"deleted": True, "count": SMALL}

"""Equal scores rank in storage order, so the same stores give the same rankings in every run and on
one node as on a Citus cluster (issue 24: LoCoMo's recall@10 through the coordinator differed from one
node's because ties broke by random memory_ids).

Each fact is stored in four spellings that differ only in letter case: the embedding model and
PostgreSQL's full-text and trigram search all lower-case, so the four score the same in every list
and the order among them is the tie-break alone. Memory ids are UUID version 7 (``db/ids.py``), so
the tie-break (``memory_id``, everywhere recall orders by score) is the order of storage. (No fact
says "moved" or the like: the newer-over-older rule, ``pipeline/implicit_updates.py``, would then
put the newer spelling first, on purpose.)
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tools import call, store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

FACTS = [
    ("The nightly backup of the billing database starts at 02:00", "When does the billing backup run?"),
    ("Maria's flight to Lisbon leaves on Friday morning", "When is Maria flying to Lisbon?"),
    ("The staging server sits in the rack in room 4", "Which rack holds the staging server?"),
    ("Our team retro happens every second Thursday", "How often is the team retro?"),
]
SPELLINGS = (str.lower, str.upper, str.title, lambda text: text)


def _stored_order() -> list[str]:
    """Every spelling of every fact, in the order stored: each fact's spellings rotated, so storage
    order is neither the spellings' order nor alphabetical."""
    order = []
    for rotation in range(len(SPELLINGS)):
        for index, (fact, _) in enumerate(FACTS):
            order.append(SPELLINGS[(index + rotation) % len(SPELLINGS)](fact))
    return order


async def _rankings(client: Client, session: str) -> list[list[str]]:
    """The contents recall ranks for each fact's question, best first."""
    rankings = []
    for _, question in FACTS:
        recalled: dict[str, Any] = await call(
            client, "recall_memory", {"session": session, "query": question, "top_k": len(_stored_order())}
        )
        rankings.append([memory["content"] for memory in recalled["memories"]])
    return rankings


async def test_memories_with_equal_scores_rank_in_the_order_they_were_stored(client: Client) -> None:
    stored = _stored_order()
    for content in stored:
        await store(client, "ties", content)

    for (fact, _), ranked in zip(FACTS, await _rankings(client, "ties"), strict=True):
        spellings = [content for content in ranked if content.lower() == fact.lower()]
        assert spellings == [content for content in stored if content.lower() == fact.lower()]


async def test_the_same_memories_stored_in_the_same_order_rank_the_same_in_another_session(client: Client) -> None:
    for session in ("first", "second"):
        for content in _stored_order():
            await store(client, session, content)

    assert await _rankings(client, "first") == await _rankings(client, "second")

"""The optional recall levers: the entity list, pseudo-relevance feedback, vector feedback and episode (sum)
spreading."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from mcp import Client

from mcp_memory.pipeline.fuse import spread
from mcp_memory.pipeline.search import query_names
from mcp_memory.settings import RecallSettings
from tools import served

pytestmark = pytest.mark.anyio

# Melanie speaks in most memories, so plain BM25 ignores her name (a word in more than half of a
# session of 20 or more says nothing about which memory is meant).
CHAT = [
    "Caroline: I painted a horse in the park yesterday.",
    "Melanie: I painted a sunset over the lake last week.",
    "Caroline: The support group meets on Thursdays.",
    *[f"Melanie: Note {i} about the kids, the garden and the weather." for i in range(14)],
    *[f"Caroline: Note {i} about work and the bus." for i in range(7)],
]


@asynccontextmanager
async def _client_with(base_settings, **recall: object) -> AsyncIterator[Client]:
    """A server over its own resources (the recall settings live in them) on the shared database."""
    settings = base_settings.model_copy(update={"recall": RecallSettings(**recall)})
    async with served(settings) as client:
        yield client


async def _store_all(client, session: str, contents: list[str]) -> list[str]:
    ids = []
    for content in contents:
        result = await client.call_tool("store_memory", {"session": session, "content": content})
        ids.append(result.structured_content["memory_id"])
    return ids


async def _candidates(client, session: str, query: str) -> dict[str, list[str]]:
    await client.call_tool("recall_memory", {"session": session, "query": query, "top_k": 5})
    audit = await client.call_tool("list_audits", {"session": session, "limit": 1})
    return audit.structured_content["audits"][0]["detail"]["candidates"]


def test_names_are_capitalised_words_that_do_not_start_a_sentence():
    assert query_names("What did Melanie's kids paint with Caroline in May?") == ["Melanie", "Caroline"]
    assert query_names("Where has Melanie camped? Did Jon go too?") == ["Melanie", "Jon"]
    assert query_names("Melanie painted what?") == []


async def test_entity_list_ranks_only_memories_that_name_the_person_asked_about(base_settings, deps, empty_tables):
    async with _client_with(base_settings, entity_weight=1.0) as client:
        ids = await _store_all(client, "s-names", CHAT)
        candidates = await _candidates(client, "s-names", "What did Melanie paint?")
    assert candidates["entity"] == [ids[1]]  # Caroline's painting is left out
    assert set(candidates["keyword:0"][:2]) == {ids[0], ids[1]}  # BM25 alone cannot tell them apart


async def test_entity_list_is_off_by_default(client):
    await _store_all(client, "s-names", CHAT)
    assert "entity" not in await _candidates(client, "s-names", "What did Melanie paint?")


async def test_feedback_finds_a_memory_that_shares_words_only_with_the_best_match(base_settings, deps, empty_tables):
    memories = [
        "I booked the ferry to Naxos for the family holiday.",
        "The Naxos apartment has a balcony facing the harbour.",
        "The harbour apartment needs a deposit of 200 euros.",
        *[f"Unrelated note {i}: the printer on floor {i} jams." for i in range(5)],
    ]
    async with _client_with(base_settings, prf_memories=2, prf_terms=4) as client:
        ids = await _store_all(client, "s-prf", memories)
        candidates = await _candidates(client, "s-prf", "Where do we stay on the Naxos holiday?")
    assert ids[2] not in candidates["keyword:0"]  # it shares no word with the question
    assert ids[2] in candidates["prf"]  # but "apartment" and "harbour" with the memories found first


def test_sum_spreading_favours_a_memory_amid_several_matches():
    fused = [("a", 1.0), ("b", 0.75), ("c", 0.5)]
    neighbours = {"a": ["x", "y"], "b": ["x"], "c": ["y"]}
    assert spread(fused, neighbours, 0.5) == [("a", 1.0), ("b", 0.75), ("c", 0.5), ("x", 0.5), ("y", 0.5)]
    assert spread(fused, neighbours, 0.5, "sum") == [("a", 1.0), ("x", 0.875), ("b", 0.75), ("y", 0.75), ("c", 0.5)]


async def test_vector_feedback_searches_near_the_best_memories_as_a_list_of_its_own(base_settings, deps, empty_tables):
    memories = [
        "I water the monstera and the basil on the balcony every Sunday.",
        "The fern in the bathroom and the cactus by the window need a drink twice a week.",
        "The printer on the second floor jams when the paper is damp.",
        "Our team meeting moved to Thursday mornings.",
    ]
    async with _client_with(base_settings, vector_feedback=1) as client:
        ids = await _store_all(client, "s-vfb", memories)
        candidates = await _candidates(client, "s-vfb", "Which plants do I water on Sundays?")
    best = candidates["keyword:0"][0]
    assert best == ids[0]
    assert candidates["vfb"][:2] == [ids[0], ids[1]]  # the best memory itself, then the other plants
    assert len(candidates["vfb"]) == len(memories)


async def test_vector_feedback_is_off_by_default(client):
    await _store_all(client, "s-vfb", ["I water the basil every Sunday.", "The printer jams."])
    assert "vfb" not in await _candidates(client, "s-vfb", "Which plants do I water?")

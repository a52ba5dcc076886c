"""Keyword legs find what vectors miss: identifiers and text without spaces (Chinese)."""

from __future__ import annotations

import math
import uuid

import asyncpg
import pytest

from mcp_memory.pipeline.search import cjk_bigrams, cjk_characters, trigram_terms

pytestmark = pytest.mark.anyio

ORDERS = [
    "Order A-77811 was delayed at customs in Rotterdam",
    "Order A-77812 was refunded to the customer's credit card",
    "Order A-77813 shipped with the blue cable bundle",
    "Order B-77812 is waiting for the warehouse team",
    "The error log for the nightly job is err_2231.log in the shared folder",
    "The error log for the backup job is err_2213.log in the shared folder",
    "Ticket ZX-7781: printer on floor 3 jams on A3 paper",
    "Ticket ZX-7718: scanner on floor 2 is offline",
]

CHINESE = [
    "设计评审会议改到周五下午，在三号会议室",
    "周五晚上和朋友去吃火锅",
    "下个月要续签护照，记得带照片",
    "项目预算审批已经通过，财务部会在月底付款",
    "周末带孩子去动物园看熊猫",
]


async def _store_all(client, session: str, contents: list[str]) -> list[str]:
    ids = []
    for content in contents:
        result = await client.call_tool("store_memory", {"session": session, "content": content})
        ids.append(result.structured_content["memory_id"])
    return ids


async def _recall_with_audit(client, session: str, query: str):
    result = await client.call_tool("recall_memory", {"session": session, "query": query, "top_k": 3})
    audit = await client.call_tool("list_audits", {"session": session, "limit": 1})
    return result.structured_content["memories"], audit.structured_content["audits"][0]["detail"]["candidates"]


@pytest.mark.parametrize(("query", "index"), [("A-77812", 1), ("err_2231.log", 4), ("what about ZX-7781?", 6)])
async def test_an_identifier_is_found_first_by_the_identifier_list(client, query, index):
    ids = await _store_all(client, "s-ids", ORDERS)
    memories, candidates = await _recall_with_audit(client, "s-ids", query)
    assert memories[0]["memory_id"] == ids[index]
    assert candidates["trigram:id"][0] == ids[index]


@pytest.mark.parametrize(("query", "index", "vector_first"), [("A-77811", 0, 1), ("ZX-7781", 6, 7)])
async def test_an_identifier_the_vector_search_misses_is_still_recalled_first(client, query, index, vector_first):
    ids = await _store_all(client, "s-ids", ORDERS)
    memories, candidates = await _recall_with_audit(client, "s-ids", query)
    assert candidates["vector:0"][0] == ids[vector_first]  # MiniLM cannot tell the numbers apart
    assert memories[0]["memory_id"] == ids[index]


def test_identifiers_are_codes_and_file_names_not_hyphenated_words_or_dates():
    """Hyphenated words, years and ordinals go to BM25 only: their common trigrams
    made the identifier list read thousands of memories of a 10k session (hyphenated words 30-65 ms,
    the whole p99 of recall; a year 14 ms of PostgreSQL CPU, 60% of its work at concurrency 10)."""
    cjk, identifiers = trigram_terms(
        ["When did Caroline draw a self-portrait? Was it an open-world game, Jean-Luc's T-shirt or CS:GO?",
         "A-77812 err_2231.log ZX-7781 PHX-ABC src/app.py 2023 77812 v2.8.0 release 2.4",
         "What did Audrey do on 4th October, 2023, and Evan on 9th December 2023 or May 25, 2023? 10,000 users",
         "#4521 and HTTP 502 in 1999"]
    )
    assert cjk == []
    assert identifiers == ["A-77812", "err_2231.log", "ZX-7781", "PHX-ABC", "src/app.py", "77812", "4521", "502"]


async def test_versions_and_short_codes_left_to_bm25_are_still_found_first(client):
    """"2.4", "v2.8.0" and "CS:GO" have no part of 3 characters, so their trigrams are shared by
    most memories and they no longer feed the identifier list; BM25 indexes each as one lexeme."""
    ids = await _store_all(client, "s-versions", [
        "Release 2.3 of the billing service went out on Monday.",
        "Release 2.4 of the billing service is planned for June 12.",
        "order-service v2.7.1 was deployed to production on March 3.",
        "order-service v2.8.0 was deployed to production on April 9.",
        "James plays Dota at the weekend.",
        "James organises CS:GO tournaments at the weekend.",
    ])
    for query, index in (("when is release 2.4 of billing", 1), ("when was order-service v2.8.0 deployed", 3),
                         ("which tournaments besides CS:GO", 5)):
        memories, candidates = await _recall_with_audit(client, "s-versions", query)
        assert "trigram:id" not in candidates
        assert memories[0]["memory_id"] == ids[index], query


async def test_a_year_in_the_question_still_finds_the_memory_that_names_it(client):
    ids = await _store_all(client, "s-year", [
        "The boiler was repaired in 2019 after it failed twice.",
        "We repainted the kitchen in spring, it took a week.",
        "The roof was repaired after the storm in 2023.",
    ])
    memories, candidates = await _recall_with_audit(client, "s-year", "what was repaired 2023")
    assert "trigram:id" not in candidates
    assert memories[0]["memory_id"] == ids[2]
    assert candidates["keyword:0"][:1] == [ids[2]]  # "repaired" is in two memories, "2023" in one


async def test_a_chinese_question_finds_the_chinese_memory_that_shares_its_key_term(client):
    ids = await _store_all(client, "s-zh", CHINESE)
    memories, candidates = await _recall_with_audit(client, "s-zh", "设计评审会议在哪里开？")
    assert memories[0]["memory_id"] == ids[0]
    assert candidates["bigram:cjk"][0] == ids[0]
    memories, _ = await _recall_with_audit(client, "s-zh", "护照什么时候续签")
    assert memories[0]["memory_id"] == ids[2]


async def test_tool_annotations_say_what_each_tool_does(client):
    tools = {tool.name: tool.annotations for tool in (await client.list_tools()).tools}
    assert tools["recall_memory"].read_only_hint is True
    assert tools["list_audits"].read_only_hint is True
    assert tools["usage_stats"].read_only_hint is True
    assert tools["delete_memory"].destructive_hint is True
    assert tools["store_memory"].read_only_hint is False


ACTIVITIES = [
    "bought a new bicycle", "visited the dentist", "read a novel about whales", "cooked lentil soup",
    "called her grandmother", "fixed the kitchen tap", "planted tulips", "watched a chess final",
    "booked a train to Porto", "adopted a grey cat", "painted the fence", "ran a half marathon",
    "learned three guitar chords", "lost her umbrella", "baked sourdough bread", "joined a choir",
    "renewed her passport", "cleaned the garage", "wrote a letter to Tom", "tried rock climbing",
    "sold her old laptop", "visited an art museum", "started a herb garden", "repaired the roof",
]


async def test_a_word_in_most_memories_of_a_session_does_not_flood_the_keyword_list(client):
    await _store_all(client, "s-alice", [f"Alice {activity} on day {i}" for i, activity in enumerate(ACTIVITIES)])
    [based] = await _store_all(client, "s-alice", ["Alice is based in Lisbon these days"])
    memories, candidates = await _recall_with_audit(client, "s-alice", "Where is Alice based at the moment?")
    assert candidates["keyword:0"] == [based]
    assert memories[0]["memory_id"] == based


TOPICS = [
    "We booked a cabin by the lake for the last week of August",
    "My sister adopted a grey kitten called Miso",
    "The quarterly report is due to finance on the 14th",
    "I started learning the cello in March",
    "The car needs new winter tyres before November",
    "Our team moved the stand-up meeting to 9:30",
    "Grandma's lasagne recipe uses three kinds of cheese",
    "The dentist appointment was moved to Tuesday afternoon",
    "I ran my first half marathon in 1 hour 52 minutes",
    "The new laptop has 32 GB of memory and a matte screen",
    "We planted tomatoes and basil on the balcony",
    "The landlord will fix the heating on Friday",
    "Jonas recommended a podcast about the history of maps",
    "My passport expires next spring",
    "The book club is reading a novel set in Lisbon",
    "I switched my phone plan to one with unlimited data",
]


async def test_the_exact_scan_and_the_hnsw_path_both_return_the_true_nearest_memories(client, deps):
    """A session of at most exact_search_max_memories is scanned exactly (in PostgreSQL, or from the
    in-process copy); a larger one goes through HNSW. All three return the brute-force nearest
    memories, nearest first, with pgvector's distance."""
    ids = await _store_all(client, "s-vec", TOPICS)
    ready = await deps.ready()
    query = "when is the heating getting repaired?"
    [question] = await ready.embedder.embed_batch([query])
    vectors = await ready.embedder.embed_batch(TOPICS)
    distances = {memory_id: 1 - float(vector @ question) for memory_id, vector in zip(ids, vectors, strict=True)}
    expected = sorted(ids, key=distances.__getitem__)[:8]
    assert expected[0] == ids[11]

    exact = await ready.repository.vector_search("s-vec", [question], 8, 400, exact=True)
    indexed = await ready.repository.vector_search("s-vec", [question], 8, 400, exact=False)
    held = await ready.vectors.nearest(ready.repository, "s-vec", [question], 8, 400)
    for found in (exact[0], indexed[0], held[0]):
        assert [memory_id for memory_id, _ in found] == expected
        for memory_id, distance in found:
            assert distance == pytest.approx(distances[memory_id], abs=1e-5)


async def test_a_stored_embedding_stays_in_the_row_even_when_the_row_outgrows_a_page_quarter(client, pg_url):
    """Migration 005: the vector is stored MAIN, so a long memory's text goes to TOAST instead of
    its embedding and an exact scan reads no TOAST pages."""
    content = "Notes from the planning meeting. " + " ".join(f"item {i}: check the budget line {i * 7}" for i in range(60))
    assert len(content) > 2_000
    [memory_id] = await _store_all(client, "s-row", [content])
    connection = await asyncpg.connect(pg_url)
    try:
        toasted = await connection.fetchval(
            "SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL FROM memories WHERE memory_id = $1", uuid.UUID(memory_id)
        )
    finally:
        await connection.close()
    assert toasted is False


def test_cjk_characters_are_each_character_of_the_runs_once_in_order():
    assert cjk_characters(["号码联系王芳", "王芳工作"]) == ["号", "码", "联", "系", "王", "芳", "工", "作"]
    assert cjk_characters([]) == []


# Wang Fang's memories: the question shares the character 号 with her new number ("手机号") but no
# bigram other than her name, which every memory has (idf about 0).
WANG_FANG = [
    "王芳换了新手机号：186 5718 1687，旧的已经停用。",
    "王芳去体育馆看了王菲的演唱会。",
    "王芳让我提醒一下要还图书馆的书。",
    "王芳和小李在商场里的日料店吃了火锅。",
    "王芳最近在看《三体》，觉得挺有意思。",
    "王芳最喜欢喝普洱。",
]


async def test_a_chinese_question_finds_a_memory_that_shares_only_a_character(client, deps):
    """Through the tool, the CJK list puts the new number first (default weight 0.5). On the
    repository, with the characters' weight 0 (bigrams only, as before) all six memories tie on
    the name; with 0.5 the memory holding 号 scores above the rest, by the idf the test works out."""
    ids = await _store_all(client, "s-zh-number", WANG_FANG)
    question = "现在应该打哪个号码联系王芳？"
    _, candidates = await _recall_with_audit(client, "s-zh-number", question)
    assert candidates["bigram:cjk"][0] == ids[0]

    ready = await deps.ready()
    [run] = trigram_terms([question])[0]
    bigrams, characters = cjk_bigrams([run]), cjk_characters([run])
    scores = {}
    for weight in (0.0, 0.5):
        found = await ready.repository.gram_search(
            "s-zh-number", bigrams + characters, 100, [1.0] * len(bigrams) + [weight] * len(characters)
        )
        scores[weight] = dict(found)
    assert sorted(scores[0.0]) == sorted(ids)
    assert len({round(score, 9) for score in scores[0.0].values()}) == 1  # the name alone: no order
    n = len(WANG_FANG)
    idf = {df: math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in (1, n)}  # BM25's, as the repository's
    # The new number adds half the idf of 王 and 芳 (in all six) and of 号 (in it alone).
    assert scores[0.5][ids[0]] - scores[0.0][ids[0]] == pytest.approx(0.5 * (2 * idf[n] + idf[1]))
    assert scores[0.5][ids[0]] > max(score for memory_id, score in scores[0.5].items() if memory_id != ids[0])

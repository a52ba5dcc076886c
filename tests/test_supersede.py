"""Supersession without an LLM: store_memory's ``supersedes``, recall's ranking and history,
delete's cascade, and the pure parts (the past-question detector and ``rank``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from mcp import Client

from mcp_memory.access.gate import Caller, Gate
from mcp_memory.access.scope import ALL_SESSIONS
from mcp_memory.models import Candidate
from mcp_memory.pipeline.supersede import asks_about_past, rank
from mcp_memory.server import build_server
from tools import call, store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

BERLIN = "Alice lives in Berlin, in a flat in Kreuzberg."
LISBON = "Alice moved from Berlin to Lisbon; she lives in Lisbon now."
COFFEE = "Bob drinks his coffee black, no sugar."


async def _recall(client: Client, session: str, query: str, **extra: Any) -> list[dict[str, Any]]:
    return (await call(client, "recall_memory", {"session": session, "query": query, **extra}))["memories"]


async def _rows(pg_url: str) -> list[tuple[str, str, str]]:
    connection = await asyncpg.connect(pg_url)
    try:
        rows = await connection.fetch(
            "SELECT session, memory_id::text, superseded_by::text FROM memory_supersessions ORDER BY 1, 2"
        )
    finally:
        await connection.close()
    return [tuple(row) for row in rows]


async def _alice(client: Client, session: str = "s-alice") -> tuple[str, str, str]:
    berlin = await store(client, session, BERLIN, occurred_at="2024-01-10")
    coffee = await store(client, session, COFFEE, occurred_at="2024-02-01")
    stored = await call(
        client, "store_memory",
        {"session": session, "content": LISBON, "occurred_at": "2025-03-01", "supersedes": [berlin]},
    )
    assert stored["superseded"] == [berlin]
    return berlin, coffee, stored["memory_id"]


# --- store ------------------------------------------------------------------------------------


async def test_store_with_supersedes_marks_the_old_memory_and_keeps_it(client, pg_url):
    berlin, _, lisbon = await _alice(client)

    assert await _rows(pg_url) == [("s-alice", berlin, lisbon)]
    everything = await _recall(client, "s-alice", "Alice", include_superseded=True, top_k=10)
    assert {m["memory_id"]: m["superseded_by"] for m in everything}[berlin] == lisbon


async def test_store_without_supersedes_reports_an_empty_superseded_list(client):
    stored = await call(client, "store_memory", {"session": "s-plain", "content": COFFEE})

    assert stored["superseded"] == []


async def test_duplicate_and_upper_case_ids_collapse_to_one_mark(client, pg_url):
    berlin = await store(client, "s-dup", BERLIN)

    stored = await call(client, "store_memory",
                        {"session": "s-dup", "content": LISBON, "supersedes": [berlin, berlin.upper(), berlin]})

    assert stored["superseded"] == [berlin]
    assert len(await _rows(pg_url)) == 1


async def _rejected(client: Client, pg_url: str, arguments: dict[str, Any]) -> str:
    """The call fails naming supersedes, and nothing new is stored or marked."""
    connection = await asyncpg.connect(pg_url)
    try:
        before = await connection.fetchval("SELECT count(*) FROM memories")
        result = await client.call_tool("store_memory", arguments)
        after = await connection.fetchval("SELECT count(*) FROM memories")
    finally:
        await connection.close()
    assert result.is_error
    text = result.content[0].text
    assert "supersedes" in text
    assert after == before
    return text


async def test_an_id_of_another_session_gets_the_same_error_as_an_unknown_uuid(client, pg_url):
    elsewhere = await store(client, "s-other", BERLIN)
    unknown = str(uuid.uuid4())

    foreign = await _rejected(client, pg_url, {"session": "s-mine", "content": LISBON, "supersedes": [elsewhere]})
    missing = await _rejected(client, pg_url, {"session": "s-mine", "content": LISBON, "supersedes": [unknown]})

    assert foreign.replace(elsewhere, "ID") == missing.replace(unknown, "ID")
    assert "s-other" not in foreign
    assert await _rows(pg_url) == []


async def test_one_unknown_id_among_good_ones_stores_and_marks_nothing(client, pg_url):
    berlin = await store(client, "s-mix", BERLIN)

    await _rejected(client, pg_url, {"session": "s-mix", "content": LISBON, "supersedes": [berlin, str(uuid.uuid4())]})

    assert await _rows(pg_url) == []
    assert len(await _recall(client, "s-mix", "Lisbon", top_k=10)) == 1


@pytest.mark.parametrize("supersedes", [["not-a-uuid"], [42], "0b6f1c2e-3d4a-4f5b-8c6d-7e8f9a0b1c2d", [None]])
async def test_supersedes_that_is_not_a_list_of_uuid_strings_is_rejected(client, pg_url, supersedes):
    await _rejected(client, pg_url, {"session": "s-bad", "content": LISBON, "supersedes": supersedes})


async def test_more_than_32_ids_are_rejected_naming_the_limit(client, pg_url):
    text = await _rejected(
        client, pg_url, {"session": "s-many", "content": LISBON, "supersedes": [str(uuid.uuid4()) for _ in range(33)]}
    )

    assert "33" in text and "32" in text


async def test_storing_the_same_content_with_its_own_id_is_rejected(client, pg_url):
    berlin = await store(client, "s-self", BERLIN)

    text = await _rejected(client, pg_url, {"session": "s-self", "content": BERLIN, "supersedes": [berlin]})

    assert "itself" in text


async def test_deduplicated_content_applies_supersedes_to_the_memory_already_stored(client, pg_url):
    berlin = await store(client, "s-again", BERLIN)
    lisbon = await store(client, "s-again", LISBON)

    stored = await call(client, "store_memory", {"session": "s-again", "content": LISBON, "supersedes": [berlin]})

    assert stored["deduplicated"] is True and stored["memory_id"] == lisbon
    assert stored["superseded"] == [berlin]
    assert await _rows(pg_url) == [("s-again", berlin, lisbon)]


async def test_a_cycle_is_resolved_by_the_newest_marking(client, pg_url):
    """A supersedes B, then B (stored again) supersedes A: A is superseded by B, and B is current."""
    berlin = await store(client, "s-cycle", BERLIN)
    lisbon = await store(client, "s-cycle", LISBON, supersedes=[berlin])

    again = await call(client, "store_memory", {"session": "s-cycle", "content": BERLIN, "supersedes": [lisbon]})

    assert again["memory_id"] == berlin and again["superseded"] == [lisbon]
    assert await _rows(pg_url) == [("s-cycle", lisbon, berlin)]
    top = (await _recall(client, "s-cycle", "Where does Alice live?"))[0]
    assert top["memory_id"] == berlin and top["superseded_by"] is None


async def test_a_three_memory_cycle_cannot_form(client, pg_url):
    a = await store(client, "s-tri", "Alice lives in Berlin.")
    b = await store(client, "s-tri", "Alice lives in Lisbon.", supersedes=[a])
    c = await store(client, "s-tri", "Alice lives in Porto.", supersedes=[b])

    await store(client, "s-tri", "Alice lives in Berlin.", supersedes=[c])

    assert await _rows(pg_url) == sorted([("s-tri", b, c), ("s-tri", c, a)])


async def test_naming_a_memory_already_superseded_marks_the_current_end_of_its_chain(client, pg_url):
    """Berlin -> Lisbon, then Porto names Berlin (an agent re-using the id it first saw): Lisbon, the
    current end of Berlin's chain, is the one Porto replaces, so no stale fact is left looking current."""
    berlin = await store(client, "s-re", BERLIN)
    lisbon = await store(client, "s-re", LISBON, supersedes=[berlin])

    stored = await call(client, "store_memory", {"session": "s-re", "content": "Alice moved on to Porto.",
                                                 "supersedes": [berlin]})

    porto = stored["memory_id"]
    assert stored["superseded"] == [lisbon]
    assert await _rows(pg_url) == sorted([("s-re", berlin, lisbon), ("s-re", lisbon, porto)])
    history = await _recall(client, "s-re", "Where did Alice live before?", top_k=10)
    assert [m["memory_id"] for m in history if m["superseded_by"] is None] == [porto]


async def test_the_callers_supersedes_are_audited_with_what_was_named_and_what_was_marked(client):
    """Only the LLM's decisions were audited: a mark made by the caller left no trace in list_audits."""
    berlin = await store(client, "s-aud", BERLIN)
    lisbon = await store(client, "s-aud", LISBON, supersedes=[berlin])
    porto = await store(client, "s-aud", "Alice moved on to Porto.", supersedes=[berlin])
    await store(client, "s-aud", COFFEE)

    audits = (await call(client, "list_audits", {"session": "s-aud", "kind": "supersede"}))["audits"]

    assert [row["detail"] for row in audits] == [
        {"memory_id": porto, "source": "caller", "by": "stdio", "requested": [berlin], "superseded": [lisbon]},
        {"memory_id": lisbon, "source": "caller", "by": "stdio", "requested": [berlin], "superseded": [berlin]},
    ]
    assert (await call(client, "list_audits", {"session": "s-other-aud", "kind": "supersede"}))["audits"] == []


# --- recall -----------------------------------------------------------------------------------


async def test_a_present_question_gets_the_current_memory_and_not_the_superseded_one(client):
    berlin, _, lisbon = await _alice(client)

    recalled = await _recall(client, "s-alice", "Where does Alice live?")

    ids = [m["memory_id"] for m in recalled]
    assert ids[0] == lisbon and berlin not in ids
    assert all(m["superseded_by"] is None for m in recalled)


async def test_a_question_about_the_past_gets_the_old_memory_below_its_successor(client):
    berlin, _, lisbon = await _alice(client)

    for query in ("Where did Alice live before?", "Alice 以前住在哪里？"):
        recalled = await _recall(client, "s-alice", query)
        ids = [m["memory_id"] for m in recalled]
        assert ids.index(lisbon) < ids.index(berlin), query
        assert recalled[ids.index(berlin)]["superseded_by"] == lisbon


async def test_include_superseded_returns_the_history_below_its_successor(client):
    berlin, coffee, lisbon = await _alice(client)

    recalled = await _recall(client, "s-alice", "Where does Alice live?", include_superseded=True)

    ids = [m["memory_id"] for m in recalled]
    assert ids[:2] == [lisbon, berlin]
    assert coffee in ids


async def test_include_superseded_pulls_in_history_no_list_found(client):
    old = await store(client, "s-hist", "The office wifi password is tulip-42.")
    new = await store(client, "s-hist", "New router installed; the network key changed to orchid-77.", supersedes=[old])

    recalled = await _recall(client, "s-hist", "orchid-77", include_superseded=True, top_k=2)

    assert [m["memory_id"] for m in recalled] == [new, old]


async def test_when_only_the_old_memory_matches_its_successor_is_pulled_in_ahead_of_it(client):
    old = await store(client, "s-pull", "The team standup is at 09:15 in room Ararat.")
    filler = [await store(client, "s-pull", f"Note {i}: the printer on floor {i} needs toner.") for i in range(3)]
    new = await store(client, "s-pull", "From June the daily meeting moves to 10:00.", supersedes=[old])

    recalled = await _recall(client, "s-pull", "room Ararat", top_k=2)
    audit = (await call(client, "list_audits", {"session": "s-pull", "limit": 1}))["audits"][0]["detail"]

    assert [m["memory_id"] for m in recalled] == [new, old]
    assert recalled[0]["score"] >= recalled[1]["score"]
    assert audit["supersession"]["promoted"] == [new]  # a small session: every memory is in the pool
    assert audit["supersession"]["demoted"] == [old] and audit["supersession"]["dropped"] == []
    assert filler  # stored only to give the lists something else to rank


async def test_the_recall_audit_records_the_dropped_superseded_memory(client):
    berlin, _, lisbon = await _alice(client)

    await _recall(client, "s-alice", "Where does Alice live?")
    detail = (await call(client, "list_audits", {"session": "s-alice", "kind": "recall", "limit": 1}))["audits"][0][
        "detail"
    ]

    assert detail["supersession"]["dropped"] == [berlin]
    assert detail["supersession"]["past_question"] is False
    assert lisbon in detail["selected"] and berlin not in detail["selected"]


async def test_a_chain_of_three_returns_only_the_newest_for_a_present_question(client):
    a = await store(client, "s-chain", "Alice's phone number is 0151 111.")
    b = await store(client, "s-chain", "Alice's new phone number is 0151 222.", supersedes=[a])
    c = await store(client, "s-chain", "Alice changed her phone number again, to 0151 333.", supersedes=[b])

    now = await _recall(client, "s-chain", "What is Alice's phone number?")
    history = await _recall(client, "s-chain", "What was Alice's phone number before?")

    assert [m["memory_id"] for m in now] == [c]
    assert [m["memory_id"] for m in history] == [c, b, a]


async def test_recall_in_a_session_without_supersession_is_unchanged_in_order_and_scores(client):
    for i in range(6):
        await store(client, "s-none", f"Trip log {i}: hiked {i + 3} km near the lake.")

    plain = await _recall(client, "s-none", "how far did I hike near the lake", top_k=6)
    history = await _recall(client, "s-none", "how far did I hike near the lake", top_k=6, include_superseded=True)

    assert [(m["memory_id"], m["score"]) for m in plain] == [(m["memory_id"], m["score"]) for m in history]
    assert all(m["superseded_by"] is None for m in plain)


# --- delete -----------------------------------------------------------------------------------


async def test_deleting_the_successor_makes_the_old_memory_current_again(client, pg_url):
    berlin, _, lisbon = await _alice(client)

    await call(client, "delete_memory", {"session": "s-alice", "memory_id": lisbon})

    assert await _rows(pg_url) == []
    top = (await _recall(client, "s-alice", "Where does Alice live?"))[0]
    assert top["memory_id"] == berlin and top["superseded_by"] is None
    audit = (await call(client, "list_audits", {"session": "s-alice", "kind": "delete"}))["audits"][0]["detail"]
    assert audit == {"memory_id": lisbon, "deleted": True, "by": "stdio", "current_again": [berlin]}


async def test_deleting_the_middle_of_a_chain_leaves_its_history_superseded_by_the_newest(client, pg_url):
    """Found by an attack: Berlin -> Lisbon -> Porto, then Lisbon deleted, made Berlin current again
    beside Porto, though Porto had replaced the whole chain. Berlin is now superseded by Porto."""
    berlin, _, lisbon = await _alice(client)
    porto = (await call(client, "store_memory", {"session": "s-alice", "content": "Alice moved on to Porto in 2026.",
                                                 "occurred_at": "2026-01-01", "supersedes": [lisbon]}))["memory_id"]

    await call(client, "delete_memory", {"session": "s-alice", "memory_id": lisbon})

    assert await _rows(pg_url) == [("s-alice", berlin, porto)]
    assert all(m["memory_id"] != berlin for m in await _recall(client, "s-alice", "Where does Alice live?"))
    audit = (await call(client, "list_audits", {"session": "s-alice", "kind": "delete"}))["audits"][0]["detail"]
    assert audit == {"memory_id": lisbon, "deleted": True, "by": "stdio", "superseded_now_by": {berlin: porto}}


async def test_deleting_the_old_memory_removes_its_mark_and_keeps_the_successor(client, pg_url):
    berlin, _, lisbon = await _alice(client)

    await call(client, "delete_memory", {"session": "s-alice", "memory_id": berlin})

    assert await _rows(pg_url) == []
    assert (await _recall(client, "s-alice", "Where does Alice live?"))[0]["memory_id"] == lisbon


async def test_deleting_a_session_removes_its_supersessions_and_no_other(client, pg_url):
    await _alice(client, "s-gone")
    berlin, _, lisbon = await _alice(client, "s-stays")

    await call(client, "delete_memory", {"session": "s-gone", "all": True, "confirm": "s-gone"})

    assert await _rows(pg_url) == [("s-stays", berlin, lisbon)]


# --- pure parts -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["Where did Alice live before?", "What did she use to drink?", "Which team was he on previously?",
     "Where was the office originally?", "What was her former address?", "He no longer works there; where was it?",
     "小明以前住在哪里？", "他之前的工作是什么", "原来的密码是什么？", "她曾经养过什么宠物"],
)
def test_questions_about_the_past_are_detected(query):
    assert asks_about_past(query)


@pytest.mark.parametrize(
    "query",
    ["Where does Alice live?", "What is the wifi password?", "小明现在住在哪里？", "Who is the foremost expert?",
     "What does Bob drink?", "When is the dentist?", "What do I use to clean the oven?"],
)
def test_present_questions_are_not_taken_for_past_ones(query):
    assert not asks_about_past(query)


def _candidate(memory_id: str, score: float, superseded_by: str | None = None) -> Candidate:
    return Candidate(memory_id=memory_id, content=memory_id, occurred_at=datetime(2025, 1, 1, tzinfo=UTC),
                     metadata={}, score=score, superseded_by=superseded_by)


def test_rank_drops_a_superseded_memory_when_its_successor_ranks_within_top_k_and_moves_it_up():
    pool = [_candidate("old", 1.0, "new"), _candidate("x", 0.8), _candidate("new", 0.3)]

    ranked, events = rank(pool, {}, {}, history=False, top_k=3)

    assert [(c.memory_id, c.score) for c in ranked] == [("new", 1.0), ("x", 0.8)]
    assert events == {"promoted": ["new"], "pulled_in": [], "demoted": [], "dropped": ["old"]}


def test_rank_keeps_the_superseded_memory_below_a_successor_that_ranked_outside_top_k():
    pool = [_candidate("old", 1.0, "new"), _candidate("x", 0.8), _candidate("y", 0.5), _candidate("new", 0.3)]

    ranked, events = rank(pool, {}, {}, history=False, top_k=2)

    assert [c.memory_id for c in ranked] == ["new", "old"]
    assert events == {"promoted": ["new"], "pulled_in": [], "demoted": ["old"], "dropped": []}


def test_rank_pulls_in_a_successor_from_outside_the_pool():
    pulled = _candidate("new", 0.0)

    ranked, events = rank([_candidate("old", 0.9, "new"), _candidate("x", 0.4)], {"old": pulled}, {}, False, 3)

    assert [(c.memory_id, c.score) for c in ranked] == [("new", 0.9), ("old", 0.9), ("x", 0.4)]
    assert events["pulled_in"] == ["new"] and events["demoted"] == ["old"]


def test_rank_with_history_keeps_the_old_memory_right_below_its_successor_with_scores_never_rising():
    pool = [_candidate("old", 1.0, "new"), _candidate("x", 0.8), _candidate("new", 0.3)]

    ranked, events = rank(pool, {}, {}, history=True, top_k=3)

    assert [(c.memory_id, c.score) for c in ranked] == [("new", 1.0), ("old", 1.0), ("x", 0.8)]
    assert events["demoted"] == ["old"]


def test_rank_leaves_a_memory_whose_chain_it_cannot_follow_where_it_was():
    pool = [_candidate("a", 1.0, "b"), _candidate("c", 0.5)]

    ranked, _ = rank(pool, {}, {}, history=False, top_k=2)

    assert [c.memory_id for c in ranked] == ["a", "c"]


def test_rank_survives_a_cycle_in_the_pool():
    pool = [_candidate("a", 1.0, "b"), _candidate("b", 0.5, "a")]

    ranked, _ = rank(pool, {}, {}, history=False, top_k=2)

    assert [c.memory_id for c in ranked] == ["a", "b"]


async def test_the_llm_marks_nothing_for_a_memory_superseded_meanwhile(client, deps, pg_url):
    berlin = await store(client, "s-race", BERLIN)
    lisbon = await store(client, "s-race", LISBON)
    porto = await store(client, "s-race", "Alice moved on to Porto.", supersedes=[lisbon])
    repository = (await deps.ready()).repository

    marked = await repository.mark_superseded("s-race", lisbon, [berlin], "llm")

    assert marked == []
    assert await _rows(pg_url) == [("s-race", lisbon, porto)]


async def test_the_llms_pick_superseded_meanwhile_is_left_alone_not_redirected_to_its_successor(client, deps, pg_url):
    # Found by an attack: Lisbon's model was shown Berlin and picked it; while it answered, Madrid (a year
    # later) superseded Berlin. Redirecting the pick to the chain's end marked Madrid, a memory the model
    # never saw and newer than Lisbon, superseded by Lisbon.
    berlin = await store(client, "s-race2", BERLIN, occurred_at="2024-01-01")
    lisbon = await store(client, "s-race2", LISBON, occurred_at="2024-06-01")
    madrid = await store(client, "s-race2", "Alice moved from Berlin to Madrid.", occurred_at="2025-01-01",
                         supersedes=[berlin])
    repository = (await deps.ready()).repository

    marked = await repository.mark_superseded("s-race2", lisbon, [berlin], "llm")

    assert marked == []
    assert await _rows(pg_url) == [("s-race2", berlin, madrid)]


async def test_a_successor_outside_the_candidate_pool_is_read_from_the_database_and_put_first(client):
    old = await store(client, "s-far", "The team standup is at 09:15 in room Ararat.")
    for i in range(25):
        await store(client, "s-far", f"Printer {i} in room Ararat needs toner.")
    new = await store(client, "s-far", "From June the daily meeting moves to 10:00.", supersedes=[old])

    recalled = await _recall(client, "s-far", "standup in room Ararat", top_k=2)
    detail = (await call(client, "list_audits", {"session": "s-far", "limit": 1}))["audits"][0]["detail"]

    assert [m["memory_id"] for m in recalled] == [new, old]
    assert detail["supersession"]["pulled_in"] == [new] and detail["supersession"]["demoted"] == [old]


async def test_a_chain_longer_than_32_links_still_leads_recall_to_its_current_end(client):
    previous: list[str] = []
    for number in range(80):
        stored = await call(client, "store_memory", {
            "session": "s-long", "content": f"Alice's phone number is now 555-{number:04d}.",
            "occurred_at": "2024-01-01", "supersedes": previous[-1:]})
        previous.append(stored["memory_id"])

    for query in ("Is Alice's phone number 555-0003?", "What was Alice's phone number before 555-0003?"):
        found = await _recall(client, "s-long", query, top_k=5)
        assert found[0]["memory_id"] == previous[-1]
        assert found[0]["superseded_by"] is None


async def test_deleting_the_middle_of_a_long_chain_joins_its_halves(client):
    """The first half ended at the link before the deleted memory, which was current again beside the
    chain's real end; now it is superseded by the link after, and the chain has one current end."""
    previous: list[str] = []
    for number in range(60):
        stored = await call(client, "store_memory", {
            "session": "s-split", "content": f"The build server's address is now 10.0.0.{number}.",
            "occurred_at": "2024-01-01", "supersedes": previous[-1:]})
        previous.append(stored["memory_id"])
    await call(client, "delete_memory", {"session": "s-split", "memory_id": previous[30]})

    found = await _recall(client, "s-split", "is the build server's address 10.0.0.2?", top_k=60)

    current = [memory["memory_id"] for memory in found if memory["superseded_by"] is None]
    assert current == [previous[59]] and found[0]["memory_id"] == previous[59]
    assert {m["memory_id"]: m["superseded_by"] for m in found}.get(previous[29]) in (None, previous[31])


def test_rank_keeps_one_old_version_per_successor_for_a_present_question():
    """Three old versions of one fact matched and their current end did not: the agent gets the current
    memory and the best-matching old wording, not the fact's whole history in place of other memories."""
    pool = [_candidate("v1", 1.0, "v2"), _candidate("v2", 0.9, "v3"), _candidate("v3", 0.8, "now"),
            _candidate("x", 0.7), _candidate("now", 0.1)]

    ranked, events = rank(pool, {}, {}, history=False, top_k=4)

    assert [c.memory_id for c in ranked] == ["now", "v1", "x"]
    assert events == {"promoted": ["now"], "pulled_in": [], "demoted": ["v1"], "dropped": ["v2", "v3"]}


async def test_the_readme_example_session_answers_as_shown(client):
    """README.md, "An example session": the texts, calls and results it shows."""
    berlin = await call(client, "store_memory", {"session": "alice", "content": "Alice lives in Berlin, in Kreuzberg.",
                                                 "occurred_at": "2023-05-01"})
    assert berlin["occurred_at"] == "2023-05-01T00:00:00+00:00"
    assert (berlin["deduplicated"], berlin["superseded"]) == (False, [])
    lisbon = await call(client, "store_memory", {"session": "alice", "content": "Alice moved from Berlin to Lisbon.",
                                                 "occurred_at": "2025-02-10", "supersedes": [berlin["memory_id"]]})
    assert lisbon["superseded"] == [berlin["memory_id"]]

    now = await call(client, "recall_memory", {"session": "alice", "query": "Where does Alice live?"})
    assert now["answer"] is None
    assert [(m["memory_id"], m["superseded_by"]) for m in now["memories"]] == [(lisbon["memory_id"], None)]
    assert now["memories"][0]["occurred_at"] == "2025-02-10T00:00:00+00:00"
    before = await _recall(client, "alice", "Where did Alice live before?")
    assert [(m["memory_id"], m["superseded_by"]) for m in before] == [
        (lisbon["memory_id"], None), (berlin["memory_id"], lisbon["memory_id"])]
    (audit,) = (await call(client, "list_audits", {"session": "alice", "limit": 1}))["audits"]
    assert (audit["kind"], audit["detail"]["query"]) == ("recall", "Where did Alice live before?")
    assert {"vector:0", "keyword:0"} <= set(audit["detail"]["candidates"]) and "latency_ms" in audit["detail"]


# --- who may mark -------------------------------------------------------------------------------


@pytest.fixture
async def no_delete(base_settings, deps, empty_tables) -> AsyncIterator[Client]:
    """A client whose caller (a token without can_delete) may read and write every session."""
    gate = Gate(Caller("writer", ALL_SESSIONS, can_delete=False))
    async with Client(build_server(base_settings, deps, gate=gate), mode="legacy") as connected:
        yield connected


async def test_a_caller_without_the_delete_right_cannot_hide_a_memory_by_superseding_it(no_delete, pg_url):
    """Found by an attack: a token with can_delete = false stored the same text again with
    ``supersedes: [id]``, and the memory vanished from ordinary recall; marking needs can_delete."""
    berlin = await store(no_delete, "s-hide", BERLIN)

    for content in (LISBON, BERLIN):  # new text, and the same text again (de-duplicated)
        result = await no_delete.call_tool("store_memory", {"session": "s-hide", "content": content,
                                                            "supersedes": [berlin]})
        assert result.is_error
        assert result.content[0].text.endswith("supersedes: this token may not mark memories superseded (that needs "
                                          "can_delete, since it hides them from recall); nothing was stored")
    assert await _rows(pg_url) == []
    assert [m["memory_id"] for m in await _recall(no_delete, "s-hide", "Where does Alice live?")] == [berlin]
    assert await store(no_delete, "s-hide", COFFEE)  # storing without supersedes is still allowed


async def test_the_audit_names_who_superseded_and_who_deleted(client):
    berlin, _, lisbon = await _alice(client, "s-who")
    await call(client, "delete_memory", {"session": "s-who", "memory_id": lisbon})

    audits = (await call(client, "list_audits", {"session": "s-who"}))["audits"]
    by_kind = {row["kind"]: row["detail"] for row in audits}
    assert by_kind["supersede"]["by"] == "stdio" and by_kind["supersede"]["superseded"] == [berlin]
    assert by_kind["delete"]["by"] == "stdio" and by_kind["delete"]["memory_id"] == lisbon

"""The no-LLM update rule: pure detection and reordering, and recall through the tools with the real model."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from mcp import Client

from conftest import make_settings
from mcp_memory.deps import Deps
from mcp_memory.models import Candidate
from mcp_memory.pipeline.implicit_updates import confirms_update, _content, is_update, prefer_newer
from mcp_memory.server import build_server
from tools import call, store

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Alice's GP is Dr. Keller at the health centre on the main square.", "Alice's GP is Dr. Almeida at the clinic by the park."),
        ("The SOC 2 audit evidence is due on 27 July 2024.", "The SOC 2 audit evidence is due on 1 September 2024."),
        ("Alice lives in Berlin, in a flat near the old town.", "Alice moved from Berlin to Lisbon for a new role."),
        ("CI runs on Jenkins; the pipeline is in the Jenkinsfile.", "CI moved from Jenkins to GitHub Actions."),
        ("Alice has been at Northwind since 2021, in the analytics team.",
         "Alice accepted an offer from Contoso; the last day at Northwind was Friday."),
        ("Tom's billing contact is tom@kestrel.example.", "Tom changed the billing contact from tom@kestrel.example to billing@kestrel.example."),
        ("王芳的家庭医生是社区医院的吴医生。", "王芳的家庭医生是仁和诊所的王医生。"),
        ("王芳在南京已经生活三年了。", "王芳从南京搬到了杭州，换了新工作。"),
        ("消息队列用的是 RabbitMQ。", "消息队列从 RabbitMQ 换成了 Kafka，旧队列下周下线。"),
    ],
)
def test_is_update_finds_a_restated_or_a_marked_change_of_the_same_subjects_value(older: str, newer: str) -> None:
    assert is_update(older, newer, similarity=0.7)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Alice lives in Berlin.", "Alice's sister Maya lives in Copenhagen, close to the university."),  # other subject
        ("Lukas Brandt is on the Enterprise plan, billed yearly.", "Lukas Brandt is the billing admin for Vantage."),
        ("The internal admin API allows 20 requests per minute per user.",
         "The public API rate limit was raised from 100 to 300 requests per minute per key."),
        ("Alice's frequent flyer number is 386 259 949.", "Alice has a new mobile number: +49 440 137 9039."),
        ("大鹏的手机号是139 7801 2452，王芳让我记一下。", "王芳换了新手机号：186 5718 1687，旧号139 4313 6441已停用。"),
        ("陈静请大家帮忙评审数据报表的改动。", "支付模块的负责人从陈静换成了杨帆，陈静调去做搜索了。"),
        ("Alice had lunch with Rui at the harbour café.", "Alice had lunch with Rui at a new Thai place."),
    ],
)
def test_is_update_leaves_other_subjects_other_predicates_and_events_alone(older: str, newer: str) -> None:
    assert not is_update(older, newer, similarity=0.8)


@pytest.mark.parametrize(
    ("older", "newer", "similarity", "expected"),
    [
        ("Atlas stores invoices in MySQL 8 on RDS.",  # a marker naming the old value; subject not repeated
         "The migration from MySQL to PostgreSQL 16 is finished; MySQL stays read-only until switch-off.", 0.16, True),
        ("Kenji Sato asked for a refund of INV-813807.", "Finance paid out the refund for INV-813807 today.", 0.6, True),
        ("Alice lives in Berlin.", "Alice moved from Berlin to Lisbon.", 0.8, True),  # is_update
        ("Bob had lunch with Anya at an Italian trattoria.", "Bob had lunch with Sam at an Italian trattoria.", 0.9,
         False),  # the same shape with another value: an event, not an update
        ("Bob recommended Project Hail Mary to Ben.", "Bob recommended Stoner to Ben.", 0.7, False),
        ("Alice lives in Berlin.", "Alice lives in Berlin.", 1.0, False),
        # Another person's number sharing a mobile prefix (158) is no identifier in common; Qwen2.5-1.5B
        # marked this pair and the check kept it until a shared bare group of 3-4 digits stopped counting.
        ("陈杰换了新手机号：158 4428 6558，旧号186 5766 4991已停用。", "大鹏的手机号是158 4324 6063，陈杰让我记一下。", 0.6, False),
        ("Ticket 4521: the printer on floor 2 jams.", "Room 4521 is booked for the offsite.", 0.5, False),
        ("Order KX-482 is packed.", "Order KX-482 shipped with DHL today.", 0.5, True),
        ("Refund 20250611 requested by Kenji.", "Refund 20250611 was paid out.", 0.5, True),
        # Found by an attack: a change marker before the older's subject, or a small number or a time in
        # common, bore out picks of unrelated memories.
        ("Alice is allergic to penicillin.", "Now Alice walks to work.", 0.0, False),
        ("Alice's mother lives in Leeds.", "Emma went from school to the park with Alice.", 0.0, False),
        ("Bob bought 2 tickets.", "Alice now has 2 cats.", 0.0, False),
        ("Alice has yoga every Tuesday at 6pm.", "Bob's football match starts at 6pm.", 0.0, False),
        ("Alice runs 10km on Sundays.", "Bob cycled 10km today.", 0.0, False),
        ("王芳在星河科技做数据分析师。", "王芳从星河科技离职了，周一开始在青松医疗上班。", 0.3, True),
    ],
)
def test_confirms_update_bears_out_a_models_pick_only_in_the_words(older, newer, similarity, expected) -> None:
    assert confirms_update(older, newer, similarity) is expected


def test_is_update_needs_the_vectors_to_agree_and_different_texts() -> None:
    older, newer = "Alice lives in Berlin.", "Alice moved from Berlin to Lisbon."
    assert is_update(older, newer, 0.5) and not is_update(older, newer, 0.49)
    assert not is_update(older, older, 1.0)


def _candidate(memory_id: str, content: str, days: int, score: float) -> Candidate:
    return Candidate(memory_id=memory_id, content=content, occurred_at=T0 + timedelta(days=days), metadata={},
                     importance=None, score=score)


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_prefer_newer_moves_the_newer_right_above_the_older_and_drops_nothing() -> None:
    ranked = [_candidate("old", "Alice lives in Berlin.", 0, 0.9), _candidate("x", "Alice likes tea.", 5, 0.8),
              _candidate("new", "Alice moved from Berlin to Lisbon.", 10, 0.5)]
    vectors = {"old": _unit(1, 0.1), "new": _unit(1, 0.2), "x": _unit(0, 1)}
    out = prefer_newer(ranked, vectors)
    assert [c.memory_id for c in out] == ["new", "old", "x"]
    assert [c.score for c in out] == [0.9, 0.9, 0.8]
    assert [c.memory_id for c in prefer_newer(ranked, {})] == ["old", "x", "new"]  # no vectors: no pairs


def test_prefer_newer_orders_a_chain_newest_first_and_leaves_equal_times_alone() -> None:
    chain = [_candidate("a", "Alice lives in Berlin.", 0, 0.9), _candidate("b", "Alice moved from Berlin to Vienna.", 5, 0.8),
             _candidate("c", "Alice moved again, from Vienna to Lisbon; she sold the Berlin flat.", 9, 0.7)]
    vectors = {c.memory_id: _unit(1, 0.1 * i) for i, c in enumerate(chain)}
    assert [c.memory_id for c in prefer_newer(chain, vectors)] == ["c", "b", "a"]
    same_time = [_candidate("a", "Alice lives in Berlin.", 0, 0.9), _candidate("b", "Alice moved from Berlin to Vienna.", 0, 0.8)]
    assert [c.memory_id for c in prefer_newer(same_time, vectors)] == ["a", "b"]


async def _recall_ids(client: Client, query: str) -> list[str]:
    recalled = await call(client, "recall_memory", {"session": "s-moves", "query": query, "top_k": 5})
    return [m["memory_id"] for m in recalled["memories"]]


@pytest.mark.anyio
async def test_recall_ranks_the_newer_of_an_update_pair_above_the_older_only_with_the_rule_and_not_for_the_past(
    pg_url, work_dir, deps, empty_tables
) -> None:
    async def store_all(client: Client) -> dict[str, str]:
        texts = {"old": ("Alice lives in Berlin, in a flat near the old town.", "2023-01-10T09:00:00+01:00"),
                 "new": ("Update: Alice relocated from Berlin to Lisbon.", "2024-03-02T18:00:00+01:00"),
                 "sister": ("Alice's sister Maya lives in Copenhagen.", "2023-06-01T12:00:00+01:00"),
                 "tea": ("Alice drinks green tea every afternoon.", "2023-09-01T12:00:00+01:00")}
        return {key: await store(client, "s-moves", text, occurred_at=when) for key, (text, when) in texts.items()}

    async with Client(build_server(deps.settings, deps), mode="legacy") as client:
        ids = await store_all(client)
        with_rule = await _recall_ids(client, "Which city does Alice live in?")
        past_with_rule = await _recall_ids(client, "Which city did Alice live in before?")
    settings = make_settings(pg_url, work_dir, recall={"implicit_updates": False})
    without = Deps(settings)
    await without.start()
    try:
        async with Client(build_server(settings, without), mode="legacy") as client:
            without_rule = await _recall_ids(client, "Which city does Alice live in?")
            past_without_rule = await _recall_ids(client, "Which city did Alice live in before?")
    finally:
        await without.close()
    assert without_rule.index(ids["old"]) < without_rule.index(ids["new"])  # what the rule has to fix
    assert with_rule.index(ids["new"]) == without_rule.index(ids["old"])  # the newer takes the older's place
    assert with_rule.index(ids["old"]) == with_rule.index(ids["new"]) + 1
    assert sorted(with_rule) == sorted(without_rule)  # nothing dropped
    assert with_rule.index(ids["sister"]) in (without_rule.index(ids["sister"]), without_rule.index(ids["sister"]) + 1)
    assert past_with_rule == past_without_rule  # a question about the past keeps the fused order


@pytest.mark.anyio
async def test_candidate_vectors_from_the_in_process_copy_equal_those_read_from_postgresql(client, deps) -> None:
    ids = [await store(client, "s-vec", text) for text in ("Alice lives in Berlin.", "Alice moved to Lisbon.")]
    await call(client, "recall_memory", {"session": "s-vec", "query": "Where does Alice live?"})  # loads the copy
    ready = await deps.ready()
    copied = ready.vectors.vectors("s-vec", [*ids, "00000000-0000-0000-0000-000000000000"])
    read = await ready.repository.embeddings("s-vec", ids)
    assert copied is not None and sorted(copied) == sorted(read) == sorted(ids)
    for memory_id in ids:
        assert np.allclose(copied[memory_id], read[memory_id], atol=1e-6)
        assert np.isclose(np.linalg.norm(read[memory_id]), 1.0, atol=1e-5)
    assert ready.vectors.vectors("s-implicit-never-recalled", ids) is None  # no copy: ask PostgreSQL


def test_the_words_of_a_long_chinese_memory_are_read_in_linear_time():
    """The e-mail pattern once ran from every character of a run of CJK characters (they are \\w) to
    its end: 4.5 s for 32,000 characters, about 100 times what 3,200 took, and the first recall of a
    session holding such a memory spent 19 s in fuse. Ten times the text must cost about ten times
    the time (a bound of 30 leaves room for a noisy machine; quadratic is 100). CPU time of this
    thread, not the wall clock: at load 15 the wall clock failed the bound, the work did not change."""
    text = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(32_000))

    def seconds(part: str) -> float:
        started = time.thread_time()
        _content(part)
        return time.thread_time() - started

    short = min(seconds(text[:3_200]) for _ in range(3))
    long = min(seconds(text) for _ in range(3))
    assert long < 30 * short
    assert _content("write to alice.smith+work@example.co.uk") == {"write", "alice.smith+work@example.co.uk"}


def test_the_rules_word_caches_stay_within_their_budget_for_long_memories():
    """Found by an attack: the caches of the words of each text the update rules read held 4,096 texts
    whatever their length, about 1 MB each for a 32,000-character memory, so a caller who stored long
    memories that recall compared could grow the server by gigabytes. They are now bounded by the
    characters of the texts they hold."""
    import random
    import string
    import tracemalloc

    from mcp_memory.pipeline.subject_updates import subject_pairs

    rnd = random.Random(7)
    head = "Alice moved from Berlin to Lisbon for a new role at the clinic. "

    def long_text() -> str:
        return head + " ".join("".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(3, 9))) for _ in range(5000))

    texts = [long_text()[:32_000] for _ in range(121)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for older, newer in zip(texts, texts[1:], strict=False):
            is_update(older, newer, 1.0)
        pool = [Candidate(memory_id=str(i), content=text, occurred_at=T0 + timedelta(days=i), metadata={},
                          importance=None) for i, text in enumerate(texts)]
        for start in range(0, len(pool), 10):
            subject_pairs("Where does Alice live now?", pool[start:start + 10])
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 2**20, f"{grown / 2**20:.0f} MiB held after 120 long texts"

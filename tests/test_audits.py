"""list_audits through the in-process client: what a recall records, order, filters, bounds, isolation.

Field cases B14 (audit order), B28 (list_audits bounded like recall) and session isolation of the
audit trail (/work/shared/cases/field-bugs.md).
"""

from __future__ import annotations

import json

import anyio
import pytest

from tools import call as _call, store as _store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

MAX_RESPONSE_CHARS = 80_000


async def test_a_recall_audit_records_query_candidates_selection_and_timings(client):
    ids = [
        await _store(client, "s-au", "Order 88-1042 shipped on Monday by courier."),
        await _store(client, "s-au", "The courier leaves parcels with the neighbour at number 5."),
        await _store(client, "s-au", "Cancelled the magazine subscription in April."),
    ]

    recalled = await _call(client, "recall_memory", {"session": "s-au", "query": "where is order 88-1042", "top_k": 2})
    audits = (await _call(client, "list_audits", {"session": "s-au"}))["audits"]

    assert len(audits) == 1
    row = audits[0]
    assert row["session"] == "s-au" and row["kind"] == "recall"
    detail = row["detail"]
    assert detail["query"] == "where is order 88-1042"
    assert detail["top_k"] == 2
    assert detail["selected"] == [memory["memory_id"] for memory in recalled["memories"]]
    assert set(detail["candidates"]["vector:0"]) == set(ids)
    assert ids[0] in detail["candidates"]["keyword:0"]
    assert detail["candidates"]["trigram:id"][0] == ids[0]
    assert all(set(listed) <= set(ids) for listed in detail["candidates"].values())
    assert {"plan", "embed", "search", "fuse", "answer", "total"} <= set(detail["latency_ms"])
    assert all(value >= 0 for value in detail["latency_ms"].values())
    assert detail["truncated"] is False and detail["omitted_memory_ids"] == []


async def test_cjk_queries_get_a_bigram_candidate_list(client):
    memory_id = await _store(client, "s-au", "下周四下午三点和设计团队开会")
    await _store(client, "s-au", "Dentist on Friday at nine")

    await _call(client, "recall_memory", {"session": "s-au", "query": "设计团队"})
    detail = (await _call(client, "list_audits", {"session": "s-au", "kind": "recall"}))["audits"][0]["detail"]

    assert detail["candidates"]["bigram:cjk"] == [memory_id]


async def test_audits_are_newest_first_and_filter_by_kind_and_limit(client):
    memory_id = await _store(client, "s-au", "The parking permit renews in June.")
    await _call(client, "recall_memory", {"session": "s-au", "query": "parking permit"})
    await _call(client, "delete_memory", {"session": "s-au", "memory_id": memory_id})
    await _call(client, "recall_memory", {"session": "s-au", "query": "permit renewal"})
    await _call(client, "delete_memory", {"session": "s-au", "all": True, "confirm": "s-au"})

    everything = (await _call(client, "list_audits", {"session": "s-au"}))["audits"]
    recalls = (await _call(client, "list_audits", {"session": "s-au", "kind": "recall"}))["audits"]
    latest_two = await _call(client, "list_audits", {"session": "s-au", "limit": 2})
    unknown = await client.call_tool("list_audits", {"session": "s-au", "kind": "no-such-kind"})

    assert [row["kind"] for row in everything] == ["delete_session", "recall", "delete", "recall"]
    audit_ids = [row["audit_id"] for row in everything]
    assert audit_ids == sorted(audit_ids, reverse=True)
    created = [row["created_at"] for row in everything]
    assert created == sorted(created, reverse=True)
    assert [row["detail"]["query"] for row in recalls] == ["permit renewal", "parking permit"]
    assert latest_two == {"audits": everything[:2], "truncated": False}
    assert unknown.is_error
    assert "kind: must be one of recall, delete, delete_session, supersede, redact; got 'no-such-kind'" in (
        unknown.content[0].text
    )


@pytest.mark.parametrize("limit", [0, -3, 101])
async def test_a_limit_outside_1_to_100_is_rejected_naming_limit(client, limit):
    result = await client.call_tool("list_audits", {"session": "s-au", "limit": limit})

    assert result.is_error
    assert f"limit: must be in the range 1..100; got {limit}" in result.content[0].text
    assert not (await client.call_tool("list_audits", {"session": "s-au"})).is_error


async def test_a_sessions_audit_trail_is_invisible_from_every_other_session(client):
    alpha_id = await _store(client, "s-alpha", "The safe deposit box number is 2291")
    await _call(client, "recall_memory", {"session": "s-alpha", "query": "safe deposit box"})
    await _call(client, "delete_memory", {"session": "s-alpha", "memory_id": alpha_id})

    for session in ("s-beta", "S-ALPHA", "s-alpha ", "%", "s_alpha"):
        assert (await _call(client, "list_audits", {"session": session}))["audits"] == [], session
    assert len((await _call(client, "list_audits", {"session": "s-alpha"}))["audits"]) == 2


async def test_list_audits_is_bounded_and_drops_whole_older_rows(client):
    """B28 for the audit trail: ten recalls of 60 memories with top_k 100 make rows of ~10,000 characters."""
    limiter = anyio.Semaphore(8)

    async def one(n: int) -> None:
        async with limiter:
            await _store(client, "s-audit-big", f"Shelf {n} in the archive room holds box files from {1950 + n}.")

    async with anyio.create_task_group() as group:
        for n in range(60):
            group.start_soon(one, n)
    queries = [f"archive room shelf {n} box files" for n in range(10)]
    for query in queries:
        await _call(client, "recall_memory", {"session": "s-audit-big", "query": query, "top_k": 100})

    result = await client.call_tool("list_audits", {"session": "s-audit-big", "limit": 100})

    assert not result.is_error
    body = result.structured_content
    assert len(result.content[0].text) <= MAX_RESPONSE_CHARS
    assert len(json.dumps(body, ensure_ascii=False)) <= MAX_RESPONSE_CHARS
    assert body["truncated"] is True
    kept = [row["detail"]["query"] for row in body["audits"]]
    assert 1 <= len(kept) < len(queries)
    assert kept == queries[::-1][: len(kept)]
    for row in body["audits"]:
        assert len(row["detail"]["selected"]) == 60
        assert "total" in row["detail"]["latency_ms"]
    small = await _call(client, "list_audits", {"session": "s-audit-big", "limit": 1})
    assert small["truncated"] is False and small["audits"] == body["audits"][:1]

"""delete_memory through the in-process client: gone for good, audited, and scoped to one session.

Field cases B14 and B16 (/work/shared/cases/field-bugs.md).
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import asyncpg
import pytest
from mcp import Client

from tools import call as _call, store as _store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]


async def _recalled_ids(client: Client, session: str, query: str) -> list[str]:
    recalled = await _call(client, "recall_memory", {"session": session, "query": query, "top_k": 100})
    return [memory["memory_id"] for memory in recalled["memories"]]


async def _audits(client: Client, session: str) -> list[dict[str, Any]]:
    return (await _call(client, "list_audits", {"session": session, "limit": 100}))["audits"]


async def _count(pg_url: str, sql: str, *args: Any) -> int:
    connection = await asyncpg.connect(pg_url)
    try:
        return await connection.fetchval(sql, *args)
    finally:
        await connection.close()


# --- B14 ---------------------------------------------------------------------------------------


async def test_a_deleted_memory_is_never_recalled_again_by_vector_or_keyword(client):
    memory_id = await _store(client, "s-d", "Ticket ZX-7781: printer on floor 3 jams on A3 paper")
    kept = [
        await _store(client, "s-d", "The printer on floor 2 was replaced in May."),
        await _store(client, "s-d", "Ticket ZX-7790: projector bulb in room 4 is dim."),
    ]

    first = await _call(client, "delete_memory", {"session": "s-d", "memory_id": memory_id})
    by_keyword = await _recalled_ids(client, "s-d", "ZX-7781")
    by_meaning = await _recalled_ids(client, "s-d", "printer problems")
    second = await _call(client, "delete_memory", {"session": "s-d", "memory_id": memory_id})

    assert first == {"deleted": True, "count": 1}
    assert memory_id not in by_keyword and memory_id not in by_meaning
    assert set(by_meaning) == set(kept)
    assert second == {"deleted": False, "count": 0}
    audits = await _audits(client, "s-d")
    assert [row["kind"] for row in audits] == ["delete", "recall", "recall", "delete"]
    assert [row["audit_id"] for row in audits] == sorted((row["audit_id"] for row in audits), reverse=True)
    assert audits[0]["detail"] == {"memory_id": memory_id, "deleted": False, "by": "stdio"}
    assert audits[3]["detail"] == {"memory_id": memory_id, "deleted": True, "by": "stdio"}
    for recall in audits[1:3]:
        assert all(memory_id not in ids for ids in recall["detail"]["candidates"].values())
        assert memory_id not in recall["detail"]["selected"]


async def test_deleting_a_long_memory_removes_every_window_vector(client, pg_url):
    rng = random.Random(14)
    words = "lantern orchard ferry quarry violin harbour granite meadow ledger compass".split()
    long_text = " ".join(rng.choice(words) for _ in range(400)) + " The storage unit code is 5590."
    memory_id = await _store(client, "s-d", long_text)
    assert await _count(pg_url, "SELECT count(*) FROM memory_chunks WHERE memory_id = $1", uuid.UUID(memory_id)) > 0

    assert (await _call(client, "delete_memory", {"session": "s-d", "memory_id": memory_id}))["deleted"] is True

    assert await _count(pg_url, "SELECT count(*) FROM memory_chunks") == 0
    assert memory_id not in await _recalled_ids(client, "s-d", "storage unit code")


async def test_delete_accepts_an_upper_case_memory_id(client):
    memory_id = await _store(client, "s-d", "The window cleaner comes on the first Monday")

    assert (await _call(client, "delete_memory", {"session": "s-d", "memory_id": memory_id.upper()}))["deleted"]
    assert await _recalled_ids(client, "s-d", "window cleaner") == []


@pytest.mark.parametrize("memory_id", ["abc", "", "12345", "zx-7781", "00000000-0000-0000-0000-00000000000g"])
async def test_a_memory_id_that_is_not_a_uuid_is_rejected_naming_memory_id(client, pg_url, memory_id):
    kept = await _store(client, "s-d", "Bins go out on Wednesday night")

    result = await client.call_tool("delete_memory", {"session": "s-d", "memory_id": memory_id})

    assert result.is_error
    assert f"memory_id: must be a memory_id as returned by store_memory (a UUID); got {memory_id!r}" in (
        result.content[0].text
    )
    assert await _recalled_ids(client, "s-d", "bins") == [kept]
    assert [row["kind"] for row in await _audits(client, "s-d")] == ["recall"]


async def test_delete_without_memory_id_or_all_is_rejected_naming_memory_id(client):
    kept = await _store(client, "s-d", "Bins go out on Wednesday night")

    result = await client.call_tool("delete_memory", {"session": "s-d"})

    assert result.is_error
    assert "memory_id: is required unless all=true" in result.content[0].text
    assert await _recalled_ids(client, "s-d", "bins") == [kept]


async def test_delete_with_both_memory_id_and_all_is_rejected_and_deletes_nothing(client, pg_url):
    target = await _store(client, "s-d", "Bins go out on Wednesday night")
    other = await _store(client, "s-d", "The recycling goes out on Friday")

    result = await client.call_tool(
        "delete_memory", {"session": "s-d", "memory_id": target, "all": True, "confirm": "s-d"}
    )

    assert result.is_error
    assert "memory_id: give memory_id or all=true, not both" in result.content[0].text
    assert sorted(await _recalled_ids(client, "s-d", "bins recycling")) == sorted([target, other])
    assert await _audits(client, "s-d") != [] and all(a["kind"] == "recall" for a in await _audits(client, "s-d"))


async def test_deleting_an_unknown_uuid_reports_nothing_deleted(client):
    kept = await _store(client, "s-d", "Bins go out on Wednesday night")

    result = await _call(client, "delete_memory", {"session": "s-d", "memory_id": str(uuid.uuid4())})

    assert result == {"deleted": False, "count": 0}
    assert await _recalled_ids(client, "s-d", "bins") == [kept]


# --- B16 and cross-session deletes ---------------------------------------------------------------


@pytest.mark.parametrize("confirm", [None, "s-beta", "S-ALPHA", "s-alpha ", ""], ids=repr)
async def test_delete_all_without_the_exact_session_as_confirm_is_rejected_naming_confirm(client, pg_url, confirm):
    for n in range(3):
        await _store(client, "s-alpha", f"Alpha fact {n}: the greenhouse key hangs on hook {n}")
    arguments: dict[str, Any] = {"session": "s-alpha", "all": True}
    if confirm is not None:
        arguments["confirm"] = confirm

    result = await client.call_tool("delete_memory", arguments)

    assert result.is_error
    assert "confirm: deleting a whole session needs confirm equal to the session name" in result.content[0].text
    assert await _count(pg_url, "SELECT count(*) FROM memories WHERE session = 's-alpha'") == 3
    assert await _audits(client, "s-alpha") == []


async def test_delete_all_with_confirmation_empties_one_session_and_never_touches_another(client, pg_url):
    alpha = [await _store(client, "s-alpha", f"Alpha fact {n}: the greenhouse key hangs on hook {n}") for n in range(3)]
    beta = [await _store(client, "s-beta", f"Beta fact {n}: the greenhouse key hangs on hook {n}") for n in range(3)]

    for confirm in (None, "s-beta"):
        rejected = await client.call_tool(
            "delete_memory", {"session": "s-alpha", "all": True, **({"confirm": confirm} if confirm else {})}
        )
        assert rejected.is_error
    done = await _call(client, "delete_memory", {"session": "s-alpha", "all": True, "confirm": "s-alpha"})

    assert done == {"deleted": True, "count": 3}
    assert await _audits(client, "s-beta") == []
    assert await _recalled_ids(client, "s-alpha", "greenhouse key") == []
    assert sorted(await _recalled_ids(client, "s-beta", "greenhouse key")) == sorted(beta)
    alpha_audits = await _audits(client, "s-alpha")
    assert alpha_audits[-1]["kind"] == "delete_session" and alpha_audits[-1]["detail"] == {"count": 3, "by": "stdio"}
    beta_audits = json.dumps(await _audits(client, "s-beta"))
    assert [row["kind"] for row in json.loads(beta_audits)] == ["recall"]
    assert not any(memory_id in beta_audits for memory_id in alpha)
    again = await _call(client, "delete_memory", {"session": "s-alpha", "all": True, "confirm": "s-alpha"})
    assert again == {"deleted": False, "count": 0}


async def test_a_memory_cannot_be_deleted_through_another_session(client, pg_url):
    alpha_id = await _store(client, "s-alpha", "The project codename is BLUEBIRD")
    await _store(client, "s-beta", "The project codename is REDWING")

    by_id = await _call(client, "delete_memory", {"session": "s-beta", "memory_id": alpha_id})
    by_case = await _call(client, "delete_memory", {"session": "S-ALPHA", "memory_id": alpha_id})
    wipe_empty = await _call(client, "delete_memory", {"session": "s-gamma", "all": True, "confirm": "s-gamma"})

    assert by_id == {"deleted": False, "count": 0}
    assert by_case == {"deleted": False, "count": 0}
    assert wipe_empty == {"deleted": False, "count": 0}
    assert await _recalled_ids(client, "s-alpha", "project codename") == [alpha_id]
    assert await _count(pg_url, "SELECT count(*) FROM memories") == 2
    assert [row["kind"] for row in await _audits(client, "s-alpha")] == ["recall"]
    beta_deletes = await _audits(client, "s-beta")
    assert [(row["session"], row["kind"], row["detail"]) for row in beta_deletes] == [
        ("s-beta", "delete", {"memory_id": alpha_id, "deleted": False, "by": "stdio"})
    ]

"""The field cases about concurrency, faults, transport and bad input, re-run with auth on.

/work/shared/cases/field-bugs.md: B01, B04, B06, B09, B11, B14, B16, B17, B19, B21, B23, B27, B30 and B35,
over real HTTP against servers with ``[[auth.tokens]]``: a stateful one and a ``--stateless`` one on
the same database. Besides each case's own promise, auth adds three: a call with a wrong token gets
401 and stores nothing; a token outside the session gets the gate's refusal (which names no
field and no session) before any argument is looked at; a token inside it gets the case's answer.
Rows are counted in PostgreSQL directly. Last, idempotency keys across tokens (they are per session).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import asyncpg
import httpx
import pytest
from bearer import INITIALIZE, post, sha256, token_client, write_config
from databases import session_contents
from processes import Outcome, Spawner, create_database, drop_database, free_port, sdk_caller

pytestmark = pytest.mark.anyio

ADMIN = "fc-admin-" + "a" * 40  # every session, may delete
READER = "fc-reader-" + "r" * 40  # every session, may not delete
ALPHA = "fc-alpha-" + "x" * 40  # only s-alpha (exact), may delete
TOKENS = [
    {"name": "admin", "token_sha256": sha256(ADMIN), "sessions": ["*"], "can_delete": True},
    {"name": "reader", "token_sha256": sha256(READER), "sessions": ["*"]},
    {"name": "alpha", "token_sha256": sha256(ALPHA), "sessions": ["s-alpha"], "can_delete": True},
]
REFUSED = "this token may not use this session; nothing was read or changed"


@dataclass
class Served:
    stateful: int
    stateless: int
    db_url: str

    async def rows(self, session: str) -> list[str]:
        return await session_contents(self.db_url, session)


@pytest.fixture(scope="module")
async def served(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    logs = tmp_path_factory.mktemp("field-auth")
    db_url = await create_database(pg_url)
    spawner = Spawner(logs)
    try:
        config = str(write_config(logs / "config.toml", TOKENS))
        ports = free_port(), free_port()
        servers = [spawner.http(spawner.data_dir(f"d{i}"), port, *flags, "--config", config,
                                MCP_MEMORY_DATABASE_URL=db_url)
                   for i, (port, flags) in enumerate(zip(ports, ((), ("--stateless",)), strict=True))]
        for server, port in zip(servers, ports, strict=True):  # both start at once; wait for each
            server.wait_healthy(port)
        yield Served(ports[0], ports[1], db_url)
    finally:
        spawner.close()
        await drop_database(pg_url, db_url)


async def stateless_call(port: int, token: str, name: str, arguments: dict[str, Any]) -> Outcome:
    """One tools/call on the --stateless server (no MCP session), as raw JSON."""
    async with httpx.AsyncClient(timeout=60.0) as http:
        reply = await http.post(
            f"http://127.0.0.1:{port}/mcp",
            headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                     "MCP-Protocol-Version": "2025-11-25", "Authorization": f"Bearer {token}"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    return Outcome(bool(result.get("isError")), result.get("structuredContent"),
                   "".join(block.get("text", "") for block in result["content"]))


async def each_server(served: Served, token: str, name: str, arguments: dict[str, Any]) -> list[Outcome]:
    """The same call on the stateful server (SDK client, an MCP session) and on the stateless one."""
    async with token_client(served.stateful, token) as client:
        first = await sdk_caller(client)(name, arguments)
    return [first, await stateless_call(served.stateless, token, name, arguments)]


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


BAD_INPUT = {  # case: (tool, arguments without session, what the error must say)
    "B04 empty content": ("store_memory", {"content": ""}, ["content", "empty"]),
    "B04 blank content": ("store_memory", {"content": "  \n\t "}, ["content", "empty"]),
    "B04 blank query": ("recall_memory", {"query": "   "}, ["query"]),
    "B06 content over the limit": ("store_memory", {"content": "a" * 32001}, ["content", "32000", "32001"]),
    "B11 unparseable occurred_at": ("store_memory", {"content": "x", "occurred_at": "next Tuesday-ish"},
                                    ["occurred_at"]),
    "B23 NUL in content": ("store_memory", {"content": "Festival on D\u0000a de Muertos"}, ["content", "NUL"]),
    "B27 top_k not a number": ("recall_memory", {"query": "x", "top_k": "five"}, ["top_k"]),
    "B30 top_k 0": ("recall_memory", {"query": "x", "top_k": 0}, ["top_k", "100"]),
    "B30 top_k -1": ("recall_memory", {"query": "x", "top_k": -1}, ["top_k", "100"]),
    "B16 delete all without confirm": ("delete_memory", {"all": True}, ["confirm"]),
}
TYPE_ERRORS = {"B27 top_k not a number"}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
async def test_bad_input_with_auth_is_refused_by_field_and_a_foreign_token_learns_nothing(
    served: Served, case: str
) -> None:
    name, arguments, says = BAD_INPUT[case]
    session = f"s-bad-{uuid.uuid4().hex[:8]}"
    for outcome in await each_server(served, ADMIN, name, {"session": session, **arguments}):
        assert outcome.is_error and all(word in outcome.text for word in says), (case, outcome.text)
        assert "\n" not in outcome.text.strip()
    for outcome in await each_server(served, ALPHA, name, {"session": session, **arguments}):
        assert outcome.is_error and session not in outcome.text, outcome.text
        if case in TYPE_ERRORS:  # the SDK checks argument types before the tool (and its gate) runs
            assert says[0] in outcome.text, outcome.text
        else:  # the gate answers first: nothing about the arguments
            assert REFUSED in outcome.text and not any(word in outcome.text for word in says[1:]), outcome.text
    for port in (served.stateful, served.stateless):
        refused = post(port, tool_call(name, {"session": session, **arguments}), {"Authorization": "Bearer nope"})
        assert refused.status_code == 401
    assert await served.rows(session) == []


async def test_b27_calls_without_arguments_work_or_name_session_with_auth(served: Served) -> None:
    for port in (served.stateful, served.stateless):
        opened = post(port, INITIALIZE, {"Authorization": f"Bearer {READER}"})
        session_id = opened.headers.get("mcp-session-id")
        for params, ok in (({"name": "usage_stats"}, True), ({"name": "usage_stats", "arguments": None}, True),
                           ({"name": "list_audits"}, False)):
            reply = post(port, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params},
                         {"Authorization": f"Bearer {READER}"}, session_id)
            result = reply.json()["result"]
            assert bool(result.get("isError")) is not ok, result
            assert ok or "session" in result["content"][0]["text"]
    top_k = await each_server(served, READER, "recall_memory", {"session": "s-q", "query": "x", "top_k": "5"})
    assert [o.is_error for o in top_k] == [False, False], [o.text for o in top_k]


async def test_b01_text_round_trips_unescaped_with_auth(served: Served) -> None:
    content = "下周四下午三点和设计团队开会，地点在三号会议室 ☕️🚀 👩\u200d💻 שלום cafe\u0301"
    session = f"s-zh-{uuid.uuid4().hex[:6]}"
    stored = await stateless_call(served.stateless, ADMIN, "store_memory", {"session": session, "content": content})
    assert not stored.is_error, stored.text
    for recalled in await each_server(served, READER, "recall_memory", {"session": session, "query": "设计团队开会"}):
        assert recalled.structured is not None and recalled.structured["memories"][0]["content"] == content
        assert "设计团队" in recalled.text
    assert await served.rows(session) == [content]


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
async def test_b09_concurrent_writers_on_two_servers_with_tokens_lose_nothing(served: Served) -> None:
    session = f"s-c-{uuid.uuid4().hex[:6]}"
    ids: dict[int, str] = {}
    failures: list[str] = []

    async def store_on(call: Any, i: int) -> None:
        outcome = await call("store_memory", {"session": session, "content": f"fact #{i}: locker {i} holds box {i}"})
        if outcome.is_error or outcome.structured is None:
            failures.append(outcome.text)
        else:
            ids[i] = outcome.structured["memory_id"]

    async def intruder(i: int) -> None:  # a wrong token and a foreign one, interleaved with the writers
        assert post(served.stateless, tool_call("store_memory", {"session": session, "content": f"bad {i}"}),
                    {"Authorization": f"Bearer {ADMIN}x"}).status_code == 401
        foreign = await stateless_call(served.stateless, ALPHA, "store_memory", {"session": session, "content": "x"})
        assert foreign.is_error and REFUSED in foreign.text

    async def stateless(name: str, arguments: dict[str, Any]) -> Outcome:
        return await stateless_call(served.stateless, ADMIN, name, arguments)

    async with token_client(served.stateful, ADMIN) as client:
        stateful = sdk_caller(client)
        async with anyio.create_task_group() as group:
            for i in range(30):
                group.start_soon(store_on, stateful, i)
            for i in range(30, 45):
                group.start_soon(store_on, stateless, i)
            for i in range(5):
                group.start_soon(intruder, i)
                group.start_soon(stateful, "recall_memory", {"session": session, "query": f"locker {i}"})
    assert failures == [] and len(set(ids.values())) == 45
    assert len(await served.rows(session)) == 45
    for call in (stateless_call(served.stateless, READER, "recall_memory",
                                {"session": session, "query": "locker 40", "top_k": 5}),):
        found = await call
        assert ids[40] in [m["memory_id"] for m in found.structured["memories"]]  # type: ignore[index]


@pytest.mark.parametrize("odd", ["s-alpha' OR '1'='1", 's-alpha") or true or ("', "%", "s_alpha", "s-%", "*", "S-ALPHA"])
async def test_b17_b19_odd_sessions_are_data_and_outside_a_token_scope(served: Served, odd: str) -> None:
    alpha = await stateless_call(served.stateless, ALPHA, "store_memory",
                                 {"session": "s-alpha", "content": "Backup drive is in the top drawer"})
    assert not alpha.is_error, alpha.text
    for recalled in await each_server(served, ADMIN, "recall_memory", {"session": odd, "query": "backup drive"}):
        assert not recalled.is_error and recalled.structured["memories"] == [], recalled.text  # type: ignore[index]
    for name, arguments in (("recall_memory", {"query": "backup drive"}), ("store_memory", {"content": "x"}),
                            ("list_audits", {}), ("delete_memory", {"all": True, "confirm": odd})):
        for outcome in await each_server(served, ALPHA, name, {"session": odd, **arguments}):
            assert outcome.is_error and REFUSED in outcome.text, (name, outcome.text)
    assert await served.rows(odd) == []
    for query in ("'; DROP TABLE memories; --", "backup & | ! :* (drive", "100%_done\\"):
        assert not (await stateless_call(served.stateless, ALPHA, "recall_memory",
                                         {"session": "s-alpha", "query": query})).is_error
    assert await served.rows("s-alpha") == ["Backup drive is in the top drawer"]


async def test_b14_b16_deletes_need_can_delete_and_the_confirm_and_touch_one_session(served: Served) -> None:
    one, other = f"s-d-{uuid.uuid4().hex[:6]}", f"s-e-{uuid.uuid4().hex[:6]}"
    ids = []
    for session in (one, other):
        for text in ("Ticket ZX-7781: printer on floor 3 jams", "Boiler due in October"):
            stored = await stateless_call(served.stateless, ADMIN, "store_memory", {"session": session, "content": text})
            ids.append(stored.structured["memory_id"])  # type: ignore[index]
    for arguments in ({"memory_id": ids[0]}, {"all": True, "confirm": one}):
        for outcome in await each_server(served, READER, "delete_memory", {"session": one, **arguments}):
            assert outcome.is_error and "may not delete" in outcome.text
    for outcome in await each_server(served, ADMIN, "delete_memory", {"session": one, "all": True, "confirm": other}):
        assert outcome.is_error and "confirm" in outcome.text
    assert len(await served.rows(one)) == 2
    first, again = await each_server(served, ADMIN, "delete_memory", {"session": one, "memory_id": ids[0]})
    assert first.structured == {"deleted": True, "count": 1} and again.structured == {"deleted": False, "count": 0}
    for recalled in await each_server(served, READER, "recall_memory", {"session": one, "query": "ZX-7781"}):
        assert ids[0] not in json.dumps(recalled.structured)
    done = await stateless_call(served.stateless, ADMIN, "delete_memory", {"session": one, "all": True, "confirm": one})
    assert done.structured == {"deleted": True, "count": 1}
    assert await served.rows(one) == [] and len(await served.rows(other)) == 2


async def test_b21_killed_connections_under_auth_recover_on_both_servers(served: Served) -> None:
    session = f"s-db-{uuid.uuid4().hex[:6]}"
    assert not (await stateless_call(served.stateless, ADMIN, "store_memory",
                                     {"session": session, "content": "Boiler service is due in October"})).is_error
    admin = await asyncpg.connect(served.db_url)
    try:
        await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND pid <> pg_backend_pid()")
    finally:
        await admin.close()
    for recalled in await each_server(served, READER, "recall_memory", {"session": session, "query": "boiler service"}):
        assert not recalled.is_error, recalled.text
        assert [m["content"] for m in recalled.structured["memories"]] == ["Boiler service is due in October"]  # type: ignore[index]
    for stored in await each_server(served, ADMIN, "store_memory", {"session": session, "content": "Chimney in November"}):
        assert not stored.is_error, stored.text


async def test_b35_a_stale_session_id_gets_401_without_a_token_and_404_with_one(
    served: Served, pg_url: str, tmp_path: Any
) -> None:
    """The restart: a stateful server on the same database, killed and started again."""
    session = f"s-http-{uuid.uuid4().hex[:6]}"
    config = str(write_config(tmp_path / "config.toml", TOKENS))
    spawner = Spawner(tmp_path)
    try:
        port = free_port()
        first = spawner.http(spawner.data_dir("a"), port, "--config", config, MCP_MEMORY_DATABASE_URL=served.db_url)
        first.wait_healthy(port)
        opened = post(port, INITIALIZE, {"Authorization": f"Bearer {ADMIN}"})
        stale = opened.headers["mcp-session-id"]
        call = tool_call("store_memory", {"session": session, "content": "Gym locker code is 4417"})
        assert post(port, call, {"Authorization": f"Bearer {ADMIN}"}, stale).status_code == 200
        first.kill()
        again = spawner.http(spawner.data_dir("b"), port, "--config", config, MCP_MEMORY_DATABASE_URL=served.db_url)
        again.wait_healthy(port)
        late = tool_call("store_memory", {"session": session, "content": "stored through a stale session"})
        assert post(port, late, {"Authorization": "Bearer nope"}, stale).status_code == 401
        assert post(port, late, {"Authorization": f"Bearer {ADMIN}"}, stale).status_code == 404
        on_stateless = post(served.stateless, late, {"Authorization": f"Bearer {ADMIN}"}, stale)
        assert on_stateless.status_code == 200 and not on_stateless.json()["result"].get("isError")
        async with token_client(port, READER) as client:
            recalled = await sdk_caller(client)("recall_memory", {"session": session, "query": "locker code"})
        assert recalled.structured["memories"][0]["content"] == "Gym locker code is 4417"  # type: ignore[index]
    finally:
        spawner.close()
    assert await served.rows(session) == ["Gym locker code is 4417", "stored through a stale session"]


async def test_an_idempotency_key_replays_only_for_tokens_that_may_use_its_session(served: Served) -> None:
    """Keys are per session: any token of the session replays the first call; a token outside it (or one
    that lost the session) gets the gate's refusal, never the first call's memory_id."""
    session = f"s-key-{uuid.uuid4().hex[:6]}"
    arguments = {"session": session, "content": "Invoice 2291 paid", "idempotency_key": "key-2291"}
    first = await stateless_call(served.stateless, ADMIN, "store_memory", arguments)
    assert not first.is_error and first.structured["replayed"] is False  # type: ignore[index]
    for replay in await each_server(served, READER, "store_memory", arguments):
        assert replay.structured["memory_id"] == first.structured["memory_id"]  # type: ignore[index]
        assert replay.structured["replayed"] is True  # type: ignore[index]
    other = await stateless_call(served.stateless, READER, "store_memory", {**arguments, "content": "Invoice 2291 due"})
    assert other.is_error and "idempotency_key" in other.text
    for foreign in await each_server(served, ALPHA, "store_memory", arguments):
        assert foreign.is_error and REFUSED in foreign.text and first.structured["memory_id"] not in foreign.text  # type: ignore[index]
    assert await served.rows(session) == ["Invoice 2291 paid"]

"""Static bearer tokens over real HTTP: who may call, which sessions, delete, rate limits.

One ``mcp-memory serve --transport http`` process with ``[[auth.tokens]]`` in its config, on a
database of its own; memories are checked in PostgreSQL directly, so "nothing executed" means
no row.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from bearer import INITIALIZE, mcp_url, post, sha256, token_client, configured_server, write_config
from databases import session_contents
from processes import (  # noqa: F401 - spawn is a fixture
    Spawner,
    create_database,
    drop_database,
    exercise_every_tool,
    free_port,
    sdk_caller,
    spawn,
)

pytestmark = pytest.mark.anyio

ALPHA = "alpha-" + "a" * 40   # team:alpha:*, no delete
DELETER = "deleter-" + "d" * 40  # team:alpha:*, can delete; a plain `token` key in the config
ADMIN = "admin-" + "z" * 40   # *, can delete
LIMITED = "limited-" + "l" * 40  # rl:*, 2 calls per minute
METERED = "metered-" + "m" * 40  # rl2:*, 3 calls per minute
TOKENS = [
    {"name": "alpha", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]},
    {"name": "deleter", "token": DELETER, "sessions": ["team:alpha:*"], "can_delete": True},
    {"name": "admin", "token_sha256": sha256(ADMIN), "sessions": ["*"], "can_delete": True},
    {"name": "limited", "token_sha256": sha256(LIMITED), "sessions": ["rl:*"], "rate_limit_per_minute": 2},
    {"name": "metered", "token_sha256": sha256(METERED), "sessions": ["rl2:*"], "rate_limit_per_minute": 3},
]


@dataclass
class Served:
    port: int
    db_url: str

    async def contents(self, session: str) -> list[str]:
        return await session_contents(self.db_url, session)


@pytest.fixture(scope="module")
async def served(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with configured_server(pg_url, tmp_path_factory.mktemp("auth-tokens"), TOKENS) as (port, db_url):
        yield Served(port, db_url)


def _initialize(port: int, headers: dict[str, str]) -> httpx.Response:
    return post(port, INITIALIZE, headers)


@pytest.mark.parametrize("authorization", [
    None, "Bearer", "Bearer wrong-token", f"Basic {ALPHA}", f"Bearer {ALPHA}x", f"Bearer {ALPHA[:-1]}",
    f"Bearer {sha256(ALPHA)}", "Bearer \u00e9t\u00e9 \U0001f511".encode(), f"bearer{ALPHA}",
])
async def test_a_request_without_a_known_bearer_token_gets_401(served: Served, authorization: str | bytes | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = _initialize(served.port, headers)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer ")
    assert "mcp-session-id" not in response.headers


async def test_a_tool_call_with_a_wrong_token_on_a_live_session_runs_nothing(served: Served) -> None:
    """The MCP session was opened with a good token; the call itself carries a bad one."""
    session = f"team:alpha:{uuid.uuid4().hex[:8]}"
    opened = _initialize(served.port, {"Authorization": f"Bearer {ALPHA}"})
    assert opened.status_code == 200, opened.text
    session_id = opened.headers["mcp-session-id"]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "store_memory", "arguments": {"session": session, "content": "should not be stored"}}}
    for bad in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Bearer {ALPHA}!"}):
        assert post(served.port, call, bad, session_id).status_code == 401
    # a good token of another caller cannot use alpha's MCP session either (the SDK binds it to its creator)
    assert post(served.port, call, {"Authorization": f"Bearer {ADMIN}"}, session_id).status_code == 404
    assert await served.contents(session) == []


async def test_a_static_token_server_advertises_no_oauth_discovery(served: Served) -> None:
    """Clients that find discovery metadata drop their configured Authorization header."""
    base = f"http://127.0.0.1:{served.port}"
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        assert httpx.get(base + path, timeout=10).status_code == 404, path
    challenge = _initialize(served.port, {}).headers["www-authenticate"]
    assert "resource_metadata" not in challenge


async def test_health_needs_no_token(served: Served) -> None:
    response = httpx.get(f"http://127.0.0.1:{served.port}/health", timeout=10)
    assert response.status_code == 200 and response.json()["status"] == "ready"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_tool_works_with_a_token_for_all_sessions(served: Served, mode: str) -> None:
    async with token_client(served.port, ADMIN, mode) as client:
        await exercise_every_tool(sdk_caller(client), f"s-auth-{uuid.uuid4().hex[:8]}")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_token_decides_the_scope_in_both_protocol_eras(served: Served, mode: str) -> None:
    async with token_client(served.port, ALPHA, mode) as alpha:
        refused = await alpha.call_tool("store_memory", {"session": "team:beta:x", "content": "x"})
        assert refused.is_error and "this token may not use this session" in refused.content[0].text
        allowed = await alpha.call_tool("store_memory", {"session": "team:alpha:era", "content": f"era {mode}"})
        assert not allowed.is_error, allowed.content
    assert await served.contents("team:beta:x") == []


async def test_a_token_reaches_only_the_sessions_of_its_patterns(served: Served) -> None:
    own = f"team:alpha:{uuid.uuid4().hex[:8]}"
    other = f"team:beta:{uuid.uuid4().hex[:8]}"
    async with token_client(served.port, ADMIN) as admin:
        stored = await admin.call_tool("store_memory", {"session": other, "content": "beta launch code is 7781"})
        assert not stored.is_error
        beta_id = stored.structured_content["memory_id"]
    async with token_client(served.port, ALPHA) as alpha:
        mine = await alpha.call_tool("store_memory", {"session": own, "content": "alpha standup at 9:15"})
        assert not mine.is_error, mine.content
        recalled = await alpha.call_tool("recall_memory", {"session": own, "query": "standup"})
        assert [m["content"] for m in recalled.structured_content["memories"]] == ["alpha standup at 9:15"]
        looks_alike = ["team:alpha", "Team:alpha:x", "team:alpha\u200b:x", "*", "team:alph*", "team:%", other,
                       " team:alpha:x"]
        calls = [(name, {"session": s, **extra}) for s in looks_alike for name, extra in (
            ("store_memory", {"content": "sneaked in"}), ("recall_memory", {"query": "launch code"}),
            ("list_audits", {}), ("delete_memory", {"all": True, "confirm": s}))]
        calls.append(("delete_memory", {"session": other, "memory_id": beta_id}))
        for name, arguments in calls:
            result = await alpha.call_tool(name, arguments)
            text = result.content[0].text
            assert result.is_error, (name, arguments)
            # the refusal names the token's own pattern, so an agent can pick a session it may use, and
            # nothing of the session asked for (nor another session's name or content)
            assert text == (f"Error executing tool {name}: session: this token may not use this session; "
                            "nothing was read or changed; it may use sessions matching 'team:alpha:*'"), text
    for session in looks_alike:
        assert await served.contents(session) == ([] if session != other else ["beta launch code is 7781"])


async def test_delete_memory_needs_can_delete(served: Served) -> None:
    session = f"team:alpha:{uuid.uuid4().hex[:8]}"
    async with token_client(served.port, ALPHA) as alpha:
        memory_id = (await alpha.call_tool("store_memory", {"session": session, "content": "keep me"})
                     ).structured_content["memory_id"]
        for arguments in ({"memory_id": memory_id}, {"all": True, "confirm": session}):
            refused = await alpha.call_tool("delete_memory", {"session": session, **arguments})
            assert refused.is_error and "may not delete" in refused.content[0].text
    assert await served.contents(session) == ["keep me"]
    async with token_client(served.port, DELETER) as deleter:  # the plain `token` key works too
        deleted = await deleter.call_tool("delete_memory", {"session": session, "memory_id": memory_id})
        assert deleted.structured_content == {"deleted": True, "count": 1}
    assert await served.contents(session) == []


async def test_a_token_over_its_rate_limit_gets_a_tool_error_saying_when_to_retry(served: Served) -> None:
    session = f"rl:{uuid.uuid4().hex[:8]}"
    async with token_client(served.port, LIMITED) as limited:
        for i in range(2):
            assert not (await limited.call_tool("store_memory", {"session": session, "content": f"fact {i}"})).is_error
        refused = await limited.call_tool("store_memory", {"session": session, "content": "one too many"})
        assert refused.is_error
        match = re.search(r"retry in (\d+) s", refused.content[0].text)
        assert match is not None, refused.content[0].text
        assert 1 <= int(match.group(1)) <= 30  # 2 per minute: one call is free again within 30 s
        assert (await limited.call_tool("usage_stats", {})).is_error  # every tool counts
    assert await served.contents(session) == ["fact 0", "fact 1"]
    async with token_client(served.port, ADMIN) as admin:  # other tokens have buckets of their own
        assert not (await admin.call_tool("recall_memory", {"session": session, "query": "fact"})).is_error


async def test_a_token_config_with_a_bad_pattern_two_secrets_or_a_shared_secret_does_not_start(tmp_path: Path) -> None:
    from processes import MCP_MEMORY, server_env
    import subprocess

    cases = [
        [{"name": "x", "token_sha256": sha256(ALPHA), "sessions": ["a*b"]}],
        [{"name": "x", "token_sha256": sha256(ALPHA), "token": ALPHA, "sessions": ["*"]}],
        [{"name": "x", "token_sha256": "abc", "sessions": ["*"]}],
        [{"name": "x", "token_sha256": sha256(ALPHA), "sessions": ["*"]},
         {"name": "x", "token_sha256": sha256(ADMIN), "sessions": ["*"]}],
        # one secret twice (hash and hash in upper case, or hash and plain): the later entry's scope would win
        [{"name": "a", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]},
         {"name": "b", "token_sha256": sha256(ALPHA).upper(), "sessions": ["*"], "can_delete": True}],
        [{"name": "a", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]},
         {"name": "b", "token": ALPHA, "sessions": ["*"]}],
    ]
    for i, tokens in enumerate(cases):
        config = write_config(tmp_path / f"c{i}.toml", tokens)
        done = subprocess.run([MCP_MEMORY, "--config", str(config), "serve", "--transport", "http"],
                              env=server_env(tmp_path / "data"), capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("mcp-memory: invalid settings: auth"), done.stderr


async def test_a_stateless_server_checks_the_token_on_every_request(
    pg_url: str, tmp_path: Path, spawn: Spawner
) -> None:
    config = write_config(tmp_path / "config.toml", TOKENS)
    port = free_port()
    server = spawn.http(spawn.data_dir(), port, "--stateless", "--config", str(config), MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    assert _initialize(port, {}).status_code == 401
    assert _initialize(port, {"Authorization": "Bearer wrong-token"}).status_code == 401
    async with token_client(port, ALPHA) as alpha:
        refused = await alpha.call_tool("recall_memory", {"session": "team:beta:x", "query": "x"})
        assert refused.is_error and "this token may not use this session" in refused.content[0].text
        allowed = await alpha.call_tool("recall_memory", {"session": "team:alpha:x", "query": "x"})
        assert not allowed.is_error, allowed.content


async def test_one_budget_per_token_across_sessions_and_eras_a_refused_token_spends_none(served: Served) -> None:
    """Calls with a wrong token get 401 and spend nothing; calls the gate refuses (a foreign session) do
    spend, as every call the token makes; two MCP sessions and the session-less 2026 era share one bucket."""
    session = f"rl2:{uuid.uuid4().hex[:8]}"
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "store_memory", "arguments": {"session": session, "content": "never"}}}
    for _ in range(5):
        assert post(served.port, call, {"Authorization": f"Bearer {METERED}x"}).status_code == 401
    async with token_client(served.port, METERED) as one, token_client(served.port, METERED) as two, \
            token_client(served.port, METERED, "2026-07-28") as modern:
        assert not (await one.call_tool("store_memory", {"session": session, "content": "first"})).is_error
        foreign = await two.call_tool("recall_memory", {"session": "team:alpha:x", "query": "x"})
        assert foreign.is_error and "this token may not use this session" in foreign.content[0].text
        assert not (await modern.call_tool("store_memory", {"session": session, "content": "third"})).is_error
        refused = await one.call_tool("store_memory", {"session": session, "content": "fourth"})
        assert refused.is_error and re.search(r"retry in \d+ s", refused.content[0].text), refused.content
    assert await served.contents(session) == ["first", "third"]


@pytest.mark.parametrize("where", ["query", "X-Api-Key", "Cookie", "Proxy-Authorization", "X-Authorization"])
async def test_a_token_anywhere_but_the_authorization_header_gets_401(served: Served, where: str) -> None:
    url = mcp_url(served.port) + (f"?access_token={ADMIN}" if where == "query" else "")
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if where != "query":
        headers[where] = f"token={ADMIN}" if where == "Cookie" else f"Bearer {ADMIN}"
    assert httpx.post(url, json=INITIALIZE, headers=headers, timeout=30).status_code == 401


@pytest.mark.parametrize("first, second", [(ALPHA, ADMIN), (ADMIN, ALPHA), ("wrong-token", ADMIN), (ADMIN, ADMIN)])
async def test_two_authorization_headers_get_401_and_run_nothing(served: Served, first: str, second: str) -> None:
    """The SDK reads the first; a proxy in front may check the last: never guess which one was meant."""
    session = f"team:beta:{uuid.uuid4().hex[:8]}"
    store = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "store_memory", "arguments": {"session": session, "content": "two headers"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}
    base = [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")]
    with httpx.Client(timeout=30) as http:
        for message, era in ((INITIALIZE, [("MCP-Protocol-Version", "2025-11-25")]),
                             (store, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"),
                                      ("Mcp-Name", "store_memory")])):
            request = http.build_request("POST", mcp_url(served.port), json=message, headers=[
                *base, *era, ("Authorization", f"Bearer {first}"), ("Authorization", f"Bearer {second}")])
            reply = http.send(request)
            assert reply.status_code == 401 and "mcp-session-id" not in reply.headers, reply.text
    assert await served.contents(session) == []


@pytest.mark.parametrize("body", [b"not json", b"{}", b'{"jsonrpc": "2.0", "id": 7}', b"[]"])
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token"])
async def test_a_malformed_body_without_a_known_token_gets_401_not_400(
    served: Served, body: bytes, authorization: str | None
) -> None:
    """The token is checked before the body: a caller without one learns nothing about what it sent
    (docs/security.md: a missing or unknown token is HTTP 401, nothing executed)."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    response = httpx.post(mcp_url(served.port), content=body, headers=headers, timeout=30)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer ")


async def test_a_malformed_body_with_a_good_token_still_gets_its_json_rpc_error(served: Served) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "Authorization": f"Bearer {ALPHA}"}
    response = httpx.post(mcp_url(served.port), content=b"not json", headers=headers, timeout=30)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32700

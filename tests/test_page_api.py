"""The page's JSON API (``/api/``) and its static files over real HTTP, without a browser.

One ``mcp-memory serve --transport http`` process with ``[[auth.tokens]]``, on a database of its
own; memories are stored through MCP with an admin token, and rows are counted in PostgreSQL
directly, so "writes nothing" means no new row.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest
from bearer import configured_server, sha256, token_client
from mcp.server.transport_security import TransportSecuritySettings

from mcp_memory.deps import Deps
from mcp_memory.http.app import build_http_app
from mcp_memory.settings import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

ALPHA = "alpha-" + "a" * 40  # team:alpha:*
ADMIN = "admin-" + "z" * 40  # *
LIMITED = "limited-" + "l" * 40  # rl:*, 2 calls per minute
TOKENS = [
    {"name": "alpha", "token_sha256": sha256(ALPHA), "sessions": ["team:alpha:*"]},
    {"name": "admin", "token_sha256": sha256(ADMIN), "sessions": ["*"], "can_delete": True},
    {"name": "limited", "token_sha256": sha256(LIMITED), "sessions": ["rl:*"], "rate_limit_per_minute": 2},
]
A1, A2, B = "team:alpha:notes", "team:alpha:ops", "team:beta:secrets"
START = datetime(2025, 3, 1, tzinfo=UTC)
SAME_TIME = START + timedelta(days=100)


@dataclass
class Served:
    port: int
    db_url: str

    def get(self, path: str, token: str | None = ALPHA, **params: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.get(f"http://127.0.0.1:{self.port}{path}", params=params, headers=headers, timeout=60)

    async def count(self, table: str) -> int:
        connection = await asyncpg.connect(self.db_url)
        try:
            return await connection.fetchval(f"SELECT count(*) FROM {table}")  # noqa: S608 - fixed table names
        finally:
            await connection.close()


@pytest.fixture(scope="module")
async def served(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with configured_server(pg_url, tmp_path_factory.mktemp("page-api"), TOKENS) as (port, db_url):
        async with token_client(port, ADMIN) as client:
            for day in range(7):  # A1: seven days, then two memories at one instant (storage order breaks the tie)
                await client.call_tool("store_memory", {
                    "session": A1, "content": f"Day {day}: the kiln reached cone {day + 4}",
                    "occurred_at": (START + timedelta(days=day)).isoformat()})
            for content in ("Tie first: glaze order placed", "Tie second: glaze order shipped"):
                await client.call_tool("store_memory", {"session": A1, "content": content,
                                                        "occurred_at": SAME_TIME.isoformat()})
            await client.call_tool("store_memory", {"session": A2, "content": "Deploy window is Tuesday 14:00"})
            await client.call_tool("store_memory", {"session": B, "content": "Beta launch code is 7741-QUIET"})
            recalled = await client.call_tool("recall_memory", {"session": A1, "query": "kiln cone"})
            assert not recalled.is_error
            await client.call_tool("recall_memory", {"session": B, "query": "launch code"})
        yield Served(port, db_url)


async def test_the_page_is_served_with_a_strict_content_security_policy_and_no_inline_script(served: Served) -> None:
    page = served.get("/", token=None)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe" not in csp
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["cache-control"] == "no-store"
    assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/page/app.js" defer>']
    script = served.get("/page/app.js", token=None)
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "innerHTML" not in script.text and "insertAdjacentHTML" not in script.text and "eval(" not in script.text
    assert served.get("/page/style.css", token=None).headers["content-type"].startswith("text/css")


async def test_the_page_names_an_icon_it_serves_so_a_browser_asks_for_no_missing_favicon(served: Served) -> None:
    """Without a ``<link rel="icon">`` every browser asks for /favicon.ico, gets 404 and logs an error."""
    page = served.get("/", token=None)
    icon_link = '<link rel="icon" href="/page/icon.svg" type="image/svg+xml">'
    assert re.findall(r'<link rel="icon"[^>]*>', page.text) == [icon_link]
    icon = served.get("/page/icon.svg", token=None)
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg") and "<script" not in icon.text
    assert icon.headers["content-security-policy"] == page.headers["content-security-policy"]


@pytest.mark.parametrize("path", ["/api/sessions", "/api/memories", "/api/search", "/api/audits", "/api/audit"])
@pytest.mark.parametrize("token", [None, "wrong-token", sha256(ALPHA)])
async def test_the_api_answers_401_without_a_token_the_mcp_endpoint_accepts(served: Served, path: str,
                                                                             token: str | None) -> None:
    reply = served.get(path, token=token, session=A1, q="kiln", id=1)
    assert reply.status_code == 401
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert reply.headers["cache-control"] == "no-store"
    assert "kiln" not in reply.text


async def test_a_token_lists_only_the_sessions_its_patterns_allow_with_their_counts(served: Served) -> None:
    reply = served.get("/api/sessions")
    assert reply.status_code == 200
    assert reply.json() == {"sessions": [{"session": A1, "memories": 9}, {"session": A2, "memories": 1}], "next": None}
    assert reply.headers["cache-control"] == "no-store" and reply.headers["x-content-type-options"] == "nosniff"
    everything = served.get("/api/sessions", token=ADMIN, limit=2).json()
    assert [s["session"] for s in everything["sessions"]] == [A1, A2] and everything["next"] == A2
    rest = served.get("/api/sessions", token=ADMIN, limit=2, after=A2).json()
    assert rest == {"sessions": [{"session": B, "memories": 1}], "next": None}


async def test_a_session_emptied_by_delete_all_leaves_the_list(served: Served) -> None:
    """It stayed listed with 0 memories (memory_stats keeps its row at n = 0)."""
    emptied = "team:alpha:emptied"
    async with token_client(served.port, ADMIN) as client:
        assert not (await client.call_tool("store_memory", {"session": emptied, "content": "Scratch note"})).is_error
        assert {"session": emptied, "memories": 1} in served.get("/api/sessions").json()["sessions"]
        deleted = await client.call_tool("delete_memory", {"session": emptied, "all": True, "confirm": emptied})
        assert not deleted.is_error, deleted.content
    assert emptied not in [s["session"] for s in served.get("/api/sessions").json()["sessions"]]
    assert emptied not in [s["session"] for s in served.get("/api/sessions", token=ADMIN, after=A2).json()["sessions"]]


@pytest.mark.parametrize("path", ["/api/memories", "/api/search", "/api/audits", "/api/audit"])
async def test_a_session_outside_the_token_gets_403_with_one_line_and_none_of_its_data(served: Served,
                                                                                      path: str) -> None:
    audit_id = served.get("/api/audits", token=ADMIN, session=B).json()["audits"][0]["audit_id"]
    reply = served.get(path, session=B, q="launch code", id=audit_id)
    assert reply.status_code == 403
    assert reply.json() == {"error": "session: this token may not use this session; nothing was read or changed; "
                                     "it may use sessions matching 'team:alpha:*'"}
    assert "7741" not in reply.text and "Beta" not in reply.text


async def test_memories_come_newest_first_and_the_cursor_reaches_each_memory_once(served: Served) -> None:
    seen: list[dict] = []
    cursor = None
    for _ in range(10):
        page = served.get("/api/memories", session=A1, limit=2, **({"cursor": cursor} if cursor else {})).json()
        seen += page["memories"]
        cursor = page["next"]
        if cursor is None:
            break
    assert [m["content"] for m in seen] == [
        "Tie second: glaze order shipped", "Tie first: glaze order placed",
        *(f"Day {day}: the kiln reached cone {day + 4}" for day in range(6, -1, -1))]
    assert len({m["memory_id"] for m in seen}) == 9
    assert seen[-1]["occurred_at"] == START.isoformat()


async def test_a_search_shows_scores_and_the_lists_that_found_each_memory_and_writes_nothing(served: Served) -> None:
    audits, usage = await served.count("audits"), await served.count("llm_usage")
    reply = served.get("/api/search", session=A1, q="cone 9", top_k=3)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["memories"][0]["content"] == "Day 5: the kiln reached cone 9"
    scores = [m["score"] for m in data["memories"]]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True) and scores[0] > 0
    lists = {hit["list"] for hit in data["memories"][0]["found_by"]}
    assert {"vector:0", "keyword:0"} <= lists
    assert all(hit["rank"] >= 1 for m in data["memories"] for hit in m["found_by"])
    assert {"embed", "search", "fuse", "total"} <= set(data["latency_ms"]) and data["audited"] is False
    assert (await served.count("audits"), await served.count("llm_usage")) == (audits, usage)


async def test_an_audit_shows_the_query_its_candidate_lists_ranking_and_stage_times(served: Served) -> None:
    trail = served.get("/api/audits", session=A1).json()
    [row] = [r for r in trail["audits"] if r["kind"] == "recall"]
    assert row["detail"]["query"] == "kiln cone" and "candidates" not in row["detail"]
    full = served.get("/api/audit", session=A1, id=row["audit_id"]).json()
    detail = full["audit"]["detail"]
    assert detail["query"] == "kiln cone" and detail["queries"] == ["kiln cone"]
    assert {"vector:0", "keyword:0", "recent"} <= set(detail["candidates"])
    assert {"plan", "embed", "search", "fuse", "answer", "total"} <= set(detail["latency_ms"])
    assert [f["memory_id"] for f in detail["fused"]][: len(detail["selected"])] == detail["selected"]
    named = {i for ids in detail["candidates"].values() for i in ids}
    assert named <= set(full["memories"])
    assert {m["content"] for m in full["memories"].values()} >= {f"Day {d}: the kiln reached cone {d + 4}" for d in range(7)}


async def test_an_audit_of_another_session_by_its_number_is_not_found(served: Served) -> None:
    other = served.get("/api/audits", token=ADMIN, session=B).json()["audits"][0]["audit_id"]
    reply = served.get("/api/audit", session=A1, id=other)
    assert reply.status_code == 404 and reply.json() == {"error": f"id: this session has no audit row {other}"}


@pytest.mark.parametrize(("path", "params", "message"), [
    ("/api/memories", {"session": A1, "cursor": "not-a-cursor"}, "cursor: is not a cursor this page gave out"),
    ("/api/memories", {"session": A1, "cursor": "eyJ" * 90}, "cursor: is not a cursor this page gave out"),
    ("/api/memories", {"session": A1, "limit": "0"}, "limit: must be a whole number from 1 to 200"),
    ("/api/memories", {"session": A1, "limit": "201"}, "limit: must be a whole number from 1 to 200"),
    ("/api/memories", {"session": A1, "limit": "1e3"}, "limit: must be a whole number from 1 to 200"),
    ("/api/memories", {"session": "team:alpha:" + "x" * 300}, "session: is 311 characters; the limit is 256 characters"),
    ("/api/memories", {}, "session: is required"),
    ("/api/sessions", {"limit": "501"}, "limit: must be a whole number from 1 to 500"),
    ("/api/search", {"session": A1, "q": "x" * 4001}, "q: is 4001 characters; the limit is 4000"),
    ("/api/search", {"session": A1}, "q: is required"),
    ("/api/search", {"session": A1, "q": "kiln", "top_k": "101"}, "top_k: must be a whole number from 1 to 100"),
    ("/api/audits", {"session": A1, "before": "-1"}, "before: must be a whole number from 1 to"),
    ("/api/audit", {"session": A1, "id": "x"}, "id: must be a whole number from 1 to"),
])
async def test_a_bad_parameter_gets_400_with_one_line_naming_the_field_and_the_limit(
    served: Served, path: str, params: dict[str, str], message: str,
) -> None:
    reply = served.get(path, **params)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error.startswith(message) and "\n" not in error and len(error) < 200


def _crafted(*key: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    _crafted("0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00+00:00", "00000000-0000-0000-0000-000000000000"),
    _crafted("9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59+00:00", "00000000-0000-0000-0000-000000000000"),
    _crafted("2025-01-01T00:00:00+00:00", "2025-01-01T00:00:00+00:00", 5),
])
async def test_a_crafted_cursor_out_of_the_databases_range_gets_400_not_500(served: Served, cursor: str) -> None:
    """A time that leaves datetime's range once in UTC, or a memory_id that is a number, passed the
    cursor check and failed later (OverflowError, AttributeError): 500 Internal Server Error."""
    reply = served.get("/api/memories", session=A1, cursor=cursor)
    assert reply.status_code == 400 and reply.json()["error"].startswith("cursor: is not a cursor this page gave out")


@pytest.mark.parametrize("path", ["/", "/page/app.js", "/api/sessions"])
async def test_another_host_gets_421_and_another_origin_403_as_on_the_mcp_endpoint(served: Served, path: str) -> None:
    url = f"http://127.0.0.1:{served.port}{path}"
    auth = {"Authorization": f"Bearer {ALPHA}"}
    rebound = httpx.get(url, headers={**auth, "Host": f"evil.example:{served.port}"}, timeout=10)
    assert rebound.status_code == 421 and "team:alpha" not in rebound.text
    foreign = httpx.get(url, headers={**auth, "Origin": "http://evil.example"}, timeout=10)
    assert foreign.status_code == 403 and "team:alpha" not in foreign.text
    assert httpx.get(url, headers={**auth, "Origin": f"http://127.0.0.1:{served.port}"}, timeout=10).status_code == 200


@pytest.mark.parametrize(("method", "path"), [("POST", "/api/sessions"), ("DELETE", "/api/memories"),
                                              ("PUT", "/"), ("POST", "/page/app.js")])
async def test_the_page_and_api_only_read_and_refuse_other_methods_with_the_security_headers(
        served: Served, method: str, path: str) -> None:
    reply = httpx.request(method, f"http://127.0.0.1:{served.port}{path}",
                          headers={"Authorization": f"Bearer {ALPHA}"}, timeout=10)
    assert reply.status_code == 405 and reply.headers["allow"] == "GET, HEAD"
    assert reply.headers["x-frame-options"] == "DENY" and reply.headers["cache-control"] == "no-store"
    assert reply.headers["content-security-policy"].startswith("default-src 'self'")


async def test_the_api_counts_against_the_tokens_rate_limit_as_a_tool_call_does(served: Served) -> None:
    assert [served.get("/api/sessions", token=LIMITED).status_code for _ in range(2)] == [200, 200]
    refused = served.get("/api/memories", token=LIMITED, session="rl:x")
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"].startswith("rate limit: this token may make 2 calls per minute")


async def test_a_stateless_server_serves_the_page_and_its_api_too(base_settings: Settings, deps: Deps,
                                                                  empty_tables: None) -> None:
    app = build_http_app(base_settings, deps, "127.0.0.1", stateless=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8020") as http:
        page = await http.get("/")
        assert page.status_code == 200 and "<title>mcp-memory</title>" in page.text
        reply = await http.get("/api/memories", params={"session": "nobody"})
        assert reply.status_code == 200 and reply.json() == {"session": "nobody", "memories": [], "next": None}
        assert (await http.get("/api/memories", headers={"host": "evil.example"})).status_code == 421


SECURITY = ("content-security-policy", "x-content-type-options", "x-frame-options", "referrer-policy", "cache-control")


@pytest.mark.parametrize(("path", "params", "field"), [
    ("/api/sessions", {"after": "\x00"}, "after"),
    ("/api/sessions", {"after": "team:\x00alpha"}, "after"),
    ("/api/memories", {"session": "team:alpha:\x00"}, "session"),
    ("/api/memories", {"session": A1, "cursor": "\x00"}, "cursor"),
    ("/api/search", {"session": A1, "q": "kiln\x00"}, "q"),
    ("/api/audits", {"session": A1, "before": "\x00"}, "before"),
    ("/api/audit", {"session": A1, "id": "1\x00"}, "id"),
    ("/api/sessions", {"after": "x" * 2000}, "after"),
])
async def test_a_nul_or_an_overlong_parameter_gets_400_naming_it_with_the_security_headers(
        served: Served, path: str, params: dict[str, str], field: str) -> None:
    """``/api/sessions?after=%00`` reached PostgreSQL, which cannot hold NUL in text: asyncpg's
    CharacterNotInRepertoireError, 500 Internal Server Error, and none of the security headers."""
    reply = served.get(path, **params)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error.startswith(f"{field}: ") and "\n" not in error and len(error) < 200
    assert all(name in reply.headers for name in SECURITY)


@pytest.mark.parametrize("path", ["/api/sessions/", "/api/sessions", "/health", "/health/live", "/metrics", "/mcp",
                                  "/mcp/", "/nowhere", "/page/app.js/"])
async def test_a_foreign_host_gets_421_on_every_path_before_any_redirect(served: Served, path: str) -> None:
    """``GET /api/sessions/`` with ``Host: evil.com`` answered 307 to ``http://evil.com/api/sessions``:
    Starlette's slash redirect ran before the route's Host check; /health answered any Host."""
    reply = httpx.get(f"http://127.0.0.1:{served.port}{path}", headers={"Host": "evil.com"}, timeout=10)
    assert reply.status_code == 421 and "location" not in reply.headers and "evil.com" not in reply.text
    assert all(name in reply.headers for name in SECURITY)
    foreign = httpx.get(f"http://127.0.0.1:{served.port}{path}", headers={"Origin": "http://evil.com"}, timeout=10)
    assert foreign.status_code == 403 and all(name in foreign.headers for name in SECURITY)


async def test_a_slash_redirect_stays_on_the_accepted_host_and_carries_the_security_headers(served: Served) -> None:
    reply = httpx.get(f"http://127.0.0.1:{served.port}/api/sessions/", timeout=10)
    assert reply.status_code == 307 and reply.headers["location"] == f"http://127.0.0.1:{served.port}/api/sessions"
    assert all(name in reply.headers for name in SECURITY)
    missing = httpx.get(f"http://127.0.0.1:{served.port}/nowhere", timeout=10)
    assert missing.status_code == 404 and all(name in missing.headers for name in SECURITY)


async def test_an_error_no_route_expected_is_a_500_with_one_line_and_the_security_headers() -> None:
    """The outermost middleware answers what escapes every route: a JSON line, the headers, no traceback."""
    from mcp_memory.http.guard import Guard

    async def broken(scope: object, receive: object, send: object) -> None:  # a route that fails, as routing runs it
        raise RuntimeError("secret detail from deep inside")

    security = TransportSecuritySettings(allowed_hosts=["127.0.0.1:*"], allowed_origins=[])
    app = Guard(broken, security)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8020") as http:
        reply = await http.get("/broken")
    assert reply.status_code == 500 and all(name in reply.headers for name in SECURITY)
    assert reply.json() == {"error": "internal error: the server could not answer this request; its log says why"}

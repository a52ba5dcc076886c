"""Property-based: every tool, driven over streamable HTTP and raw stdio with hostile input, always answers.

Issue 11 ("Every request gets an answer"). Real ``mcp-memory serve`` processes on the shared
PostgreSQL; hypothesis draws tool calls with arbitrary unicode (emoji, RTL marks, combining marks,
zero-width characters, CJK, control characters, lone surrogates sent as JSON escapes), wrong JSON
types, sizes at and past each limit, unknown tools and arguments, missing arguments and malformed
JSON-RPC. Invariants, checked on every example:

- a reply within a second: a tool result or a JSON-RPC error, one line, never pydantic's wording;
  an argument error names the argument;
- nothing is stored by a rejected call;
- a recall returns only memories stored in its own session, each byte for byte as stored;
- the server keeps answering (the next example, and a final ``tools/list``).

Stable in CI: ``derandomize=True`` (the same examples every run) and a fixed example budget.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
import asyncpg
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from processes import ServerProcess, Spawner, free_port

T = TypeVar("T")
REPLY_S = 1.0
BIG_REPLY_S = 5.0  # a store of a 32,000-character memory embeds ~60 windows: slower than a second on 2 shared cores
TOOLS = ["store_memory", "recall_memory", "delete_memory", "list_audits", "usage_stats"]
FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Look-alike session names: each is its own session (docs/tools.md, "Sessions").
LOOKALIKES = ["a", "A", "a ", " a", "a\u200d", "\u200da", "\u0430", "a\u0301", "\u00e1", "%", "_", "*", "\\", "'",
              '"', "a%", "a_", "a*", "\u202ea", "\ufeffa", "null", "[1]"]

UNICODE = st.lists(
    st.characters(codec=None, exclude_categories=()) | st.sampled_from(
        ["\u200d", "\u200b", "\u202e", "\u200f", "\u0301", "\ufeff", "😀", "👩‍👩‍👧", "日本語", "\x00", "\x1f", "\x7f",
         "\ud800", "\udfff", "\U0010ffff", "word", " "]),
    max_size=16,
).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False)
    | UNICODE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(UNICODE, inner, max_size=3),
    max_leaves=6,
)


def _sized(limit: int) -> st.SearchStrategy[str]:
    """Text at and just past a length limit, or short."""
    return st.sampled_from([limit, limit + 1, 1]).map(lambda n: "x" * (n - 1) + "é")


FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "store_memory": {
        "content": UNICODE | _sized(32_000) | JSON_VALUES,
        "occurred_at": st.sampled_from(["2025-03-14", "2025-03-14T09:30:00+01:00", "null", "soon", "0001-01-01T00:00+14:00"])
        | JSON_VALUES,
        "metadata": st.dictionaries(UNICODE, JSON_VALUES, max_size=3) | st.just({"k": "v" * 16_400}) | JSON_VALUES,
        "importance": st.sampled_from([0, 1, 0.5, "0.5", 1.5, -0.1, True, "high"]) | JSON_VALUES,
        "supersedes": st.lists(st.uuids().map(str), max_size=33) | JSON_VALUES,
    },
    "recall_memory": {
        "query": UNICODE | _sized(4_000) | JSON_VALUES,
        "top_k": st.sampled_from([1, 100, 101, 0, -1, "5", "5.0", 2.5, 2.0, True, 10**30]) | JSON_VALUES,
        "include_superseded": st.sampled_from([True, False, "true", 1, None]),
    },
    "delete_memory": {
        "memory_id": st.uuids().map(str) | st.sampled_from(["null", "", "0"]) | JSON_VALUES,
        "all": st.sampled_from([True, False, "yes", 1, None]),
        "confirm": UNICODE | JSON_VALUES,
    },
    "list_audits": {
        "limit": st.sampled_from([1, 100, 101, 0, "7", True, 1.5]),
        "kind": st.sampled_from(["recall", "delete", "null", "RECALL", ""]) | JSON_VALUES,
    },
    "usage_stats": {"reset": st.sampled_from([False, "yes", 0, None])},
}
SESSION = st.sampled_from(LOOKALIKES) | UNICODE | _sized(256) | JSON_VALUES


# Text a store accepts: any code point but surrogates and NUL (emoji, RTL and zero-width marks, CJK,
# combining marks and other control characters included), not blank.
STORABLE = st.lists(
    st.characters(codec="utf-8", exclude_characters="\x00") | st.sampled_from(
        ["\u200d", "\u202e", "\u0301", "👩‍👩‍👧", "日本語", "\x1f", " "]), min_size=1, max_size=24,
).map("".join).filter(lambda text: bool(text.strip()))
VALID_CALLS = st.one_of(
    st.fixed_dictionaries({"session": st.sampled_from(LOOKALIKES), "content": STORABLE}).map(
        lambda arguments: ("store_memory", arguments)),
    st.fixed_dictionaries({"session": st.sampled_from(LOOKALIKES), "query": STORABLE,
                           "top_k": st.integers(1, 100)}).map(lambda arguments: ("recall_memory", arguments)),
)


@st.composite
def hostile_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tools/call's name and arguments: mostly a real tool, with any subset of its fields, some hostile."""
    name = draw(st.sampled_from(TOOLS) | st.sampled_from(["forget_everything", "", "store_memory "]))
    arguments: dict[str, Any] = {}
    if name != "usage_stats" and draw(st.integers(0, 9)) > 0:
        arguments["session"] = draw(SESSION)
    for field, values in FIELDS.get(name, {}).items():
        if draw(st.booleans()):
            arguments[field] = draw(values)
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(UNICODE)] = draw(JSON_VALUES)
    return name, arguments


MALFORMED = st.one_of(
    st.binary(max_size=40),
    st.builds(lambda i, m: json.dumps({"jsonrpc": "2.0", "id": i, "method": m}),
              JSON_VALUES, st.sampled_from(["tools/list", "tools/call", "nope"])),
    st.builds(lambda p: json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": p}), JSON_VALUES),
    st.builds(lambda v: json.dumps({"jsonrpc": v, "id": 5, "method": "tools/list"}), JSON_VALUES),
    st.just('[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]'),
)


class Transport:
    """One way of sending a JSON-RPC request and getting its one reply (or None past the deadline)."""

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        raise NotImplementedError

    def raw(self, body: bytes, timeout_s: float) -> dict[str, Any] | None:
        raise NotImplementedError


class HttpTransport(Transport):
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.http = httpx.Client()
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "MCP-Protocol-Version": "2025-11-25"}
        init = self.http.post(self.url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}},
            headers=self.headers, timeout=30)
        self.headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
        self.http.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)
        self.next_id = 0

    def _post(self, body: bytes, timeout_s: float) -> dict[str, Any] | None:
        try:
            response = self.http.post(self.url, content=body, headers=self.headers, timeout=timeout_s)
        except httpx.TimeoutException:
            return None
        assert response.status_code in (200, 400), (response.status_code, response.text[:300])
        return response.json()

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        self.next_id += 1
        return self._post(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode(),
                          timeout_s)

    def raw(self, body: bytes, timeout_s: float) -> dict[str, Any] | None:
        return self._post(body, timeout_s)


class StdioTransport(Transport):
    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        server.initialize("2025-11-25")
        server.tool("usage_stats", {})  # waits for start-up (model and database), which takes seconds

    def _reply(self, timeout_s: float, request_id: Any) -> dict[str, Any] | None:
        """The reply to ``request_id`` (any reply when None) within ``timeout_s``, else None."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.server.receive(left)
            except AssertionError:
                if self.server.proc.poll() is not None:
                    raise
                return None
            if request_id is None or message.get("id") == request_id:
                if "result" in message or "error" in message:
                    return message
            elif message.get("id") is None and "error" in message:  # unreadable (not JSON): id null
                return message
        return None

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any] | None:
        return self._reply(timeout_s, self.server.request(method, params))

    def raw(self, body: bytes, timeout_s: float) -> dict[str, Any] | None:
        line = body.replace(b"\n", b" ").replace(b"\r", b" ")
        if not line.strip():
            return {"skipped": True}  # a blank line is no message
        assert self.server.proc.stdin is not None
        self.server.proc.stdin.write(line + b"\n")
        self.server.proc.stdin.flush()
        return self._reply(timeout_s, None)


def _run(query: Callable[[], Awaitable[T]]) -> T:
    """Run a database check on a thread of its own: the suite's session-scoped async fixtures keep
    an event loop open on this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, query).result(timeout=30)


def _count(pg_url: str) -> int:
    async def count() -> int:
        connection = await asyncpg.connect(pg_url)
        try:
            return await connection.fetchval("SELECT count(*) FROM memories")
        finally:
            await connection.close()

    return _run(count)


def _counts(pg_url: str, sessions: list[str]) -> dict[str, int]:
    async def count() -> dict[str, int]:
        connection = await asyncpg.connect(pg_url)
        try:
            rows = await connection.fetch(
                "SELECT session, count(*) AS n FROM memories WHERE session = ANY($1::text[]) GROUP BY session", sessions)
            return {row["session"]: row["n"] for row in rows}
        finally:
            await connection.close()

    return _run(count)


def _text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result.get("content", []))


def _check_one_line(text: str) -> None:
    assert "\n" not in text, text[:500]
    for wording in ("validation error", "pydantic", "For further information", "Input should"):
        assert wording not in text, text[:500]


class Model:
    """What each session holds, from the calls that succeeded: session -> memory_id -> content."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix  # every session of one test run starts with it: runs never share a session
        self.sessions: dict[str, dict[str, str]] = {}

    def session(self, name: Any) -> Any:
        return self.prefix + name if isinstance(name, str) else name

    def check_call(self, transport: Transport, pg_url: str, name: str, arguments: dict[str, Any]) -> None:
        arguments = {**arguments}
        if "session" in arguments:
            arguments["session"] = self.session(arguments["session"])
        session = arguments.get("session")
        big = name == "store_memory" and isinstance(arguments.get("content"), str) and len(arguments["content"]) > 1000
        before = _count(pg_url) if name == "store_memory" else None
        started = time.monotonic()
        reply = transport.request("tools/call", {"name": name, "arguments": arguments}, BIG_REPLY_S if big else REPLY_S)
        assert reply is not None, f"no reply within {BIG_REPLY_S if big else REPLY_S} s to {name} {str(arguments)[:300]}"
        elapsed = time.monotonic() - started
        if "error" in reply:  # a JSON-RPC error: a lone surrogate outside the arguments, or a bad envelope
            assert reply["error"]["code"] in (-32700, -32600, -32602), reply
            _check_one_line(reply["error"]["message"])
            if before is not None:
                assert _count(pg_url) == before
            return
        result = reply["result"]
        text = _text(result)
        if result.get("isError"):
            _check_one_line(text)
            if name in TOOLS:
                assert text.startswith(f"Error executing tool {name}: ") or "unavailable" in text, text[:300]
            if before is not None:
                assert _count(pg_url) == before, f"a rejected store changed the table: {text}"
            return
        assert name in TOOLS, result
        structured = result["structuredContent"]
        if name == "store_memory":
            self.sessions.setdefault(session, {})[structured["memory_id"]] = arguments["content"]
            assert elapsed < (BIG_REPLY_S if big else REPLY_S)
        elif name == "delete_memory":
            if arguments.get("all") is True:
                self.sessions.pop(session, None)
            else:
                self.sessions.get(session, {}).pop(str(uuid.UUID(arguments["memory_id"])), None)
        elif name == "recall_memory":
            own = self.sessions.get(session, {})
            for memory in structured["memories"]:
                assert memory["memory_id"] in own, f"recall in {session!r} returned another session's memory"
                assert memory["content"] == own[memory["memory_id"]], "stored text did not come back byte for byte"

    def check_raw(self, transport: Transport, body: bytes) -> None:
        reply = transport.raw(body, REPLY_S)
        assert reply is not None, f"no reply within {REPLY_S} s to {body[:200]!r}"
        if reply.get("skipped"):
            return
        if "error" in reply:
            _check_one_line(reply["error"]["message"])
        else:  # well-formed after all (a valid id and method): answered by the SDK
            assert "result" in reply, reply


def _drive(transport: Transport, pg_url: str) -> Callable[..., None]:
    model = Model(f"fuzz-{uuid.uuid4().hex[:6]}-")

    @FUZZ
    @given(calls=st.lists(VALID_CALLS | hostile_calls(), min_size=1, max_size=4), malformed=st.lists(MALFORMED, max_size=1))
    def examples(calls: list[tuple[str, dict[str, Any]]], malformed: list[str | bytes]) -> None:
        for name, arguments in calls:
            model.check_call(transport, pg_url, name, arguments)
        for body in malformed:
            model.check_raw(transport, body if isinstance(body, bytes) else body.encode())

    def run() -> None:
        examples()
        stored = {session: len(memories) for session, memories in model.sessions.items() if memories}
        assert stored, "the examples stored nothing: the fuzz test would check no session"
        assert _counts(pg_url, list(model.sessions)) == stored  # no call changed another session

    return run


@pytest.fixture(scope="module")
def spawner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spawner]:
    spawner = Spawner(tmp_path_factory.mktemp("fuzz"))
    try:
        yield spawner
    finally:
        spawner.close()


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
def test_every_request_over_http_gets_a_prompt_one_line_answer_and_keeps_sessions_apart(
    pg_url: str, spawner: Spawner
) -> None:
    port = free_port()
    server = spawner.http(spawner.data_dir("http"), port, MCP_MEMORY_DATABASE_URL=pg_url)
    server.wait_healthy(port)
    transport = HttpTransport(port)

    _drive(transport, pg_url)()

    listed = transport.request("tools/list", {}, REPLY_S)
    assert listed is not None and len(listed["result"]["tools"]) == 5


@pytest.mark.slow  # soak or load: .ci/run runs it (-m slow)
def test_every_request_over_stdio_gets_a_prompt_one_line_answer_and_keeps_sessions_apart(
    pg_url: str, spawner: Spawner
) -> None:
    transport = StdioTransport(spawner.stdio(spawner.data_dir("stdio"), MCP_MEMORY_DATABASE_URL=pg_url))

    _drive(transport, pg_url)()

    listed = transport.request("tools/list", {}, REPLY_S)
    assert listed is not None and len(listed["result"]["tools"]) == 5

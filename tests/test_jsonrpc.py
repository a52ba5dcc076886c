"""Every JSON-RPC request gets an answer, over streamable HTTP and over stdio (real ``mcp-memory serve``).

Issue 11: a request whose ``id`` was an object got HTTP 202 and no reply; over stdio, malformed
lines and such requests got silence. mcp_memory/jsonrpc.py answers them; the SDK answers the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import httpx
import pytest
from processes import ServerProcess, Spawner, free_port, spawn  # noqa: F401 - spawn is a fixture

from mcp_memory.jsonrpc import envelope_error

pytestmark = pytest.mark.anyio

REPLY_TIMEOUT_S = 5.0
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}

# (raw body, expected code, expected id in the reply, expected message start)
MALFORMED = [
    (b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', -32600, None,
     "Invalid Request: id must be a string or an integer; got an object"),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"usage_stats","arguments":{}}}', -32600,
     None, "Invalid Request: id must be a string or an integer; got an object"),
    (b'{"jsonrpc":"2.0","id":[1],"method":"tools/list"}', -32600, None,
     "Invalid Request: id must be a string or an integer; got a list"),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, None,
     "Invalid Request: id must be a string or an integer; got a number with a fraction"),
    (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600, None,
     "Invalid Request: id must be a string or an integer; got a boolean"),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None,
     "Invalid Request: id must be a string or an integer; got null"),
    (b'{"jsonrpc":"2.0","id":7,"method":', -32700, None, "Parse error: "),
    (b'[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]', -32600, None, "Invalid Request: batches are not supported"),
    (b'"tools/list"', -32600, None, "Invalid Request: a message is a JSON object; got a string"),
    (b'{"jsonrpc":"1.0","id":7,"method":"tools/list"}', -32600, 7, 'Invalid Request: jsonrpc must be "2.0"'),
    (b'{"jsonrpc":"2.0","id":"q","method":5}', -32600, "q", "Invalid Request: method must be a string; got an integer"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}', -32600, 7,
     "Invalid Request: params must be an object; got a string"),
    (b'{"jsonrpc":"2.0","id":7}', -32600, 7, "Invalid Request: a message needs a method"),
]
IDS = [body.decode(errors="replace")[:40] for body, *_ in MALFORMED]

# Issue 25, part 4: a lone surrogate ("\\ud83d", half of an emoji a JavaScript client cut) is valid JSON
# that the SDK's parser refuses. (raw body, id in the reply, "tool" for a tool error result or the
# JSON-RPC error code, the reply's text or message)
LONE = "s-lone-surrogate"
LONE_SURROGATES = [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"store_memory","arguments":'
     b'{"session":"' + LONE.encode() + b'","content":"x \\ud83d y"}}}', 7, "tool",
     "Error executing tool store_memory: content: lone surrogate at character 2 (U+D83D, half of a UTF-16 pair); "
     "send whole characters"),
    (b'{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"store_memory","arguments":'
     b'{"session":"' + LONE.encode() + b'","content":"ok \\ud83d\\ude00","metadata":{"note":"\\udc00"}}}}', "m",
     "tool", "Error executing tool store_memory: metadata.note: lone surrogate at character 0 (U+DC00, half of a "
     "UTF-16 pair); send whole characters"),
    (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"recall_memory","arguments":'
     b'{"session":"\\ud800' + LONE.encode() + b'","query":"x"}}}', 9, "tool",
     "Error executing tool recall_memory: session: lone surrogate at character 0 (U+D800, half of a UTF-16 pair); "
     "send whole characters"),
    (b'{"jsonrpc":"2.0","id":"q","method":"tools/list","params":{"cursor":"a\\udfff"}}', "q", -32602,
     "Invalid params: params.cursor: lone surrogate at character 1 (U+DFFF, half of a UTF-16 pair); send whole "
     "characters"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/list","x":"\\ud800"}', 7, -32600,
     "Invalid Request: x: lone surrogate at character 0 (U+D800, half of a UTF-16 pair); send whole characters"),
    (b'{"jsonrpc":"2.0","id":"a\\ud800","method":"tools/list"}', None, -32600,
     "Invalid Request: id: lone surrogate at character 1 (U+D800, half of a UTF-16 pair); send whole characters"),
]
LONE_IDS = ["content", "metadata", "session", "params", "member", "id"]
META_2026 = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _check_refusal(reply: dict[str, Any], request_id: Any, kind: str | int, text: str) -> None:
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, reply
    if kind == "tool":
        assert reply["result"]["isError"] is True, reply
        assert [block["text"] for block in reply["result"]["content"]] == [text]
    else:
        assert reply["error"] == {"code": kind, "message": text}


async def _stored_in(pg_url: str, session: str) -> int:
    connection = await asyncpg.connect(pg_url)
    try:
        if await connection.fetchval("SELECT to_regclass('memories')") is None:  # no server has migrated yet
            return 0
        return await connection.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)
    finally:
        await connection.close()


def test_a_well_formed_request_notification_and_response_pass_the_envelope_check() -> None:
    assert envelope_error(b'{"jsonrpc":"2.0","id":"a","method":"tools/list"}') is None
    assert envelope_error(b'{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{}}') is None
    assert envelope_error(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') is None
    assert envelope_error(b'{"jsonrpc":"2.0","id":1,"result":{}}') is None


# --- streamable HTTP -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_port(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    spawner = Spawner(tmp_path_factory.mktemp("jsonrpc-http"))
    try:
        port = free_port()
        spawner.http(spawner.data_dir(), port, MCP_MEMORY_DATABASE_URL=pg_url).wait_healthy(port)
        yield port
    finally:
        spawner.close()


def _headers(version: str, session_id: str | None = None) -> dict[str, str]:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": version}
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    return headers


def _session(port: int) -> str:
    url = f"http://127.0.0.1:{port}/mcp"
    init = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
                      headers=_headers("2025-11-25"), timeout=REPLY_TIMEOUT_S)
    session_id = init.headers["mcp-session-id"]
    httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers=_headers("2025-11-25", session_id), timeout=REPLY_TIMEOUT_S)
    return session_id


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(("body", "code", "request_id", "message"), MALFORMED, ids=IDS)
def test_a_malformed_message_over_http_gets_400_and_a_json_rpc_error(
    http_port: int, version: str, body: bytes, code: int, request_id: Any, message: str
) -> None:
    session_id = _session(http_port) if version == "2025-11-25" else None

    response = httpx.post(f"http://127.0.0.1:{http_port}/mcp", content=body, headers=_headers(version, session_id),
                          timeout=REPLY_TIMEOUT_S)

    assert response.status_code == 400, response.text
    reply = response.json()
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id
    assert reply["error"]["code"] == code
    assert reply["error"]["message"].startswith(message), reply
    assert "\n" not in reply["error"]["message"]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(("body", "request_id", "kind", "text"), LONE_SURROGATES, ids=LONE_IDS)
async def test_a_lone_surrogate_over_http_is_refused_by_field_with_the_request_id(
    http_port: int, pg_url: str, version: str, body: bytes, request_id: Any, kind: str | int, text: str
) -> None:
    session_id = _session(http_port) if version == "2025-11-25" else None
    headers = _headers(version, session_id)
    if version == "2026-07-28":  # every request carries its envelope, and headers that repeat the body's
        message = json.loads(body)  # Python's parser keeps the lone surrogate, json.dumps escapes it again
        message.setdefault("params", {})["_meta"] = META_2026
        body = json.dumps(message).encode()
        headers["Mcp-Method"] = message["method"]
        if message["method"] == "tools/call":
            headers["Mcp-Name"] = message["params"]["name"]

    response = httpx.post(f"http://127.0.0.1:{http_port}/mcp", content=body, headers=headers, timeout=REPLY_TIMEOUT_S)

    assert response.status_code == (200 if kind == "tool" else 400), response.text
    _check_refusal(response.json(), request_id, kind, text)
    if kind == "tool":
        assert response.json()["result"].get("resultType") == ("complete" if version == "2026-07-28" else None)
    assert await _stored_in(pg_url, LONE) == 0


def test_the_http_server_still_answers_after_malformed_messages(http_port: int) -> None:
    session_id = _session(http_port)
    url = f"http://127.0.0.1:{http_port}/mcp"
    for body, *_ in MALFORMED:
        httpx.post(url, content=body, headers=_headers("2025-11-25", session_id), timeout=REPLY_TIMEOUT_S)

    listed = httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                        headers=_headers("2025-11-25", session_id), timeout=REPLY_TIMEOUT_S)

    assert listed.status_code == 200
    assert len(listed.json()["result"]["tools"]) == 5


# --- stdio -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    spawner = Spawner(tmp_path_factory.mktemp("jsonrpc-stdio"))
    try:
        server = spawner.stdio(spawner.data_dir(), MCP_MEMORY_DATABASE_URL=pg_url)
        server.initialize("2025-11-25")
        yield server
    finally:
        spawner.close()


def _write_line(server: ServerProcess, raw: bytes) -> None:
    assert server.proc.stdin is not None
    server.proc.stdin.write(raw + b"\n")
    server.proc.stdin.flush()


@pytest.mark.parametrize(("body", "code", "request_id", "message"), MALFORMED, ids=IDS)
def test_a_malformed_line_over_stdio_gets_a_json_rpc_error_line(
    stdio_server: ServerProcess, body: bytes, code: int, request_id: Any, message: str
) -> None:
    _write_line(stdio_server, body)

    reply = stdio_server.receive(REPLY_TIMEOUT_S)

    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id
    assert reply["error"]["code"] == code
    assert reply["error"]["message"].startswith(message), reply


@pytest.mark.parametrize(("body", "request_id", "kind", "text"), LONE_SURROGATES, ids=LONE_IDS)
async def test_a_lone_surrogate_over_stdio_is_refused_by_field_with_the_request_id(
    stdio_server: ServerProcess, pg_url: str, body: bytes, request_id: Any, kind: str | int, text: str
) -> None:
    _write_line(stdio_server, body)

    reply = stdio_server.receive(REPLY_TIMEOUT_S)

    _check_refusal(reply, request_id, kind, text)
    assert await _stored_in(pg_url, LONE) == 0


@pytest.mark.parametrize(
    ("params", "method", "check"),
    [
        (None, "no/such/method", lambda r: r["error"]["code"] == -32601),
        ({"name": "forget_everything", "arguments": {}}, "tools/call",
         lambda r: r["result"]["isError"] and "forget_everything" in r["result"]["content"][0]["text"]),
        ({"name": "recall_memory"}, "tools/call",
         lambda r: r["result"]["content"][0]["text"] == "Error executing tool recall_memory: session, query: are required"),
        ({"name": "store_memory", "arguments": {"session": "s", "content": "x", "top_k": 1}}, "tools/call",
         lambda r: "top_k: is not an argument of store_memory" in r["result"]["content"][0]["text"]),
    ],
    ids=["unknown-method", "unknown-tool", "missing-arguments", "unknown-argument"],
)
def test_unknown_methods_tools_and_missing_arguments_are_answered_over_stdio(
    stdio_server: ServerProcess, params: dict[str, Any] | None, method: str, check: Any
) -> None:
    reply = stdio_server.response(stdio_server.request(method, params), REPLY_TIMEOUT_S)

    assert check(reply), json.dumps(reply)[:500]


def test_blank_lines_are_skipped_and_the_next_request_is_answered(stdio_server: ServerProcess) -> None:
    _write_line(stdio_server, b"   ")

    reply = stdio_server.response(stdio_server.request("tools/list"), REPLY_TIMEOUT_S)

    assert len(reply["result"]["tools"]) == 5


def test_a_lone_surrogate_is_answered_only_after_the_http_checks_of_any_request(
    pg_url: str, spawn: Spawner
) -> None:
    """The refusal is an answer like any other: a caller without a token, or with a foreign Host, gets
    what it would get for a well-formed request (401, 421), never the tool's reply."""
    token = "a-token-of-thirty-two-characters"
    entry = json.dumps([{"name": "t", "token": token, "sessions": ["*"]}])
    port = free_port()
    spawn.http(spawn.data_dir(), port, "--stateless", MCP_MEMORY_DATABASE_URL=pg_url,
               MCP_MEMORY_AUTH__TOKENS=entry).wait_healthy(port)
    url = f"http://127.0.0.1:{port}/mcp"
    body, request_id, kind, text = LONE_SURROGATES[0]

    anonymous = httpx.post(url, content=body, headers=_headers("2025-11-25"), timeout=REPLY_TIMEOUT_S)
    foreign = httpx.post(url, content=body, timeout=REPLY_TIMEOUT_S,
                         headers={**_headers("2025-11-25"), "Authorization": f"Bearer {token}", "Host": "evil.example"})
    allowed = httpx.post(url, content=body, headers={**_headers("2025-11-25"), "Authorization": f"Bearer {token}"},
                         timeout=REPLY_TIMEOUT_S)

    assert anonymous.status_code == 401, anonymous.text
    assert foreign.status_code in (403, 421), foreign.text
    assert "lone surrogate" not in anonymous.text + foreign.text
    assert allowed.status_code == 200, allowed.text
    _check_refusal(allowed.json(), request_id, kind, text)


# Issue 26: a recall filter that cannot be read is refused by field, with the request's id, before any search.
BAD_FILTERS = [
    ({"since": "last tuesday"}, "since: not an RFC 3339 time or a date: 'last tuesday'; use e.g. 2024-03-01T09:30:00Z "
     "or 2024-03-01"),
    ({"since": "2024-03-02", "until": "2024-03-01"}, "until: is before since (2024-03-01T23:59:59.999999+00:00 < "
     "2024-03-02T00:00:00+00:00); nothing was searched"),
    ({"metadata": {"k": [1]}}, 'metadata: value of "k" must be a string, number, boolean or null'),
]
FILTER_IDS = ["since", "until", "metadata"]


def _recall_call(request_id: Any, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": "recall_memory", "arguments": {"session": "s-filters", "query": "x", **arguments}}}).encode()


@pytest.mark.parametrize(("arguments", "text"), BAD_FILTERS, ids=FILTER_IDS)
def test_a_bad_recall_filter_over_http_is_refused_by_field_with_the_request_id(
    http_port: int, arguments: dict[str, Any], text: str
) -> None:
    response = httpx.post(f"http://127.0.0.1:{http_port}/mcp", content=_recall_call("f-1", arguments),
                          headers=_headers("2025-11-25", _session(http_port)), timeout=REPLY_TIMEOUT_S)

    assert response.status_code == 200, response.text
    _check_refusal(response.json(), "f-1", "tool", f"Error executing tool recall_memory: {text}")


@pytest.mark.parametrize(("arguments", "text"), BAD_FILTERS, ids=FILTER_IDS)
def test_a_bad_recall_filter_over_stdio_is_refused_by_field_with_the_request_id(
    stdio_server: ServerProcess, arguments: dict[str, Any], text: str
) -> None:
    _write_line(stdio_server, _recall_call(41, arguments))

    _check_refusal(stdio_server.receive(REPLY_TIMEOUT_S), 41, "tool", f"Error executing tool recall_memory: {text}")


@pytest.mark.parametrize("content_type", ["Application/JSON", "APPLICATION/JSON; charset=UTF-8"])
def test_a_media_type_in_capitals_is_read_as_application_json(http_port: int, content_type: str) -> None:
    """Media types are case-insensitive (RFC 9110 section 8.3.1); the SDK compared it exactly and
    answered 415 "Content-Type must be application/json" with id null."""
    headers = {**_headers("2025-11-25", _session(http_port)), "Content-Type": content_type}

    response = httpx.post(f"http://127.0.0.1:{http_port}/mcp", content=_recall_call("ct-1", {"since": "nope"}),
                          headers=headers, timeout=REPLY_TIMEOUT_S)

    assert response.status_code == 200, response.text
    _check_refusal(response.json(), "ct-1", "tool", "Error executing tool recall_memory: since: not an RFC 3339 time "
                   "or a date: 'nope'; use e.g. 2024-03-01T09:30:00Z or 2024-03-01")

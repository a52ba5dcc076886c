"""Every JSON-RPC message that is owed an answer gets one, over streamable HTTP and over stdio.

The SDK validates a message against the union request | notification | response | error. A
request whose ``id`` is not a string or an integer (an object, a list, a fraction, a boolean,
null) fails the request model and then passes as a notification, which ignores unknown keys:
over HTTP it got 202 and silence, over stdio silence. Over stdio, text that is not JSON, or not a
message, was logged at DEBUG and dropped. Over HTTP, a bad envelope got pydantic's multi-line
report. ``envelope_error`` checks the envelope first, with the SDK's own JSON parser (so both agree
on what parses), and returns a one-line JSON-RPC error (JSON-RPC 2.0 section 5.1: -32700 parse
error, -32600 invalid request; ``id`` null when it cannot be read). ``AnswerEveryRequest`` sends it
as HTTP 400; ``answered_lines`` writes it on stdout. Well-formed messages pass through unchanged:
unknown methods, unknown tools and bad tool arguments are answered by the SDK and the tools.

A string holding a lone surrogate (``"x \\ud83d y"``: valid JSON, what a JavaScript client sends when it
cuts an emoji in half) is one the SDK's parser refuses, and it got a parse error with ``id`` null, so
the client waited for its answer until it timed out. Such a message is read again with Python's
parser, which keeps it, and refused by field with its own ``id``: in a tool's arguments as the tool
refuses any bad argument (a tool error result, ``content: lone surrogate at character 2 ...``),
elsewhere as invalid params (-32602) or an invalid request (-32600). Over HTTP that answer is given
only to a request that passes every check a well-formed one would (authentication, Host and Origin,
the MCP session): the SDK answers a ``tools/list`` with the same id and headers first.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import pydantic_core
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_memory.errors import InvalidInput
from mcp_memory.unpaired import Unpaired, first_unpaired, read_keeping_surrogates

__all__ = ["AnswerEveryRequest", "answered_lines", "envelope_error", "forward_replies"]

_MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"  # in params._meta of every 2026-07-28 request
_PROBE = "tools/list"  # the request that stands in for one refused over HTTP, to run the SDK's checks
_KINDS = {bool: "a boolean", int: "an integer", float: "a number with a fraction", str: "a string",
          list: "a list", dict: "an object", type(None): "null"}


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _refusal(message: dict[str, Any], unpaired: Unpaired) -> JSONRPCError | JSONRPCResponse:
    """The answer to an otherwise well-formed ``message`` holding a lone surrogate, naming the field."""
    request_id = message.get("id") if "method" in message else None  # a response or notification is owed nothing
    tool = (message.get("params") or {}).get("name")
    in_arguments = unpaired.path[:2] == ("params", "arguments") and len(unpaired.path) > 2
    if message.get("method") == "tools/call" and request_id is not None and in_arguments \
            and isinstance(tool, str) and first_unpaired(tool) is None:
        invalid = InvalidInput(unpaired.where(skip=2), unpaired.problem())  # as the tool says it (arguments.py)
        result: dict[str, Any] = {"content": [{"type": "text", "text": f"Error executing tool {tool}: {invalid}"}],
                                  "isError": True}
        meta = message["params"].get("_meta")
        if isinstance(meta, dict) and _MODERN_VERSION_KEY in meta:  # 2026-07-28 requires the result's type
            result["resultType"] = "complete"
        return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    if unpaired.path[0] == "params":
        return _error(request_id, INVALID_PARAMS, f"Invalid params: {unpaired.where()}: {unpaired.problem()}")
    return _error(request_id, INVALID_REQUEST, f"Invalid Request: {unpaired.where()}: {unpaired.problem()}")


def envelope_error(body: bytes | str) -> JSONRPCError | JSONRPCResponse | None:
    """The answer owed to ``body`` when it is not one well-formed message the SDK can read, else None.

    Checks, in order: parses as JSON (the SDK's parser: numbers out of range and nesting deeper than
    its limit are parse errors there too; a lone surrogate is refused by field at the end); one
    object, not a batch; an ``id``, when present, is a string or an integer; ``jsonrpc`` is "2.0";
    a request or notification has a string ``method`` and, if any, object ``params``; anything
    else is a response with ``result`` or ``error``. The error echoes the ``id`` when it is valid,
    else null. A lone surrogate in a tool's arguments gets a tool error result (a response).
    """
    answer = _answer(body)
    return None if answer is None else answer[0]


def _answer(body: bytes | str) -> tuple[JSONRPCError | JSONRPCResponse, bool] | None:
    """``envelope_error``, and whether the answer is owed to a request that must first pass the
    transport's own checks (a lone surrogate in a message otherwise well formed)."""
    unpaired = None
    try:
        decoded = pydantic_core.from_json(body)
    except ValueError as exc:
        kept = read_keeping_surrogates(body)
        if kept is None:
            return _error(None, PARSE_ERROR, f"Parse error: {exc}"), False
        decoded, unpaired = kept
    error = _envelope(decoded)
    if error is not None:
        return error, False
    if unpaired is None:
        return None
    refusal = _refusal(decoded, unpaired)
    return refusal, refusal.id is not None


def _envelope(decoded: Any) -> JSONRPCError | None:
    """The error owed to a decoded message whose envelope is bad, else None."""
    if isinstance(decoded, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one message at a time")
    if not isinstance(decoded, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: a message is a JSON object; got {_kind(decoded)}")
    request_id = decoded.get("id")
    if "id" in decoded and not _valid_id(request_id):
        return _error(None, INVALID_REQUEST, f"Invalid Request: id must be a string or an integer; got {_kind(request_id)}")
    if isinstance(request_id, str) and (unpaired := first_unpaired(request_id, ("id",))):  # cannot be echoed
        return _error(None, INVALID_REQUEST, f"Invalid Request: id: {unpaired.problem()}")
    if decoded.get("jsonrpc") != "2.0":
        return _error(request_id, INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
    if "method" in decoded:
        if not isinstance(decoded["method"], str):
            return _error(request_id, INVALID_REQUEST, f"Invalid Request: method must be a string; got {_kind(decoded['method'])}")
        if "params" in decoded and not isinstance(decoded["params"], dict):
            return _error(request_id, INVALID_REQUEST, f"Invalid Request: params must be an object; got {_kind(decoded['params'])}")
    elif "result" not in decoded and "error" not in decoded:
        return _error(request_id, INVALID_REQUEST, "Invalid Request: a message needs a method (request or "
                      "notification) or a result or error (response)")
    return None


def _kind(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return "a number"
    return _KINDS.get(type(value), "another kind of value")


class AnswerEveryRequest:
    """ASGI middleware: a POST to the MCP path whose JSON body is not one well-formed message gets
    HTTP 400 with the JSON-RPC error, before the SDK could answer it 202 with no reply.

    The body is read within the SDK's own limit (``RequestBodyLimitMiddleware``, 413 beyond it) and
    replayed to the app unchanged. Other paths, methods and content types pass through untouched.
    A request refused for a lone surrogate is answered only once the SDK has answered a stand-in
    request with its id and headers (``_after_checks``). With authentication on, the app runs it inside
    the SDK's authentication middleware, and a request without a known token passes straight through
    to the SDK's 401: the token is checked before the body.
    """

    def __init__(self, app: ASGIApp, path: str = "/mcp", max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.path = path
        self._limited = RequestBodyLimitMiddleware(self._check, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("user") is not None and not scope["user"].is_authenticated:
            await self.app(scope, receive, send)  # auth is on and the token unknown: the SDK answers 401 first
            return
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in (self.path, self.path + "/"):
            content_type = dict(scope["headers"]).get(b"content-type", b"").split(b";")[0].strip().lower()
            if content_type == b"application/json":
                await self._limited(_lower_media_type(scope), receive, send)
                return
        await self.app(scope, receive, send)

    async def _check(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        answer = _answer(body)
        if answer is None:
            await self.app(scope, _replay(body, receive), send)
            return
        reply, after_checks = answer
        payload = reply.model_dump_json(by_alias=True, exclude_unset=True).encode()
        status = 200 if isinstance(reply, JSONRPCResponse) else 400
        if after_checks:
            await self._after_checks(scope, receive, send, json.loads(body), status, payload)
            return
        await send({"type": "http.response.start", "status": status, "headers": _json_headers([], payload)})
        await send({"type": "http.response.body", "body": payload})

    async def _after_checks(self, scope: Scope, receive: Receive, send: Send, request: dict[str, Any], status: int,
                            payload: bytes) -> None:
        """Send ``payload`` if the SDK answers 200 to a ``tools/list`` standing in for ``request``, keeping
        the SDK's headers (the MCP session's id); else send the SDK's own answer (401, 403, 404, ...) unchanged.

        The stand-in has the request's id, headers and ``params._meta`` (protocol 2026-07-28 checks them on
        every request), and an ``Mcp-Method`` header that named the request's method names ``tools/list``.
        ``tools/list``, not ``ping``: every protocol version has it (2026-07-28 has no ping), and it reads nothing.
        """
        probe: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "method": _PROBE}
        meta = (request.get("params") or {}).get("_meta")
        if isinstance(meta, dict) and first_unpaired(meta) is None:  # else the SDK's own answer: _meta is missing
            probe["params"] = {"_meta": meta}
        method = request["method"].encode("utf-8", "backslashreplace")
        headers = [(name, _PROBE.encode() if name.lower() == b"mcp-method" and value == method else value)
                   for name, value in scope["headers"] if name.lower() != b"mcp-name"]
        replaced = False

        async def answer(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 200:
                replaced = True
                await send({**message, "status": status, "headers": _json_headers(message.get("headers", []), payload)})
                await send({"type": "http.response.body", "body": payload})
            elif not replaced:
                await send(message)

        body = json.dumps(probe).encode()
        await self.app({**scope, "headers": headers}, _replay(body, receive), answer)


def _lower_media_type(scope: Scope) -> Scope:
    """``scope`` with its Content-Type's media type in lower case (``Application/JSON; charset=UTF-8`` ->
    ``application/json; charset=UTF-8``): media types are case-insensitive (RFC 9110 section 8.3.1), and
    the SDK compares the header exactly (415 with id null)."""
    headers = []
    for name, value in scope["headers"]:
        if name.lower() == b"content-type":
            media_type, semicolon, parameters = value.partition(b";")
            value = media_type.strip().lower() + semicolon + parameters
        headers.append((name, value))
    return {**scope, "headers": headers}


def _json_headers(headers: list[tuple[bytes, bytes]], payload: bytes) -> list[tuple[bytes, bytes]]:
    """``headers`` without their content type and length, then those of the JSON ``payload``."""
    kept = [(name, value) for name, value in headers if name.lower() not in (b"content-type", b"content-length")]
    return [*kept, (b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive channel that yields ``body`` whole once, then what ``receive`` yields (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def answered_lines(lines: AsyncIterable[str], replies: ObjectSendStream[SessionMessage]) -> AsyncIterator[str]:
    """The stdio lines that are well-formed messages; for every other non-blank line, its error on ``replies``.

    Blank lines are skipped (some clients send them between messages). ``replies`` is closed when
    ``lines`` ends.
    """
    async with replies:
        async for line in lines:
            if not line.strip():
                continue
            error = envelope_error(line)
            if error is None:
                yield line
            else:
                await replies.send(SessionMessage(error))


async def forward_replies(replies: ObjectReceiveStream[SessionMessage], write: ObjectSendStream[SessionMessage]) -> None:
    """Write each error from ``answered_lines`` to the transport until the lines end or the transport closes."""
    async with replies:
        async for reply in replies:
            try:
                await write.send(reply)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

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
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import pydantic_core
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["AnswerEveryRequest", "answered_lines", "envelope_error", "forward_replies"]

_KINDS = {bool: "a boolean", int: "an integer", float: "a number with a fraction", str: "a string",
          list: "a list", dict: "an object", type(None): "null"}


def _error(request_id: str | int | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def envelope_error(body: bytes | str) -> JSONRPCError | None:
    """The JSON-RPC error owed to ``body`` when it is not one well-formed message, else None.

    Checks, in order: parses as JSON (the SDK's parser: lone surrogates, numbers out of range and
    nesting deeper than its limit are parse errors there too); one object, not a batch; an ``id``,
    when present, is a string or an integer; ``jsonrpc`` is "2.0"; a request or notification has a
    string ``method`` and, if any, object ``params``; anything else is a response with ``result``
    or ``error``. The error echoes the ``id`` when it is valid, else null.
    """
    try:
        decoded = pydantic_core.from_json(body)
    except ValueError as exc:
        return _error(None, PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(decoded, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one message at a time")
    if not isinstance(decoded, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: a message is a JSON object; got {_kind(decoded)}")
    request_id = decoded.get("id")
    if "id" in decoded and not _valid_id(request_id):
        return _error(None, INVALID_REQUEST, f"Invalid Request: id must be a string or an integer; got {_kind(request_id)}")
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
    """

    def __init__(self, app: ASGIApp, path: str = "/mcp", max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.path = path
        self._limited = RequestBodyLimitMiddleware(self._check, max_body_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in (self.path, self.path + "/"):
            content_type = dict(scope["headers"]).get(b"content-type", b"").split(b";")[0].strip().lower()
            if content_type == b"application/json":
                await self._limited(scope, receive, send)
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
        error = envelope_error(body)
        if error is not None:
            payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


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

"""The page's JSON API under ``/api/``: read-only views of the sessions a caller may see.

Every route is a GET and changes nothing: no memory, audit row or usage total is written (a search
runs the recall pipeline with ``trace``, which writes no audit row, and with no LLM, so nothing is
planned, answered or counted). With ``[auth]`` configured each request needs a bearer token the
MCP endpoint would accept (the same verifier, the same 401 from the SDK), and the token's session
patterns decide what it sees: sessions outside them are never listed, and naming one gets 403 with
one line and none of its data. Each request counts against the token's rate limit, as a tool call does.

Routes (parameters in the query string; errors are ``{"error": "<field>: <problem>"}``):
    /api/sessions?after=&limit=           sessions with their memory counts, by name
    /api/memories?session=&cursor=&limit= a session's memories, newest first; ``next`` is the cursor
    /api/search?session=&q=&top_k=        recall's ranking: score and the lists that found each memory
    /api/audits?session=&before=&limit=   a session's audit rows, newest first (without the lists)
    /api/audit?session=&id=               one audit row in full, with the memories it names
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response

from mcp_memory.deps import Deps, Ready
from mcp_memory.errors import Forbidden, InvalidInput, McpMemoryError, NotFound, ProviderError, RateLimited
from mcp_memory.access.gate import Gate
from mcp_memory.http.auth import sdk_auth
from mcp_memory.http.page import ReadOnly
from mcp_memory.llm.client import LlmClient
from mcp_memory.pipeline.recall import trace
from mcp_memory.pipeline.validate import check_session, check_text
from mcp_memory.settings import LlmSettings, Settings

__all__ = ["PageApi"]

logger = logging.getLogger(__name__)

MAX_CURSOR_CHARS = 256
PREVIEW_CHARS = 400  # of each memory an audit names
_STATUS = ((InvalidInput, 400), (Forbidden, 403), (NotFound, 404), (RateLimited, 429), (ProviderError, 503))


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _param(request: Request, field: str, max_chars: int | None) -> str | None:
    """The query parameter ``field`` (None when absent), checked as the tools check text.

    Raises:
        InvalidInput: longer than ``max_chars`` (None: the caller checks the length), or holding a NUL
            (PostgreSQL text cannot hold it) or a lone surrogate (not text); the message names ``field``
            and never echoes the value.
    """
    text = request.query_params.get(field)
    if text is None:
        return None
    if max_chars is not None and len(text) > max_chars:
        raise InvalidInput(field, f"is {len(text)} characters; the limit is {max_chars} characters")
    if "\x00" in text:
        raise InvalidInput(field, "contains a NUL character (U+0000), which cannot be stored; remove it")
    at = next((i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"), None)
    if at is not None:
        raise InvalidInput(field, f"lone surrogate (U+{ord(text[at]):04X}) at character {at}; send UTF-8 text")
    return text


def _whole(request: Request, field: str, low: int, high: int, default: int | None) -> int | None:
    """The query parameter ``field`` as a whole number in low..high (``default`` when absent)."""
    text = request.query_params.get(field)
    if text is None or text == "":
        return default
    if len(text) > 20 or not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise InvalidInput(field, f"must be a whole number from {low} to {high}")
    return int(text)


def _cursor(key: tuple[datetime, datetime, str]) -> str:
    raw = json.dumps([key[0].isoformat(), key[1].isoformat(), key[2]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _key(cursor: str) -> tuple[datetime, datetime, uuid.UUID]:
    """The memory key a cursor of ``_cursor`` holds.

    Raises:
        InvalidInput: longer than MAX_CURSOR_CHARS or not a cursor this API gave out.
    """
    problem = f"is not a cursor this page gave out (use the previous page's `next`; at most {MAX_CURSOR_CHARS} characters)"
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidInput("cursor", problem)
    try:
        occurred, created, memory_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not all(isinstance(part, str) for part in (occurred, created, memory_id)):
            raise TypeError("a cursor holds three strings")
        times = datetime.fromisoformat(occurred), datetime.fromisoformat(created)
        if times[0].tzinfo is None or times[1].tzinfo is None:
            raise ValueError("a cursor's times carry their offset")
        # in UTC, as the database compares them: a time that leaves datetime's range there is refused here
        return times[0].astimezone(UTC), times[1].astimezone(UTC), uuid.UUID(memory_id)
    except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput("cursor", problem) from None


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _memory(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "occurred_at": row["occurred_at"].isoformat(), "created_at": row["created_at"].isoformat()}


def _audit(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "created_at": row["created_at"].isoformat()}


class PageApi:
    """The ``/api/`` routes over started ``deps``, checked by ``gate`` (shared with the MCP tools)."""

    def __init__(self, settings: Settings, deps: Deps, gate: Gate) -> None:
        self.settings = settings
        self.deps = deps
        self.gate = gate
        self._quiet: Ready | None = None  # deps' resources with no LLM: searches plan, answer and count nothing

    def routes(self) -> list[Route]:
        """Each route: GET and HEAD only (``ReadOnly``), then the SDK's 401/403 when auth is configured
        (Host and Origin checks and the security headers are the app's ``Guard``)."""
        views: dict[str, Callable[[Request], Awaitable[dict[str, Any]]]] = {
            "/api/sessions": self.sessions, "/api/memories": self.memories, "/api/search": self.search,
            "/api/audits": self.audits, "/api/audit": self.audit,
        }
        sdk = sdk_auth(self.settings.auth)  # what /mcp is wrapped with: the same scopes and 401 challenge
        routes = []
        for path, view in views.items():
            app = request_response(self._answer(view))
            if sdk is not None:
                metadata = build_resource_metadata_url(sdk.resource_server_url) if sdk.resource_server_url else None
                app = RequireAuthMiddleware(app, sdk.required_scopes or [], metadata)
            routes.append(Route(path, ReadOnly(app)))  # every method: ReadOnly answers 405 itself
        return routes

    def _answer(self, view: Callable[[Request], Awaitable[dict[str, Any]]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(await view(request))
            except McpMemoryError as exc:
                status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 500)
                retry = {"retry-after": str(exc.retry_after_s)} if isinstance(exc, RateLimited) else None
                return _error(status, str(exc).splitlines()[0], retry)
        return endpoint

    def _session(self, request: Request) -> str:
        """The ``session`` parameter, checked (length, characters) and admitted by the gate."""
        session = _param(request, "session", self.settings.limits.max_session_chars)  # before the gate
        if session is None:
            raise InvalidInput("session", "is required")
        check_session(session, self.settings.limits)
        self.gate.admit(session)
        return session

    async def sessions(self, request: Request) -> dict[str, Any]:
        limit = _whole(request, "limit", 1, 500, 100)
        after = _param(request, "after", self.settings.limits.max_session_chars) or ""
        caller = self.gate.admit(None)
        ready = await self.deps.ready()
        rows = await ready.repository.sessions(caller.scope, after, limit + 1)
        return {"sessions": [{"session": name, "memories": n} for name, n in rows[:limit]],
                "next": rows[limit - 1][0] if len(rows) > limit else None}

    async def memories(self, request: Request) -> dict[str, Any]:
        limit = _whole(request, "limit", 1, 200, 50)
        cursor = _param(request, "cursor", None) or None  # _key checks its length
        after = _key(cursor) if cursor else None
        session = self._session(request)
        ready = await self.deps.ready()
        rows = await ready.repository.memory_page(session, after, limit + 1)  # type: ignore[arg-type]
        last = rows[limit - 1] if len(rows) > limit else None
        return {"session": session, "memories": [_memory(row) for row in rows[:limit]],
                "next": _cursor((last["occurred_at"], last["created_at"], last["memory_id"])) if last else None}

    async def search(self, request: Request) -> dict[str, Any]:
        limits = self.settings.limits
        query = _param(request, "q", limits.max_query_chars)
        if query is None:
            raise InvalidInput("q", "is required")
        check_text("q", query, limits.max_query_chars)
        top_k = _whole(request, "top_k", 1, limits.max_top_k, limits.default_top_k)
        session = self._session(request)
        result, detail = await trace(await self._ready_without_llm(), session, query, top_k)
        lists: dict[str, list[str]] = detail["candidates"]
        ranks = {name: {memory_id: rank for rank, memory_id in enumerate(ids, 1)} for name, ids in lists.items()}
        found = [
            {**memory.model_dump(mode="json"),
             "found_by": [{"list": name, "rank": at[memory.memory_id]} for name, at in ranks.items()
                          if memory.memory_id in at]}
            for memory in result.memories
        ]
        return {"session": session, "query": query, "top_k": top_k, "memories": found,
                "lists": {name: len(ids) for name, ids in lists.items()}, "queries": detail["queries"],
                "latency_ms": detail["latency_ms"], "audited": False}

    async def audits(self, request: Request) -> dict[str, Any]:
        limit = _whole(request, "limit", 1, 100, 20)
        before = _whole(request, "before", 1, 2**63 - 1, None)
        session = self._session(request)
        ready = await self.deps.ready()
        rows = await ready.repository.audit_page(session, before, limit + 1)
        return {"session": session, "audits": [_audit(row) for row in rows[:limit]],
                "next": rows[limit - 1]["audit_id"] if len(rows) > limit else None}

    async def audit(self, request: Request) -> dict[str, Any]:
        audit_id = _whole(request, "id", 1, 2**63 - 1, None)
        if audit_id is None:
            raise InvalidInput("id", "is required")
        session = self._session(request)
        ready = await self.deps.ready()
        row = await ready.repository.audit(session, audit_id)
        if row is None:
            raise NotFound(f"id: this session has no audit row {audit_id}")
        detail = row["detail"]
        named = [*detail.get("selected", []), *(item.get("memory_id") for item in detail.get("fused", []))]
        for ids in (detail.get("candidates") or {}).values():
            named += ids
        unique = [i for i in dict.fromkeys(named) if isinstance(i, str) and _is_uuid(i)][:2000]
        found = await ready.repository.fetch(session, unique) if unique else {}
        memories = {i: {"content": c.content[:PREVIEW_CHARS], "occurred_at": c.occurred_at.isoformat(),
                        "superseded_by": c.superseded_by} for i, c in found.items()}
        return {"session": session, "audit": _audit(row), "memories": memories}

    async def _ready_without_llm(self) -> Ready:
        if self._quiet is None:
            ready = await self.deps.ready()
            self._quiet = dataclasses.replace(ready, llm=LlmClient(LlmSettings(), ready.repository))
        return self._quiet

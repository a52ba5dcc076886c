"""Read-only queries of the page (``mcp_memory.http.api``): sessions, a session's memories in pages,
its audit rows.

Mixed into ``Repository``, which provides ``_run`` (a pooled connection, one retry after a dropped
connection). Paging is by key (the last row's sort key), never OFFSET, so page 2,000 of a session
costs what page 1 costs: memories by the storage-order index of migration 009 read backwards
(``memories_session_time_order``), audits by their primary key (session, audit_id), read backwards.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import asyncpg

from mcp_memory.access.scope import SessionScope
from mcp_memory.db.scopes import in_scope, scope_args

__all__ = ["BrowseQueries", "MemoryKey"]

MemoryKey = tuple[datetime, datetime, str]
"""A memory's place in a session, newest first: (occurred_at, created_at, memory_id)."""

_MEMORY = (
    "SELECT m.memory_id::text AS memory_id, m.content, m.occurred_at, m.created_at, m.metadata::text AS metadata,"
    " m.importance, s.superseded_by::text AS superseded_by"
    " FROM memories m LEFT JOIN memory_supersessions s ON s.session = m.session AND s.memory_id = m.memory_id"
    " WHERE m.session = $1"
)
_NEWEST_FIRST = " ORDER BY m.occurred_at DESC, m.created_at DESC, m.memory_id DESC"
# The row comparison is one index condition on (session, occurred_at, created_at, memory_id).
_FIRST_PAGE = f"{_MEMORY}{_NEWEST_FIRST} LIMIT $2"
_NEXT_PAGE = f"{_MEMORY} AND (m.occurred_at, m.created_at, m.memory_id) < ($2, $3, $4::uuid){_NEWEST_FIRST} LIMIT $5"
# What an audit list shows of a row: everything but the candidate lists and the rankings.
_AUDIT_SUMMARY = "detail - 'candidates' - 'fused' - 'supersession' - 'omitted_memory_ids' - 'dropped_citations'"


def _memory(row: asyncpg.Record) -> dict[str, Any]:
    return {**dict(row), "metadata": json.loads(row["metadata"])}


class BrowseQueries:
    """Sessions, memories and audits, as the page lists them."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def sessions(self, scope: SessionScope, after: str, limit: int) -> list[tuple[str, int]]:
        """Sessions of ``scope`` that hold memories, named after ``after`` (``''``: from the first), in
        name order, with their memory counts (kept exact in ``memory_stats``, whose row stays at 0
        once every memory was deleted: such a session is not listed)."""
        rows = await self._run(
            lambda c: c.fetch(
                f"SELECT session, n FROM memory_stats WHERE {in_scope()} AND session > $4 AND n > 0"
                " ORDER BY session LIMIT $5",
                *scope_args(scope), after, limit,
            )
        )
        return [(row["session"], int(row["n"])) for row in rows]

    async def memory_page(self, session: str, after: MemoryKey | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` memories of ``session``, newest first (occurred_at, then storage order),
        from the one after ``after`` (None: the newest). Each row: memory_id, content, occurred_at,
        created_at, metadata, importance, superseded_by."""
        if after is None:
            rows = await self._run(lambda c: c.fetch(_FIRST_PAGE, session, limit))
        else:
            rows = await self._run(lambda c: c.fetch(_NEXT_PAGE, session, *after, limit))
        return [_memory(row) for row in rows]

    async def audit_page(self, session: str, before: int | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` audit rows of ``session`` older than audit_id ``before`` (None: the newest),
        newest first, each without its candidate lists and rankings (``audit`` has them)."""
        sql = (f"SELECT audit_id, kind, created_at, ({_AUDIT_SUMMARY})::text AS detail FROM audits"
               " WHERE session = $1 AND audit_id < $2 ORDER BY audit_id DESC LIMIT $3")
        rows = await self._run(lambda c: c.fetch(sql, session, 2**63 - 1 if before is None else before, limit))
        return [{**dict(row), "detail": json.loads(row["detail"])} for row in rows]

    async def audit(self, session: str, audit_id: int) -> dict[str, Any] | None:
        """One audit row of ``session`` in full, or None when the session has no such row."""
        row = await self._run(
            lambda c: c.fetchrow(
                "SELECT audit_id, kind, created_at, detail::text AS detail FROM audits WHERE session = $1 AND audit_id = $2",
                session, audit_id,
            )
        )
        return None if row is None else {**dict(row), "detail": json.loads(row["detail"])}

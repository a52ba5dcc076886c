"""Recall's chronological queries over one session: the recent list, the time window, neighbours.

Memories that share one ``occurred_at`` (a date per conversation) keep their storage order
(``created_at``, then memory_id) in all three. Mixed into ``Repository``, which provides ``_run``
(a pooled connection, one retry after a dropped connection). Every statement filters on the
session and binds every value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from mcp_memory.db.filters import condition
from mcp_memory.models import RecallFilter

__all__ = ["ChronologyQueries"]


class ChronologyQueries:
    """The time-ordered lists and neighbours recall uses, each of memory_ids."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def recent(self, session: str, limit: int, filters: RecallFilter | None = None) -> list[str]:
        """Ids of the ``limit`` latest memories that pass ``filters`` by occurred_at, latest first;
        memories of one time by storage order (the last stored first), then memory_id."""
        where = condition(filters, "memories", 3)
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id FROM memories WHERE session = $1" + where.sql
                + " ORDER BY occurred_at DESC, created_at DESC, memory_id DESC LIMIT $2",
                session,
                limit,
                *where.values,
            )
        )
        return [str(row["memory_id"]) for row in rows]

    async def in_window(
        self, session: str, start: datetime, end: datetime, limit: int, filters: RecallFilter | None = None
    ) -> list[str]:
        """Ids of memories that pass ``filters`` and whose occurred_at lies in [start, end], earliest
        first; memories of one time in storage order, then by memory_id."""
        where = condition(filters, "memories", 5)
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id FROM memories WHERE session = $1 AND occurred_at BETWEEN $2 AND $3" + where.sql
                + " ORDER BY occurred_at, created_at, memory_id LIMIT $4",
                session,
                start,
                end,
                limit,
                *where.values,
            )
        )
        return [str(row["memory_id"]) for row in rows]

    async def neighbours(
        self, session: str, memory_ids: list[str], span: int, max_gap_s: float, filters: RecallFilter | None = None
    ) -> dict[str, list[str]]:
        """For each id, up to ``span`` memories just before and after it in (occurred_at, storage
        order, memory_id) order, no more than ``max_gap_s`` seconds away, among the memories that
        pass ``filters``.

        Storage order (``created_at``, the start of the inserting transaction; one per
        store_memory) keeps a conversation's order among memories that share one occurred_at (a
        date per conversation). Rows inserted in one transaction share created_at and fall back
        to memory_id.
        """
        if not memory_ids or span <= 0:
            return {}
        gap = timedelta(seconds=max_gap_s)
        where = condition(filters, "memories", 5)
        sql = (
            f"SELECT a.memory_id AS anchor, n.memory_id AS neighbour FROM memories a"
            f" CROSS JOIN LATERAL ("
            f"  (SELECT memory_id FROM memories WHERE session = $1 AND (occurred_at, created_at, memory_id)"
            f"   < (a.occurred_at, a.created_at, a.memory_id) AND occurred_at >= a.occurred_at - $4::interval"
            f"{where.sql}   ORDER BY occurred_at DESC, created_at DESC, memory_id DESC LIMIT $3)"
            f"  UNION ALL"
            f"  (SELECT memory_id FROM memories WHERE session = $1 AND (occurred_at, created_at, memory_id)"
            f"   > (a.occurred_at, a.created_at, a.memory_id) AND occurred_at <= a.occurred_at + $4::interval"
            f"{where.sql}   ORDER BY occurred_at, created_at, memory_id LIMIT $3)) n"
            f" WHERE a.session = $1 AND a.memory_id = ANY($2::uuid[])"
        )
        rows = await self._run(
            lambda c: c.fetch(
                sql,
                session,
                memory_ids,
                span,
                gap,
                *where.values,
            )
        )
        found: dict[str, list[str]] = {}
        for row in rows:
            found.setdefault(str(row["anchor"]), []).append(str(row["neighbour"]))
        return found

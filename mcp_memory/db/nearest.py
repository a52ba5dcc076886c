"""Recall's vector lists: the nearest memories of one session by cosine distance, exact or by HNSW,
inside a recall filter when there is one.

Mixed into ``Repository``, which provides ``_run`` (a pooled connection, one retry after a
dropped connection). Every statement filters on the session and binds every value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import numpy as np

from mcp_memory.db.filters import condition
from mcp_memory.models import RecallFilter

__all__ = ["NearestQueries"]

# The nearest window-0 vectors (memories) and the nearest later windows (memory_chunks), each
# ``$3`` deep; the caller keeps each memory's best. OFFSET 0 keeps the planner from ordering by
# the HNSW index, so the exact form always computes every distance in the session.
_EXACT_NEAREST = (
    "(SELECT memory_id, distance FROM (SELECT memory_id, embedding <=> $2 AS distance FROM memories"
    "  WHERE session = $1 OFFSET 0) m ORDER BY distance, memory_id LIMIT $3)"
    " UNION ALL "
    "(SELECT memory_id, min(embedding <=> $2) AS distance FROM memory_chunks"
    "  WHERE session = $1 GROUP BY memory_id ORDER BY distance, memory_id LIMIT $3)"
)
_INDEXED_NEAREST = (
    "(SELECT memory_id, embedding <=> $2 AS distance FROM memories"
    "  WHERE session = $1 ORDER BY embedding <=> $2 LIMIT $3)"
    " UNION ALL "
    "(SELECT memory_id, embedding <=> $2 AS distance FROM memory_chunks"
    "  WHERE session = $1 ORDER BY embedding <=> $2 LIMIT $3)"
)
# The same with a recall filter ({where}: `` AND m...`` on the memory, parameters from $4); a later
# window counts when its memory passes.
_EXACT_NEAREST_FILTERED = (
    "(SELECT memory_id, distance FROM (SELECT m.memory_id, m.embedding <=> $2 AS distance FROM memories m"
    "  WHERE m.session = $1{where} OFFSET 0) x ORDER BY distance, memory_id LIMIT $3)"
    " UNION ALL "
    "(SELECT c.memory_id, min(c.embedding <=> $2) AS distance FROM memory_chunks c"
    "  JOIN memories m ON m.session = c.session AND m.memory_id = c.memory_id"
    "  WHERE c.session = $1{where} GROUP BY c.memory_id ORDER BY distance, c.memory_id LIMIT $3)"
)
_INDEXED_NEAREST_FILTERED = (
    "(SELECT m.memory_id, m.embedding <=> $2 AS distance FROM memories m"
    "  WHERE m.session = $1{where} ORDER BY m.embedding <=> $2 LIMIT $3)"
    " UNION ALL "
    "(SELECT c.memory_id, c.embedding <=> $2 AS distance FROM memory_chunks c"
    "  JOIN memories m ON m.session = c.session AND m.memory_id = c.memory_id"
    "  WHERE c.session = $1{where} ORDER BY c.embedding <=> $2 LIMIT $3)"
)
# How many memories of session $1 pass the filter, counted up to $2 (the exact scan's limit), and the session's size.
_PASSING = (
    "SELECT (SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.session = $1{where} LIMIT $2) x) AS passing,"
    " (SELECT n FROM memory_stats WHERE session = $1) AS memories"
)
# pgvector's default hnsw.max_scan_tuples: what an unfiltered scan of a large session relies on.
_SCAN_TUPLES = 20_000
_MAX_SCAN_TUPLES = 2_000_000


class NearestQueries:
    """The vector lists recall fuses, each a list of (memory_id, distance), nearest first."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def vector_search(
        self,
        session: str,
        vectors: list[np.ndarray],
        limit: int,
        ef_search: int,
        exact: bool,
        filters: RecallFilter | None = None,
        exact_max: int = 0,
    ) -> list[list[tuple[str, float]]]:
        """Per query vector, the ``limit`` nearest memories of ``session`` that pass ``filters``, as
        (memory_id, distance).

        Distance is pgvector's cosine distance ``<=>`` (0 same direction, 2 opposite). A long
        memory counts through its nearest window.

        ``exact``: every memory's distance, read through the session's btree, so recall is 1.0 and
        the cost follows the session's size, not the database's (about 1 ms per 1,000 memories
        here; see benchmarks/RESULTS.md). Otherwise HNSW with pgvector 0.8 iterative scans (strict
        order) at ``ef_search``, planned for this session's own size; those settings are ``SET
        LOCAL`` and end with the transaction.

        With a filter the scan stays inside it: when at most ``exact_max`` memories pass, their
        distances are all computed (exact, whatever the session's size; counting them reads at most
        ``exact_max + 1`` rows); otherwise HNSW keeps scanning (relaxed order, re-sorted here) until
        ``limit`` pass, visiting at most ``max_scan_tuples`` = 20,000 (pgvector's default, what an
        unfiltered scan relies on) times session size / memories counted (an upper bound of how much
        the filter thins the session), at most 2,000,000, with ``work_mem`` scaled alike
        (``scan_mem_multiplier``, at most 16).
        """
        where = condition(filters, "m", 4)

        async def nearest(connection: asyncpg.Connection, sql: str, vector: np.ndarray) -> list[tuple[str, float]]:
            best: dict[str, float] = {}
            for row in await connection.fetch(sql, session, vector, limit, *where.values):
                key = str(row["memory_id"])
                best[key] = min(best.get(key, 2.0), float(row["distance"]))
            return sorted(best.items(), key=lambda item: (item[1], item[0]))[:limit]

        async def work(connection: asyncpg.Connection) -> list[list[tuple[str, float]]]:
            if exact:
                return [await nearest(connection, _EXACT_NEAREST, vector) for vector in vectors]
            async with connection.transaction():
                await connection.execute(  # one round trip for all three settings
                    "SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL plan_cache_mode = force_custom_plan;"
                    f" SET LOCAL hnsw.ef_search = {int(ef_search)}"
                )
                return [await nearest(connection, _INDEXED_NEAREST, vector) for vector in vectors]

        async def filtered(connection: asyncpg.Connection) -> list[list[tuple[str, float]]]:
            exact_sql = _EXACT_NEAREST_FILTERED.format(where=where.sql)
            if exact:
                return [await nearest(connection, exact_sql, vector) for vector in vectors]
            async with connection.transaction():
                counted = await connection.fetchrow(
                    _PASSING.format(where=condition(filters, "m", 3).sql), session, exact_max + 1, *where.values
                )
                passing, memories = int(counted["passing"]), int(counted["memories"] or 0)
                if passing <= exact_max:
                    return [await nearest(connection, exact_sql, vector) for vector in vectors]
                thinned = max(memories / max(passing, 1), 1.0)
                await connection.execute(
                    "SET LOCAL hnsw.iterative_scan = relaxed_order; SET LOCAL plan_cache_mode = force_custom_plan;"
                    f" SET LOCAL hnsw.ef_search = {int(ef_search)};"
                    f" SET LOCAL hnsw.max_scan_tuples = {min(int(_SCAN_TUPLES * thinned), _MAX_SCAN_TUPLES)};"
                    f" SET LOCAL hnsw.scan_mem_multiplier = {min(thinned, 16.0):.2f}"
                )
                indexed_sql = _INDEXED_NEAREST_FILTERED.format(where=where.sql)
                return [await nearest(connection, indexed_sql, vector) for vector in vectors]

        return await self._run(filtered if where else work)

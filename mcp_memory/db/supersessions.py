"""Supersession queries (migration 008): mark memories superseded, read chains of them.

Mixed into ``Repository``, which provides ``_run`` (a pooled connection, one retry after a
dropped connection); ``mark`` also runs inside ``Repository.insert_memory``'s transaction, so an
explicit ``supersedes`` commits with the memory or not at all. Every statement filters on the
session and binds every value. Marking writes only ``memory_supersessions``, never ``memories``,
so the session's version (and every server's vector copy) stays as it is.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import asyncpg

from mcp_memory.db.filters import condition
from mcp_memory.errors import InvalidInput
from mcp_memory.models import Candidate, RecallFilter

__all__ = ["CANDIDATE_COLUMNS", "MAX_CHAIN", "WITH_SUPERSESSION", "SupersessionQueries", "candidate", "mark"]

MAX_CHAIN = 32  # links followed back through a memory's history, and through the pool to a current end

Source = Literal["explicit", "llm"]


def candidate(row: asyncpg.Record) -> Candidate:
    """A Candidate from a row of memories joined to its memory_supersessions row (columns may be null)."""
    return Candidate(
        memory_id=str(row["memory_id"]),
        content=row["content"],
        occurred_at=row["occurred_at"],
        metadata=json.loads(row["metadata"]),
        importance=row["importance"],
        superseded_by=str(row["superseded_by"]) if row["superseded_by"] is not None else None,
        superseded_at=row["superseded_at"],
        superseded_others=bool(row["superseded_others"]),
    )


async def mark(
    connection: asyncpg.Connection, session: str, successor: str, memory_ids: list[str], source: Source, strict: bool
) -> list[str]:
    """Mark ``memory_ids`` superseded by ``successor``; call inside a transaction.

    Rules: a memory has one successor. Naming a memory that is already superseded marks the current
    end of its chain instead (A -> B, then C naming A gives A -> B -> C), so history stays one chain
    and no stale memory is left looking current. With ``strict`` (the caller's own ``supersedes``) the successor is current afterwards:
    a mark on it is removed, which also keeps chains free of cycles (storing B again with
    ``supersedes=[A]`` after A superseded B leaves A superseded by B, and B current). Otherwise
    (the LLM's picks) a successor that was itself superseded meanwhile marks nothing, and a pick
    superseded meanwhile is left alone (the model saw it current, not its successor). Calls that
    mark in one session take turns (a transaction advisory lock), so two of them cannot build a
    cycle between them. The memories named and the
    successor are locked against deletion until commit (FOR KEY SHARE).

    Args:
        successor: the superseding memory's id (canonical UUID text).
        memory_ids: canonical UUIDs, each once.
        strict: raise on an id that is not a memory of ``session`` (explicit ``supersedes``);
            otherwise skip it (the LLM's picks, which may have been deleted since).

    Returns:
        The ids marked (each named id, or with ``strict`` the end of its chain), in the order given.

    Raises:
        InvalidInput: ``successor`` is among ``memory_ids``, or (``strict``) an id is not a
            memory of ``session``; the message is the same whether the id exists in another
            session or nowhere.
    """
    if successor in memory_ids:
        raise InvalidInput(
            "supersedes",
            f"names {successor}, the memory being stored (its content is already stored under that id); "
            "a memory cannot supersede itself",
        )
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('mcp-memory/supersede:' || $1, 0))", session
    )
    rows = await connection.fetch(
        "SELECT memory_id FROM memories WHERE session = $1 AND memory_id = ANY($2::uuid[]) FOR KEY SHARE",
        session,
        [successor, *memory_ids],
    )
    present = {str(row["memory_id"]) for row in rows}
    if successor not in present:  # deleted while this call ran: nothing to mark
        return []
    missing = [memory_id for memory_id in memory_ids if memory_id not in present]
    if missing and strict:
        raise InvalidInput(
            "supersedes",
            f"{missing[0]} is not a memory of this session; name memory_ids that store_memory returned for it",
        )
    marked = [memory_id for memory_id in memory_ids if memory_id in present]
    if strict:
        await connection.execute(
            "DELETE FROM memory_supersessions WHERE session = $1 AND memory_id = $2::uuid", session, successor
        )
    else:
        if await connection.fetchval(
            "SELECT 1 FROM memory_supersessions WHERE session = $1 AND memory_id = $2::uuid", session, successor
        ):
            return []
        # The model was shown these as current; one superseded since is left alone, not redirected to
        # its chain's end (a memory the model never saw, maybe newer than the successor).
        taken = {str(row["memory_id"]) for row in await connection.fetch(
            "SELECT memory_id FROM memory_supersessions WHERE session = $1 AND memory_id = ANY($2::uuid[])",
            session, marked,
        )}
        marked = [memory_id for memory_id in marked if memory_id not in taken]
    marked = await _chain_ends(connection, session, successor, marked)
    if marked:
        await connection.execute(
            "INSERT INTO memory_supersessions (session, memory_id, superseded_by, source)"
            " SELECT $1, unnest($3::uuid[]), $2::uuid, $4"
            " ON CONFLICT (session, memory_id) DO UPDATE SET superseded_by = EXCLUDED.superseded_by,"
            "  superseded_at = EXCLUDED.superseded_at, source = EXCLUDED.source"
            " WHERE memory_supersessions.superseded_by <> EXCLUDED.superseded_by",
            session,
            successor,
            marked,
            source,
        )
    return marked


# Every link reachable from the memories $2 of session $1 (memory -> its successor), walked once for
# all of them: a recursive UNION, so chains that meet are read once and a cycle, which `mark` never
# builds, still ends; one index probe per link.
_WALK = """
    WITH RECURSIVE walk (memory_id, superseded_by) AS (
        SELECT s.memory_id, s.superseded_by FROM memory_supersessions s
        WHERE s.session = $1 AND s.memory_id = ANY($2::uuid[])
        UNION
        SELECT n.memory_id, n.superseded_by FROM walk w
        CROSS JOIN LATERAL (SELECT x.memory_id, x.superseded_by FROM memory_supersessions x
                            WHERE x.session = $1 AND x.memory_id = w.superseded_by LIMIT 1) n)
    SELECT memory_id::text, superseded_by::text FROM walk
"""

# What `candidate` reads: memories m with its own supersession row s (or nulls) and whether it
# superseded any memory. Each lookup is a LIMIT 1 subquery on one index (the primary key, and
# memory_supersessions_successor), so it costs one index probe per memory whatever the planner
# believes of the table; a join or EXISTS was planned as a scan of every row of the session
# (or of the table) while its statistics were stale.
CANDIDATE_COLUMNS = (
    "m.memory_id, m.content, m.occurred_at, m.metadata, m.importance, s.superseded_by, s.superseded_at,"
    " (SELECT true FROM memory_supersessions p WHERE p.session = $1 AND p.superseded_by = m.memory_id LIMIT 1)"
    " IS NOT NULL AS superseded_others"
)
WITH_SUPERSESSION = (
    " LEFT JOIN LATERAL (SELECT x.superseded_by, x.superseded_at FROM memory_supersessions x"
    "  WHERE x.session = $1 AND x.memory_id = m.memory_id LIMIT 1) s ON true"
)


async def _chain_ends(connection: asyncpg.Connection, session: str, successor: str, memory_ids: list[str]) -> list[str]:
    """The memories to mark for ``memory_ids``: each one itself, or, when it is already superseded,
    the current end of its chain (A -> B, then C naming A marks B: history stays one chain, and
    no stale memory is left looking current). An end that is ``successor`` itself leaves the id as
    it is; so does an end deleted meanwhile. Ends are locked against deletion like the ids.
    """
    rows = await connection.fetch(_WALK, session, memory_ids)
    links = {row[0]: row[1] for row in rows}
    ends = {memory_id: _end(memory_id, links) for memory_id in memory_ids if memory_id in links}
    wanted = sorted({end for end in ends.values() if end is not None and end != successor})
    if wanted:
        locked = await connection.fetch(
            "SELECT memory_id::text FROM memories WHERE session = $1 AND memory_id = ANY($2::uuid[]) FOR KEY SHARE",
            session,
            wanted,
        )
        present = {row[0] for row in locked}
    else:
        present = set()
    targets = [end if (end := ends.get(memory_id)) in present else memory_id for memory_id in memory_ids]
    return list(dict.fromkeys(targets))


def _end(memory_id: str, links: dict[str, str]) -> str | None:
    """The last memory reached from ``memory_id`` through ``links`` (memory -> successor); None on a cycle."""
    seen = {memory_id}
    while memory_id in links:
        memory_id = links[memory_id]
        if memory_id in seen:
            return None
        seen.add(memory_id)
    return memory_id


class SupersessionQueries:
    """Reads and writes of ``memory_supersessions``."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def mark_superseded(self, session: str, successor: str, memory_ids: list[str], source: Source) -> list[str]:
        """Mark those of ``memory_ids`` that are (still) memories of ``session`` superseded by
        ``successor``, in one transaction (see ``mark``; ids no longer there are skipped).

        Returns:
            The ids marked.
        """
        if not memory_ids:
            return []

        async def work(connection: asyncpg.Connection) -> list[str]:
            async with connection.transaction():
                return await mark(connection, session, successor, memory_ids, source, strict=False)

        return await self._run(work)

    async def current_successors(
        self, session: str, memory_ids: list[str], filters: RecallFilter | None = None
    ) -> dict[str, Candidate]:
        """For each superseded memory of ``memory_ids``, the current memory at the end of its chain
        (its successor's successor ...), however long the chain, when it passes ``filters``.

        The links are walked once for all ids together (a recursive UNION over links, so chains
        that meet are read once and a cycle, which ``mark`` never builds, still ends): one index
        probe per link between the ids and the ends, at most the session's supersessions. The walk
        and the read of the ends see one snapshot.

        Returns:
            memory_id -> the current successor; ids that are current or unknown are absent.
        """
        if not memory_ids:
            return {}
        walk = _WALK
        where = condition(filters, "m", 3)
        read = (f"SELECT {CANDIDATE_COLUMNS} FROM memories m{WITH_SUPERSESSION}"
                " WHERE m.session = $1 AND m.memory_id = ANY($2::uuid[])" + where.sql)

        async def work(connection: asyncpg.Connection) -> tuple[dict[str, str | None], list[asyncpg.Record]]:
            async with connection.transaction(isolation="repeatable_read", readonly=True):
                links = {row[0]: row[1] for row in await connection.fetch(walk, session, memory_ids)}
                starts = {memory_id: _end(memory_id, links) for memory_id in memory_ids if memory_id in links}
                ends = sorted({end for end in starts.values() if end is not None})
                return starts, (await connection.fetch(read, session, ends, *where.values)) if ends else []

        starts, rows = await self._run(work)
        current = {found.memory_id: found for found in map(candidate, rows) if found.superseded_by is None}
        return {start: current[end] for start, end in starts.items() if end in current}

    async def predecessors(
        self, session: str, memory_ids: list[str], limit: int, filters: RecallFilter | None = None
    ) -> dict[str, list[Candidate]]:
        """The history of each of ``memory_ids``: the memories it superseded, theirs, and so on,
        at most ``MAX_CHAIN`` links back and ``limit`` memories in all, those that pass ``filters``.

        Returns:
            memory_id -> its predecessors, nearest link first, then most recently marked first;
            ids with none are absent.
        """
        if not memory_ids:
            return {}
        where = condition(filters, "m", 4)
        sql = f"""
            WITH RECURSIVE chain (head, memory_id, depth) AS (
                SELECT s.superseded_by, s.memory_id, 1 FROM memory_supersessions s
                WHERE s.session = $1 AND s.superseded_by = ANY($2::uuid[])
                UNION ALL
                SELECT c.head, n.memory_id, c.depth + 1 FROM chain c
                CROSS JOIN LATERAL (SELECT x.memory_id FROM memory_supersessions x
                                    WHERE x.session = $1 AND x.superseded_by = c.memory_id LIMIT {MAX_CHAIN}) n
                WHERE c.depth < {MAX_CHAIN})
            SELECT c.head, {CANDIDATE_COLUMNS}
            FROM chain c JOIN memories m ON m.session = $1 AND m.memory_id = c.memory_id{where.sql}{WITH_SUPERSESSION}
            ORDER BY c.head, c.depth, s.superseded_at DESC, m.memory_id LIMIT $3
        """
        rows = await self._run(lambda c: c.fetch(sql, session, memory_ids, limit, *where.values))
        found: dict[str, list[Candidate]] = {}
        for row in rows:
            found.setdefault(str(row["head"]), []).append(candidate(row))
        return found

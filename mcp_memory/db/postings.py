"""The rows derived from a memory, written in the memory's own transaction by plain statements.

A stored memory gets its BM25 postings (``memory_terms``, migration 003), its CJK character grams
(``memory_grams``, migration 013) and a change of its session's ``memory_stats`` row (count, total
length, ``changes``, a new ``version``; migrations 002, 006, 007); a deleted one gives its stats
back (its postings and grams go with it through the foreign keys). Triggers did this until
migration 014; Citus runs neither their transition tables nor the ``nextval`` they called in an
UPDATE, so these statements are the one set of SQL for one node and for a cluster: each reaches the
rows of one session (a colocated shard), and the new version is drawn by the INSERT's column
default (which Citus evaluates on the coordinator), never by a function in an UPDATE.
"""

from __future__ import annotations

import uuid

import asyncpg

__all__ = ["added", "removed"]

_TERMS = (
    "INSERT INTO memory_terms (session, lexeme, memory_id, tf, dl)"
    " SELECT m.session, u.lexeme, m.memory_id, coalesce(array_length(u.positions, 1), 1), length(m.search_text)"
    " FROM memories m CROSS JOIN LATERAL unnest(m.search_text) u WHERE m.session = $1 AND m.memory_id = $2::uuid"
)
_GRAMS = (
    "INSERT INTO memory_grams (session, gram, memory_id)"
    " SELECT m.session, g.gram, m.memory_id FROM memories m CROSS JOIN LATERAL memory_cjk_grams(m.content) AS g(gram)"
    " WHERE m.session = $1 AND m.memory_id = $2::uuid"
)
# One memory of length $2 comes in; a session's first row starts with it. version and born take the
# sequence's defaults (EXCLUDED.version: the value drawn for the row that was not inserted).
_STATS_ADD = (
    "INSERT INTO memory_stats AS s (session, n, total_length, changes) VALUES ($1, 1, $2, 1)"
    " ON CONFLICT (session) DO UPDATE SET n = s.n + 1, total_length = s.total_length + $2,"
    " changes = s.changes + 1, version = EXCLUDED.version"
)
# $2 memories of total length $3 go; a row emptied by hand (migration 014) starts again at zero.
_STATS_REMOVE = (
    "INSERT INTO memory_stats AS s (session, n, total_length, changes) VALUES ($1, 0, 0, $2)"
    " ON CONFLICT (session) DO UPDATE SET n = s.n - $2, total_length = s.total_length - $3,"
    " changes = s.changes + $2, version = EXCLUDED.version"
)


async def added(connection: asyncpg.Connection, session: str, memory_id: str | uuid.UUID, length: int) -> None:
    """Write the postings and grams of the memory just inserted and count it in its session's stats.

    Call in the insert's transaction. ``length``: ``length(search_text)`` of the memory (its number
    of distinct lexemes, what BM25 calls the document length).
    """
    await connection.execute(_TERMS, session, memory_id)
    await connection.execute(_GRAMS, session, memory_id)
    await connection.execute(_STATS_ADD, session, length)


async def removed(connection: asyncpg.Connection, session: str, count: int, length: int) -> None:
    """Take ``count`` memories of total ``length`` just deleted out of their session's stats.

    Call in the delete's transaction; nothing to do when nothing was deleted.
    """
    if count:
        await connection.execute(_STATS_REMOVE, session, count, length)

"""Rewriting a stored memory's text in place (``mcp-memory redact``): content, metadata, vectors and
the keyword and CJK indexes, in one transaction.

Mixed into ``Repository``, which provides ``_run``. ``memory_terms`` and ``memory_grams`` are kept
by insert triggers only (migrations 003, 013), so an update rebuilds the memory's rows of both here
with the triggers' own statements; ``memory_stats`` follows the update by its trigger (a new version,
so in-process vector copies reload).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import numpy as np

from mcp_memory.access.scope import SessionScope
from mcp_memory.db.scopes import in_scope, scope_args

__all__ = ["RedactionQueries"]


async def _hand_over(connection: asyncpg.Connection, session: str, memory_id: str, other: str) -> None:
    """Before ``memory_id`` is merged into ``other`` (deleted): the memories it superseded are superseded
    by ``other`` instead (they would be current again), except ``other`` itself and any memory that
    ``other`` leads to through its own successors (that would close a cycle); its idempotency keys
    name ``other`` and its content. Takes the session's supersession lock, as ``supersessions.mark``."""
    await connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('mcp-memory/supersede:' || $1, 0))",
                             session)
    ahead = [row[0] for row in await connection.fetch(_AHEAD, session, other)]
    await connection.execute(
        "UPDATE memory_supersessions SET superseded_by = $3::uuid WHERE session = $1 AND superseded_by = $2::uuid"
        " AND memory_id <> $3::uuid AND NOT memory_id = ANY($4::uuid[])", session, memory_id, other, ahead)
    await connection.execute(
        "UPDATE idempotency_keys SET memory_id = $3::uuid,"
        " content_hash = (SELECT content_hash FROM memories WHERE session = $1 AND memory_id = $3::uuid)"
        " WHERE session = $1 AND memory_id = $2::uuid", session, memory_id, other)


# The memories a memory of session $1 leads to, $2 first: its successor, that one's, and so on.
_AHEAD = """
    WITH RECURSIVE ahead (memory_id) AS (
        SELECT s.superseded_by FROM memory_supersessions s WHERE s.session = $1 AND s.memory_id = $2::uuid
        UNION
        SELECT n.superseded_by FROM ahead a
        CROSS JOIN LATERAL (SELECT x.superseded_by FROM memory_supersessions x
                            WHERE x.session = $1 AND x.memory_id = a.memory_id LIMIT 1) n)
    SELECT memory_id::text FROM ahead
"""


class RedactionQueries:
    """Replace a memory's text, or an audit row's detail, where a secret was found."""

    _pool: asyncpg.Pool
    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def audit_rows(self, scope: SessionScope) -> AsyncIterator[tuple[str, int, dict[str, Any]]]:
        """(session, audit_id, detail) of every audit row of the sessions of ``scope``, by session and
        audit_id, through a server-side cursor in one read-only transaction (as the export reads)."""
        async with self._pool.acquire() as connection:
            async with connection.transaction(readonly=True, isolation="repeatable_read"):
                await connection.execute("SET LOCAL statement_timeout = 0")
                sql = (f"SELECT session, audit_id, detail::text AS detail FROM audits WHERE {in_scope()}"
                       " ORDER BY session, audit_id")
                async for row in connection.cursor(sql, *scope_args(scope), prefetch=500):
                    yield row["session"], row["audit_id"], json.loads(row["detail"])

    async def replace_audit_detail(self, session: str, audit_id: int, detail: dict[str, Any]) -> None:
        """Give audit row ``audit_id`` of ``session`` this ``detail`` (its secrets redacted)."""
        await self._run(lambda c: c.execute(
            "UPDATE audits SET detail = $3::jsonb WHERE session = $1 AND audit_id = $2",
            session, audit_id, json.dumps(detail, ensure_ascii=False)))

    async def replace_text(self, session: str, memory_id: str, content: str, content_hash: bytes,
                           metadata: dict[str, Any], embeddings: list[np.ndarray]) -> tuple[bool, str | None]:
        """Give the memory ``content`` (sha256 ``content_hash``), ``metadata`` and its window vectors
        (window 0 first), and rebuild its keyword, CJK and chunk rows; its idempotency keys now
        name the new content.

        Returns:
            (False, None) when the session no longer holds the memory (deleted since it was read):
            nothing was written. (True, None) when it was rewritten. (True, id) when the session
            already holds ``content`` under another memory: that memory's id, and this one was
            deleted instead (two memories that differed only in a secret are one memory once it is
            gone), after handing that memory what it had superseded and its idempotency keys
            (``_hand_over``).
        """

        async def work(connection: asyncpg.Connection) -> tuple[bool, str | None]:
            async with connection.transaction():
                if await connection.fetchval(  # locked: a delete now waits for this rewrite
                        "SELECT 1 FROM memories WHERE session = $1 AND memory_id = $2::uuid FOR UPDATE",
                        session, memory_id) is None:
                    return False, None
                other = await connection.fetchval(
                    "SELECT memory_id::text FROM memories WHERE session = $1 AND content_hash = $2"
                    " AND memory_id <> $3::uuid", session, content_hash, memory_id)
                if other is not None:
                    await _hand_over(connection, session, memory_id, other)
                    await connection.execute("DELETE FROM memories WHERE session = $1 AND memory_id = $2::uuid",
                                             session, memory_id)
                    return True, other
                await connection.execute(
                    "UPDATE memories SET content = $3, content_hash = $4, metadata = $5::jsonb, embedding = $6"
                    " WHERE session = $1 AND memory_id = $2::uuid",
                    session, memory_id, content, content_hash, json.dumps(metadata, ensure_ascii=False),
                    embeddings[0])
                await connection.execute("DELETE FROM memory_chunks WHERE session = $1 AND memory_id = $2::uuid",
                                         session, memory_id)
                await connection.execute("DELETE FROM memory_terms WHERE session = $1 AND memory_id = $2::uuid",
                                         session, memory_id)
                await connection.execute("DELETE FROM memory_grams WHERE session = $1 AND memory_id = $2::uuid",
                                         session, memory_id)
                if len(embeddings) > 1:
                    await connection.executemany(
                        "INSERT INTO memory_chunks (session, memory_id, chunk_no, embedding) VALUES ($1, $2::uuid, $3, $4)",
                        [(session, memory_id, no, vec) for no, vec in enumerate(embeddings[1:], 1)])
                await connection.execute(  # as migration 003's trigger, from search_text's own expression
                    "INSERT INTO memory_terms (session, lexeme, memory_id, tf, dl)"
                    " SELECT $1, u.lexeme, $2::uuid, coalesce(array_length(u.positions, 1), 1),"
                    " length(to_tsvector('english', $3)) FROM unnest(to_tsvector('english', $3)) u",
                    session, memory_id, content)
                await connection.execute(  # as migration 013's trigger
                    "INSERT INTO memory_grams (session, gram, memory_id)"
                    " SELECT $1, g.gram, $2::uuid FROM memory_cjk_grams($3) AS g(gram)", session, memory_id, content)
                await connection.execute(
                    "UPDATE idempotency_keys SET content_hash = $3 WHERE session = $1 AND memory_id = $2::uuid",
                    session, memory_id, content_hash)
                return True, None

        return await self._run(work)

"""Export and import of whole memories (``mcp-memory export`` / ``import``).

Mixed into ``Repository``, which provides ``_pool`` and ``_run``. The export streams rows through
a server-side cursor inside one read-only transaction (one consistent snapshot, memory flat
however many rows); the import inserts memories with their own ids and timestamps, and never
overwrites: a memory whose id or content the session already holds is left as it is.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np

from mcp_memory.access.scope import SessionScope
from mcp_memory.db import postings
from mcp_memory.db.scopes import in_scope, scope_args

__all__ = ["ImportRow", "TransferQueries"]

# Storage order (migration 009): the order recall sorts ties in, and the order of the index it reads.
_EXPORT = (
    "SELECT m.session, m.memory_id::text AS memory_id, m.content, m.occurred_at, m.created_at,"
    " m.metadata::text AS metadata, m.importance, s.superseded_by::text AS superseded_by, s.superseded_at,"
    " s.source AS superseded_source, k.keys AS idempotency_keys"
    " FROM memories m"
    " LEFT JOIN memory_supersessions s ON s.session = m.session AND s.memory_id = m.memory_id"
    " LEFT JOIN (SELECT session, memory_id, jsonb_agg(jsonb_build_object('key', idempotency_key,"
    "   'request_hash', encode(request_hash, 'hex'), 'superseded', superseded::text[], 'created_at', created_at)"
    "   ORDER BY idempotency_key)::text AS keys FROM idempotency_keys"
    f"   WHERE {in_scope('session')} GROUP BY session, memory_id) k"
    "  ON k.session = m.session AND k.memory_id = m.memory_id"
    f" WHERE {in_scope('m.session')}"
    " ORDER BY m.session, m.occurred_at, m.created_at, m.memory_id"
)
# The idempotency keys whose memory was deleted (they outlive it: a late retry is an error, never a re-store).
_DELETED_KEYS = (
    "SELECT k.session, k.memory_id::text AS memory_id, jsonb_agg(jsonb_build_object('key', k.idempotency_key,"
    " 'request_hash', encode(k.request_hash, 'hex'), 'content_hash', encode(k.content_hash, 'hex'),"
    " 'superseded', k.superseded::text[], 'created_at', k.created_at) ORDER BY k.idempotency_key)::text AS keys"
    " FROM idempotency_keys k"
    f" WHERE {in_scope('k.session')}"
    " AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.session = k.session AND m.memory_id = k.memory_id)"
    " GROUP BY k.session, k.memory_id ORDER BY k.session, k.memory_id"
)
# import_deleted_keys: the keys of one session ($1) given as arrays ($2-$7), and those it does not hold yet
_GIVEN_KEYS = ("unnest($2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])"
               " AS t(key, id, content_hash, request_hash, superseded, at)")
_NEW_KEY = " WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.session = $1 AND k.idempotency_key = t.key)"
_CURSOR_PREFETCH = 500  # rows per round trip of the cursor


@dataclass(frozen=True)
class ImportRow:
    """One validated memory to insert as it was exported.

    Attributes:
        embeddings: one vector per window of the content, window 0 first.
        idempotency_keys: ``{"key", "request_hash" (hex), "superseded", "created_at"}`` each.
    """

    session: str
    memory_id: str
    content: str
    content_hash: bytes
    occurred_at: datetime
    created_at: datetime
    metadata: dict[str, Any]
    importance: float | None
    embeddings: list[np.ndarray]
    idempotency_keys: list[dict[str, Any]]


class TransferQueries:
    """Stream memories out; insert them back with their ids."""

    _pool: asyncpg.Pool
    _model: str
    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def export_memories(self, scope: SessionScope, deleted: bool = False) -> AsyncIterator[dict[str, Any]]:
        """Every memory of the sessions of ``scope`` in storage order, one dict each, read through a
        server-side cursor in one transaction (a consistent snapshot).

        Yields:
            ``session, memory_id, content, occurred_at, created_at`` (datetimes), ``metadata``
            (dict), ``importance``, ``superseded_by``/``superseded_at``/``superseded_source``
            (None when current) and ``idempotency_keys`` (list). With ``deleted``, then (same
            snapshot) one ``{"deleted": True, session, memory_id, idempotency_keys}`` per deleted
            memory whose keys remain, each key with its ``content_hash`` (hex).

        Not bounded by ``statement_timeout_ms``: a big export is one long transaction by design.
        A dropped connection raises (no retry: the rows already written would repeat).
        """
        async with self._pool.acquire() as connection:
            async with connection.transaction(readonly=True, isolation="repeatable_read"):
                await connection.execute("SET LOCAL statement_timeout = 0")
                async for row in connection.cursor(_EXPORT, *scope_args(scope), prefetch=_CURSOR_PREFETCH):
                    memory = dict(row)
                    memory["metadata"] = json.loads(row["metadata"])
                    memory["idempotency_keys"] = json.loads(row["idempotency_keys"] or "[]")
                    yield memory
                if deleted:
                    async for row in connection.cursor(_DELETED_KEYS, *scope_args(scope), prefetch=_CURSOR_PREFETCH):
                        yield {"deleted": True, "session": row["session"], "memory_id": row["memory_id"],
                               "idempotency_keys": json.loads(row["keys"])}

    async def existing(self, rows: list[tuple[str, str, bytes]]) -> dict[int, tuple[bool, str | None]]:
        """Positions in ``rows`` ((session, memory_id, content_hash) each) whose session already
        holds that memory_id or that content, each with (True when it holds the memory_id for other
        content (the id was reused), else False for a duplicate; the id of the memory holding that
        content, or None).

        One statement per session (one shard's rows when distributed by session, docs/scale-out.md).
        """
        found: dict[int, tuple[bool, str | None]] = {}
        for session, places in _by_session(row[0] for row in rows).items():
            hits = await self._run(
                lambda c, session=session, places=places: c.fetch(
                    "SELECT t.i, EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.id"
                    "   AND m.content_hash <> t.hash) AS reused,"
                    " (SELECT m.memory_id::text FROM memories m WHERE m.session = $1 AND m.content_hash = t.hash) AS holder"
                    " FROM unnest($2::uuid[], $3::bytea[]) WITH ORDINALITY AS t(id, hash, i)"
                    " WHERE EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.id)"
                    " OR EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.content_hash = t.hash)",
                    session, [rows[i][1] for i in places], [rows[i][2] for i in places],
                )
            )
            found.update((places[int(hit["i"]) - 1], (hit["reused"], hit["holder"])) for hit in hits)
        return found

    async def import_memories(self, rows: list[ImportRow]) -> list[str]:
        """Insert ``rows`` with their ids, timestamps, window vectors and idempotency keys, in one
        transaction; a row whose id or content its session already holds is skipped.

        Returns:
            The memory_ids inserted (the others were duplicates).
        """

        async def work(connection: asyncpg.Connection) -> list[str]:
            inserted: list[str] = []
            async with connection.transaction():
                for row in rows:
                    inserted_row = await connection.fetchrow(
                        "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, created_at,"
                        " metadata, importance, embedding, embedding_model)"
                        " VALUES ($1, $2::uuid, $3, $4, $5, $6, $7::jsonb, $8, $9, $10)"
                        " ON CONFLICT DO NOTHING RETURNING memory_id::text, length(search_text) AS length",
                        row.session, row.memory_id, row.content, row.content_hash, row.occurred_at,
                        row.created_at, json.dumps(row.metadata, ensure_ascii=False), row.importance,
                        row.embeddings[0], self._model,
                    )
                    if inserted_row is None:
                        continue
                    stored = inserted_row["memory_id"]
                    await postings.added(connection, row.session, stored, inserted_row["length"])
                    inserted.append(stored)
                    if len(row.embeddings) > 1:
                        await connection.executemany(
                            "INSERT INTO memory_chunks (session, memory_id, chunk_no, embedding)"
                            " VALUES ($1, $2::uuid, $3, $4)",
                            [(row.session, stored, no, vec) for no, vec in enumerate(row.embeddings[1:], 1)],
                        )
                    if row.idempotency_keys:
                        await connection.executemany(
                            "INSERT INTO idempotency_keys (session, idempotency_key, memory_id, content_hash,"
                            " request_hash, superseded, created_at)"
                            " VALUES ($1, $2, $3::uuid, $4, decode($5, 'hex'), $6::uuid[], $7)"
                            " ON CONFLICT DO NOTHING",
                            [(row.session, key["key"], stored, row.content_hash, key["request_hash"],
                              key["superseded"], key["created_at"]) for key in row.idempotency_keys],
                        )
            return inserted

        return await self._run(work)

    async def import_deleted_keys(self, keys: list[tuple[str, str, dict[str, Any]]], dry_run: bool) -> int:
        """Record the idempotency keys of deleted memories ((session, memory_id, key) each, a key as
        ``export_memories`` yields it) that their session does not hold yet; returns how many were
        (with ``dry_run``, would be) recorded. One statement per session, as ``existing``."""
        recorded = 0
        for session, places in _by_session(key[0] for key in keys).items():
            columns = ([keys[i][2]["key"] for i in places], [keys[i][1] for i in places],
                       [keys[i][2]["content_hash"] for i in places], [keys[i][2]["request_hash"] for i in places],
                       [json.dumps(keys[i][2]["superseded"]) for i in places],
                       [keys[i][2]["created_at"] for i in places])
            if dry_run:
                recorded += await self._run(lambda c, session=session, columns=columns: c.fetchval(
                    f"SELECT count(DISTINCT t.key) FROM {_GIVEN_KEYS}{_NEW_KEY}", session, *columns))
                continue
            rows = await self._run(lambda c, session=session, columns=columns: c.fetch(
                "INSERT INTO idempotency_keys (session, idempotency_key, memory_id, content_hash, request_hash,"
                " superseded, created_at) SELECT $1, t.key, t.id, decode(t.content_hash, 'hex'),"
                " decode(t.request_hash, 'hex'), ARRAY(SELECT jsonb_array_elements_text(t.superseded::jsonb))::uuid[],"
                f" t.at FROM {_GIVEN_KEYS}{_NEW_KEY} ON CONFLICT DO NOTHING RETURNING 1", session, *columns))
            recorded += len(rows)
        return recorded

    async def import_supersessions(self, links: list[tuple[str, str, str, datetime, str]]) -> int:
        """Record (session, memory_id, superseded_by, superseded_at, source) links whose two
        memories both exist and whose memory is not marked already; returns how many were recorded.

        One statement per session, as ``existing``. The rows recorded are counted from RETURNING, not
        from the command tag: on Citus an INSERT ... SELECT runs through the coordinator, whose tag
        counts the rows selected, also those ON CONFLICT DO NOTHING skipped.
        """
        recorded = 0
        for session, places in _by_session(link[0] for link in links).items():
            rows = await self._run(
                lambda c, session=session, places=places: c.fetch(
                    "INSERT INTO memory_supersessions (session, memory_id, superseded_by, superseded_at, source)"
                    " SELECT $1, t.id, t.successor, t.at, t.source"
                    " FROM unnest($2::uuid[], $3::uuid[], $4::timestamptz[], $5::text[]) AS t(id, successor, at, source)"
                    " WHERE EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.id)"
                    " AND EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.successor)"
                    " ON CONFLICT DO NOTHING RETURNING 1",
                    session, *[[links[i][column] for i in places] for column in range(1, 5)],
                )
            )
            recorded += len(rows)
        return recorded


    async def count_supersessions(self, links: list[tuple[str, str, str, datetime, str]],
                                  planned: list[tuple[str, str]]) -> int:
        """How many of ``links`` ``import_supersessions`` would record once the memories
        ``planned`` ((session, memory_id) each, not stored yet) were stored too: the dry run's count.

        Writes nothing. One statement per session, as ``existing``.
        """
        ids: dict[str, list[str]] = {}
        for session, memory_id in planned:
            ids.setdefault(session, []).append(memory_id)
        counted = 0
        for session, places in _by_session(link[0] for link in links).items():
            counted += await self._run(
                lambda c, session=session, places=places: c.fetchval(
                    "SELECT count(DISTINCT t.id) FROM unnest($2::uuid[], $3::uuid[]) AS t(id, successor)"
                    " WHERE (t.id = ANY($4::uuid[])"
                    "  OR EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.id))"
                    " AND (t.successor = ANY($4::uuid[])"
                    "  OR EXISTS (SELECT 1 FROM memories m WHERE m.session = $1 AND m.memory_id = t.successor))"
                    " AND NOT EXISTS (SELECT 1 FROM memory_supersessions s WHERE s.session = $1 AND s.memory_id = t.id)",
                    session, [links[i][1] for i in places], [links[i][2] for i in places], ids.get(session, []),
                )
            )
        return counted


def _by_session(sessions: Iterable[str]) -> dict[str, list[int]]:
    """Positions of each session in ``sessions``, in order."""
    places: dict[str, list[int]] = {}
    for place, session in enumerate(sessions):
        places.setdefault(session, []).append(place)
    return places

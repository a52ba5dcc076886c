"""The repository: all SQL of mcp-memory lives here, in ``retrieval.py``, ``nearest.py``, ``chronology.py``
and ``expansion.py`` (recall's search queries), in ``supersessions.py``, ``usage.py``, ``idempotency.py``,
``transfer.py``, ``browse.py`` (the page's reads), ``health.py`` (doctor) and ``redaction.py``
(``mcp-memory redact``), all mixed into
``Repository``, each statement scoped by session.

Every method takes the session as its first argument and every statement filters on it, so
nothing crosses sessions. Values always travel as bind parameters, never as SQL text.
A dropped connection (server restart, ``pg_terminate_backend``) is retried once on a fresh
pooled connection; a second failure raises ``DatabaseUnavailable``. A statement cancelled
mid-flight (a recall's lists cancelled when one fails, a client that goes away) closes its
connection: it is never handed out again, and its backend ends and lets go of its locks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import asyncpg
import numpy as np

from mcp_memory.errors import DatabaseUnavailable, StatementTimeout
from mcp_memory.db import postings
from mcp_memory.db.browse import BrowseQueries
from mcp_memory.db.chronology import ChronologyQueries
from mcp_memory.db.expansion import ExpansionQueries
from mcp_memory.db.health import HealthQueries
from mcp_memory.db.idempotency import IdempotencyQueries, KeyRow, KeyTaken, claim
from mcp_memory.db.ids import new_memory_id
from mcp_memory.db.nearest import NearestQueries
from mcp_memory.db.redaction import RedactionQueries
from mcp_memory.db.retrieval import RetrievalQueries
from mcp_memory.db.supersessions import CANDIDATE_COLUMNS, WITH_SUPERSESSION, SupersessionQueries, candidate, mark
from mcp_memory.db.transfer import TransferQueries
from mcp_memory.db.usage import UsageQueries
from mcp_memory.db.filters import condition
from mcp_memory.models import Candidate, NewMemory, RecallFilter

__all__ = ["Repository", "StoredRow"]

T = TypeVar("T")

_CONNECTION_ERRORS = (
    asyncpg.exceptions.PostgresConnectionError,  # SQLSTATE class 08: the connection failed or is gone
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,  # another backend crashed; PostgreSQL restarts
    asyncpg.exceptions.CannotConnectNowError,  # starting up or in recovery
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.InterfaceError,
    ConnectionError,
    OSError,
)


class StoredRow:
    """What an insert reports back: the id, the stored instant, whether it already existed, and
    the memories it marked superseded."""

    __slots__ = ("deduplicated", "memory_id", "occurred_at", "superseded")

    def __init__(self, memory_id: str, occurred_at: datetime, deduplicated: bool, superseded: list[str]) -> None:
        self.memory_id = memory_id
        self.occurred_at = occurred_at
        self.deduplicated = deduplicated
        self.superseded = superseded


class Repository(
    RetrievalQueries, NearestQueries, ChronologyQueries, ExpansionQueries, SupersessionQueries, UsageQueries, IdempotencyQueries,
    TransferQueries, BrowseQueries, HealthQueries, RedactionQueries,
):
    """All reads and writes of memories, chunks, audits and usage."""

    def __init__(self, pool: asyncpg.Pool, model: str) -> None:
        self._pool = pool
        self._model = model

    async def _run(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        for attempt in (1, 2):
            try:
                async with self._pool.acquire() as connection:
                    try:
                        return await work(connection)
                    except asyncpg.exceptions.InternalClientError as exc:
                        # A pooled connection terminated by the server just before it was used can
                        # fail this way ("another operation is in progress"); it is closed by then.
                        if connection.is_closed():
                            raise ConnectionError(f"connection closed by the server: {exc}") from exc
                        raise
                    except asyncpg.exceptions.QueryCanceledError as exc:  # statement_timeout (pool.py)
                        raise StatementTimeout(
                            "the database stopped a statement of this call at statement_timeout_ms; retry, or "
                            f"use a shorter query ({exc})"
                        ) from exc
                    except asyncio.CancelledError:
                        # Cancelled mid-statement, the connection's state is unknown: asyncpg 0.32
                        # drops a reply that lands in the loop pass that cancels its waiter and then
                        # neither cancels nor syncs, so a cancelled prepare went back to the pool
                        # with its backend inside the exchange ("active"/ClientRead) and holding
                        # its locks until the connection's next use. Closing it ends the backend.
                        connection.terminate()
                        raise
            except _CONNECTION_ERRORS as exc:
                if attempt == 2:
                    raise DatabaseUnavailable(
                        f"database unavailable: PostgreSQL connection failed twice ({exc}); retry in a few seconds"
                    ) from exc
        raise AssertionError("unreachable")

    # --- memories -------------------------------------------------------------------------

    async def insert_memory(self, memory: NewMemory, embeddings: list[np.ndarray]) -> StoredRow | KeyRow:
        """Insert a memory with its window vectors (window 0 first), or find the same content,
        mark ``memory.supersedes`` superseded by it and record its idempotency key, all in one
        transaction: the call returns after it committed, or nothing of it is stored.

        Returns:
            The stored (or de-duplicated) row; or, when an earlier call already holds
            ``memory.idempotency_key`` in the session, that call's ``KeyRow`` and nothing was
            written (the caller decides whether it is a retry).

        Dedup is per session on the exact content (sha256), enforced by a unique constraint,
        so concurrent writers of one text get one row. The same content stored again with
        ``supersedes`` marks them superseded by the memory already there (see ``supersessions.mark``).

        Raises:
            InvalidInput: an id of ``memory.supersedes`` is not a memory of the session, or is the
                memory itself; nothing was stored or marked.
        """

        async def work(connection: asyncpg.Connection) -> StoredRow:
            async with connection.transaction():
                row = await connection.fetchrow(
                    "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, metadata,"
                    " importance, embedding, embedding_model)"
                    " VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9)"
                    " ON CONFLICT (session, content_hash) DO NOTHING"
                    " RETURNING memory_id, occurred_at, length(search_text) AS length",
                    memory.session,
                    new_memory_id(),
                    memory.content,
                    memory.content_hash,
                    memory.occurred_at,
                    json.dumps(memory.metadata, ensure_ascii=False),
                    memory.importance,
                    embeddings[0],
                    self._model,
                )
                if row is None:
                    existing = await connection.fetchrow(
                        "SELECT memory_id, occurred_at FROM memories WHERE session = $1 AND content_hash = $2",
                        memory.session,
                        memory.content_hash,
                    )
                    stored = StoredRow(str(existing["memory_id"]), existing["occurred_at"], True, [])
                else:
                    await postings.added(connection, memory.session, row["memory_id"], row["length"])
                    if len(embeddings) > 1:
                        await connection.executemany(
                            "INSERT INTO memory_chunks (session, memory_id, chunk_no, embedding)"
                            " VALUES ($1, $2, $3, $4)",
                            [(memory.session, row["memory_id"], no, vec) for no, vec in enumerate(embeddings[1:], 1)],
                        )
                    stored = StoredRow(str(row["memory_id"]), row["occurred_at"], False, [])
                if memory.supersedes:
                    stored.superseded = await mark(
                        connection, memory.session, stored.memory_id, list(memory.supersedes), "explicit", strict=True
                    )
                if memory.idempotency_key is not None:
                    await claim(connection, memory, stored.memory_id, stored.superseded)
                return stored

        try:
            return await self._run(work)
        except KeyTaken as taken:
            return taken.earlier

    async def fetch(
        self, session: str, memory_ids: list[str], filters: RecallFilter | None = None
    ) -> dict[str, Candidate]:
        """The memories of ``session`` with these ids that pass ``filters``, keyed by memory_id (others
        absent), each with its supersession state (``superseded_by``, ``superseded_at``, ``superseded_others``)."""
        if not memory_ids:
            return {}
        where = condition(filters, "m", 3)
        rows = await self._run(
            lambda c: c.fetch(
                f"SELECT {CANDIDATE_COLUMNS} FROM memories m{WITH_SUPERSESSION}"
                " WHERE m.session = $1 AND m.memory_id = ANY($2::uuid[])" + where.sql,
                session,
                memory_ids,
                *where.values,
            )
        )
        return {str(row["memory_id"]): candidate(row) for row in rows}

    async def delete(self, session: str, memory_id: str) -> tuple[bool, list[str], dict[str, str]]:
        """Delete one memory (its chunks and supersession rows go with it).

        A memory in the middle of a chain (A superseded by it, it by C) hands its predecessors to
        its successor first (A superseded by C): C replaced the whole chain, so A must not become
        current again. Only a current memory's predecessors become current.

        Returns:
            (deleted, current_again, superseded_now_by): False when the session has no such memory;
            the memories it had superseded that are current again; those now superseded by its
            successor instead (memory_id -> successor).
        """
        async def work(connection: asyncpg.Connection) -> tuple[asyncpg.Record, list[asyncpg.Record]]:
            async with connection.transaction():
                await connection.execute(  # the lock of supersessions.mark: no mark races the relink
                    "SELECT pg_advisory_xact_lock(hashtextextended('mcp-memory/supersede:' || $1, 0))", session)
                relinked = await connection.fetch(
                    "UPDATE memory_supersessions p SET superseded_by = s.superseded_by FROM memory_supersessions s"
                    " WHERE s.session = $1 AND s.memory_id = $2::uuid AND p.session = s.session"
                    " AND p.superseded_by = $2::uuid"
                    " RETURNING p.memory_id::text, p.superseded_by::text",
                    session, memory_id,
                )
                row = await connection.fetchrow(
                    "WITH gone AS (DELETE FROM memories WHERE session = $1 AND memory_id = $2::uuid"
                    "  RETURNING length(search_text) AS length)"
                    " SELECT (SELECT count(*) FROM gone) AS deleted, (SELECT coalesce(sum(length), 0) FROM gone) AS length,"
                    " (SELECT coalesce(array_agg(memory_id::text ORDER BY memory_id), '{}') FROM memory_supersessions"
                    "  WHERE session = $1 AND superseded_by = $2::uuid AND EXISTS (SELECT 1 FROM gone)) AS current_again",
                    session,
                    memory_id,
                )
                await postings.removed(connection, session, row["deleted"], row["length"])
                return row, relinked

        row, relinked = await self._run(work)
        if row["deleted"] == 0:  # no such memory: nothing was relinked either (the rows named it)
            return False, [], {}
        return True, list(row["current_again"]), {r["memory_id"]: r["superseded_by"] for r in sorted(relinked)}

    async def delete_session(self, session: str) -> int:
        """Delete every memory of ``session`` and its idempotency keys; returns how many memories.

        Not bounded by ``statement_timeout_ms`` (which bounds what a query can cost): a big session,
        or rows another transaction holds, must never make a session undeletable. asyncpg's
        command timeout (60 s) still bounds the wait.
        """

        async def work(connection: asyncpg.Connection) -> int:
            async with connection.transaction():
                await connection.execute("SET LOCAL statement_timeout = 0")
                row = await connection.fetchrow(
                    "WITH keys AS (DELETE FROM idempotency_keys WHERE session = $1),"
                    " gone AS (DELETE FROM memories WHERE session = $1 RETURNING length(search_text) AS length)"
                    " SELECT count(*) AS deleted, coalesce(sum(length), 0) AS length FROM gone", session)
                await postings.removed(connection, session, row["deleted"], row["length"])
                return row["deleted"]

        return await self._run(work)

    async def count(self, session: str) -> int:
        """Number of memories in ``session``."""
        return await self._run(lambda c: c.fetchval("SELECT count(*) FROM memories WHERE session = $1", session))

    # --- audits ---------------------------------------------------------------------------

    async def add_audit(self, session: str, kind: str, detail: dict[str, Any]) -> int:
        """Append an audit row; returns its audit_id."""
        return await self._run(
            lambda c: c.fetchval(
                "INSERT INTO audits (session, kind, detail) VALUES ($1, $2, $3::jsonb) RETURNING audit_id",
                session,
                kind,
                json.dumps(detail, ensure_ascii=False, default=str),
            )
        )

    async def list_audits(self, session: str, limit: int, kind: str | None) -> list[dict[str, Any]]:
        """The newest ``limit`` audit rows of ``session`` (optionally of one kind), newest first."""
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT audit_id, session, kind, created_at, detail FROM audits"
                " WHERE session = $1 AND ($2::text IS NULL OR kind = $2) ORDER BY audit_id DESC LIMIT $3",
                session,
                kind,
                limit,
            )
        )
        return [
            {
                "audit_id": row["audit_id"],
                "session": row["session"],
                "kind": row["kind"],
                "created_at": row["created_at"],
                "detail": json.loads(row["detail"]),
            }
            for row in rows
        ]

"""The repository: every SQL statement of mcp-memory, each scoped by session.

Every method takes the session as its first argument and every statement filters on it, so
nothing crosses sessions. Values always travel as bind parameters, never as SQL text.
A dropped connection (server restart, ``pg_terminate_backend``) is retried once on a fresh
pooled connection; a second failure raises ``DatabaseUnavailable``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import asyncpg
import numpy as np

from mcp_memory.errors import DatabaseUnavailable
from mcp_memory.models import Candidate, NewMemory

__all__ = ["Repository", "StoredRow"]

T = TypeVar("T")

_CONNECTION_ERRORS = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.InterfaceError,
    ConnectionError,
    OSError,
)


class StoredRow:
    """What an insert reports back: the id, the stored instant, and whether it already existed."""

    __slots__ = ("deduplicated", "memory_id", "occurred_at")

    def __init__(self, memory_id: str, occurred_at: datetime, deduplicated: bool) -> None:
        self.memory_id = memory_id
        self.occurred_at = occurred_at
        self.deduplicated = deduplicated


def _candidate(row: asyncpg.Record) -> Candidate:
    return Candidate(
        memory_id=str(row["memory_id"]),
        content=row["content"],
        occurred_at=row["occurred_at"],
        metadata=json.loads(row["metadata"]),
        importance=row["importance"],
    )


class Repository:
    """All reads and writes of memories, chunks, audits and usage."""

    def __init__(self, pool: asyncpg.Pool, model: str) -> None:
        self._pool = pool
        self._model = model

    async def _run(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        for attempt in (1, 2):
            try:
                async with self._pool.acquire() as connection:
                    return await work(connection)
            except _CONNECTION_ERRORS as exc:
                if attempt == 2:
                    raise DatabaseUnavailable(f"PostgreSQL connection failed twice: {exc}; retry shortly") from exc
        raise AssertionError("unreachable")

    # --- memories -------------------------------------------------------------------------

    async def insert_memory(self, memory: NewMemory, embeddings: list[np.ndarray]) -> StoredRow:
        """Insert a memory with its window vectors (window 0 first), or find the same content.

        Dedup is per session on the exact content (sha256), enforced by a unique constraint,
        so concurrent writers of one text get one row.
        """

        async def work(connection: asyncpg.Connection) -> StoredRow:
            async with connection.transaction():
                row = await connection.fetchrow(
                    "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, metadata,"
                    " importance, embedding, embedding_model)"
                    " VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9)"
                    " ON CONFLICT (session, content_hash) DO NOTHING RETURNING memory_id, occurred_at",
                    memory.session,
                    uuid.uuid4(),
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
                    return StoredRow(str(existing["memory_id"]), existing["occurred_at"], True)
                if len(embeddings) > 1:
                    await connection.executemany(
                        "INSERT INTO memory_chunks (session, memory_id, chunk_no, embedding) VALUES ($1, $2, $3, $4)",
                        [(memory.session, row["memory_id"], no, vec) for no, vec in enumerate(embeddings[1:], 1)],
                    )
                return StoredRow(str(row["memory_id"]), row["occurred_at"], False)

        return await self._run(work)

    async def vector_search(
        self, session: str, vectors: list[np.ndarray], limit: int, ef_search: int
    ) -> list[list[tuple[str, float]]]:
        """Per query vector, the ``limit`` nearest memories of ``session`` as (memory_id, distance).

        Distance is pgvector's cosine distance ``<=>`` (0 same direction, 2 opposite). A long
        memory counts through its nearest window. HNSW runs with pgvector 0.8 iterative scans
        (strict order), so a small session among large ones still gets a full list; the
        settings are ``SET LOCAL`` and end with the transaction.
        """

        async def work(connection: asyncpg.Connection) -> list[list[tuple[str, float]]]:
            results = []
            async with connection.transaction():
                await connection.execute(  # one round trip for both settings
                    f"SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL hnsw.ef_search = {int(ef_search)}"
                )
                for vector in vectors:
                    rows = await connection.fetch(
                        "(SELECT memory_id, embedding <=> $2 AS distance FROM memories"
                        "  WHERE session = $1 ORDER BY embedding <=> $2 LIMIT $3)"
                        " UNION ALL "
                        "(SELECT memory_id, embedding <=> $2 AS distance FROM memory_chunks"
                        "  WHERE session = $1 ORDER BY embedding <=> $2 LIMIT $3)",
                        session,
                        vector,
                        limit,
                    )
                    best: dict[str, float] = {}
                    for row in rows:
                        key = str(row["memory_id"])
                        best[key] = min(best.get(key, 2.0), float(row["distance"]))
                    results.append(sorted(best.items(), key=lambda item: (item[1], item[0]))[:limit])
            return results

        return await self._run(work)

    async def keyword_search(self, session: str, query: str, limit: int) -> list[tuple[str, float]]:
        """BM25 over the session's memories for the query's words, best first.

        Words are PostgreSQL's English lexemes (stemmed, stop words dropped), so tsquery syntax
        in the query is plain text. Okapi BM25 (Robertson and Zaragoza, "The Probabilistic
        Relevance Framework: BM25 and Beyond", 2009) with k1 = 1.2, b = 0.75 and Lucene's
        idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; N, df and the average length are the
        session's own, and a memory's length is its count of distinct lexemes. In a session of
        20 or more memories a word found in more than half of them is ignored (Robertson's idf
        is <= 0 there): a user's name in every memory would otherwise rank all of them by length
        alone. Postings (tf, length) come from ``memory_terms`` (migration 003) and N and the
        total length from ``memory_stats`` (migration 002), both kept by triggers. Terms are
        summed in (memory_id, lexeme) order so equal inputs give bit-identical scores.
        """
        sql = """
            WITH q AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2))),
            postings AS MATERIALIZED (
                SELECT t.lexeme, t.memory_id, t.tf::float8 AS tf, t.dl::float8 AS dl
                FROM memory_terms t JOIN q USING (lexeme) WHERE t.session = $1),
            df AS (SELECT lexeme, count(*)::float8 AS df FROM postings GROUP BY lexeme),
            stats AS (SELECT coalesce(sum(n), 0)::float8 AS n,
                             greatest(sum(total_length)::numeric / nullif(sum(n), 0), 1)::float8 AS avgdl
                      FROM memory_stats WHERE session = $1)
            SELECT memory_id, sum(term) AS score
            FROM (SELECT p.memory_id, ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
                         * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / stats.avgdl)) AS term
                  FROM postings p JOIN df USING (lexeme) CROSS JOIN stats
                  WHERE stats.n < 20 OR df.df <= stats.n / 2
                  ORDER BY p.memory_id, p.lexeme) terms
            GROUP BY memory_id ORDER BY score DESC, memory_id LIMIT $3
        """
        rows = await self._run(lambda c: c.fetch(sql, session, query, limit))
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

    async def trigram_search(
        self, session: str, terms: list[str], limit: int, threshold: float
    ) -> list[tuple[str, float]]:
        """Memories containing text like any of ``terms`` (pg_trgm word similarity), best first.

        For identifiers (order numbers, file names, error codes), which full-text search
        splits ("A-77812" becomes "-77812") or misses.
        """

        async def work(connection: asyncpg.Connection) -> list[tuple[str, float]]:
            async with connection.transaction():
                await connection.execute(f"SET LOCAL pg_trgm.word_similarity_threshold = {float(threshold)}")
                return await connection.fetch(
                    "SELECT memory_id, max(word_similarity(t, content)) AS sim"
                    " FROM memories, unnest($2::text[]) AS t WHERE session = $1 AND t <% content"
                    " GROUP BY memory_id ORDER BY sim DESC, memory_id LIMIT $3",
                    session,
                    terms,
                    limit,
                )

        rows = await self._run(work)
        return [(str(row["memory_id"]), float(row["sim"])) for row in rows]

    async def substring_search(self, session: str, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """Memories containing any of ``terms`` as a substring, by the sum of the terms' idf.

        idf is BM25's ``ln(1 + (N - df + 0.5) / (df + 0.5))`` over the session. ``strpos``
        treats the terms as plain text (no LIKE wildcards). Used for CJK character bigrams.
        """
        sql = """
            WITH t AS (SELECT DISTINCT unnest($2::text[]) AS term),
            hits AS MATERIALIZED (
                SELECT m.memory_id, t.term FROM memories m JOIN t ON strpos(m.content, t.term) > 0
                WHERE m.session = $1),
            df AS (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term),
            stats AS (SELECT count(*)::float8 AS n FROM memories WHERE session = $1)
            SELECT hits.memory_id, sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))) AS score
            FROM hits JOIN df USING (term) CROSS JOIN stats
            GROUP BY hits.memory_id ORDER BY score DESC, hits.memory_id LIMIT $3
        """
        rows = await self._run(lambda c: c.fetch(sql, session, terms, limit))
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

    async def recent(self, session: str, limit: int) -> list[str]:
        """Ids of the ``limit`` latest memories by occurred_at (ties by memory_id)."""
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id FROM memories WHERE session = $1 ORDER BY occurred_at DESC, memory_id LIMIT $2",
                session,
                limit,
            )
        )
        return [str(row["memory_id"]) for row in rows]

    async def in_window(self, session: str, start: datetime, end: datetime, limit: int) -> list[str]:
        """Ids of memories whose occurred_at lies in [start, end], earliest first."""
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id FROM memories WHERE session = $1 AND occurred_at BETWEEN $2 AND $3"
                " ORDER BY occurred_at, memory_id LIMIT $4",
                session,
                start,
                end,
                limit,
            )
        )
        return [str(row["memory_id"]) for row in rows]

    async def fetch(self, session: str, memory_ids: list[str]) -> dict[str, Candidate]:
        """The memories of ``session`` with these ids, keyed by memory_id (missing ids absent)."""
        if not memory_ids:
            return {}
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id, content, occurred_at, metadata, importance FROM memories"
                " WHERE session = $1 AND memory_id = ANY($2::uuid[])",
                session,
                memory_ids,
            )
        )
        return {str(row["memory_id"]): _candidate(row) for row in rows}

    async def neighbours(
        self, session: str, memory_ids: list[str], span: int, max_gap_s: float
    ) -> dict[str, list[str]]:
        """For each id, up to ``span`` memories just before and after it in occurred_at order,
        no more than ``max_gap_s`` seconds away."""
        if not memory_ids or span <= 0:
            return {}
        gap = timedelta(seconds=max_gap_s)
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT a.memory_id AS anchor, n.memory_id AS neighbour FROM memories a"
                " CROSS JOIN LATERAL ("
                "  (SELECT memory_id FROM memories WHERE session = $1 AND (occurred_at, memory_id) < (a.occurred_at,"
                "   a.memory_id) AND occurred_at >= a.occurred_at - $4::interval ORDER BY occurred_at DESC, memory_id DESC LIMIT $3)"
                "  UNION ALL"
                "  (SELECT memory_id FROM memories WHERE session = $1 AND (occurred_at, memory_id) > (a.occurred_at,"
                "   a.memory_id) AND occurred_at <= a.occurred_at + $4::interval ORDER BY occurred_at, memory_id LIMIT $3)) n"
                " WHERE a.session = $1 AND a.memory_id = ANY($2::uuid[])",
                session,
                memory_ids,
                span,
                gap,
            )
        )
        found: dict[str, list[str]] = {}
        for row in rows:
            found.setdefault(str(row["anchor"]), []).append(str(row["neighbour"]))
        return found

    async def delete(self, session: str, memory_id: str) -> bool:
        """Delete one memory (and its chunks); False when the session has no such memory."""
        status = await self._run(
            lambda c: c.execute("DELETE FROM memories WHERE session = $1 AND memory_id = $2::uuid", session, memory_id)
        )
        return status != "DELETE 0"

    async def delete_session(self, session: str) -> int:
        """Delete every memory of ``session``; returns how many."""
        status = await self._run(lambda c: c.execute("DELETE FROM memories WHERE session = $1", session))
        return int(status.split()[-1])

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

    # --- LLM usage ------------------------------------------------------------------------

    async def add_usage(self, operation: str, model: str, counts: dict[str, int]) -> None:
        """Add one call's token counts to the totals of (operation, model)."""
        columns = ("calls", "errors", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
        values = [int(counts.get(name, 0)) for name in columns]
        updates = ", ".join(f"{name} = llm_usage.{name} + EXCLUDED.{name}" for name in columns)
        await self._run(
            lambda c: c.execute(
                f"INSERT INTO llm_usage (operation, model, {', '.join(columns)}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                f" ON CONFLICT (operation, model) DO UPDATE SET {updates}",
                operation,
                model,
                *values,
            )
        )

    async def usage_totals(self) -> list[dict[str, int | str]]:
        """Token totals per operation, summed over models."""
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT operation, sum(calls)::bigint AS calls, sum(errors)::bigint AS errors,"
                " sum(prompt_tokens)::bigint AS prompt_tokens, sum(cached_prompt_tokens)::bigint AS cached_prompt_tokens,"
                " sum(completion_tokens)::bigint AS completion_tokens, sum(reasoning_tokens)::bigint AS reasoning_tokens"
                " FROM llm_usage GROUP BY operation ORDER BY operation"
            )
        )
        return [dict(row) for row in rows]

    async def reset_usage(self) -> None:
        """Zero every usage total."""
        await self._run(lambda c: c.execute("DELETE FROM llm_usage"))

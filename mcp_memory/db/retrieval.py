"""Recall's search queries over one session: BM25, identifier, CJK, and the session's vectors for an
in-process copy (nearest vectors: ``nearest.py``; chronology: ``chronology.py``).

Mixed into ``Repository``, which provides ``_run`` (a pooled connection, one retry after a
dropped connection). Every statement filters on the session and binds every value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg
import numpy as np

from mcp_memory.db.filters import among, condition
from mcp_memory.models import RecallFilter

__all__ = ["RetrievalQueries", "SessionVectors", "SessionVersion"]

# A session's vectors for an in-process copy: every window of every memory ...
_SESSION_VECTORS = (
    "SELECT memory_id, created_at, occurred_at, embedding FROM memories WHERE session = $1"
    " UNION ALL "
    "SELECT c.memory_id, m.created_at, m.occurred_at, c.embedding"
    " FROM memory_chunks c JOIN memories m USING (session, memory_id) WHERE c.session = $1"
)
# ... or those of the memories created after $2 (memories_session_created_at, migration 006).
_SESSION_VECTORS_SINCE = (
    "SELECT memory_id, created_at, occurred_at, embedding FROM memories WHERE session = $1 AND created_at > $2"
    " UNION ALL "
    "SELECT c.memory_id, m.created_at, m.occurred_at, c.embedding"
    " FROM memories m JOIN memory_chunks c USING (session, memory_id) WHERE m.session = $1 AND m.created_at > $2"
)


@dataclass(frozen=True)
class SessionVersion:
    """A session's ``memory_stats`` row: ``memories`` now, ``changes`` ever made (inserts, deletes and
    updates of memories), and ``version``, new at every change and never reused."""

    memories: int
    changes: int
    version: int
    born: int = 0  # the row's creation (migration 007); a new one restarts `changes`


def _version(row: asyncpg.Record | None) -> SessionVersion:
    if row is None:
        return SessionVersion(0, 0, 0, 0)
    return SessionVersion(int(row["n"]), int(row["changes"]), int(row["version"]), int(row["born"]))


@dataclass(frozen=True)
class SessionVectors:
    """A session's vectors as read in one snapshot (see ``RetrievalQueries.session_vectors``)."""

    version: SessionVersion
    memory_ids: list[str]
    created_at: list[datetime]
    occurred_at: list[datetime]
    embeddings: np.ndarray


class RetrievalQueries:
    """The ranked lists recall fuses, each a list of (memory_id, score) or memory_ids, best first."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def session_version(self, session: str) -> SessionVersion:
        """The session's row of ``memory_stats`` (migration 006); zeros for a session never written."""
        row = await self._run(
            lambda c: c.fetchrow("SELECT n, changes, version, born FROM memory_stats WHERE session = $1", session)
        )
        return _version(row)

    async def session_vectors(self, session: str, since: datetime | None) -> SessionVectors:
        """Every vector of ``session`` (window 0 of each memory and its later windows), or only
        those of memories created after ``since``, with the session's version, in one snapshot.

        Returns:
            SessionVectors: ``memory_ids``, ``created_at`` and ``occurred_at`` per row, ``embeddings`` as a float32
            array of shape (rows, dim), and ``version`` as ``session_version`` in the same snapshot.
        """

        async def work(connection: asyncpg.Connection) -> SessionVectors:
            async with connection.transaction(isolation="repeatable_read", readonly=True):
                version = _version(
                    await connection.fetchrow("SELECT n, changes, version, born FROM memory_stats WHERE session = $1", session)
                )
                if since is None:
                    rows = await connection.fetch(_SESSION_VECTORS, session)
                else:
                    rows = await connection.fetch(_SESSION_VECTORS_SINCE, session, since)
            matrix = np.array([row["embedding"].to_numpy() for row in rows], dtype=np.float32)
            return SessionVectors(
                version=version,
                memory_ids=[str(row["memory_id"]) for row in rows],
                created_at=[row["created_at"] for row in rows],
                occurred_at=[row["occurred_at"] for row in rows],
                embeddings=matrix,
            )

        return await self._run(work)

    async def keyword_search(
        self, session: str, query: str, limit: int, max_terms: int = 32, filters: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over the session's memories for the query's words, best first.

        Words are PostgreSQL's English lexemes (stemmed, stop words dropped), so tsquery syntax
        in the query is plain text. Okapi BM25 (Robertson and Zaragoza, "The Probabilistic
        Relevance Framework: BM25 and Beyond", 2009) with k1 = 1.2, b = 0.75 and Lucene's
        idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; N, df and the average length are the
        session's own, and a memory's length is its count of distinct lexemes. In a session of
        20 or more memories a word found in more than half of them is ignored (Robertson's idf
        is <= 0 there): a user's name in every memory would otherwise rank all of them by length
        alone. Postings (tf, length) come from ``memory_terms`` (migration 003; read by
        index-only scans since 005) and N and the total length from ``memory_stats`` (migration
        002), both kept by triggers. A word's df is counted on the index first, so the
        postings of ignored words are never read; of the rest, only the ``max_terms`` rarest (ties by
        lexeme) are read, so the postings a query reads are bounded whatever its length. Terms are
        summed in lexeme order. ``filters`` limits the memories scored (N, df and the average length
        stay the session's).
        """
        passing = among(filters, "t.memory_id", 5)
        sql = """
            WITH stats AS (SELECT coalesce(sum(n), 0)::float8 AS n,
                                  greatest(sum(total_length)::numeric / nullif(sum(n), 0), 1)::float8 AS avgdl
                           FROM memory_stats WHERE session = $1),
            weights AS MATERIALIZED (
                SELECT * FROM (
                    SELECT q.lexeme, ln(1 + (stats.n - d.df + 0.5) / (d.df + 0.5)) AS idf
                    FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2))) q CROSS JOIN stats
                    CROSS JOIN LATERAL (SELECT count(*)::float8 AS df FROM memory_terms t
                                        WHERE t.session = $1 AND t.lexeme = q.lexeme) d
                    WHERE d.df > 0 AND (stats.n < 20 OR d.df <= stats.n / 2)
                    ORDER BY d.df, q.lexeme LIMIT $4) rarest
                ORDER BY lexeme)
            SELECT p.memory_id, sum(w.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / stats.avgdl))) AS score
            FROM weights w CROSS JOIN stats
            CROSS JOIN LATERAL (SELECT t.memory_id, t.tf::float8 AS tf, t.dl::float8 AS dl FROM memory_terms t
                                WHERE t.session = $1 AND t.lexeme = w.lexeme{passing}) p
            GROUP BY p.memory_id ORDER BY score DESC, p.memory_id LIMIT $3
        """.replace("{passing}", passing.sql)
        rows = await self._run(lambda c: c.fetch(sql, session, query, limit, max_terms, *passing.values))
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

    async def trigram_search(
        self, session: str, terms: list[str], limit: int, threshold: float, filters: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """Memories containing text like any of ``terms`` (pg_trgm word similarity), best first.

        For identifiers (order numbers, file names, error codes), which full-text search
        splits ("A-77812" becomes "-77812") or misses.
        """
        where = condition(filters, "memories", 4)

        async def work(connection: asyncpg.Connection) -> list[tuple[str, float]]:
            async with connection.transaction():
                await connection.execute(  # a custom plan: the best index depends on the terms and the session
                    "SET LOCAL plan_cache_mode = force_custom_plan;"
                    f" SET LOCAL pg_trgm.word_similarity_threshold = {float(threshold)}"
                )
                return await connection.fetch(
                    "SELECT memory_id, max(word_similarity(t, content)) AS sim"
                    " FROM memories, unnest($2::text[]) AS t WHERE session = $1 AND t <% content" + where.sql
                    + " GROUP BY memory_id ORDER BY sim DESC, memory_id LIMIT $3",
                    session,
                    terms,
                    limit,
                    *where.values,
                )

        rows = await self._run(work)
        return [(str(row["memory_id"]), float(row["sim"])) for row in rows]

    async def gram_search(
        self, session: str, terms: list[str], limit: int, weights: list[float], filters: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """Memories containing any of ``terms`` (CJK characters and character bigrams), by the sum of
        the terms' idf, each times its weight (``weights``, parallel to ``terms``).

        idf is BM25's ``ln(1 + (N - df + 0.5) / (df + 0.5))`` over the session, N from
        ``memory_stats``. A memory contains a term when its content does (as ``strpos`` would say);
        the postings come from ``memory_grams`` (migration 013), which holds every CJK character
        and pair of adjacent CJK characters of each memory, read by primary key. ``filters`` limits the
        memories scored (df and N stay the session's).
        """
        passing = among(filters, "hits.memory_id", 5)
        if len(weights) != len(terms):
            raise ValueError(f"gram_search: {len(terms)} terms but {len(weights)} weights")
        sql = """
            WITH t AS (SELECT term, max(weight) AS weight
                       FROM unnest($2::text[], $4::float8[]) AS u(term, weight) GROUP BY term),
            hits AS MATERIALIZED (
                SELECT g.memory_id, t.term, t.weight FROM t JOIN memory_grams g ON g.session = $1 AND g.gram = t.term),
            df AS (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term),
            stats AS (SELECT coalesce(sum(n), 0)::float8 AS n FROM memory_stats WHERE session = $1)
            SELECT hits.memory_id, sum(hits.weight * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))) AS score
            FROM hits JOIN df USING (term) CROSS JOIN stats{passing}
            GROUP BY hits.memory_id ORDER BY score DESC, hits.memory_id LIMIT $3
        """.replace("{passing}", passing.sql.replace(" AND ", " WHERE ", 1))
        rows = await self._run(lambda c: c.fetch(sql, session, terms, limit, weights, *passing.values))
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

    async def embeddings(self, session: str, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Window 0's vector of each of ``memory_ids`` in ``session``, unit length, keyed by memory_id
        (ids the session lacks are absent)."""
        if not memory_ids:
            return {}
        rows = await self._run(
            lambda c: c.fetch(
                "SELECT memory_id, embedding FROM memories WHERE session = $1 AND memory_id = ANY($2::uuid[])",
                session,
                memory_ids,
            )
        )
        found = {}
        for row in rows:
            vector = np.asarray(row["embedding"].to_numpy(), dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            found[str(row["memory_id"])] = vector / (norm or 1.0)
        return found

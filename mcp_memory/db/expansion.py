"""Recall's second-order keyword queries: BM25 of a query expanded with the words of its best
memories (pseudo-relevance feedback), and BM25 among the memories that name the question's names.

Mixed into ``Repository`` like ``RetrievalQueries``; BM25 is ``keyword_search``'s (Okapi, k1 = 1.2,
b = 0.75, Lucene's idf, the session's own statistics from ``memory_terms`` and ``memory_stats``).
Every statement filters on the session and binds every value.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from mcp_memory.db.filters import among
from mcp_memory.models import RecallFilter

__all__ = ["ExpansionQueries"]

# The session's N and average length, as in keyword_search.
_STATS = """stats AS (SELECT coalesce(sum(n), 0)::float8 AS n,
                         greatest(sum(total_length)::numeric / nullif(sum(n), 0), 1)::float8 AS avgdl
                  FROM memory_stats WHERE session = $1)"""

# BM25 of (lexeme, weight) pairs in `weights`, over postings limited by `{where}`.
_SCORE = """SELECT p.memory_id,
                   sum(w.weight * w.idf * p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * p.dl / stats.avgdl))) AS score
            FROM weights w CROSS JOIN stats
            CROSS JOIN LATERAL (SELECT t.memory_id, t.tf::float8 AS tf, t.dl::float8 AS dl FROM memory_terms t
                                WHERE t.session = $1 AND t.lexeme = w.lexeme{where}) p
            GROUP BY p.memory_id ORDER BY score DESC, p.memory_id LIMIT $3"""

# idf of the query's own lexemes (as keyword_search: words in more than half of a session of 20+ ignored).
_ASKED = """asked AS MATERIALIZED (
                SELECT q.lexeme, ln(1 + (stats.n - d.df + 0.5) / (d.df + 0.5)) AS idf
                FROM (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2)){exclude}) q CROSS JOIN stats
                CROSS JOIN LATERAL (SELECT count(*)::float8 AS df FROM memory_terms t
                                    WHERE t.session = $1 AND t.lexeme = q.lexeme) d
                WHERE d.df > 0 AND (stats.n < 20 OR d.df <= stats.n / 2))"""


class ExpansionQueries:
    """Ranked lists of (memory_id, score), best first, that recall fuses besides the first ones."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def expanded_keyword_search(
        self, session: str, query: str, memory_ids: list[str], terms: int, term_weight: float, limit: int,
        filters: RecallFilter | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 for the query's words plus the ``terms`` most distinctive words of ``memory_ids``.

        Pseudo-relevance feedback (Rocchio; Robertson and Sparck Jones' term selection, here by
        idf times the number of the given memories that hold the word): a word qualifies when it is
        not in the query and at least one other memory of the session holds it (a word of one memory
        finds only that memory) but at most half of a session of 20 or more. Added words weigh
        ``term_weight`` of a query word with the same idf. ``filters`` limits the memories scored.
        """
        passing = among(filters, "t.memory_id", 7)
        sql = f"""
            WITH {_STATS}, {_ASKED.format(exclude="")},
            candidates AS MATERIALIZED (
                SELECT t.lexeme, count(*)::float8 AS hits FROM memory_terms t
                WHERE t.session = $1 AND t.memory_id = ANY($4::uuid[])
                  AND t.lexeme NOT IN (SELECT lexeme FROM unnest(to_tsvector('english', $2)))
                GROUP BY t.lexeme),
            added AS MATERIALIZED (
                SELECT c.lexeme, ln(1 + (stats.n - d.df + 0.5) / (d.df + 0.5)) AS idf, c.hits
                FROM candidates c CROSS JOIN stats
                CROSS JOIN LATERAL (SELECT count(*)::float8 AS df FROM memory_terms t
                                    WHERE t.session = $1 AND t.lexeme = c.lexeme) d
                WHERE d.df > c.hits AND (stats.n < 20 OR d.df <= stats.n / 2)
                ORDER BY ln(1 + (stats.n - d.df + 0.5) / (d.df + 0.5)) * c.hits DESC, c.lexeme LIMIT $5),
            weights AS (SELECT lexeme, idf, 1.0::float8 AS weight FROM asked
                        UNION ALL SELECT lexeme, idf, $6::float8 FROM added ORDER BY lexeme)
            {_SCORE.format(where=passing.sql)}
        """
        rows = await self._run(
            lambda c: c.fetch(sql, session, query, limit, memory_ids, terms, term_weight, *passing.values)
        )
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

    async def entity_keyword_search(
        self, session: str, query: str, names: list[str], limit: int, filters: RecallFilter | None = None
    ) -> list[tuple[str, float]]:
        """BM25 for the query's words other than ``names``, among the memories that hold every name.

        A name found in most memories of a session (the user, a speaker) is ignored by
        ``keyword_search``; here it narrows the memories instead, so "what did Melanie paint?"
        ranks Melanie's memories about painting. Names are matched as English lexemes. Empty when no
        memory holds them all or the query has no other word. ``filters`` limits the memories scored.
        """
        passing = among(filters, "t.memory_id", 5)
        sql = f"""
            WITH {_STATS},
            names AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $4))),
            {_ASKED.format(exclude=" WHERE lexeme NOT IN (SELECT lexeme FROM names)")},
            holders AS MATERIALIZED (
                SELECT t.memory_id FROM memory_terms t
                WHERE t.session = $1 AND t.lexeme IN (SELECT lexeme FROM names)
                GROUP BY t.memory_id HAVING count(*) = (SELECT count(*) FROM names)),
            weights AS (SELECT lexeme, idf, 1.0::float8 AS weight FROM asked ORDER BY lexeme)
            {_SCORE.format(where=" AND t.memory_id IN (SELECT memory_id FROM holders)" + passing.sql)}
        """
        rows = await self._run(lambda c: c.fetch(sql, session, query, limit, " ".join(names), *passing.values))
        return [(str(row["memory_id"]), float(row["score"])) for row in rows]

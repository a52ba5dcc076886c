"""What ``mcp-memory doctor`` reads from the database: versions, extensions, applied migrations,
index validity, and the size of the sessions recall would copy into memory.

Mixed into ``Repository``, which provides ``_run``. Read-only catalogue and statistics queries,
each one round trip; ``vector_sessions`` is the only one that reads rows of ours (``memory_stats``
and ``memory_chunks`` of the small sessions), across every session by design.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg

__all__ = ["CitusLayout", "HealthQueries", "VectorSessions"]


@dataclass(frozen=True)
class VectorSessions:
    """The sessions of at most ``exact_max`` memories (those recall copies into memory):
    how many, their memories, their vectors (one per window: memories plus later windows), and
    the vectors of the largest of them."""

    sessions: int
    memories: int
    vectors: int
    largest_vectors: int


@dataclass(frozen=True)
class CitusLayout:
    """A Citus coordinator's view: its version, its active primary workers (``host:port``), and per
    table of ours ``(type, distribution column, colocation id)`` as ``citus_tables`` shows them."""

    version: str
    workers: list[str]
    tables: dict[str, tuple[str, str, int]]


class HealthQueries:
    """Catalogue reads for ``doctor``."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def server_version(self) -> tuple[int, str]:
        """PostgreSQL's ``server_version_num`` (170002 for 17.2) and ``server_version`` text."""
        row = await self._run(lambda c: c.fetchrow(
            "SELECT current_setting('server_version_num')::int AS num, current_setting('server_version') AS text"))
        return int(row["num"]), str(row["text"])

    async def extensions(self) -> dict[str, str]:
        """Installed extensions of this database: name -> version."""
        rows = await self._run(lambda c: c.fetch("SELECT extname, extversion FROM pg_extension ORDER BY extname"))
        return {row["extname"]: row["extversion"] for row in rows}

    async def applied_migrations(self) -> list[int]:
        """Versions recorded in ``schema_migrations``, ascending."""
        rows = await self._run(lambda c: c.fetch("SELECT version FROM schema_migrations ORDER BY version"))
        return [int(row["version"]) for row in rows]

    async def indexes(self) -> list[tuple[str, str, bool]]:
        """(table, index, valid) for every index on a table of the current schema; ``valid`` is
        ``pg_index.indisvalid AND indisready`` (false after a failed ``CREATE INDEX CONCURRENTLY``,
        which leaves an index that queries never use but every write still maintains)."""
        rows = await self._run(lambda c: c.fetch(
            "SELECT t.relname AS table_name, x.relname AS index_name, i.indisvalid AND i.indisready AS valid"
            " FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema() ORDER BY 1, 2"))
        return [(row["table_name"], row["index_name"], bool(row["valid"])) for row in rows]

    async def vector_sessions(self, exact_max: int) -> VectorSessions:
        """The sessions of at most ``exact_max`` memories, and their vectors (see ``VectorSessions``)."""
        row = await self._run(lambda c: c.fetchrow(
            "SELECT count(*) AS sessions, coalesce(sum(s.n), 0) AS memories,"
            " coalesce(sum(s.n + coalesce(k.chunks, 0)), 0) AS vectors,"
            " coalesce(max(s.n + coalesce(k.chunks, 0)), 0) AS largest"
            " FROM memory_stats s"
            " LEFT JOIN (SELECT session, count(*) AS chunks FROM memory_chunks GROUP BY session) k"
            "  ON k.session = s.session"
            " WHERE s.n > 0 AND s.n <= $1", exact_max))  # a session emptied keeps its row, with n = 0 (006)
        return VectorSessions(int(row["sessions"]), int(row["memories"]), int(row["vectors"]), int(row["largest"]))

    async def citus_layout(self) -> CitusLayout | None:
        """The Citus layout of the database, or None when it has no citus extension."""

        async def read(connection: asyncpg.Connection) -> CitusLayout | None:
            if not await connection.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'citus'"):
                return None
            version = await connection.fetchval("SELECT citus_version()")
            workers = await connection.fetch(
                "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' AND isactive"
                " ORDER BY nodeid")
            tables = await connection.fetch(
                "SELECT table_name::text AS name, citus_table_type AS kind, distribution_column AS column_name,"
                " colocation_id FROM citus_tables ORDER BY 1")
            return CitusLayout(
                str(version).split(" on ")[0].removeprefix("Citus "),  # "Citus 14.0.1 on x86_64-..., 64-bit"
                [f"{row['nodename']}:{row['nodeport']}" for row in workers],
                {row["name"]: (row["kind"], row["column_name"], int(row["colocation_id"])) for row in tables},
            )

        return await self._run(read)

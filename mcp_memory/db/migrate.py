"""Numbered migrations, applied once each under an advisory lock, and the start-up checks.

Migrations are ``migrations/NNN_name.sql``, applied in order and recorded in
``schema_migrations``. Two servers starting at once serialise on a transaction-level advisory
lock, so each file runs exactly once.
"""

from __future__ import annotations

import logging
from importlib import resources

import asyncpg

from mcp_memory.db import citus
from mcp_memory.errors import SchemaError

__all__ = ["MIN_PGVECTOR", "migrate", "packaged_migrations", "version_tuple"]

logger = logging.getLogger(__name__)

MIN_PGVECTOR = (0, 8, 4)  # older releases have HNSW vacuum bugs (pgvector CHANGELOG 0.8.1-0.8.4)
_LOCK_KEY = 0x6D63_706D_656D  # "mcpmem": the advisory lock all mcp-memory servers take to migrate


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _migration_files() -> list[tuple[int, str, str]]:
    folder = resources.files("mcp_memory.db") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def packaged_migrations() -> list[tuple[int, str]]:
    """(version, file name) of every migration this package holds, ascending."""
    return [(version, name) for version, name, _ in _migration_files()]


def version_tuple(text: str) -> tuple[int, ...]:
    """``"0.8.1"`` -> ``(0, 8, 1)``: an extension version as migrate compares it."""
    return _version(text)


async def migrate(url: str, model: str, dim: int, distribute: bool = True) -> bool:
    """Create the extensions and tables, distribute them on Citus, then check that the stored model
    matches ``model``.

    Args:
        url: PostgreSQL URL.
        model: embedding model name the server will use.
        dim: its vector length.
        distribute: on a database with the citus extension, distribute every table not yet
            distributed (db/citus.py); False leaves that to the operator.

    Returns:
        Whether the database has the citus extension (the pool then sets ``citus.pool_settings``).

    Raises:
        SchemaError: pgvector is missing or older than 0.8.4, or the database holds vectors
            of another model or dimension (the message says what to do).
    """
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            await _ensure_pgvector(connection)
            await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            await connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = {row["version"] for row in await connection.fetch("SELECT version FROM schema_migrations")}
            for version, name, sql in _migration_files():
                if version in applied:
                    continue
                logger.info("applying migration %s", name)
                await connection.execute(sql.replace("{dim}", str(int(dim))))
                await connection.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name)
            if distribute and (tables := await citus.distribute(connection)):
                logger.info("citus: distributed by session or made reference tables: %s", ", ".join(tables))
            await _check_embedding_model(connection, model, dim)
            return await citus.has_citus(connection)
    finally:
        await connection.close()


async def _ensure_pgvector(connection: asyncpg.Connection) -> None:
    available = await connection.fetchval(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
    )
    if available is None:
        raise SchemaError(
            "the pgvector extension is not installed on this PostgreSQL server; install pgvector >= 0.8.4 "
            "or unset MCP_MEMORY_DATABASE_URL to use the embedded PostgreSQL"
        )
    await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    installed = await connection.fetchval("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    if _version(installed) < MIN_PGVECTOR:
        raise SchemaError(
            f"pgvector {installed} is installed; mcp-memory needs >= 0.8.4 (older releases have HNSW vacuum bugs). "
            "Upgrade the pgvector package on the server, then run: ALTER EXTENSION vector UPDATE;"
        )


async def _check_embedding_model(connection: asyncpg.Connection, model: str, dim: int) -> None:
    row = await connection.fetchrow("SELECT model, dim FROM embedding_model")
    if row is None:
        await connection.execute("INSERT INTO embedding_model (model, dim) VALUES ($1, $2)", model, dim)
        return
    if row["model"] != model or row["dim"] != dim:
        count = await connection.fetchval("SELECT count(*) FROM memories")
        raise SchemaError(
            f"this database holds {count} memories embedded with {row['model']} ({row['dim']} dims), but the server "
            f"is configured for {model} ({dim} dims); vectors of two models cannot be searched together. "
            f"Set embedding.model back to {row['model']}, or point MCP_MEMORY_DATA_DIR / MCP_MEMORY_DATABASE_URL "
            "at a new database for the new model."
        )

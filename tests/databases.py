"""Throw-away databases on the test server, built up to an older migration (upgrade tests)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import asyncpg

from mcp_memory.db import migrate as migrations


@asynccontextmanager
async def database_at(pg_url: str, last_migration: int, dim: int = 384) -> AsyncIterator[str]:
    """A new database with migrations 1..``last_migration`` applied as the server would have
    applied them (recorded in schema_migrations, embedding model ``m`` of ``dim``); yields its URL
    and drops it afterwards."""
    admin = await asyncpg.connect(pg_url)
    name = f"upgrade_{uuid.uuid4().hex[:8]}"
    await admin.execute(f"CREATE DATABASE {name}")
    url = urlsplit(pg_url)._replace(path=f"/{name}").geturl()
    try:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute("CREATE EXTENSION vector; CREATE EXTENSION pg_trgm")
            await connection.execute(
                "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for version, file, sql in migrations._migration_files():
                if version <= last_migration:
                    await connection.execute(sql.replace("{dim}", str(dim)))
                    await connection.execute("INSERT INTO schema_migrations VALUES ($1, $2)", version, file)
            await connection.execute("INSERT INTO embedding_model (model, dim) VALUES ('m', $1)", dim)
        finally:
            await connection.close()
        yield url
    finally:
        await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        await admin.close()

"""Throw-away databases on the test server, built up to an older migration (upgrade tests), and
who holds locks on the test database (so a wait on a lock fails with names instead of hanging)."""

from __future__ import annotations

import asyncio
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


async def lock_holders(connection: asyncpg.Connection) -> list[str]:
    """Every other backend that holds a lock in this database: pid, state, wait event, query."""
    rows = await connection.fetch(
        "SELECT DISTINCT a.pid, a.state, a.wait_event, a.backend_xmin, left(a.query, 120) AS query"
        " FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
        " WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND l.granted"
        " ORDER BY a.pid"
    )
    return [f"pid {r['pid']} {r['state']}/{r['wait_event']} xmin {r['backend_xmin']}: {r['query']}" for r in rows]


async def lock_every_table(connection: asyncpg.Connection) -> None:
    """Take the ACCESS EXCLUSIVE lock (what TRUNCATE and most ALTERs take) of every table in the
    schema and let them go at once.

    ``connection`` should carry a ``lock_timeout``; when it runs out, raises AssertionError naming
    the backends that still hold locks instead of waiting on them for ever.

    First it waits (up to 10 s) until no other backend is running a statement: a statement of a
    cancelled, terminated connection runs on until it next talks to its client, and one that takes
    its next table's lock after this LOCK took that table deadlocks with it (seen once under load).
    A backend left ``active``/``ClientRead`` (the bug the callers look for) is not waited for: it
    holds its locks and the LOCK below times out on it.
    """
    for _ in range(200):
        running = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND state = 'active' AND wait_event IS DISTINCT FROM 'ClientRead'"
        )
        if not running:
            break
        await asyncio.sleep(0.05)
    try:
        async with connection.transaction():
            tables = await connection.fetchval(
                "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables WHERE schemaname = 'public'"
            )
            await connection.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
    except asyncpg.exceptions.LockNotAvailableError:
        raise AssertionError(f"tables still locked by: {await lock_holders(connection)}") from None


async def session_contents(url: str, session: str) -> list[str]:
    """The contents of ``session``'s memories in the database at ``url``, sorted: what a call stored, read
    behind the server's back."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch("SELECT content FROM memories WHERE session = $1 ORDER BY content", session)
    finally:
        await connection.close()
    return [row["content"] for row in rows]

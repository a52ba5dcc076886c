"""PostgreSQL refusing or dropping connections reaches the caller as DatabaseUnavailable, with its
reason, never as a bare driver error (which the SDK would hide behind "Error executing tool")."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import anyio
import asyncpg
import pytest

from mcp_memory.db.pool import open_pool
from mcp_memory.db.repository import Repository
from mcp_memory.errors import DatabaseUnavailable

pytestmark = pytest.mark.anyio


async def test_a_role_out_of_connections_is_reported_as_database_unavailable(deps, pg_url):
    """TooManyConnectionsError (53300) was not among the connection errors and escaped raw."""
    role = f"mm_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_url)
    await admin.execute(f"CREATE ROLE {role} LOGIN; GRANT SELECT ON memories TO {role}")
    parts = urlsplit(pg_url)
    url = parts._replace(netloc=f"{role}:@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")).geturl()
    pool = await open_pool(url, 1, 1)
    try:
        repository = Repository(pool, "m")
        assert await repository.count("s-none") == 0
        await admin.execute(f"ALTER ROLE {role} CONNECTION LIMIT 0")
        await admin.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
        with anyio.fail_after(10):  # until its backend is gone; a dead pooled connection is replaced on use
            while await admin.fetchval("SELECT count(*) FROM pg_stat_activity WHERE usename = $1", role):
                await anyio.sleep(0.01)
        with pytest.raises(DatabaseUnavailable, match="too many connections"):
            await repository.count("s-none")
    finally:
        await pool.close()
        await admin.execute(f"DROP OWNED BY {role}; DROP ROLE {role}")
        await admin.close()


async def test_a_pooled_connection_killed_just_before_use_is_replaced(deps, pg_url):
    """Used within milliseconds of pg_terminate_backend, the dead connection raised asyncpg's
    InternalClientError ("another operation is in progress"), which was not retried."""
    admin = await asyncpg.connect(pg_url)
    pool = await open_pool(pg_url, 1, 1)
    try:
        repository = Repository(pool, "m")
        assert await repository.count("s-none") == 0
        for _ in range(3):
            pid = await pool.fetchval("SELECT pg_backend_pid()")
            await admin.execute("SELECT pg_terminate_backend($1)", pid)
            assert await repository.count("s-none") == 0
    finally:
        await pool.close()
        await admin.close()

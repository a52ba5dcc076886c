"""The asyncpg connection pool, with the pgvector codec registered on every connection."""

from __future__ import annotations

import anyio
import asyncpg
from pgvector.asyncpg import register_vector

from mcp_memory.errors import DatabaseUnavailable

__all__ = ["CONNECT_TIMEOUT_S", "open_pool", "ping"]

# A new connection that takes longer fails the call as DatabaseUnavailable (asyncpg's default is
# 60 s; twice that, with the repository's one retry, outlasts every MCP client's timeout).
CONNECT_TIMEOUT_S = 5.0


async def _init_connection(connection: asyncpg.Connection) -> None:
    await register_vector(connection)


async def _reset_connection(connection: asyncpg.Connection) -> None:
    """Nothing to reset: the repository only uses ``SET LOCAL`` and transaction-scoped state.

    asyncpg still rolls back an open transaction before calling this; its default reset adds a
    round trip per release (``RESET ALL``, ``UNLISTEN *``, ...) that this pool never needs
    (measured 0.14 -> 0.09 ms per acquire/release, see benchmarks/RESULTS.md). Nothing is sent
    on release either, so a connection left inside an unfinished exchange would keep its backend's
    locks: ``Repository._run`` terminates every connection whose statement was cancelled.
    """


async def open_pool(
    url: str, min_size: int, max_size: int, statement_timeout_ms: int = 0, settings: dict[str, str] | None = None
) -> asyncpg.Pool:
    """Open a pool to ``url``; every new connection (also after a reconnect) gets the vector codec.

    Call it after the vector extension exists (see ``migrate.ensure_extensions``).
    ``statement_timeout_ms``: PostgreSQL's ``statement_timeout`` on every pooled connection (0:
    none), so no statement of a tool call runs longer than that; migrations use connections of
    their own. ``settings``: more PostgreSQL settings for every connection (``citus.pool_settings``).

    Raises:
        DatabaseUnavailable: the server cannot be reached.
    """
    try:
        return await asyncpg.create_pool(
            url, min_size=min_size, max_size=max_size, init=_init_connection, reset=_reset_connection,
            command_timeout=60, timeout=CONNECT_TIMEOUT_S,
            server_settings={"statement_timeout": f"{int(statement_timeout_ms)}ms", **(settings or {})},
        )
    except (OSError, asyncpg.PostgresError) as exc:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc


async def ping(url: str, timeout_s: float) -> None:
    """Connect to ``url`` on a connection of its own and run ``SELECT 1``, within ``timeout_s`` seconds in all.

    Raises:
        DatabaseUnavailable: PostgreSQL cannot be reached, refused, or did not answer in time.
    """
    try:
        with anyio.fail_after(timeout_s):
            connection = await asyncpg.connect(url, timeout=timeout_s)
            try:
                await connection.fetchval("SELECT 1")
            finally:
                await connection.close(timeout=timeout_s)
    except TimeoutError:
        raise DatabaseUnavailable(f"database unavailable: PostgreSQL did not answer SELECT 1 within {timeout_s} s") from None
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise DatabaseUnavailable(f"database unavailable: PostgreSQL cannot be reached ({exc})") from exc

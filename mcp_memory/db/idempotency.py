"""Idempotency keys of store_memory (migration 010): what the first call with a key stored.

Mixed into ``Repository``, which provides ``_run``; ``claim`` runs inside
``Repository.insert_memory``'s transaction, so a key commits with its memory or not at all.
Two calls racing with one key serialise on the table's primary key: the second insert waits
until the first transaction ends, then finds its row (READ COMMITTED reads it in the next
statement) and the second transaction rolls back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, NamedTuple

import asyncpg

from mcp_memory.models import NewMemory

__all__ = ["IdempotencyQueries", "KeyRow", "KeyTaken", "claim"]

_EARLIER = (
    "SELECT k.memory_id::text AS memory_id, k.content_hash, k.request_hash, k.superseded::text[] AS superseded,"
    " m.occurred_at FROM idempotency_keys k"
    " LEFT JOIN memories m ON m.session = k.session AND m.memory_id = k.memory_id"
    " WHERE k.session = $1 AND k.idempotency_key = $2"
)


class KeyRow(NamedTuple):
    """The call that first used a key: the memory it stored (``occurred_at`` None once that memory
    was deleted), the sha256 of its content and of all its arguments, and the ids it marked superseded."""

    memory_id: str
    content_hash: bytes
    request_hash: bytes
    superseded: list[str]
    occurred_at: datetime | None


class KeyTaken(Exception):
    """Raised inside the insert's transaction to roll it back: an earlier call holds the key."""

    def __init__(self, earlier: KeyRow) -> None:
        super().__init__(earlier.memory_id)
        self.earlier = earlier


def _key_row(row: asyncpg.Record) -> KeyRow:
    return KeyRow(row["memory_id"], bytes(row["content_hash"]), bytes(row["request_hash"]),
                  list(row["superseded"]), row["occurred_at"])


async def claim(connection: asyncpg.Connection, memory: NewMemory, memory_id: str, superseded: list[str]) -> None:
    """Record ``memory.idempotency_key`` for ``memory_id``; call inside the insert's transaction.

    Raises:
        KeyTaken: an earlier call (committed, possibly a moment ago by a racing call) holds the key;
            the caller lets it roll the transaction back.
    """
    recorded = await connection.fetchval(
        "INSERT INTO idempotency_keys (session, idempotency_key, memory_id, content_hash, request_hash, superseded)"
        " VALUES ($1, $2, $3::uuid, $4, $5, $6::uuid[]) ON CONFLICT (session, idempotency_key) DO NOTHING RETURNING 1",
        memory.session, memory.idempotency_key, memory_id, memory.content_hash, memory.request_hash, superseded,
    )
    if recorded is None:
        row = await connection.fetchrow(_EARLIER, memory.session, memory.idempotency_key)
        raise KeyTaken(_key_row(row))


class IdempotencyQueries:
    """Reads of ``idempotency_keys``."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def idempotency_key(self, session: str, key: str) -> KeyRow | None:
        """The earlier call of ``session`` that used ``key``, or None when none did."""
        row = await self._run(lambda c: c.fetchrow(_EARLIER, session, key))
        return _key_row(row) if row is not None else None

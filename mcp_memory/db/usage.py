"""LLM usage totals per (session, operation, model), and the operator's reset records.

Mixed into ``Repository``, which provides ``_run`` (a pooled connection, one retry after a
dropped connection). Reads and resets take a ``SessionScope`` and touch only the sessions it
allows; totals from before usage was kept per session carry the session ``''``, which only the
scope ``*`` includes. Reset records live in ``usage_resets``, a table no tool reads or writes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from mcp_memory.access.scope import SessionScope
from mcp_memory.db.scopes import in_scope, scope_args

__all__ = ["UsageQueries"]

_COLUMNS = ("calls", "errors", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
_SUMS = ", ".join(f"sum({name})::bigint AS {name}" for name in _COLUMNS)
class UsageQueries:
    """Add, sum and clear LLM token totals."""

    _run: Callable[[Callable[[asyncpg.Connection], Awaitable[Any]]], Awaitable[Any]]

    async def add_usage(self, session: str, operation: str, model: str, counts: dict[str, int]) -> None:
        """Add one call's token counts to the totals of (session, operation, model)."""
        values = [int(counts.get(name, 0)) for name in _COLUMNS]
        updates = ", ".join(f"{name} = llm_usage.{name} + EXCLUDED.{name}" for name in _COLUMNS)
        await self._run(
            lambda c: c.execute(
                f"INSERT INTO llm_usage (session, operation, model, {', '.join(_COLUMNS)})"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                f" ON CONFLICT (session, operation, model) DO UPDATE SET {updates}",
                session,
                operation,
                model,
                *values,
            )
        )

    async def usage_totals(self, scope: SessionScope) -> list[dict[str, int | str]]:
        """Token totals per operation over the sessions of ``scope``, summed over models."""
        rows = await self._run(
            lambda c: c.fetch(
                f"SELECT operation, {_SUMS} FROM llm_usage WHERE {in_scope()} GROUP BY operation ORDER BY operation",
                *scope_args(scope),
            )
        )
        return [dict(row) for row in rows]

    async def reset_usage(self, scope: SessionScope) -> list[dict[str, int | str]]:
        """Clear the totals of the sessions of ``scope`` and record the reset, in one statement.

        Returns:
            The cleared totals per operation (what ``usage_totals`` read just before), as recorded.
        """
        recorded = await self._run(
            lambda c: c.fetchval(
                f"WITH cleared AS (DELETE FROM llm_usage WHERE {in_scope()} RETURNING *),"
                f" totals AS (SELECT operation, {_SUMS} FROM cleared GROUP BY operation)"
                " INSERT INTO usage_resets (scope, cleared)"
                " SELECT $4::text[], coalesce(jsonb_agg(to_jsonb(totals) ORDER BY operation), '[]'::jsonb) FROM totals"
                " RETURNING cleared",
                *scope_args(scope),
                scope.patterns(),
            )
        )
        return list(json.loads(recorded))

    async def usage_resets(self) -> list[dict[str, Any]]:
        """Every reset record, oldest first: ``reset_at``, ``scope`` (patterns) and ``cleared``."""
        rows = await self._run(
            lambda c: c.fetch("SELECT reset_at, scope, cleared FROM usage_resets ORDER BY reset_id")
        )
        return [{"reset_at": row["reset_at"], "scope": list(row["scope"]), "cleared": json.loads(row["cleared"])}
                for row in rows]

"""Usage: LLM token totals by operation, kept per session in PostgreSQL so several servers add up.

A caller sees only the totals of the sessions its scope allows. Clearing the totals is the
operator's act (``mcp-memory usage --reset``), not a tool's: usage is the record of what callers
spent, and the caller that spent it must not be able to erase it. Each reset is recorded in an
internal table with what it cleared, never in a session a client can name.
"""

from __future__ import annotations

from mcp_memory.access.scope import SessionScope
from mcp_memory.db.repository import Repository
from mcp_memory.models import OperationUsage, UsageStats

__all__ = ["reset_usage", "usage_stats"]


def _operations(rows: list[dict[str, int | str]]) -> list[OperationUsage]:
    operations = []
    for row in rows:
        prompt = int(row["prompt_tokens"])
        cached = int(row["cached_prompt_tokens"])
        operations.append(
            OperationUsage(
                operation=str(row["operation"]),
                calls=int(row["calls"]),
                errors=int(row["errors"]),
                prompt_tokens=prompt,
                cached_prompt_tokens=cached,
                uncached_prompt_tokens=prompt - cached,
                completion_tokens=int(row["completion_tokens"]),
                reasoning_tokens=int(row["reasoning_tokens"]),
                cache_hit_rate=round(cached / prompt, 4) if prompt else 0.0,
            )
        )
    return operations


async def usage_stats(repository: Repository, scope: SessionScope) -> UsageStats:
    """Token totals per operation (plan, answer, supersede) over the sessions of ``scope``.

    ``uncached_prompt_tokens = prompt_tokens - cached_prompt_tokens``;
    ``cache_hit_rate = cached_prompt_tokens / prompt_tokens`` (0 with no prompt tokens).
    Totals from before usage was kept per session count only for the scope ``*``.
    """
    return UsageStats(operations=_operations(await repository.usage_totals(scope)))


async def reset_usage(repository: Repository, scope: SessionScope) -> UsageStats:
    """Zero the totals of the sessions of ``scope`` and record the reset (scope and what it cleared)
    in the internal ``usage_resets`` table, atomically.

    Returns:
        The totals that were cleared.
    """
    return UsageStats(operations=_operations(await repository.reset_usage(scope)))

"""Usage: LLM token totals by operation, kept in PostgreSQL so several servers add up."""

from __future__ import annotations

from mcp_memory.pipeline.audit import record
from mcp_memory.db.repository import Repository
from mcp_memory.models import OperationUsage, UsageStats

__all__ = ["USAGE_AUDIT_SESSION", "usage_stats"]

USAGE_AUDIT_SESSION = "mcp-memory/usage"  # the session whose audit rows record usage resets


async def usage_stats(repository: Repository, reset: bool = False) -> UsageStats:
    """Token totals per operation (plan, answer, embed); ``reset`` zeroes them afterwards.

    ``uncached_prompt_tokens = prompt_tokens - cached_prompt_tokens``;
    ``cache_hit_rate = cached_prompt_tokens / prompt_tokens`` (0 with no prompt tokens).
    A reset is audited in the session ``mcp-memory/usage`` with the totals it cleared.
    """
    operations = []
    for row in await repository.usage_totals():
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
    if reset:
        await repository.reset_usage()
        await record(
            repository, USAGE_AUDIT_SESSION, "usage_reset", {"cleared": [op.model_dump() for op in operations]}
        )
    return UsageStats(operations=operations, reset=reset)

"""Tool annotations tell the truth: a tool marked read-only changes nothing, whatever its arguments."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tools import call, store

pytestmark = pytest.mark.anyio

# Everything a tool call can change apart from the audit trail (a recall's audit row is a log, not state).
STATE_TABLES = ("memories", "memory_chunks", "memory_terms", "memory_grams", "memory_supersessions", "llm_usage", "usage_resets")


async def _state(pg_url: str) -> dict[str, str]:
    connection = await asyncpg.connect(pg_url)
    try:
        return {table: await connection.fetchval(f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"
                                                 f" FROM {table} t") for table in STATE_TABLES}
    finally:
        await connection.close()


def _arguments(schema: dict[str, Any], session: str) -> dict[str, Any]:
    """Every argument of a tool, each set so that it would act if it could: booleans true."""
    arguments: dict[str, Any] = {}
    for name, spec in schema.get("properties", {}).items():
        kinds = {spec.get("type")} | {option.get("type") for option in spec.get("anyOf", [])}
        if "boolean" in kinds:
            arguments[name] = True
        elif name == "session":
            arguments[name] = session
        elif name in schema.get("required", []) and "string" in kinds:
            arguments[name] = "locker code"
    return arguments


async def test_no_tool_marked_read_only_changes_state_with_any_of_its_arguments(client, deps, pg_url):
    await store(client, "s-ro", "The locker code is 4417")
    await (await deps.ready()).repository.add_usage("s-ro", "answer", "m", {"calls": 1, "prompt_tokens": 10})
    before = await _state(pg_url)
    read_only = [tool for tool in (await client.list_tools()).tools if tool.annotations.read_only_hint]

    assert {tool.name for tool in read_only} == {"recall_memory", "list_audits", "usage_stats"}
    for tool in read_only:
        await call(client, tool.name, _arguments(tool.input_schema, "s-ro"))
        assert await _state(pg_url) == before, tool.name


async def test_every_tool_that_changes_state_says_so(client):
    annotations = {tool.name: tool.annotations for tool in (await client.list_tools()).tools}

    assert annotations["store_memory"].read_only_hint is False
    assert annotations["delete_memory"].read_only_hint is False
    assert annotations["delete_memory"].destructive_hint is True

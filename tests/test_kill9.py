"""kill -9 under writes: every acknowledged memory survives, nothing is stored twice, restarts succeed.

Three SIGKILLs of an HTTP server while three writers store with idempotency keys (tests/kill9.py
says what is checked). The long run (25 kills) is ``python -m benchmarks.kill9``; its figures are in
benchmarks/RESULTS.md. The model runs in float32 here (no int8 rewrite on the fresh data dir's first
start, which would cost 4 s and 480 MB); durability does not depend on it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from kill9 import Kill9Run
from processes import free_port, stop_leftover_postgres


pytestmark = pytest.mark.slow  # a soak: .ci/run runs it (-m slow)


def test_sigkilled_servers_lose_no_acknowledged_write_and_store_nothing_twice(tmp_path: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-kill9-"))  # not under tmp_path: see processes.Spawner
    root.chmod(0o755)
    data_dir = root / "data"
    try:
        report = Kill9Run(data_dir, free_port(), tmp_path, kills=3, writers=3, seed=11, max_gap_s=1.0,
                          settings={"MCP_MEMORY_EMBEDDING__DYNAMIC_QUANTIZATION": "false"}).run()
        figures = report.as_dict()
        print(figures)
        assert report.kills == 3, figures
        assert report.acknowledged >= 6 and report.retries > 0, figures  # the kills cut into the write stream
        assert report.lost == 0, figures
        assert report.duplicates == 0, figures
        assert report.restart_failures == 0, figures
        assert report.errors == [], figures
        assert report.orphaned_postgres == 0, figures
        assert report.postmasters_seen == 1, figures  # every restart joined the one running PostgreSQL
    finally:
        stop_leftover_postgres(data_dir)
        shutil.rmtree(root, ignore_errors=True)

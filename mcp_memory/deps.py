"""The one place things are wired: settings -> database, pool, repository, embedder, LLM.

The server answers the MCP handshake at once; ``Deps.start`` (embedded PostgreSQL, migrations,
model load) runs beside it, and each tool awaits ``Deps.ready()``. A component that fails to
start is reported to every tool call by its own error, promptly; a schema mismatch (another
embedding model in the database, pgvector too old) stops the server instead.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass, field

import anyio
import asyncpg

from mcp_memory.db import citus
from mcp_memory.db.embedded import Supervisor, start_embedded
from mcp_memory.db.migrate import migrate
from mcp_memory.db.pool import open_pool, ping
from mcp_memory.db.repository import Repository
from mcp_memory.embedding.embed import Embedder, OpenAIEmbedder, load_embedder
from mcp_memory.errors import DatabaseUnavailable, McpMemoryError, SchemaError
from mcp_memory.llm.client import LlmClient
from mcp_memory.observe.metrics import Metrics
from mcp_memory.pipeline.time_expressions import warm as warm_time_expressions
from mcp_memory.settings import Settings
from mcp_memory.embedding.vector_cache import VectorCache

__all__ = ["Deps", "Ready"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ready:
    """Everything a tool needs once start-up has finished."""

    settings: Settings
    repository: Repository
    embedder: Embedder
    llm: LlmClient
    vectors: VectorCache
    metrics: Metrics = field(default_factory=Metrics)


class Deps:
    """Starts, hands out and closes the server's resources."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._done = anyio.Event()
        self._started = False
        self._ready: Ready | None = None
        self._error: McpMemoryError | None = None
        self._pool: asyncpg.Pool | None = None
        self._llm: LlmClient | None = None
        self._url: str | None = None
        self._supervisor: Supervisor | None = None
        # /health needs no token: concurrent checks share one SELECT 1, so a flood of them holds one
        # PostgreSQL connection, not one each (300 at once took every free connection: "too many clients")
        self._probe: tuple[anyio.Event, list[dict[str, str]]] | None = None
        self._health_error: str | None = None  # the last health check's failure, logged once
        self.metrics = Metrics()  # this server's instruments (/metrics); pool and copies are read when scraped
        self.metrics.watch(lambda: self._pool, lambda: self._ready.vectors if self._ready else None)

    async def start(self) -> None:
        """Start the database and load the model; idempotent.

        Raises:
            SchemaError: the database does not fit this server; the server must stop.
        """
        if self._started:
            await self._done.wait()
            if isinstance(self._error, SchemaError):
                raise self._error
            return
        self._started = True
        try:
            self._ready = await self._start()
        except McpMemoryError as exc:
            logger.error("start-up failed: %s", exc)
            self._error = exc
            if isinstance(exc, SchemaError):
                raise
        except Exception as exc:
            logger.exception("start-up failed")
            self._error = McpMemoryError(f"mcp-memory failed to start: {type(exc).__name__}: {exc}")
        finally:
            self._done.set()

    async def _start(self) -> Ready:
        settings = self.settings
        url = settings.database_url
        embedder: Embedder | None = None

        async def load_model() -> None:
            nonlocal embedder
            embedder = await load_embedder(settings.embedding, settings.data_dir / "models", self.metrics.embedding_batch)

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(load_model)
                if settings.recall.time_expressions:  # dateparser's import and language data, off the first recall
                    group.start_soon(anyio.to_thread.run_sync, warm_time_expressions)
                if url is None:
                    url = await anyio.to_thread.run_sync(start_embedded, settings.data_dir)
        except ExceptionGroup as failed:  # report the component's own error, not "unhandled errors in a TaskGroup"
            known, rest = failed.split(McpMemoryError)
            first = (known or rest or failed).exceptions[0]
            raise first from first.__cause__  # `from None` would also drop the error's own cause
        assert embedder is not None
        self._url = url
        if settings.database_url is None:  # this server uses the embedded PostgreSQL: keep it running
            self._supervisor = Supervisor(settings.data_dir)
        on_citus = await migrate(url, embedder.model, embedder.dim, settings.distribute)
        self._pool = await open_pool(url, settings.pool_min_size, settings.pool_max_size, settings.statement_timeout_ms,
                                     citus.pool_settings(on_citus))
        repository = Repository(self._pool, embedder.model)
        self._llm = LlmClient(settings.llm, repository, self.metrics)
        # Start-up leaves ~180k objects (modules, the SDK, the model's wrappers) that live as long as
        # the process; a full collection of them paused every request for ~100 ms (the p99 of
        # recall; benchmarks/RESULTS.md). Freezing keeps them out of every later collection
        # (https://docs.python.org/3/library/gc.html#gc.freeze).
        gc.collect()
        gc.freeze()
        logger.info("ready: model %s (%d dims; %s)", embedder.model, embedder.dim, embedder.variant)
        vectors = VectorCache(settings.recall.vector_cache_mb * 2**20, settings.recall.exact_search_max_memories)
        return Ready(settings=settings, repository=repository, embedder=embedder, llm=self._llm, vectors=vectors,
                     metrics=self.metrics)

    def status(self) -> dict[str, str]:
        """``{"status": "starting" | "ready" | "error", "detail": ...}``: start-up only, no database check."""
        if not self._done.is_set():
            return {"status": "starting", "detail": "loading the embedding model and the database"}
        if self._error is not None:  # the reason is in the log (deps logs start-up failures at ERROR)
            return {"status": "error", "detail": f"start-up failed ({type(self._error).__name__}); the server log says why"}
        return {"status": "ready", "detail": f"model {self._ready.embedder.model}" if self._ready else ""}

    async def health(self, timeout_s: float = 2.0) -> dict[str, str]:
        """``status()``, and once ready a ``SELECT 1`` on a connection of its own (not the pool's,
        which may be busy with recalls), bounded by ``timeout_s`` seconds in all. Calls made while
        a check runs wait for it and return its answer: at most one check at a time.

        Returns:
            ``{"status": "ready", ...}`` when PostgreSQL answered; ``{"status": "database_unavailable",
            "detail": <why>}`` when it did not, in time or at all; else what ``status()`` says.
        """
        status = self.status()
        if status["status"] != "ready" or self._url is None:
            return status
        if self._probe is not None:  # a check is in flight: share its answer (it ends within timeout_s)
            done, answer = self._probe
            await done.wait()
            return answer[0]
        done, answer = self._probe = (anyio.Event(), [{**status, "database": "ok"}])
        try:
            with anyio.CancelScope(shield=True):  # bounded by timeout_s; the callers waiting on it get an answer
                await ping(self._url, timeout_s)
        except DatabaseUnavailable as exc:
            # /health needs no token: the reply names no host, port, user or driver text (the log has them).
            timed_out = isinstance(exc.__cause__, TimeoutError) or "did not answer" in str(exc)
            detail = (f"database unavailable: PostgreSQL did not answer SELECT 1 within {timeout_s} s" if timed_out
                      else "database unavailable: PostgreSQL cannot be reached (the server log says why)")
            if self._health_error != str(exc):  # once per new reason, not once per probe
                logger.warning("health check: %s", exc)
            self._health_error = str(exc)
            answer[0] = {"status": "database_unavailable", "detail": detail}
        else:
            self._health_error = None
        finally:
            self._probe = None
            done.set()
        return answer[0]

    async def ready(self) -> Ready:
        """Wait for start-up and return the resources.

        Raises:
            McpMemoryError: start-up failed; the message says why.
        """
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._ready is not None
        return self._ready

    async def close(self) -> None:
        """Close the pool and clients. The embedded server stops at process exit."""
        if self._supervisor is not None:
            self._supervisor.stop()
        if self._llm is not None:
            await self._llm.close()
        if self._ready is not None and isinstance(self._ready.embedder, OpenAIEmbedder):
            await self._ready.embedder.close()
        if self._pool is not None:
            await self._pool.close()

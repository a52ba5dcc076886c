"""mcp-memory under evaluation, reached only through its MCP tools.

Each LoCoMo conversation becomes one session ``locomo-<sample_id>`` (each LongMemEval question one
session ``lme-<question_id>``, through ``session_prefix``): it is emptied with
``delete_memory(all=true)``, then every turn is stored with ``store_memory``, one call after the
other in conversation order (so storage order is conversation order; conversations are stored
concurrently), and
each question is asked with ``recall_memory`` using the raw question. Identical content in one
session is stored once by the server, so the retriever keeps memory_id -> every dia_id with that
content and a recalled memory stands for all of them.

Retrieval modes (``MODES``) are servers built with different ``RecallSettings`` over one database:
the conversations are ingested once, by the first mode's server, and every later mode's retriever
reuses that memory_id -> dia_ids map (``McpMemoryRetriever(..., ingested=...)``) and only asks.

Failure policy: a tool call that returns ``is_error`` raises ``McpToolError`` (except the delete
of an already-empty session, which is ignored); nothing is retried. A mode naming a field that
``RecallSettings`` does not have raises ``ValueError`` before any server is built.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.locomo_data import Conversation, Turn
from evals.modes import Mode, mode_recall_settings

logger = logging.getLogger(__name__)

_SECRET_KEY = re.compile(r"(?:^|_)(?:key|secret|password|token)$", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(//[^:/@]+:)[^@]*@")


class McpToolError(RuntimeError):
    """A tool call came back with ``is_error``; the message holds the tool's own text."""


@dataclass
class McpRunStats:
    """Counters of one evaluation run against the server.

    Attributes:
        stored: store_memory calls made.
        deduplicated: calls the server answered with ``deduplicated: true``.
        expected_duplicates: turns whose content repeats an earlier turn of the same conversation.
        occurred_at_mismatches: stores whose returned occurred_at differs from the one sent.
        ingest_s: sample_id -> wall-clock seconds to empty and ingest that session.
        recalls: recall_memory calls made.
        truncated: recalls the server marked ``truncated``.
        short_results: recalls that returned fewer memories than top_k.
        unmapped: recalled memories with neither a known memory_id nor a ``dia_id`` in metadata.
        recall_latency_ms: latency of each recall_memory call, in milliseconds.
    """

    stored: int = 0
    deduplicated: int = 0
    expected_duplicates: int = 0
    occurred_at_mismatches: int = 0
    ingest_s: dict[str, float] = field(default_factory=dict)
    recalls: int = 0
    truncated: int = 0
    short_results: int = 0
    unmapped: int = 0
    recall_latency_ms: list[float] = field(default_factory=list)


def redact(value: Any) -> Any:
    """Copy a settings dump with secrets replaced by ``"***"`` and URL passwords removed."""
    if isinstance(value, Mapping):
        return {
            key: ("***" if _SECRET_KEY.search(str(key)) and item else redact(item)) for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1***@", value)
    return value


def source_fingerprint(package_dir: Path) -> str:
    """sha256 over the package's .py and .sql files (path and bytes, sorted), to tell server versions apart."""
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*")):
        if path.suffix in (".py", ".sql") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@asynccontextmanager
async def open_client(
    transport: str,
    url: str | None,
    data_dir: Path | None,
    database_url: str | None,
    mode: Mode | None = None,
) -> AsyncIterator[tuple[Client, dict[str, object]]]:
    """Connect to mcp-memory in process or over streamable HTTP.

    In process, the server starts its own resources (embedded PostgreSQL joined if this process
    already runs it, the model loaded) and closes its pool on exit; servers opened one after the
    other over the same ``data_dir`` share one database.

    Args:
        transport: ``"inprocess"`` (build the server here) or ``"http"``.
        url: the server's MCP endpoint for ``"http"``, e.g. ``http://127.0.0.1:8020/mcp``.
        data_dir: embedded PostgreSQL directory for ``"inprocess"`` (ignored with ``database_url``).
        database_url: external PostgreSQL for ``"inprocess"``.
        mode: recall overrides for ``"inprocess"`` on top of the ``MCP_MEMORY_*`` settings.

    Yields:
        The connected client and a description of the server side for the report.

    Raises:
        ValueError: the transport is unknown, ``"http"`` without a url or with a mode, or a bad mode.
    """
    if transport == "http":
        if not url:
            raise ValueError("--transport http needs --url, e.g. http://127.0.0.1:8020/mcp")
        if mode is not None:
            raise ValueError("retrieval modes need the in-process server; over http the server's settings apply")
        async with Client(url) as client:
            yield client, {"transport": "http", "url": url}
        return
    if transport != "inprocess":
        raise ValueError(f"transport {transport!r} is unknown; use inprocess or http")
    import mcp_memory
    from mcp_memory.server import build_server
    from mcp_memory.settings import Settings

    overrides: dict[str, Any] = {"database_url": database_url} if database_url else {"data_dir": data_dir}
    settings = Settings(**overrides)
    if mode is not None:
        settings = settings.model_copy(update={"recall": mode_recall_settings(mode, settings.recall)})
    if settings.llm.answer_model or settings.llm.plan_model:
        logger.warning("an LLM is configured (plan/answer model); recall then differs from plain retrieval")
    server = build_server(settings)
    described: dict[str, object] = {
        "transport": "inprocess",
        "source_sha256": source_fingerprint(Path(mcp_memory.__file__).parent),
        "settings": redact(settings.model_dump(mode="json")),
        **(
            {"mode": mode.name, "mode_description": mode.description, "recall_overrides": dict(mode.overrides)}
            if mode is not None
            else {}
        ),
    }
    async with Client(server, mode="legacy") as client:
        yield client, described


def _error_text(result: Any) -> str:
    """Join the text blocks of an error result."""
    return " ".join(getattr(block, "text", str(block)) for block in result.content)


class McpMemoryRetriever:
    """The ``Retriever`` for mcp-memory over a connected MCP client."""

    def __init__(
        self,
        client: Client,
        server: dict[str, object],
        concurrency: int = 16,
        name: str = "mcp-memory",
        ingested: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
        session_prefix: str = "locomo-",
    ) -> None:
        """Wrap a connected client.

        Args:
            client: connected to an mcp-memory server (see ``open_client``).
            server: description of the server side, copied into the report.
            concurrency: conversations ingested at once (each stores its turns one at a time, in order).
            name: display name (the mode's name when evaluating modes).
            ingested: the ``ingested`` map of a retriever that already stored the conversations in
                this database; ``prepare`` then stores nothing and only checks the session is there.
            session_prefix: a conversation's session is this plus its ``sample_id``.
        """
        self.name = name
        self.stats = McpRunStats()
        self._client = client
        self._server = server
        self._concurrency = concurrency
        self._session_prefix = session_prefix
        self._ingesting = anyio.Semaphore(concurrency)
        self._reuse = ingested is not None
        # session -> memory_id -> dia_ids
        self._dia_ids: dict[str, dict[str, list[str]]] = {
            session: {memory_id: list(ids) for memory_id, ids in memories.items()}
            for session, memories in (ingested or {}).items()
        }

    @property
    def ingested(self) -> dict[str, dict[str, list[str]]]:
        """session -> memory_id -> dia_ids of what this retriever stored (or was handed)."""
        return self._dia_ids

    async def wait_ready(self) -> float:
        """Wait until the server has started (database, migrations, model); returns the seconds waited.

        Calls the read-only ``list_audits`` so start-up is not charged to the first question.
        """
        started = time.perf_counter()
        await self._call("list_audits", {"session": "locomo-warmup", "limit": 1})
        return time.perf_counter() - started

    async def _call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool and return its structured result.

        Raises:
            McpToolError: the result is an error or carries no structured content.
        """
        result = await self._client.call_tool(tool, arguments)
        if result.is_error:
            raise McpToolError(f"{tool} failed: {_error_text(result)}")
        if not isinstance(result.structured_content, dict):
            raise McpToolError(f"{tool} returned no structured content: {_error_text(result)}")
        return result.structured_content

    async def _store(self, session: str, turn: Turn) -> None:
        """Store one turn and record which memory now carries its dia_id."""
        sent = turn.occurred_at.isoformat()
        stored = await self._call(
            "store_memory",
            {
                "session": session,
                "content": turn.content,
                "occurred_at": sent,
                "metadata": turn.metadata,
            },
        )
        self.stats.stored += 1
        deduplicated = bool(stored.get("deduplicated"))
        self.stats.deduplicated += deduplicated
        returned = str(stored.get("occurred_at", "")).removesuffix("Z").removesuffix("+00:00")
        if not deduplicated and returned != sent:
            self.stats.occurred_at_mismatches += 1
            if self.stats.occurred_at_mismatches <= 3:
                logger.warning("%s: sent occurred_at %s, got %s", turn.dia_id, sent, stored.get("occurred_at"))
        self._dia_ids[session].setdefault(str(stored["memory_id"]), []).append(turn.dia_id)

    async def prepare(self, conversation: Conversation) -> None:
        """Empty the conversation's session, then store its turns one after the other, in order.

        Each store returns before the next starts, so the server's storage order is the
        conversation's order whatever the turns' times; ``concurrency`` conversations are
        prepared at once.

        With ``ingested`` given at construction, store nothing: the session must already be there.

        Raises:
            ValueError: reusing an ingest that does not hold this conversation.
        """
        session = f"{self._session_prefix}{conversation.sample_id}"
        if self._reuse:
            if session not in self._dia_ids:
                raise ValueError(f"{session} was not ingested by the first mode; cannot reuse the ingest")
            return
        async with self._ingesting:
            started = time.perf_counter()
            try:
                await self._call("delete_memory", {"session": session, "all": True, "confirm": session})
            except McpToolError as error:
                logger.info("delete of %s before ingest: %s (ignored)", session, error)
            self._dia_ids[session] = {}
            for turn in conversation.turns:
                await self._store(session, turn)
        elapsed_s = time.perf_counter() - started
        self.stats.ingest_s[conversation.sample_id] = elapsed_s
        self.stats.expected_duplicates += len(conversation.turns) - len(conversation.documents)
        logger.info("ingested %s: %d turns in %.1f s", session, len(conversation.turns), elapsed_s)

    async def rank(
        self, conversation: Conversation, question: str, k: int, as_of: datetime | None = None
    ) -> list[tuple[str, ...]]:
        """Recall with the raw question, asked at ``as_of`` (default: the conversation's last turn,
        since LoCoMo's questions carry no time and were written after it), and map each memory to its dia_ids."""
        started = time.perf_counter()
        session = f"{self._session_prefix}{conversation.sample_id}"
        asked = as_of or max(turn.occurred_at for turn in conversation.turns)
        result = await self._call(
            "recall_memory", {"session": session, "query": question, "top_k": k, "as_of": asked.isoformat()}
        )
        self.stats.recall_latency_ms.append((time.perf_counter() - started) * 1000)
        self.stats.recalls += 1
        self.stats.truncated += bool(result.get("truncated"))
        memories: list[dict[str, Any]] = result.get("memories") or []
        self.stats.short_results += len(memories) < min(k, len(conversation.documents))
        ranked: list[tuple[str, ...]] = []
        for memory in memories:
            dia_ids = self._dia_ids.get(session, {}).get(str(memory.get("memory_id")))
            if dia_ids is None:
                metadata = memory.get("metadata") or {}
                dia_ids = [str(metadata["dia_id"])] if "dia_id" in metadata else []
            if not dia_ids:
                self.stats.unmapped += 1
            ranked.append(tuple(dia_ids))
        return ranked

    def describe(self) -> dict[str, object]:
        """The server side, ingest concurrency (or reuse) and the query policy."""
        ingest = (
            "reused from the first mode"
            if self._reuse
            else f"store_memory, turns one at a time in order, {self._concurrency} conversations at once"
        )
        return {**self._server, "ingest": ingest, "query": "raw question", "as_of": "the last turn's time, or given"}

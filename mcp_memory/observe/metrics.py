"""Prometheus metrics of one server: what the tools, the recall stages, the embedder, the LLM,
the pool and the vector copies did.

Each ``Metrics`` has a registry of its own (not prometheus-client's global default), so several
servers in one process (tests, one per ``Deps``) never collide and each scrape shows one
server. Instruments on the hot path are prometheus-client counters and histograms (a
microsecond or two per update); the pool and the vector copies are read only when scraped, by
``_Resources``, so a tool call pays nothing for them. No label ever holds a session name, a
memory id or any text a caller chose: tool names, stages, error kinds and LLM operations are
fixed sets (an unknown tool is counted as ``unknown``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    import asyncpg

    from mcp_memory.embedding.vector_cache import VectorCache

__all__ = ["LATENCY_BUCKETS_S", "RECALL_STAGES", "Metrics"]

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Histogram bounds in seconds: a cached vector scan takes under a millisecond, an LLM answer seconds."""

RECALL_STAGES = ("plan", "embed", "search", "fuse", "rerank", "supersede", "answer")
"""The stages recall times for its audit row (pipeline/recall.py), in order."""

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_TOKEN_TYPES = {"prompt_tokens": "prompt", "cached_prompt_tokens": "cached_prompt",
                "completion_tokens": "completion", "reasoning_tokens": "reasoning"}


class Metrics:
    """The instruments of one server, in a registry of its own (``registry``, read by ``/metrics``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.tool_calls = Counter("mcp_memory_tool_calls", "Tool calls by tool, errors included.", ["tool"], registry=r)
        self.tool_errors = Counter("mcp_memory_tool_errors", "Tool calls that ended in an error, by tool and kind "
                                   "(the error class: invalid_input, forbidden, database_unavailable, ...).",
                                   ["tool", "kind"], registry=r)
        self.tool_seconds = Histogram("mcp_memory_tool_duration_seconds", "Tool call time in seconds, by tool.",
                                      ["tool"], buckets=LATENCY_BUCKETS_S, registry=r)
        self.stage_seconds = Histogram("mcp_memory_recall_stage_duration_seconds", "Time of each recall stage in "
                                       "seconds (the audit row's latency_ms).", ["stage"], buckets=LATENCY_BUCKETS_S,
                                       registry=r)
        self.batch_texts = Histogram("mcp_memory_embedding_batch_texts", "Texts per model batch of the local "
                                     "embedder (concurrent calls coalesced).", buckets=_BATCH_BUCKETS, registry=r)
        self.queue_wait = Histogram("mcp_memory_embedding_queue_wait_seconds", "Seconds an embedding call waited "
                                    "for its batch to start.", buckets=LATENCY_BUCKETS_S, registry=r)
        self.memories_stored = Counter("mcp_memory_memories_stored", "New memories stored (not duplicates or "
                                       "replays).", registry=r)
        self.llm_calls = Counter("mcp_memory_llm_calls", "LLM requests by operation (plan, answer, supersede) and "
                                 "outcome (ok, error).", ["operation", "outcome"], registry=r)
        self.llm_tokens = Counter("mcp_memory_llm_tokens", "LLM tokens by operation and type (prompt, "
                                  "cached_prompt, completion, reasoning).", ["operation", "type"], registry=r)
        self._stages = {stage: self.stage_seconds.labels(stage) for stage in RECALL_STAGES}

    def watch(self, pool: Callable[[], asyncpg.Pool | None], vectors: Callable[[], VectorCache | None]) -> None:
        """Read the pool and the vector copies at every scrape; each callable returns None until started."""
        self.registry.register(_Resources(pool, vectors))

    def recall_stages(self, stage_ms: Mapping[str, float]) -> None:
        """Observe one recall's stage times, in milliseconds as the audit keeps them; other keys are ignored."""
        for stage, ms in stage_ms.items():
            child = self._stages.get(stage)
            if child is not None:
                child.observe(ms / 1000.0)

    def embedding_batch(self, texts: int, waits_s: Iterable[float]) -> None:
        """One model batch of ``texts`` texts, and how long each call in it waited (seconds)."""
        self.batch_texts.observe(texts)
        for wait_s in waits_s:
            self.queue_wait.observe(wait_s)

    def llm_call(self, operation: str, counts: Mapping[str, int]) -> None:
        """One LLM request: ``counts`` as the usage table gets them (``errors``, ``prompt_tokens``, ...)."""
        self.llm_calls.labels(operation, "error" if counts.get("errors") else "ok").inc()
        for key, kind in _TOKEN_TYPES.items():
            if counts.get(key):
                self.llm_tokens.labels(operation, kind).inc(counts[key])


class _Resources(Collector):
    """Pool and vector-copy figures, read when scraped (never on a tool call's path)."""

    def __init__(self, pool: Callable[[], Any], vectors: Callable[[], Any]) -> None:
        self._pool = pool
        self._vectors = vectors

    def describe(self) -> list[Metric]:
        return []  # nothing to check for name clashes; collect() runs only on a scrape

    def collect(self) -> Iterable[Metric]:
        in_use = GaugeMetricFamily("mcp_memory_pool_connections_in_use", "PostgreSQL connections lent to a call.")
        idle = GaugeMetricFamily("mcp_memory_pool_connections_idle", "Open PostgreSQL connections not in use.")
        size = GaugeMetricFamily("mcp_memory_pool_connections_max", "The pool's maximum size (pool_max_size).")
        waiting = GaugeMetricFamily("mcp_memory_pool_waiting", "Calls waiting for a connection from the pool.")
        pool = self._pool()
        if pool is not None:
            opened, free = pool.get_size(), pool.get_idle_size()
            in_use.add_metric([], opened - free)
            idle.add_metric([], free)
            size.add_metric([], pool.get_max_size())
            # asyncpg has no public count of waiters: they wait on its queue of connection holders
            getters = getattr(getattr(pool, "_queue", None), "_getters", ())
            waiting.add_metric([], sum(not future.done() for future in getters))
        yield from (in_use, idle, size, waiting)
        hits = CounterMetricFamily("mcp_memory_vector_copy_hits", "Vector searches answered from an in-process "
                                   "copy that was already current.")
        loads = CounterMetricFamily("mcp_memory_vector_copy_loads", "Whole sessions read into a copy (first use "
                                    "or reload after a delete or update).")
        appends = CounterMetricFamily("mcp_memory_vector_copy_appends", "Copies brought up to date with only the "
                                      "memories added since.")
        held = GaugeMetricFamily("mcp_memory_vector_copy_bytes", "Bytes held by the vector copies (budget: "
                                 "recall.vector_cache_mb).")
        sessions = GaugeMetricFamily("mcp_memory_vector_copy_sessions", "Sessions with a vector copy.")
        vectors = self._vectors()
        if vectors is not None:
            hits.add_metric([], vectors.hits)
            loads.add_metric([], vectors.loads)
            appends.add_metric([], vectors.appends)
            held.add_metric([], vectors.nbytes)
            sessions.add_metric([], vectors.sessions)
        yield from (hits, loads, appends, held, sessions)

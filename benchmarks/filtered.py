"""Filtered recall at scale (issue 26): a 100k-memory session where a filter keeps 0.1%.

Usage::

    python -m benchmarks.filtered --data-dir /tmp/mcpm-filtered --memories 100000 --kept 100 --requests 100

``bulk_load`` writes a session fast: random unit vectors (no model), contents of a few words drawn
from a fixed vocabulary, COPY, then each memory's postings, grams and the session's stats in SQL
(what ``db/postings.py`` writes per store). ``kept`` memories occurred in March 2024 and carry
``{"team": "blue"}``; the rest are spread over 2020-2023 with ``{"team": "red"}``. Recalls run
in process through ``pipeline.recall.trace`` (no MCP, no HTTP), LoCoMo questions, after 10 warm-up
calls: no filter (HNSW over the session), since/until keeping the 0.1%, metadata keeping the same
0.1%, and a window keeping about 25% (the iterative HNSW scan). Reports p50/p95 per case, whether
every result was filled to top_k with memories inside the filter, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import numpy as np

from benchmarks.load import derive
from mcp_memory.models import RecallFilter

__all__ = ["KEPT_FILTERS", "bulk_load"]

_WORDS = (
    "garden kitchen train ticket meeting budget river mountain coffee letter doctor school market bridge lamp "
    "window printer invoice holiday concert recipe bicycle harbour museum library office parcel storm winter "
    "summer autumn spring forest island village engine battery camera guitar violin paint canvas pottery"
).split()
_COLUMNS = ["session", "memory_id", "content", "content_hash", "occurred_at", "metadata", "importance",
            "embedding", "embedding_model"]
MARCH = (datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 31, 23, 59, 59, 999999, tzinfo=UTC))
KEPT_FILTERS = {
    "since/until": RecallFilter(since=MARCH[0], until=MARCH[1]),
    "metadata": RecallFilter(metadata={"team": "blue"}),
}


def _rows(session: str, n: int, kept: int, model: str, dim: int, seed: int):
    rng = np.random.default_rng(seed)
    keep = set(rng.choice(n, size=kept, replace=False).tolist())
    start, span = datetime(2020, 1, 1, tzinfo=UTC), (datetime(2024, 1, 1, tzinfo=UTC) - datetime(2020, 1, 1, tzinfo=UTC))
    for i in range(n):
        vector = rng.standard_normal(dim).astype(np.float32)
        vector /= np.linalg.norm(vector)
        words = " ".join(rng.choice(_WORDS, size=6))
        content = f"Note {i}: {words}."
        if i in keep:
            when = MARCH[0] + timedelta(seconds=int(rng.integers(0, 30 * 86_400)))
            metadata = '{"team": "blue"}'
        else:
            when = start + timedelta(seconds=int(rng.integers(0, int(span.total_seconds()))))
            metadata = '{"team": "red"}'
        digest = uuid.uuid5(uuid.NAMESPACE_OID, content).bytes
        yield (session, uuid.uuid4(), content, digest, when, metadata, None, vector, model)


async def bulk_load(connection: asyncpg.Connection, session: str, n: int, kept: int, seed: int = 26) -> set[str]:
    """COPY ``n`` memories into ``session`` (random vectors of the database's dimension) and derive
    their rows; returns the ids of the ``kept`` memories that the filters of ``KEPT_FILTERS`` keep.

    The connection needs pgvector's codec (``db.pool.open_pool`` registers it).
    """
    model, dim = await connection.fetchrow("SELECT model, dim FROM embedding_model")
    rows = _rows(session, n, kept, model, dim, seed)
    while chunk := [row for _, row in zip(range(20_000), rows, strict=False)]:
        await connection.copy_records_to_table("memories", records=chunk, columns=_COLUMNS)
    await derive(connection, session)
    await connection.execute("ANALYZE memories; ANALYZE memory_terms")
    found = await connection.fetch(
        "SELECT memory_id::text FROM memories WHERE session = $1 AND metadata @> '{\"team\": \"blue\"}'", session)
    return {row[0] for row in found}


async def main(args: argparse.Namespace) -> None:
    from benchmarks.load import connect, rebuild_indexes
    from benchmarks.recall import questions
    from mcp_memory.deps import Deps
    from mcp_memory.pipeline.recall import trace
    from mcp_memory.settings import Settings

    settings = Settings(data_dir=args.data_dir)
    session = f"filtered-{args.memories}"
    report: dict[str, Any] = {"session": session, "memories": args.memories, "kept": args.kept}
    pool = await connect(settings)  # the embedded PostgreSQL of --data-dir, migrated; vector codec on
    if await pool.fetchval("SELECT n FROM memory_stats WHERE session = $1", session) != args.memories:
        async with pool.acquire() as connection:
            await connection.execute("DELETE FROM memories WHERE session = $1", session)
            await connection.execute(
                "DROP INDEX IF EXISTS memories_embedding_hnsw; DROP INDEX IF EXISTS memories_content_trgm")
            started = time.perf_counter()
            await bulk_load(connection, session, args.memories, args.kept)
            report["load_s"] = round(time.perf_counter() - started, 1)
    report.update({f"build_{k}_s": v for k, v in (await rebuild_indexes(pool)).items()})
    kept = {r[0] for r in await pool.fetch(
        "SELECT memory_id::text FROM memories WHERE session = $1 AND metadata @> '{\"team\": \"blue\"}'", session)}
    await pool.close()
    deps = Deps(settings)
    await deps.start()
    ready = await deps.ready()
    quarter = RecallFilter(since=datetime(2023, 1, 1, tzinfo=UTC))
    cases = {"no filter": None, **KEPT_FILTERS, "since 2023 (about 25%)": quarter}
    asked = questions(args.requests + 10)
    for name, filters in cases.items():
        for question in asked[:10]:
            await trace(ready, session, question, args.top_k, filters=filters)
        times, filled = [], 0
        for question in asked[10:]:
            started = time.perf_counter()
            result, _ = await trace(ready, session, question, args.top_k, filters=filters)
            times.append((time.perf_counter() - started) * 1000)
            ids = {m.memory_id for m in result.memories}
            filled += len(ids) == args.top_k and (name not in KEPT_FILTERS or ids <= kept)
        times.sort()
        report[name] = {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * len(times))], 2),
                        "filled_and_inside": f"{filled}/{len(times)}"}
        print(name, report[name], flush=True)
    report["loadavg"] = os.getloadavg()
    await deps.close()
    print(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--kept", type=int, default=100)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=12)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

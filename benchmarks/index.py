"""Index strategy by measurement: exact scan (btree on session) vs HNSW with iterative scan.

Usage::

    python -m benchmarks.index --data-dir /tmp/mcpm-bench --sessions bench-1000,bench-10000 --queries 100

Per session, for the same LoCoMo questions (embedded once): the exact top-k (the session's rows
fetched by the btree, distances computed and sorted; ``OFFSET 0`` keeps the planner off HNSW),
the top-k of the plan PostgreSQL picks for the repository's own query and settings
(``hnsw.iterative_scan = strict_order``, ``hnsw.ef_search``, a custom plan per call: a generic plan
of a prepared statement may sort the whole session instead), and the top-k with HNSW forced
(``enable_sort = off``). recall@k counts returned rows whose distance is within the exact k-th
distance (ties count as found). Latency is per query, one connection, medians over the queries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import asyncpg

from benchmarks.load import connect
from benchmarks.recall import questions
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings

_APP = ("SELECT memory_id, embedding <=> $2 AS distance FROM memories WHERE session = $1"
        " ORDER BY embedding <=> $2 LIMIT $3")
_EXACT = ("SELECT memory_id, distance FROM (SELECT memory_id, embedding <=> $2 AS distance FROM memories"
          " WHERE session = $1 OFFSET 0) s ORDER BY distance LIMIT $3")


async def timed(connection: asyncpg.Connection, settings: list[str], sql: str, *args: Any) -> tuple[list, float]:
    async with connection.transaction():
        for setting in settings:
            await connection.execute(setting)
        started = time.perf_counter()
        rows = await connection.fetch(sql, *args)
        return rows, (time.perf_counter() - started) * 1000


async def main(args: argparse.Namespace) -> None:
    settings = Settings(data_dir=args.data_dir)
    pool = await connect(settings)
    embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
    vectors = await embedder.embed_batch(questions(args.queries))
    app_settings = ["SET LOCAL hnsw.iterative_scan = strict_order", f"SET LOCAL hnsw.ef_search = {args.ef_search}",
                    "SET LOCAL plan_cache_mode = force_custom_plan"]  # as the repository: no generic plan
    report = []
    async with pool.acquire() as connection:
        for session in args.sessions:
            size = await connection.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)
            if size == 0:
                raise SystemExit(f"session {session!r} holds no memories in {args.data_dir}; load it with benchmarks.recall")
            plan = await connection.fetch("EXPLAIN " + _APP.replace("$3", str(args.k)).replace("$1", "'" + session + "'")
                                          .replace("$2", "'" + str(vectors[0].tolist()) + "'::vector"))
            plan_text = " | ".join(r[0].strip().split("(cost")[0].split("(embedding")[0] for r in plan[:3])
            result: dict[str, Any] = {"session": session, "size": size, "ef_search": args.ef_search,
                                      "default_plan": plan_text}
            for name, extra in (("default", app_settings), ("hnsw_forced", [*app_settings, "SET LOCAL enable_sort = off"])):
                found, found_top, exact_ms, path_ms, returned = [], [], [], [], []
                for vector in vectors:
                    exact, ms_exact = await timed(connection, [], _EXACT, session, vector, args.k)
                    rows, ms = await timed(connection, extra, _APP, session, vector, args.k)
                    threshold = exact[-1]["distance"] + 1e-6 if exact else 0
                    found.append(sum(1 for r in rows if r["distance"] <= threshold) / max(1, len(exact)))
                    top = exact[: args.top]
                    top_threshold = top[-1]["distance"] + 1e-6 if top else 0
                    found_top.append(sum(1 for r in rows[: args.top] if r["distance"] <= top_threshold) / max(1, len(top)))
                    returned.append(len(rows))
                    exact_ms.append(ms_exact)
                    path_ms.append(ms)
                result[name] = {"recall_at_k": round(statistics.mean(found), 4),
                                f"recall_at_{args.top}": round(statistics.mean(found_top), 4), "p50_ms": round(statistics.median(path_ms), 2),
                                "min_returned": min(returned)}
                result["exact_p50_ms"] = round(statistics.median(exact_ms), 2)
            report.append(result)
            print(json.dumps(result), flush=True)
    await pool.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--sessions", type=lambda s: s.split(","), default=["bench-1000", "bench-10000"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=100, help="list depth; the recall vector list is 100 deep")
    parser.add_argument("--top", type=int, default=10, help="recall@top of the first rows as well")
    parser.add_argument("--ef-search", type=int, default=800, help="one value per run (the server's default: 800)")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

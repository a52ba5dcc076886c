"""Recall without an LLM over HTTP: latency percentiles, throughput, stage shares, peak RSS.

Usage::

    python -m benchmarks.recall --data-dir /tmp/mcpm-bench --port 18731 --sizes 1000,10000 \
        --concurrency 1,10,50 --requests 200 --json /tmp/mcpm-bench/recall.json

Sessions ``bench-<size>`` are bulk-loaded (see ``benchmarks.load``) when missing; ``--total
1000000 --sessions-total 10000`` adds ``bench-filler-<i>`` sessions up to that many memories. Their
sizes depend on ``--sizes``: to reuse a filled database with other ``--sizes``, leave ``--total``
out (only the named sessions are then checked), or the filler is loaded again. Queries are
LoCoMo questions, asked verbatim. Same-run baselines: a bare pgvector query (the session's 12
nearest by ``<=>``, query vector pre-computed, asyncpg, no MCP) and the same query plus the
embedding of the question. Stage shares come from the recall audit rows (``latency_ms``);
``protocol+audit`` is the client-measured latency minus the server's stage total; the audit insert
is measured alone by re-inserting recorded audit rows with asyncpg.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import zlib
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import numpy as np

from benchmarks.harness import McpHttp, ServerProcess, percentiles, run_load
from benchmarks.load import DATA, INDEXES, connect, drop_indexes, fill, load_texts, rebuild_indexes
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings


def questions(limit: int) -> list[str]:
    found = []
    for sample in json.loads((DATA / "locomo10.json").read_text()):
        for qa in sample["qa"]:
            found.append(qa["question"])
    step = max(1, len(found) // limit)
    return found[::step][:limit]


def filler_sizes(total: int, sessions: int, named: dict[str, int]) -> dict[str, int]:
    """Sessions ``bench-filler-<i>`` that bring the database to ``total`` memories in ``sessions``
    sessions (the named ones included), as evenly as possible."""
    count = sessions - len(named)
    rest = total - sum(named.values())
    if count <= 0 or rest <= 0:
        return {}
    return {f"bench-filler-{i}": rest // count + (i < rest % count) for i in range(count)}


async def ensure_sessions(
    pool: asyncpg.Pool, settings: Settings, sizes: dict[str, int], texts_limit: int = 2000
) -> dict[str, Any]:
    """Load missing sessions (indexes dropped and rebuilt around the load); timings.

    A session's texts start at an offset taken from its name, so the same session holds the
    same texts and vectors in every database it is loaded into.
    """
    texts, vectors, embed_s = await load_texts(settings, texts_limit)
    report: dict[str, Any] = {"texts": len(texts), "embed_texts_s": round(embed_s, 1)}
    have = {row["session"]: row["n"] for row in await pool.fetch("SELECT session, n FROM memory_stats")}
    missing = {session: size for session, size in sizes.items() if have.get(session) != size}
    if missing:
        await drop_indexes(pool)
        started = time.perf_counter()
        for session, size in missing.items():
            await pool.execute("DELETE FROM memories WHERE session = $1", session)
            await fill(pool, session, size, texts, vectors, zlib.crc32(session.encode()) % len(texts))
        report["copy_s"] = round(time.perf_counter() - started, 1)
        report["copied_sessions"] = len(missing)
    built = await rebuild_indexes(pool)
    report.update({f"build_{k}_s": v for k, v in built.items()})
    report["total_memories"] = await pool.fetchval("SELECT count(*) FROM memories")
    report["total_sessions"] = await pool.fetchval("SELECT count(*) FROM memory_stats WHERE n > 0")
    return report


async def bare_baseline(pool: asyncpg.Pool, session: str, vectors: list[np.ndarray], concurrency: int,
                        total: int) -> dict[str, Any]:
    async def one(i: int) -> float:
        started = time.perf_counter()
        async with pool.acquire() as connection:
            await connection.fetch(
                "SELECT memory_id FROM memories WHERE session = $1 ORDER BY embedding <=> $2 LIMIT 12",
                session, vectors[i % len(vectors)])
        return (time.perf_counter() - started) * 1000

    latencies, wall = await run_load(one, concurrency, total)
    return {**percentiles(latencies), "per_s": round(total / wall, 1)}


async def stage_shares(pool: asyncpg.Pool, session: str, after_id: int) -> tuple[dict[str, float], list[dict]]:
    rows = await pool.fetch("SELECT detail FROM audits WHERE session = $1 AND kind = 'recall' AND audit_id > $2",
                            session, after_id)
    details = [json.loads(r["detail"]) for r in rows]
    stages: dict[str, list[float]] = {}
    for detail in details:
        for name, ms in detail["latency_ms"].items():
            stages.setdefault(name, []).append(ms)
    return {name: round(statistics.mean(v), 2) for name, v in stages.items()}, details


async def audit_insert_ms(pool: asyncpg.Pool, session: str, details: list[dict]) -> float:
    times = []
    for detail in details[:50]:
        started = time.perf_counter()
        await pool.fetchval("INSERT INTO audits (session, kind, detail) VALUES ($1, 'bench', $2::jsonb)"
                            " RETURNING audit_id", session, json.dumps(detail))
        times.append((time.perf_counter() - started) * 1000)
    await pool.execute("DELETE FROM audits WHERE kind = 'bench'")
    return round(statistics.median(times), 2)


async def fill_cache(pool: asyncpg.Pool, client: McpHttp, server: ServerProcess, sessions: int) -> dict[str, Any]:
    """Recall once in each of ``sessions`` filler sessions, so the in-process vector copies reach
    their budget (``recall.vector_cache_mb``); RSS before and after."""
    names = [r["session"] for r in await pool.fetch(
        "SELECT session FROM memory_stats WHERE session LIKE 'bench-filler-%' AND n > 0 ORDER BY session LIMIT $1",
        sessions)]
    before = server.rss_mb()
    started = time.perf_counter()
    for name in names:
        await client.call("recall_memory", {"session": name, "query": "what did we talk about last week?"})
    return {"sessions": len(names), "memories": int(await pool.fetchval(
        "SELECT coalesce(sum(n), 0) FROM memory_stats WHERE session = ANY($1::text[])", names)),
        "seconds": round(time.perf_counter() - started, 1), "rss_before_mb": round(before, 1),
        "rss_after_mb": round(server.rss_mb(), 1)}


async def main(args: argparse.Namespace) -> None:
    settings = Settings(data_dir=args.data_dir)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    pool = await connect(settings)
    sizes = {f"bench-{size}": size for size in args.sizes}
    filler = filler_sizes(args.total, args.sessions_total, sizes) if args.total else {}
    report: dict[str, Any] = {"load": await ensure_sessions(pool, settings, {**sizes, **filler}, args.texts), "runs": []}
    print(json.dumps(report["load"]), flush=True)
    if args.load_only:
        await pool.close()
        return
    asked = questions(args.requests)
    embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
    qvectors = await embedder.embed_batch(asked)

    with ServerProcess(args.data_dir, args.port, args=args.serve_args.split()) as server:
        async with McpHttp(args.port) as client:
            if args.fill_cache:
                report["fill_cache"] = await fill_cache(pool, client, server, args.fill_cache)
                print(json.dumps(report["fill_cache"]), flush=True)
            for session in sizes:
                for i in range(10):  # warm-up: model, pool, plans, cache
                    await client.call("recall_memory", {"session": session, "query": asked[i]})
                server.reset_peak()
                for concurrency in args.concurrency:
                    after = await pool.fetchval("SELECT coalesce(max(audit_id), 0) FROM audits")
                    total = max(args.requests, concurrency * 4)

                    async def one(i: int, session: str = session) -> float:
                        _, ms = await client.call("recall_memory", {"session": session, "query": asked[i % len(asked)]})
                        return ms

                    latencies, wall = await run_load(one, concurrency, total)
                    shares, details = await stage_shares(pool, session, after)
                    client_mean = statistics.mean(latencies)
                    shares["protocol+audit"] = round(client_mean - shares.get("total", 0.0), 2)
                    bare = await bare_baseline(pool, session, qvectors, concurrency, total)
                    run = {
                        "session": session, "size": sizes[session], "concurrency": concurrency,
                        **percentiles(latencies), "per_s": round(total / wall, 1), "mean_ms": round(client_mean, 2),
                        "stages_mean_ms": shares, "bare_pgvector": bare,
                        "audit_insert_ms": await audit_insert_ms(pool, session, details) if concurrency == 1 else None,
                        "peak_rss_mb": round(server.peak_rss / 2**20, 1),
                    }
                    report["runs"].append(run)
                    print(json.dumps(run), flush=True)
    await pool.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18731)
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1000, 10000])
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 50])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--texts", type=int, default=2000, help="distinct real texts the filler cycles through")
    parser.add_argument("--total", type=int, default=0, help="fill the database to this many memories")
    parser.add_argument("--sessions-total", type=int, default=10_000, help="... in this many sessions")
    parser.add_argument("--load-only", action="store_true", help="load, build indexes and stop")
    parser.add_argument("--serve-args", default="", help="extra `mcp-memory serve` options, e.g. --sse")
    parser.add_argument("--fill-cache", type=int, default=0,
                        help="first recall once in this many filler sessions (fills the vector copies' budget)")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

"""Many concurrent MCP clients over HTTP, a mix of stores and recalls, against one server.

Usage::

    python -m benchmarks.clients --data-dir /tmp/mcpm-load --port 18741 --clients 50,200 --duration-s 60

Each client is its own MCP session (its own ``initialize`` and HTTP connection pool; with
``--token`` it sends ``Authorization: Bearer <token>``) and its own memory session
``load-<run>-<client>``; it loops for ``--duration-s``: a store (``--store-share`` of calls) of a
LoCoMo turn, or a recall of words of a turn it stored. Reported per run: errors (tool errors,
JSON-RPC errors, HTTP errors; must be 0), p50/p95/p99 per tool, calls/s, server RSS (start, peak,
end), server and client-process CPU seconds, then lost writes: every acknowledged memory_id must be in its session in PostgreSQL with
its vector (checked for all) and must be among the 10 returned when its own content is recalled
(checked over HTTP for ``--verify-sample`` of them; other memories of the session may hold the same
LoCoMo turn). A run with errors is reported, not failed.

All clients come from 127.0.0.1 (one key for the session bound), so the server is started with
``http.max_sessions_per_client`` at ``--max-sessions-per-client`` (default: clients + 8), as an
operator would for a platform that runs many sessions under one token. ``--auth``: the server gets a
config with one fresh static token (``[[auth.tokens]]``, sessions ``*``, can_delete) and every client
sends it, so the run includes token checks and the per-token session bound.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import secrets
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import asyncpg
import psutil

from benchmarks.harness import McpHttp, ServerProcess, percentiles
from benchmarks.ingest import turns
from mcp_memory.db.embedded import start_embedded


class Run:
    """One run's tallies."""

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.acknowledged: dict[str, dict[str, str]] = defaultdict(dict)  # session -> memory_id -> content


def _client(args: argparse.Namespace, connections: int = 2) -> McpHttp:
    client = McpHttp(args.port, connections=connections)
    if args.token:
        client.headers["authorization"] = f"Bearer {args.token}"
    return client


async def client_loop(args: argparse.Namespace, run: Run, number: int, tag: str, texts: list[str], deadline: float) -> None:
    rng = random.Random(number)
    session = f"load-{tag}-{number}"
    client = _client(args)
    try:
        async with client:
            serial = 0
            while time.monotonic() < deadline:
                mine = run.acknowledged[session]
                try:
                    if not mine or rng.random() < args.store_share:
                        serial += 1
                        content = f"[{session} #{serial}] {rng.choice(texts)}"
                        result, ms = await client.call("store_memory", {"session": session, "content": content})
                        mine[result["memory_id"]] = content
                        run.latencies["store_memory"].append(ms)
                    else:
                        words = rng.choice(list(mine.values())).split()[2:]
                        query = " ".join(words[:8]) or "note"
                        _, ms = await client.call("recall_memory", {"session": session, "query": query})
                        run.latencies["recall_memory"].append(ms)
                except Exception as exc:  # counted, and the client goes on
                    run.errors.append(f"{type(exc).__name__}: {exc}"[:300])
    except Exception as exc:  # the session could not be opened
        run.errors.append(f"initialize: {type(exc).__name__}: {exc}"[:300])


async def lost_writes(args: argparse.Namespace, run: Run, database_url: str) -> dict[str, Any]:
    """Acknowledged ids missing from PostgreSQL (or without a vector), and a sample recalled by content."""
    acknowledged = [(s, m) for s, ids in run.acknowledged.items() for m in ids]
    connection = await asyncpg.connect(database_url)
    try:
        present = {
            (row["session"], str(row["memory_id"]))
            for row in await connection.fetch(
                "SELECT session, memory_id FROM memories WHERE session = ANY($1::text[]) AND embedding IS NOT NULL",
                list(run.acknowledged),
            )
        }
    finally:
        await connection.close()
    missing = [pair for pair in acknowledged if pair not in present]
    sample = random.Random(0).sample(acknowledged, min(args.verify_sample, len(acknowledged)))
    not_found = []
    async with _client(args, connections=4) as client:
        for session, memory_id in sample:
            result, _ = await client.call("recall_memory", {"session": session, "query": run.acknowledged[session][memory_id],
                                                            "top_k": 10})
            if memory_id not in [memory["memory_id"] for memory in result["memories"]]:
                not_found.append(memory_id)
    return {"acknowledged": len(acknowledged), "missing_in_db": len(missing), "recall_sample": len(sample),
            "recall_sample_not_in_top10": len(not_found)}


async def one_run(args: argparse.Namespace, server: ServerProcess, clients: int, texts: list[str], database_url: str) -> dict[str, Any]:
    run = Run()
    tag = f"{int(time.time())}-{clients}"
    rss_start = server.rss_mb()
    server.reset_peak()
    cpu_start = server.cpu_s()
    own = psutil.Process()
    own_start = sum(own.cpu_times()[:2])
    deadline = time.monotonic() + args.duration_s
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(client_loop, args, run, number, tag, texts, deadline)
    wall = time.perf_counter() - started
    calls = sum(len(v) for v in run.latencies.values())
    report: dict[str, Any] = {
        "clients": clients, "duration_s": args.duration_s, "wall_s": round(wall, 1), "calls": calls,
        "calls_per_s": round(calls / wall, 1), "errors": len(run.errors),
        "error_kinds": sorted({e[:120] for e in run.errors})[:5],
        "latency_ms": {tool: percentiles(values) for tool, values in sorted(run.latencies.items())},
        "rss_mb": {"start": round(rss_start, 1), "peak": round(server.peak_rss / 2**20, 1), "end": round(server.rss_mb(), 1)},
        "server_cpu_s": round(server.cpu_s() - cpu_start, 1),
        "client_cpu_s": round(sum(own.cpu_times()[:2]) - own_start, 1),  # this process: the 50/200 clients
        "load_average_1m": round(os.getloadavg()[0], 2),  # the machine, at the end (2 cores, shared)
    }
    report["lost_writes"] = await lost_writes(args, run, database_url)
    print(json.dumps(report), flush=True)
    async with _client(args, connections=4) as client:  # leave the database as it was
        for session in run.acknowledged:
            await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
    return report


async def main(args: argparse.Namespace) -> None:
    args.data_dir.mkdir(parents=True, exist_ok=True)
    texts = turns()
    bound = args.max_sessions_per_client or max(args.clients) + 8
    env = {"MCP_MEMORY_HTTP__MAX_SESSIONS_PER_CLIENT": str(bound)}
    reports = []
    server_args: list[str] = []
    if args.auth:
        args.token = secrets.token_urlsafe(32)
        config = args.data_dir / "bench-auth.toml"
        config.write_text('[[auth.tokens]]\nname = "bench"\ntoken_sha256 = "%s"\nsessions = ["*"]\ncan_delete = true\n'
                          % hashlib.sha256(args.token.encode()).hexdigest())
        server_args = ["--config", str(config)]
    with ServerProcess(args.data_dir, args.port, env=env, args=server_args) as server:
        database_url = await anyio.to_thread.run_sync(start_embedded, args.data_dir)  # joins the server's
        async with _client(args) as warm:
            await warm.call("store_memory", {"session": "load-warmup", "content": "warm-up"})
            await warm.call("recall_memory", {"session": "load-warmup", "query": "warm-up"})
            await warm.call("delete_memory", {"session": "load-warmup", "all": True, "confirm": "load-warmup"})
        for clients in args.clients:
            reports.append(await one_run(args, server, clients, texts, database_url))
    if args.json:
        args.json.write_text(json.dumps({"max_sessions_per_client": bound, "runs": reports}, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18741)
    parser.add_argument("--clients", type=lambda s: [int(x) for x in s.split(",")], default=[50, 200])
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--store-share", type=float, default=0.5, help="share of calls that store (after each client's first)")
    parser.add_argument("--token", help="send Authorization: Bearer TOKEN (for a server with auth)")
    parser.add_argument("--auth", action="store_true", help="start the server with one fresh static token and send it")
    parser.add_argument("--max-sessions-per-client", type=int, help="the server's http.max_sessions_per_client")
    parser.add_argument("--verify-sample", type=int, default=200, help="acknowledged ids recalled by content afterwards")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

"""Session exhaustion: many ``initialize`` calls never closed, then legitimate clients.

Usage::

    python -m benchmarks.sessions --data-dir /tmp/mcpm-load --port 18740 --count 10000 --compare-unbounded

One server with the default session bounds (``http.*``); with ``--compare-unbounded`` first the
same attack against a server configured as before the bound (no per-client bound, the SDK's
10,000 sessions in total, 30 min idle timeout), in the same run. For each: server RSS after a
warm-up call, the attack's HTTP statuses, RSS after it (and its peak), then one client from the
attacker's address and one with a bearer token (another key) each store and recall.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx

from benchmarks.harness import McpHttp, ServerProcess

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "attacker", "version": "0"}}}
UNBOUNDED = {"MCP_MEMORY_HTTP__MAX_SESSIONS_PER_CLIENT": "1000000", "MCP_MEMORY_HTTP__MAX_SESSIONS": "10000",
             "MCP_MEMORY_HTTP__SESSION_IDLE_TIMEOUT_S": "1800"}


async def attack(port: int, count: int, concurrency: int) -> tuple[Counter[int], float]:
    """``count`` initialize POSTs from this address, none ever closed; (statuses, seconds)."""
    statuses: Counter[int] = Counter()
    numbers = iter(range(count))
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:

        async def worker() -> None:
            for _ in numbers:
                try:
                    reply = await http.post(f"http://127.0.0.1:{port}/mcp", json=INITIALIZE, headers=headers)
                    statuses[reply.status_code] += 1
                except httpx.HTTPError as exc:
                    statuses[-1] += 1  # transport error
                    if statuses[-1] <= 3:
                        print(f"transport error: {exc!r}", flush=True)

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for _ in range(concurrency):
                group.start_soon(worker)
    return statuses, time.perf_counter() - started


async def legitimate(port: int, token: str | None) -> dict[str, Any]:
    """Open a session, store and recall one memory; what happened."""
    session = f"sessions-bench-{token or 'addr'}-{int(time.time())}"
    client = McpHttp(port, connections=2)
    if token:
        client.headers["authorization"] = f"Bearer {token}"
    try:
        async with client:
            stored, store_ms = await client.call("store_memory", {"session": session, "content": "The gate code is 7301"})
            recalled, recall_ms = await client.call("recall_memory", {"session": session, "query": "gate code"})
            await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
    except Exception as exc:  # any failure is the figure
        return {"served": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    found = stored["memory_id"] in [m["memory_id"] for m in recalled["memories"]]
    return {"served": found, "store_ms": round(store_ms, 1), "recall_ms": round(recall_ms, 1)}


async def run(args: argparse.Namespace, name: str, env: dict[str, str]) -> dict[str, Any]:
    with ServerProcess(args.data_dir, args.port, env=env) as server:
        warm = await legitimate(args.port, None)
        rss_before = server.rss_mb()
        server.reset_peak()
        statuses, seconds = await attack(args.port, args.count, args.concurrency)
        rss_after = server.rss_mb()
        peak = server.peak_rss / 2**20
        same_address = await legitimate(args.port, None)
        other_key = await legitimate(args.port, "bench-token")
    result = {"server": name, "initialize_calls": args.count, "attack_s": round(seconds, 1),
              "statuses": {str(k): v for k, v in sorted(statuses.items())}, "warm_up_served": warm["served"],
              "rss_before_mb": round(rss_before, 1), "rss_after_mb": round(rss_after, 1), "rss_peak_mb": round(peak, 1),
              "client_same_address": same_address, "client_other_key": other_key}
    print(json.dumps(result), flush=True)
    return result


async def main(args: argparse.Namespace) -> None:
    args.data_dir.mkdir(parents=True, exist_ok=True)
    results = []
    if args.compare_unbounded:
        results.append(await run(args, "unbounded (as before)", UNBOUNDED))
    results.append(await run(args, "bounded (defaults)", {}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18740)
    parser.add_argument("--count", type=int, default=10_000, help="initialize calls, never closed")
    parser.add_argument("--concurrency", type=int, default=50, help="attacker connections at once")
    parser.add_argument("--compare-unbounded", action="store_true",
                        help="first run the attack against a server without the per-client bound")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

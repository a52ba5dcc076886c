"""The same data on one PostgreSQL and through a Citus coordinator: store and recall, in one run.

Usage::

    CITUS_SOURCE_TARBALL=../shared/vendor/citus-14.0.1.tar.gz \\
        python -m benchmarks.citus --data-dir /tmp/mcpm-citus --count 600 --requests 300

Two ``mcp-memory serve --transport http`` processes: ``single`` on its embedded PostgreSQL, and
``citus`` with ``database_url`` naming the coordinator of a cluster of a coordinator and two
workers on this machine (tests/citus_cluster.py, Citus built by tests/citus_build.py). Each stores
the same LoCoMo turns into the same 20 sessions at 10 concurrent calls (store throughput), then
answers the same recalls one at a time (p50, p95) and at 10 concurrent calls (throughput). The two
arms alternate round by round, so load on the machine hits both alike. All nodes share this
machine's cores, so the cluster's figures show the coordinator's routing cost, not a cluster's
capacity.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.harness import McpHttp, ServerProcess, percentiles, run_load
from benchmarks.ingest import turns

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from citus_build import SOURCE_VARIABLE, ensure_built  # noqa: E402
from citus_cluster import Cluster  # noqa: E402

SESSIONS = 20


async def main(args: argparse.Namespace) -> None:
    source = os.environ.get(SOURCE_VARIABLE)
    if not source:
        sys.exit(f"set {SOURCE_VARIABLE} to the Citus source tarball")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    texts = turns()[: args.count]
    cluster = Cluster(ensure_built(Path(source)), args.data_dir / "cluster")
    await cluster.up(workers=2)
    report: dict[str, Any] = {"turns": len(texts), "sessions": SESSIONS, "requests": args.requests}
    try:
        arms = {"single": (args.data_dir / "single", {}),
                "citus": (args.data_dir / "citus", {"MCP_MEMORY_DATABASE_URL": cluster.url})}
        for folder, _ in arms.values():
            folder.mkdir(exist_ok=True)
        with ServerProcess(arms["single"][0], args.port, env=arms["single"][1]), \
                ServerProcess(arms["citus"][0], args.port + 1, env=arms["citus"][1]):
            async with McpHttp(args.port) as single, McpHttp(args.port + 1) as citus:
                clients = {"single": single, "citus": citus}
                for client in clients.values():
                    await client.call("store_memory", {"session": "bench-warmup", "content": "warm-up"})
                half = len(texts) // 2
                for name in ("single", "citus", "citus", "single"):  # two store rounds each, alternating
                    done = report.setdefault(name, {}).setdefault("stored", 0)
                    part = texts[:half] if done == 0 else texts[half:]

                    async def store(i: int, client: McpHttp = clients[name], part: list[str] = part) -> float:
                        _, ms = await client.call("store_memory", {"session": f"bench-{i % SESSIONS}", "content": part[i]})
                        return ms

                    latencies, wall = await run_load(store, 10, len(part))
                    report[name]["stored"] += len(part)
                    report[name].setdefault("store_c10", []).append(
                        {"per_s": round(len(part) / wall, 1), **percentiles(latencies)})
                questions = [texts[(i * 7919) % len(texts)].split(": ", 1)[-1] for i in range(args.requests)]
                for name in ("single", "citus", "citus", "single"):
                    client = clients[name]

                    async def recall(i: int, client: McpHttp = client) -> float:
                        _, ms = await client.call("recall_memory", {"session": f"bench-{i % SESSIONS}",
                                                                    "query": questions[i]})
                        return ms

                    key = "recall_c1" if "recall_c1" not in report[name] else "recall_c10"
                    concurrency = 1 if key == "recall_c1" else 10
                    latencies, wall = await run_load(recall, concurrency, len(questions))
                    report[name][key] = {"per_s": round(len(questions) / wall, 1), **percentiles(latencies)}
                    print(name, key, json.dumps(report[name][key]), flush=True)
    finally:
        cluster.down()
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18761)
    parser.add_argument("--count", type=int, default=600, help="LoCoMo turns stored by each arm")
    parser.add_argument("--requests", type=int, default=300, help="recalls per round")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    started = time.time()
    anyio.run(main, _parser().parse_args())
    print(f"{time.time() - started:.0f} s", file=sys.stderr)

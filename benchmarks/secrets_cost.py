"""What secret redaction costs a store: store_memory p50 with ``privacy.secrets`` keep against redact.

Usage::

    python -m benchmarks.secrets_cost --data-dir /tmp/mcpm-secrets --count 300 --rounds 3

Two ``mcp-memory serve --transport http`` processes of the working tree on one database store the
same LoCoMo turns (texts with no secret, the case every store pays for), one at a time, interleaved
turn by turn with the order rotated, each into a fresh session of its own per round, so load from
other processes hits both alike:

- ``keep``: ``MCP_MEMORY_PRIVACY__SECRETS=keep`` (no detection: the store path before redaction);
- ``redact``: the default, every text run through ``find_secrets`` before it is embedded.

``--baseline DIR`` adds ``old``: the package under DIR (a copy of mcp_memory/ before the privacy
settings existed). Reports p50/p95/p99 and mean per arm over all rounds, the p50 of each round, and
redact's p50 against keep's in percent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.harness import McpHttp, ServerProcess, percentiles
from benchmarks.supersede_cost import conversation_turns


async def main(args: argparse.Namespace) -> None:
    turns = conversation_turns(args.count)
    arms: dict[str, dict[str, str]] = {"keep": {"MCP_MEMORY_PRIVACY__SECRETS": "keep"}, "redact": {}}
    if args.baseline is not None:
        arms["old"] = {"PYTHONPATH": str(args.baseline)}
    stamp = int(time.time())
    latency: dict[str, list[float]] = {name: [] for name in arms}
    rounds: dict[str, list[float]] = {name: [] for name in arms}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for offset, (name, env) in enumerate(arms.items()):
            stack.enter_context(ServerProcess(args.data_dir, args.port + offset, env=env))
            clients[name] = await stack.enter_async_context(McpHttp(args.port + offset))
        for name, client in clients.items():  # warm-up: load the model, open connections
            for index in range(10):
                await client.call("store_memory", {"session": f"secrets-warmup-{stamp}", "content": f"warm-up {index}"})
        for number in range(args.rounds):
            this_round: dict[str, list[float]] = {name: [] for name in clients}
            for index, (text, occurred_at) in enumerate(turns):
                order = list(clients.items())
                order = order[index % len(order):] + order[: index % len(order)]  # rotate who goes first
                for name, client in order:
                    arguments = {"session": f"secrets-{name}-{stamp}-{number}", "content": text,
                                 "occurred_at": occurred_at}
                    result, ms = await client.call("store_memory", arguments)
                    assert not result.get("redactions"), f"a LoCoMo turn was redacted: {result['redactions']}"
                    this_round[name].append(ms)
            for name, values in this_round.items():
                latency[name] += values
                rounds[name].append(round(statistics.median(values), 2))
        for name, client in clients.items():
            for session in [f"secrets-{name}-{stamp}-{n}" for n in range(args.rounds)] + [f"secrets-warmup-{stamp}"]:
                await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
    report: dict[str, Any] = {"turns": len(turns), "rounds": args.rounds}
    for name, values in latency.items():
        report[name] = {**percentiles(values), "mean": round(statistics.mean(values), 2), "round_p50s": rounds[name]}
    report["redact_vs_keep_p50_percent"] = round(100 * (report["redact"]["p50"] / report["keep"]["p50"] - 1), 1)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, default=None, help="folder holding a baseline mcp_memory/ (optional)")
    parser.add_argument("--port", type=int, default=18771)
    parser.add_argument("--count", type=int, default=300, help="turns stored by each server per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

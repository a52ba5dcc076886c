"""The adversarial recall of issue 11: a query at the length limit made of identifier-like words.

Usage::

    git archive <old commit> mcp_memory | tar -x -C /tmp/strict-base
    python -m benchmarks.query_cost --data-dir /tmp/query-cost --baseline /tmp/strict-base

Two ``mcp-memory serve --transport http`` processes on one data directory: A runs the package under
``--baseline`` (PYTHONPATH), B the installed working tree. A session of ``--memories`` memories full
of identifiers (``svc-<n>``, ``E<n>``, ``build<n>``) is stored once through B. Then each server answers
the query ``word0 word1 ... wordN`` (``--query-chars`` characters, 4,000 = ``limits.max_query_chars``)
``--repeat`` times alone, and ``--repeat`` rounds of ``--concurrent`` at once; figures are client-side
milliseconds, and a recall unanswered after ``--timeout-s`` is counted as timed out. A normal question ("which build failed with E17?") is timed the same way, so a cap that
slows ordinary recalls would show. Prints one JSON report.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from benchmarks.harness import McpHttp, ServerProcess, percentiles

SESSION = "query-cost"


def adversarial_query(max_chars: int) -> str:
    """``word0 word1 ...`` up to ``max_chars`` characters."""
    words: list[str] = []
    length = -1
    for i in range(100_000):
        word = f"word{i}"
        if length + 1 + len(word) > max_chars:
            break
        words.append(word)
        length += 1 + len(word)
    return " ".join(words)


def memory_text(rng: random.Random, i: int) -> str:
    """A log-like memory of about 400 characters with a dozen identifiers."""
    parts = [f"Build{i} of svc-{rng.randint(1, 999)} failed with E{rng.randint(10, 99)} on node{rng.randint(1, 64)}."]
    for _ in range(6):
        parts.append(f"Step word{rng.randint(0, 900)} ran job-{rng.randint(1000, 9999)} for ticket PR-{rng.randint(100, 9999)}"
                     f" in {rng.choice(['eu-west-1', 'us-east-2', 'ap-south-1'])}.")
    return " ".join(parts)


async def _timed(client: McpHttp, query: str) -> float:
    """Client-side milliseconds of one recall; the client's timeout when it ran out (counted apart)."""
    started = time.perf_counter()
    try:
        _, ms = await client.call("recall_memory", {"session": SESSION, "query": query})
    except httpx.TimeoutException:
        return -(time.perf_counter() - started) * 1000
    return ms


async def _measure(client: McpHttp, query: str, repeat: int, concurrent: int) -> dict[str, Any]:
    alone = [await _timed(client, query) for _ in range(repeat)]
    together: list[float] = []
    for _ in range(repeat):
        results: list[float] = []

        async def one() -> None:
            results.append(await _timed(client, query))

        async with anyio.create_task_group() as group:
            for _ in range(concurrent):
                group.start_soon(one)
        together.extend(results)
    summary: dict[str, Any] = {}
    for name, values in (("alone", alone), (f"x{concurrent}", together)):
        answered = [ms for ms in values if ms >= 0]
        summary[f"{name}_ms"] = percentiles(answered)
        summary[f"{name}_max_ms"] = round(max(answered), 1) if answered else None
        summary[f"{name}_timed_out"] = sum(ms < 0 for ms in values)
    return summary


async def main(args: argparse.Namespace) -> None:
    args.data_dir.mkdir(parents=True, exist_ok=True)
    query = adversarial_query(args.query_chars)
    normal = "Which build failed with E17 on node12?"
    report: dict[str, Any] = {"memories": args.memories, "query_chars": len(query), "query_words": len(query.split())}
    env = {"PYTHONPATH": str(args.baseline)} if args.baseline else None
    with ServerProcess(args.data_dir, args.port, env=env) as a, ServerProcess(args.data_dir, args.port + 1) as b:
        async with McpHttp(args.port) as ca, McpHttp(args.port + 1) as cb:
            for client in (ca, cb):
                client.http.timeout = httpx.Timeout(args.timeout_s)
            rng = random.Random(11)
            for i in range(args.memories):  # deduplicated on a second run: the same session each time
                await cb.call("store_memory", {"session": SESSION, "content": memory_text(rng, i)})
            for side, client in (("A", ca), ("B", cb)):  # warm both
                await client.call("recall_memory", {"session": SESSION, "query": normal})
            for side, client in (("B", cb), ("A", ca)):  # B first: A's slow statements outlive its client's timeout
                started = time.perf_counter()
                report[side] = {"adversarial": await _measure(client, query, args.repeat, args.concurrent),
                                "normal": await _measure(client, normal, args.repeat, args.concurrent)}
                report[side]["wall_s"] = round(time.perf_counter() - started, 1)
                print(side, json.dumps(report[side]), flush=True)
    print(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, help="a copy of the old package (A); default: the installed one")
    parser.add_argument("--port", type=int, default=8740)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--query-chars", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=5)
    parser.add_argument("--timeout-s", type=float, default=120.0, help="a recall still unanswered then counts as timed out")
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

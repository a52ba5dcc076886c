"""A/B: the same recalls against two servers, interleaved: old code against new, or a small
database against a large one.

Usage::

    # code: a baseline copy of the package (A) against the working tree (B), one database
    python -m benchmarks.compare --data-dir /tmp/mcpm-bench --baseline /tmp/mcpm-base \
        --sessions bench-10000 --concurrency 1,10 --requests 200
    # scale: the session alone in a database (A) against the same session among 1M memories (B)
    python -m benchmarks.compare --data-dir /tmp/mcpm-1m --baseline-data-dir /tmp/mcpm-alone \
        --sessions bench-10000 --concurrency 1,10 --requests 200

Two ``mcp-memory serve --transport http`` processes: A runs the package found under
``--baseline`` (PYTHONPATH; default the installed one) on ``--baseline-data-dir`` (default
``--data-dir``), B the installed working tree on ``--data-dir``. At concurrency 1 the calls
alternate A, B, A, B on the same questions; at higher concurrency A and B runs alternate in
blocks of ``--requests``, ``--rounds`` times each (default 2: ABAB), and the figures are pooled;
more, shorter rounds average out other load on a shared machine. ``--a-args`` and ``--b-args``
add ``serve`` options to one side (say ``--b-args=--sse``). The ranked contents of
A and B are compared call by call (memory_ids differ between databases). ``--questions zh`` asks
the mixed suite's Chinese questions instead of LoCoMo's (a session of ``benchmarks.cjk``).
``--suffix " last week" --as-of 2024-01-08`` gives every recall a time window holding all of a bench
session (its memories lie one minute apart from 2024-01-01) when ``recall.time_expressions`` is on.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import cjk
from benchmarks.harness import McpHttp, ServerProcess, percentiles, run_load
from benchmarks.recall import questions


async def main(args: argparse.Namespace) -> None:
    asked = cjk.questions(args.requests) if args.questions == "zh" else questions(args.requests)
    asked = [question.rstrip("?") + args.suffix for question in asked] if args.suffix else asked
    when = {"as_of": args.as_of} if args.as_of else {}
    report: dict[str, Any] = {"runs": []}
    env = {"PYTHONPATH": str(args.baseline)} if args.baseline else None
    with ServerProcess(args.baseline_data_dir or args.data_dir, args.port, env=env, args=args.a_args.split()) as a, \
            ServerProcess(args.data_dir, args.port + 1, args=args.b_args.split()) as b:
        async with McpHttp(args.port) as ca, McpHttp(args.port + 1) as cb:
            for session in args.sessions:
                same = 0
                for question in asked[:10]:
                    await ca.call("recall_memory", {"session": session, "query": question, **when})
                    await cb.call("recall_memory", {"session": session, "query": question, **when})
                for concurrency in args.concurrency:
                    lat: dict[str, list[float]] = {"A": [], "B": []}
                    wall = {"A": 0.0, "B": 0.0}
                    cpu_before = {"A": a.cpu_s(), "B": b.cpu_s()}
                    if concurrency == 1:
                        for question in asked:
                            ra, ms_a = await ca.call("recall_memory", {"session": session, "query": question, **when})
                            rb, ms_b = await cb.call("recall_memory", {"session": session, "query": question, **when})
                            lat["A"].append(ms_a)
                            lat["B"].append(ms_b)
                            same += [m["content"] for m in ra["memories"]] == [m["content"] for m in rb["memories"]]
                        wall = {"A": sum(lat["A"]) / 1000, "B": sum(lat["B"]) / 1000}
                    else:
                        for name, client in (("A", ca), ("B", cb)) * args.rounds:
                            async def one(i: int, client: McpHttp = client) -> float:
                                _, ms = await client.call("recall_memory",
                                                          {"session": session, "query": asked[i % len(asked)], **when})
                                return ms

                            got, seconds = await run_load(one, concurrency, args.requests)
                            lat[name].extend(got)
                            wall[name] += seconds
                    run = {"session": session, "concurrency": concurrency,
                           "A_baseline": {**percentiles(lat["A"]), "per_s": round(len(lat["A"]) / wall["A"], 1)},
                           "B_changed": {**percentiles(lat["B"]), "per_s": round(len(lat["B"]) / wall["B"], 1)}}
                    run["p50_ratio_A_over_B"] = round(run["A_baseline"]["p50"] / run["B_changed"]["p50"], 2)
                    run["throughput_ratio_B_over_A"] = round(run["B_changed"]["per_s"] / run["A_baseline"]["per_s"], 2)
                    if concurrency == 1:
                        run["identical_ranked_contents"] = f"{same}/{len(asked)}"
                    run["peak_rss_mb"] = {"A": round(a.peak_rss / 2**20, 1), "B": round(b.peak_rss / 2**20, 1)}
                    # Server process CPU (user + system) per recall: steadier than wall time when other
                    # work shares the machine (PostgreSQL's share is not in it).
                    cpu = {"A": (a.cpu_s() - cpu_before["A"]) * 1000 / len(lat["A"]),
                           "B": (b.cpu_s() - cpu_before["B"]) * 1000 / len(lat["B"])}
                    run["server_cpu_ms_per_recall"] = {name: round(ms, 3) for name, ms in cpu.items()}
                    run["server_cpu_ratio_B_over_A"] = round(cpu["B"] / cpu["A"], 3)
                    report["runs"].append(run)
                    print(json.dumps(run), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, default=None, help="folder holding the baseline mcp_memory/")
    parser.add_argument("--baseline-data-dir", type=Path, default=None, help="A's data dir (default --data-dir)")
    parser.add_argument("--port", type=int, default=18741)
    parser.add_argument("--a-args", default="", help="extra `mcp-memory serve` arguments for A, e.g. --sse")
    parser.add_argument("--b-args", default="", help="extra `mcp-memory serve` arguments for B")
    parser.add_argument("--sessions", type=lambda s: s.split(","), default=["bench-10000"])
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2,
                        help="at concurrency > 1: A and B blocks of --requests alternate this many times each")
    parser.add_argument("--questions", choices=["locomo", "zh"], default="locomo",
                        help="LoCoMo's questions, or the mixed suite's Chinese ones (for a benchmarks.cjk session)")
    parser.add_argument("--suffix", default="", help="appended to every question (its '?' dropped), e.g. ' last week'")
    parser.add_argument("--as-of", default=None, help="recall_memory's as_of for every call, e.g. 2024-01-08")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    started = time.perf_counter()
    anyio.run(main, _parser().parse_args())

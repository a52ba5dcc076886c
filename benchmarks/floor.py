"""Recall against its floor: a trivial tool call plus one query embedding, old code against new, in one run.

Usage::

    git worktree add /tmp/floor-base 2dcecfa      # or: git archive 2dcecfa mcp_memory | tar -x -C /tmp/floor-base
    python -m benchmarks.floor --data-dir /tmp/mcpm-floor --baseline /tmp/floor-base --memories 2000 \
        --requests 200 --rounds 4 --json /tmp/mcpm-floor/floor.json

A recall cannot cost less than what every tool call costs plus the embedding of its question; the
rest is ours. Two ``mcp-memory serve --transport http`` processes on one database: A runs the package
under ``--baseline`` (PYTHONPATH), B the working tree. Both are called with the MCP python SDK's own
``Client`` (``harness.SdkHttp``), as an agent would call them. The session ``floor-<memories>``
holds the first ``--memories`` turns of LoCoMo's conversations at their real times, stored once
through B's ``store_memory`` (kept for later runs); the questions are those conversations' questions.

Measured, per question, in the order A then B or B then A (alternating): the trivial call
(``usage_stats``: the MCP round trip, our call hook and one small database read), the recall, and in
this process the query embedding (the server's model and settings, the question's first window, as
recall embeds it). floor = trivial p50 + embedding p50; the target is recall p50 <= 1.3 x floor.
Then c=10: A and B blocks of ``--requests`` recalls alternate ``--rounds`` times each (recalls/s
pooled, and CPU per recall of the server process and of PostgreSQL, steadier than wall time on a
shared machine). Also reported: the stage means from the audit rows of each side (``latency_ms``), ranked
contents compared call by call, and the load average before and after (``os.getloadavg``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import psutil

from benchmarks.harness import SdkHttp, ServerProcess, percentiles, run_load
from benchmarks.load import DATA, connect
from evals.locomo_data import Conversation, load_locomo
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings


def conversations(memories: int) -> tuple[list[Conversation], list[str]]:
    """The first LoCoMo conversations holding ``memories`` turns (the last one cut), and their questions."""
    chosen: list[Conversation] = []
    held = 0
    for conversation in load_locomo(DATA / "locomo10.json")[0]:
        if held >= memories:
            break
        chosen.append(conversation)
        held += len(conversation.turns)
    questions = [q.question for conversation in chosen for q in conversation.questions]
    return chosen, questions


async def ensure_session(pool: asyncpg.Pool, port: int, session: str, chosen: list[Conversation], memories: int) -> int:
    """Store the turns through ``store_memory`` unless the session already holds them; memories held."""
    held = await pool.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)
    turns = [turn for conversation in chosen for turn in conversation.turns][:memories]
    distinct = len({turn.content for turn in turns})
    if held == distinct:
        return held
    async with SdkHttp(port) as client:
        await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
        by_conversation, left = [], memories
        for conversation in chosen:
            by_conversation.append(list(conversation.turns[:left]))
            left -= len(by_conversation[-1])

        async def store(part: list[Any]) -> None:  # one conversation in order, the conversations at once
            for turn in part:
                await client.call("store_memory", {"session": session, "content": turn.content,
                                                   "occurred_at": turn.occurred_at.isoformat()})

        async with anyio.create_task_group() as group:
            for part in by_conversation:
                group.start_soon(store, part)
    return await pool.fetchval("SELECT count(*) FROM memories WHERE session = $1", session)


async def main(args: argparse.Namespace) -> None:
    settings = Settings(data_dir=args.data_dir)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    pool = await connect(settings)
    session = f"floor-{args.memories}"
    chosen, asked = conversations(args.memories)
    asked = asked[:: max(1, len(asked) // args.requests)][: args.requests]
    embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
    report: dict[str, Any] = {"session": session, "load_before": os.getloadavg()}
    env = {"PYTHONPATH": str(args.baseline)} if args.baseline else None
    with ServerProcess(args.data_dir, args.port, env=env) as a, ServerProcess(args.data_dir, args.port + 1) as b:
        report["memories"] = await ensure_session(pool, args.port + 1, session, chosen, args.memories)
        print(json.dumps({"session": session, "memories": report["memories"], "questions": len(asked)}), flush=True)
        async with SdkHttp(args.port) as ca, SdkHttp(args.port + 1) as cb:
            sides = {"A": ca, "B": cb}
            for question in asked[:10]:  # warm-up: model, pool, plans, the vector copy
                for client in sides.values():
                    await client.call("recall_memory", {"session": session, "query": question})
                    await client.call("usage_stats", {})
                await embedder.embed_batch([embedder.windows(question)[0]])
            trivial: dict[str, list[float]] = {"A": [], "B": []}
            recall: dict[str, list[float]] = {"A": [], "B": []}
            audits: dict[str, list[int]] = {"A": [], "B": []}
            embed_ms: list[float] = []
            same = 0
            for i, question in enumerate(asked):
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                ranked = {}
                for side in order:
                    _, ms = await sides[side].call("usage_stats", {})
                    trivial[side].append(ms)
                    before = await pool.fetchval("SELECT coalesce(max(audit_id), 0) FROM audits")
                    result, ms = await sides[side].call("recall_memory", {"session": session, "query": question})
                    recall[side].append(ms)
                    audits[side].append(before)
                    ranked[side] = [m["content"] for m in result["memories"]]
                started = time.perf_counter()
                await embedder.embed_batch([embedder.windows(question)[0]])
                embed_ms.append((time.perf_counter() - started) * 1000)
                same += ranked["A"] == ranked["B"]
            report["load_after_c1"] = os.getloadavg()
            embedding = percentiles(embed_ms)
            report["query_embedding"] = embedding
            stages = await _stages(pool, session, audits)
            for side in ("A", "B"):
                floor = percentiles(trivial[side])["p50"] + embedding["p50"]
                report[side] = {"trivial_call": percentiles(trivial[side]), "recall_c1": percentiles(recall[side]),
                                "floor_ms": round(floor, 2),
                                "recall_over_floor": round(percentiles(recall[side])["p50"] / floor, 3),
                                "ours_ms": round(percentiles(recall[side])["p50"] - floor, 2),
                                "stages_mean_ms": stages[side]}
            report["identical_ranked_contents"] = f"{same}/{len(asked)}"
            for side in ("A", "B"):
                print(json.dumps({side: report[side]}), flush=True)
            print(json.dumps({"query_embedding": embedding, "identical": report["identical_ranked_contents"]}),
                  flush=True)

            lat: dict[str, list[float]] = {"A": [], "B": []}
            wall = {"A": 0.0, "B": 0.0}
            cpu = {"A": 0.0, "B": 0.0, "A_pg": 0.0, "B_pg": 0.0}
            servers = {"A": a, "B": b}
            for side in ("A", "B") * args.rounds:
                async def one(i: int, client: SdkHttp = sides[side]) -> float:
                    _, ms = await client.call("recall_memory", {"session": session, "query": asked[i % len(asked)]})
                    return ms

                server_before, pg_before = servers[side].cpu_s(), _postgres_cpu_s(args.data_dir)
                got, seconds = await run_load(one, args.concurrency, args.requests)
                cpu[side] += servers[side].cpu_s() - server_before
                cpu[f"{side}_pg"] += _postgres_cpu_s(args.data_dir) - pg_before
                lat[side].extend(got)
                wall[side] += seconds
            for side in ("A", "B"):
                report[side]["recall_c10"] = {**percentiles(lat[side]), "per_s": round(len(lat[side]) / wall[side], 1),
                                              "server_cpu_ms_per_recall": round(cpu[side] * 1000 / len(lat[side]), 3),
                                              "postgres_cpu_ms_per_recall": round(
                                                  cpu[f"{side}_pg"] * 1000 / len(lat[side]), 3)}
            report["c10_throughput_B_over_A"] = round(
                report["B"]["recall_c10"]["per_s"] / report["A"]["recall_c10"]["per_s"], 3)
            report["c1_p50_B_over_A"] = round(report["B"]["recall_c1"]["p50"] / report["A"]["recall_c1"]["p50"], 3)
            report["load_after"] = os.getloadavg()
            print(json.dumps({"c10": {s: report[s]["recall_c10"] for s in ("A", "B")},
                              "c10_B_over_A": report["c10_throughput_B_over_A"],
                              "c1_p50_B_over_A": report["c1_p50_B_over_A"], "load": report["load_after"]}), flush=True)
    await pool.close()
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


async def _stages(pool: asyncpg.Pool, session: str, audits: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """Mean ``latency_ms`` per stage of each side's recall rows: the first recall row after each
    recorded audit_id (the calls ran one at a time, so that row is the side's own)."""
    found: dict[str, dict[str, float]] = {}
    for side, afters in audits.items():
        stages: dict[str, list[float]] = {}
        for after in afters:
            detail = await pool.fetchval(
                "SELECT detail FROM audits WHERE session = $1 AND kind = 'recall' AND audit_id > $2"
                " ORDER BY audit_id LIMIT 1", session, after)
            if detail is None:  # the recall wrote no row here: it reached some other server on that port
                raise SystemExit(f"side {side}: no recall audit row after audit_id {after} in {session}; "
                                 "did another server answer on its port?")
            for name, ms in json.loads(detail)["latency_ms"].items():
                stages.setdefault(name, []).append(ms)
        found[side] = {name: round(statistics.mean(v), 3) for name, v in stages.items()}
    return found


def _postgres_cpu_s(data_dir: Path) -> float:
    """CPU seconds (user + system) of the embedded PostgreSQL's processes so far (the postmaster's
    children: backends, WAL writer, checkpointer); both servers share them, so only blocks of one side
    at a time are told apart."""
    pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for process in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, default=None, help="folder holding the baseline mcp_memory/")
    parser.add_argument("--port", type=int, default=18751)
    parser.add_argument("--memories", type=int, default=2000, help="LoCoMo turns in the session")
    parser.add_argument("--requests", type=int, default=200, help="questions at c=1; recalls per c=10 block")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=4, help="c=10 blocks of --requests per side, alternating")
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

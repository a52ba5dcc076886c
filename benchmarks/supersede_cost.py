"""What supersession on store costs: prompt tokens per store and latency added per store.

Usage::

    python -m benchmarks.supersede_cost --data-dir /tmp/mcpm-bench --baseline /tmp/mcpm-base --count 300

Three ``mcp-memory serve --transport http`` processes on one database store the same LoCoMo turns
(one conversation, in order, so a turn has earlier turns about the same things), one at a time,
interleaved turn by turn, each into a fresh session of its own:

- ``old``: the package under ``--baseline`` (a copy of mcp_memory/ before supersession), on the
  database of ``--baseline-data-dir`` when given (its own embedded PostgreSQL);
- ``off``: the working tree with no supersede model (the store path every user without one runs);
- ``llm``: the working tree with ``llm.supersede_model`` pointed at the scripted OpenAI-compatible
  server of the tests (tests/fake_openai.py, in this process), which answers at once, naming the
  first candidate on every second request. Its latency is therefore mcp-memory's own cost (the
  candidate search, one HTTP round trip, marking, the audit row); a real model adds its own;
- ``llm-b`` (only with ``--llm-b-env KEY=VALUE ...``): ``llm`` with those settings on top, to weigh a
  setting of the stage old against new in one run (for example ``MCP_MEMORY_SUPERSEDE__KEYWORD_CANDIDATES=0``).

Prompt tokens are counted on the requests the scripted server recorded (system + user message),
with the WordPiece tokenizer of the default embedding model (mcp_memory/model_files, the BERT
uncased vocabulary), not a chat model's tokenizer, which no package here ships offline; the
characters are reported too. The scripted server's own ``usage`` fields are scripted and not used.
The stage's own time is the ``latency_ms`` of the last 100 ``supersede`` audit rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from tokenizers import Tokenizer

from benchmarks.harness import McpHttp, ServerProcess, percentiles
from benchmarks.load import DATA

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import ChatReply, FakeOpenAI  # noqa: E402

TOKENIZER = Path(__file__).resolve().parent.parent / "mcp_memory/model_files/all-MiniLM-L6-v2/tokenizer.json"


def conversation_turns(limit: int) -> list[tuple[str, str]]:
    """(text, occurred_at) of the first ``limit`` turns of LoCoMo's conversations, in order."""
    found: list[tuple[str, str]] = []
    for sample in json.loads((DATA / "locomo10.json").read_text()):
        conversation = sample["conversation"]
        number = 1
        while f"session_{number}" in conversation and len(found) < limit:
            for turn in conversation[f"session_{number}"]:
                found.append((f"{turn['speaker']}: {turn['text']}", ""))
            number += 1
        if len(found) >= limit:
            break
    # Later turns happen later (one minute apart), so earlier turns are candidates.
    return [(text, f"2023-01-01T{index // 60 % 24:02d}:{index % 60:02d}:00+00:00") for index, (text, _) in
            enumerate(found[:limit])]


async def main(args: argparse.Namespace) -> None:
    turns = conversation_turns(args.count)
    fake = FakeOpenAI().start()
    asked: dict[str, int] = {}

    def decide(body: dict[str, Any]) -> ChatReply:
        model = body.get("model", "")
        asked[model] = asked.get(model, 0) + 1
        user = body["messages"][-1]["content"]
        new = re.search(r"<new_memory [^>]*>(.*?)</new_memory>", user, re.DOTALL)
        first = re.search(r'<memory id="1" [^>]*>(.*?)</memory>', user, re.DOTALL)
        # The pick names both whole texts as its values: said in both and different, so it stands when
        # the texts are at most 300 characters and the words bear it out (supersede.check_words).
        picked = ([{"id": "1", "old": first.group(1), "new": new.group(1)}]
                  if new and first and asked[model] % 2 == 0 else [])
        return ChatReply(content=json.dumps({"superseded": picked, "reason": "scripted"}))

    fake.set_chat_handler(decide)
    stamp = int(time.time())
    llm_env = {"MCP_MEMORY_LLM__BASE_URL": fake.base_url, "MCP_MEMORY_LLM__API_KEY": "x",
               "MCP_MEMORY_LLM__SUPERSEDE_MODEL": "scripted", "MCP_MEMORY_LLM__MAX_RETRIES": "0"}
    arms: dict[str, dict[str, str]] = {"old": {"PYTHONPATH": str(args.baseline)}, "off": {}, "llm": llm_env}
    if args.llm_b_env:  # its requests name model "scripted-b", so its tokens are counted apart
        arms["llm-b"] = {**llm_env, "MCP_MEMORY_LLM__SUPERSEDE_MODEL": "scripted-b",
                         **dict(item.split("=", 1) for item in args.llm_b_env)}
    report: dict[str, Any] = {"turns": len(turns), "llm_b_env": args.llm_b_env}
    try:
        async with contextlib.AsyncExitStack() as stack:  # each server, then its connection; closed in reverse
            clients = {}
            for offset, (name, env) in enumerate(arms.items()):
                folder = args.baseline_data_dir if name == "old" and args.baseline_data_dir else args.data_dir
                stack.enter_context(ServerProcess(folder, args.port + offset, env=env))
                clients[name] = await stack.enter_async_context(McpHttp(args.port + offset))
            for name, client in clients.items():  # warm-up: load the model, open connections
                await client.call("store_memory", {"session": f"cost-warmup-{stamp}", "content": f"warm-up {name}"})
            latency: dict[str, list[float]] = {name: [] for name in clients}
            superseded = {name: 0 for name in clients if name.startswith("llm")}
            for index, (text, occurred_at) in enumerate(turns):
                order = list(clients.items())
                order = order[index % len(order):] + order[: index % len(order)]  # rotate who goes first
                for name, client in order:
                    arguments = {"session": f"cost-{name}-{stamp}", "content": text, "occurred_at": occurred_at}
                    result, ms = await client.call("store_memory", arguments)
                    latency[name].append(ms)
                    if name in superseded:
                        superseded[name] += len(result.get("superseded", []))
            for name, values in latency.items():
                report[name] = {**percentiles(values), "mean": round(statistics.mean(values), 2)}
            report["added_ms_llm_minus_off"] = {
                "p50": round(report["llm"]["p50"] - report["off"]["p50"], 2),
                "mean": round(report["llm"]["mean"] - report["off"]["mean"], 2),
            }
            report["added_ms_off_minus_old"] = {
                "p50": round(report["off"]["p50"] - report["old"]["p50"], 2),
                "mean": round(report["off"]["mean"] - report["old"]["mean"], 2),
            }
            if "llm-b" in clients:
                report["added_ms_llm_minus_llm_b"] = {
                    "p50": round(report["llm"]["p50"] - report["llm-b"]["p50"], 2),
                    "mean": round(report["llm"]["mean"] - report["llm-b"]["mean"], 2),
                }
            report["marked_superseded"] = superseded
            for name in superseded:
                audits, _ = await clients[name].call("list_audits", {"session": f"cost-{name}-{stamp}",
                                                                     "kind": "supersede", "limit": 100})
                stage = [row["detail"]["latency_ms"] for row in audits["audits"]]
                report.setdefault("stage_latency_ms_last_100", {})[name] = {
                    "mean": round(statistics.mean(stage), 2), "p50": round(statistics.median(stage), 2)}
            for name, client in clients.items():
                for session in (f"cost-{name}-{stamp}", f"cost-warmup-{stamp}"):
                    await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
    finally:
        fake.stop()
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()  # the file truncates at the embedding model's 256
    for model, key in (("scripted", ""), ("scripted-b", "llm_b_")):
        requests = [r.body for r in fake.chat_requests() if r.body.get("model") == model]
        tokens = [sum(len(tokenizer.encode(m["content"], add_special_tokens=False).ids) for m in body["messages"])
                  for body in requests]
        chars = [sum(len(m["content"]) for m in body["messages"]) for body in requests]
        if not requests:
            continue
        report[f"{key}model_asked"] = {"stores": len(turns), "requests": len(requests)}
        report[f"{key}prompt_tokens_per_request"] = {"mean": round(statistics.mean(tokens), 1),
                                                     "p50": statistics.median(tokens), "max": max(tokens)}
        report[f"{key}prompt_chars_per_request"] = {"mean": round(statistics.mean(chars), 1), "max": max(chars)}
        report[f"{key}prompt_tokens_per_store"] = round(sum(tokens) / len(turns), 1)
        system = requests[0]["messages"][0]["content"]
        report[f"{key}system_prompt_tokens"] = len(tokenizer.encode(system, add_special_tokens=False).ids)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--baseline-data-dir", type=Path,
                        help="a database of its own for the old arm (needed when the two differ in schema, e.g. "
                             "migration 014 drops the triggers the old package's store relies on)")
    parser.add_argument("--baseline", type=Path, required=True, help="folder holding the baseline mcp_memory/")
    parser.add_argument("--port", type=int, default=18751)
    parser.add_argument("--count", type=int, default=300, help="turns stored by each server")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--llm-b-env", nargs="*", default=[], metavar="KEY=VALUE",
                        help="settings of a fourth server, llm-b: the llm arm with these on top")
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())

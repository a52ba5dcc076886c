"""``python -m evals.llm --model qwen2.5-0.5b|qwen2.5-1.5b``: a real local model, from nothing.

Assembles and verifies the model (``evals.llm.model``), starts llama-cpp-python's server on
127.0.0.1 (``evals.llm.server``), runs the bounded probe (``evals.llm.probe``: what the server
answers to each structured-output mode, a handful of LoCoMo questions through mcp-memory's
planner and answer model, two supersession decisions), prints the report as JSON, and stops the
server. ``--assemble-only`` stops after the model; ``--serve`` keeps the server up until Ctrl-C
(for a run of your own against it).

Needs the ``eval-llm`` extra in the interpreter given by ``--server-python`` (default: this one):
``pip install -e '.[eval-llm]'`` builds llama-cpp-python from source (about 8 minutes;
``CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF"``). Nothing here runs in CI.
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import platformdirs

from evals.llm.answers import Arm
from evals.llm.evaluate import evaluate, markdown
from evals.llm.model import MODELS, ModelError, assemble
from evals.llm.probe import answer_probe, format_check, supersede_probe, write
from evals.llm.server import FLAGS, ServerError, llama_server
from evals.locomo import default_data_path
from evals.locomo_data import load_locomo

logger = logging.getLogger("evals.llm")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals.llm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--cache-dir", type=Path,
                        default=Path(platformdirs.user_cache_dir("mcp-memory")) / "eval-llm",
                        help="where the parts, the model and the probe's database live")
    parser.add_argument("--server-python", default=sys.executable,
                        help="an interpreter with llama-cpp-python[server]==0.3.36 (the eval-llm extra)")
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (default: as evals.locomo)")
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--sessions", type=int, default=2, help="LoCoMo sessions stored for the probe (1-35)")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    parser.add_argument("--keep-parts", action="store_true", help="keep the installed parts after assembly")
    parser.add_argument("--repack", choices=("auto", "on", "off"), default="auto",
                        help="ggml's weight repacking (auto: off on a CPU with AMX, whose kernel crashes here)")
    parser.add_argument("--run", choices=("answers", "probe"), default="answers",
                        help="answers: the LoCoMo answer evaluation (evals.llm.answers); probe: the bounded probe")
    parser.add_argument("--per-category", type=int, default=20, help="answers: questions per LoCoMo category")
    parser.add_argument("--deleted", type=int, default=20,
                        help="answers: questions (categories 1, 2, 4) whose evidence is deleted and asked again")
    parser.add_argument("--seed", type=int, default=13, help="answers: the sample's seed")
    parser.add_argument("--conversations", default=None, help="answers: only these conversations (comma-separated)")
    parser.add_argument("--arm", action="append", default=[], metavar="NAME[=SOURCE][@TOP_K]",
                        help="answers: a server under test; SOURCE is a folder holding mcp_memory/ (put first on "
                        "PYTHONPATH), none for the installed package; TOP_K the recall's top_k (candidates the "
                        "answer model is shown; default the server's); repeat to compare in one run (default: main)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--assemble-only", action="store_true")
    action.add_argument("--serve", action="store_true", help="serve until Ctrl-C; no probe")
    return parser


def _has_llama_cpp(python: str) -> bool:
    done = subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True, check=False)
    return done.returncode == 0


async def _probe(args: argparse.Namespace, base_url: str, alias: str, data_dir: Path) -> dict[str, Any]:
    from mcp import Client

    from mcp_memory.server import build_server
    from mcp_memory.settings import Settings

    [conversation], _ = load_locomo(args.data or default_data_path(), [args.conversation])
    llm = {"base_url": base_url, "api_key": "local", "timeout_s": 600.0, "max_retries": 0}
    answering = Settings(data_dir=data_dir, llm={**llm, "plan_model": alias, "answer_model": alias})
    async with Client(build_server(answering), mode="legacy") as client:
        answers = await answer_probe(client, conversation, args.sessions)
    superseding = Settings(data_dir=data_dir, llm={**llm, "supersede_model": alias})
    async with Client(build_server(superseding), mode="legacy") as client:
        supersessions = await supersede_probe(client)
    return {"answers": answers, "supersession": supersessions}


def _arms(specs: list[str]) -> list[Arm]:
    arms = []
    for spec in specs or ["main"]:
        head, at, tail = spec.rpartition("@")
        spec, top_k = (head, int(tail)) if at and tail.isdigit() else (spec, None)
        name, _, source = spec.partition("=")
        arms.append(Arm(name, Path(source).resolve() if source else None, top_k))
    return arms


async def _answers(args: argparse.Namespace, base_url: str, alias: str) -> dict[str, Any]:
    wanted = args.conversations.split(",") if args.conversations else None
    conversations, _ = load_locomo(args.data or default_data_path(), wanted)
    return await evaluate(conversations, _arms(args.arm), base_url, alias, args.cache_dir / "answers-data",
                          args.per_category, args.deleted, args.seed)


def _write_answers(out: Path | None, report: dict[str, Any]) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = out or Path("evals/reports") / f"llm-answers-{stamp}.json"
    write(path, report, echo=False)
    table = markdown(report)
    path.with_suffix(".md").write_text(table, encoding="utf-8")
    print(table)
    print(f"report: {path}")


def run(args: argparse.Namespace) -> int:
    spec = MODELS[args.model]
    started = time.monotonic()
    try:
        model_path = assemble(spec, args.cache_dir, keep_parts=args.keep_parts)
    except ModelError as exc:
        logger.error("%s", exc)
        return 2
    if args.assemble_only:
        print(model_path)
        return 0
    if not _has_llama_cpp(args.server_python):
        logger.error("%s has no llama_cpp.server; install the eval-llm extra into it (see evals/README.md)",
                     args.server_python)
        return 2
    report: dict[str, Any] = {"model": spec.name, "title": spec.title, "sha256": spec.sha256,
                              "started_at": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        with llama_server(args.server_python, model_path, spec.name, repack=args.repack) as server:
            report["server"] = {"command": " ".join(server.command), "flags": " ".join(FLAGS),
                                "repack": args.repack, "ready_seconds": server.started_s}
            if args.serve:
                print(f"serving {spec.name} at {server.base_url} (Ctrl-C stops it)", flush=True)
                try:
                    while True:
                        time.sleep(3600)
                except KeyboardInterrupt:
                    return 0
            report["format_check"] = format_check(server.base_url, spec.name)
            if args.run == "answers":
                report.update(anyio.run(_answers, args, server.base_url, spec.name))
                report["seconds"] = round(time.monotonic() - started, 1)
                _write_answers(args.out, report)
                return 0
            data_dir = args.cache_dir / "probe-data"
            data_dir.mkdir(parents=True, exist_ok=True)
            report.update(anyio.run(_probe, args, server.base_url, spec.name, data_dir))
    except ServerError as exc:
        logger.error("%s", exc)
        return 2
    report["seconds"] = round(time.monotonic() - started, 1)
    write(args.out, report)
    return 0


def _stop_on_signals() -> None:
    """SIGTERM exits through the ``finally`` blocks (so the server is stopped, not orphaned), and
    Ctrl-C raises KeyboardInterrupt even when the shell started us with SIGINT ignored."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: Sequence[str] | None = None) -> int:
    _stop_on_signals()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    if not 1 <= args.sessions <= 35:
        build_parser().error("--sessions must be 1-35")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

"""Merge LongMemEval reports of disjoint shards into one: ``python -m evals.longmemeval_merge OUT.json A.json B.json``.

The full S split takes longer to ingest than one sitting allows on a loaded machine, so it can be run
as shards (``python -m evals.longmemeval --shard 0/3 --per-question ...``, then 1/3 and 2/3). This
re-scores every question from the reports' per-question rows (gold and ranked turn ids) and writes
the merged summaries in the same report format. Times are summed per retriever (the ingest rate is
over the sum); latency percentiles are not merged.

Failure policy: a report without per-question rows, a retriever missing from one report, a question
in two reports, or reports with different cut-offs raise ``SystemExit`` with one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from evals.longmemeval_metrics import score_question, summarize
from evals.longmemeval_report import LmeResult, print_table, write_reports


def merge(reports: Sequence[dict]) -> tuple[dict, list[LmeResult], tuple[int, ...]]:
    """Re-score the per-question rows of every report, per retriever.

    Returns:
        The merged header, one result per retriever (first report's order) and the cut-offs.

    Raises:
        SystemExit: see the module's failure policy.
    """
    ks = tuple(reports[0]["settings"]["ks"])
    names = list(reports[0]["retrievers"])
    seen: set[str] = set()
    for report in reports:
        if tuple(report["settings"]["ks"]) != ks:
            raise SystemExit(f"reports use different cut-offs: {ks} and {tuple(report['settings']['ks'])}")
        if list(report["retrievers"]) != names:
            raise SystemExit(f"reports evaluate different retrievers: {names} and {list(report['retrievers'])}")
        rows = report["retrievers"][names[0]].get("per_question")
        if not rows:
            raise SystemExit(f"a report from {report.get('date')} has no per-question rows; run with --per-question")
        ids = {row["question_id"] for row in rows}
        if ids & seen:
            raise SystemExit(f"questions in two reports, e.g. {sorted(ids & seen)[0]}; merge disjoint shards only")
        seen |= ids
    results = []
    for name in names:
        rows = [row for report in reports for row in report["retrievers"][name]["per_question"]]
        scores = [(row["question_id"], score_question(row["type"], row["gold_sessions"], row["gold_turns"],
                                                       [tuple(group) for group in row["ranked"]], ks)) for row in rows]
        timing: dict[str, float] = {}
        turns = 0.0
        for report in reports:
            shard = report["retrievers"][name]["timing"]
            turns += shard.get("turns_per_s", 0.0) * shard.get("prepare_s", 0.0)
            for key in ("start_s", "prepare_s", "questions_s"):
                if key in shard:
                    timing[key] = timing.get(key, 0.0) + shard[key]
        if timing.get("prepare_s"):
            timing["turns_per_s"] = turns / timing["prepare_s"]
        misses = [m for report in reports for key, found in report["retrievers"][name]["extra"].items()
                  if key.startswith("session_misses_at_") for m in found]
        settings = reports[0]["retrievers"][name]["settings"]
        results.append(LmeResult(name, summarize([s for _, s in scores], ks), settings, timing,
                                 extra={f"session_misses_at_{5 if 5 in ks else max(ks)}": misses},
                                 per_question=rows, scores=scores))
    header = {key: value for key, value in reports[0].items() if key not in ("retrievers", "date", "command", "run_s")}
    header["date"] = datetime.now(UTC).isoformat(timespec="seconds")
    header["command"] = " ; ".join(str(report.get("command")) for report in reports)
    header["merged_from"] = [{"date": r.get("date"), "command": r.get("command"), "git": r.get("git")} for r in reports]
    left_out = dict(reports[0]["data"].get("left_out", {}))
    not_selected = {q for report in reports for q in report["data"].get("left_out", {}).get("not_selected", [])}
    left_out["not_selected"] = sorted(not_selected - seen)
    header["data"] = {**reports[0]["data"], "scored_questions": len(seen), "left_out": left_out,
                      "scored_user_turns": sum(r["data"].get("scored_user_turns", 0) for r in reports)}
    if "turns_cut" in header["data"]:
        header["data"]["turns_cut"] = {**header["data"]["turns_cut"], "turns": sorted(
            {turn for r in reports for turn in r["data"].get("turns_cut", {}).get("turns", [])})}
        header["data"]["empty_turns_dropped"] = sorted(
            {turn for r in reports for turn in r["data"].get("empty_turns_dropped", [])})
    return header, results, ks


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.longmemeval_merge``."""
    parser = argparse.ArgumentParser(prog="python -m evals.longmemeval_merge", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="merged JSON report (a .md is written beside it)")
    parser.add_argument("reports", type=Path, nargs="+", help="reports of disjoint shards, run with --per-question")
    args = parser.parse_args(argv)
    header, results, ks = merge([json.loads(path.read_text(encoding="utf-8")) for path in args.reports])
    print_table(results, ks)
    print(f"wrote {write_reports(args.out, header, results, ks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rebuild LongMemEval_S (498 of its 500 questions) from a git copy of ``hussainzs/Memoria``.

``python -m evals.longmemeval_rebuild GIT_DIR OUT.json``

The official data is on Hugging Face only; ``shared/data/README.md`` says how the S split is rebuilt
from the public repository ``hussainzs/Memoria`` (fetched, e.g., with the session's ``fetch`` tool
into a bare git directory): concatenate ``evaluations/data/lme_jsons/{38..62}_*.json`` (the prefix is
the number of haystack sessions: 1-6 are oracle files, 38-62 S, 460 and more M). Never the
``lme_jsons_verified`` folder, which holds modified copies. Two questions (``gpt4_7a0daae1`` and
``7e00a6cb``) are missing upstream, so the result holds 498 questions, in the files' name order
(nothing should depend on order). The file (about 257 MB) goes where you say, outside the repository,
e.g. ``~/.cache/mcp-memory/lme/longmemeval_s.json``; it is data and is never committed.

Failure policy: a missing folder, a file that is not one LongMemEval instance, a repeated question
or a count other than ``--expect`` (default 498) raises ``SystemExit`` with one line; nothing is
written then.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

FOLDER = "evaluations/data/lme_jsons"
S_FILE = re.compile(r"^(\d+)_[^/]+\.json$")
S_SESSIONS = range(38, 63)
EXPECTED = 498


def _git(git_dir: Path, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True).stdout
    except subprocess.CalledProcessError as error:
        raise SystemExit(f"git {' '.join(args)} in {git_dir} failed: {error.stderr.decode().strip()}") from error


def s_files(git_dir: Path, commit: str = "HEAD") -> list[str]:
    """Paths of the S instance files (prefix 38-62) under ``FOLDER`` at ``commit``, in name order."""
    names = _git(git_dir, "ls-tree", "--name-only", commit, f"{FOLDER}/").decode().splitlines()
    chosen = []
    for path in names:
        match = S_FILE.match(path.rsplit("/", 1)[-1])
        if match and int(match[1]) in S_SESSIONS:
            chosen.append(path)
    if not names:
        raise SystemExit(f"{git_dir}: no {FOLDER}/ at {commit}; is this a copy of hussainzs/Memoria?")
    return sorted(chosen)


def rebuild(git_dir: Path, commit: str = "HEAD", expect: int = EXPECTED) -> list[dict]:
    """Read every S file with ``git show`` and return the instances.

    Raises:
        SystemExit: a file is not one instance, a question repeats, or the count is not ``expect``.
    """
    instances: list[dict] = []
    seen: set[str] = set()
    for path in s_files(git_dir, commit):
        instance = json.loads(_git(git_dir, "show", f"{commit}:{path}"))
        if not isinstance(instance, dict) or "question_id" not in instance or "haystack_sessions" not in instance:
            raise SystemExit(f"{path}: not one LongMemEval instance")
        if len(instance["haystack_sessions"]) != int(S_FILE.match(path.rsplit("/", 1)[-1])[1]):
            raise SystemExit(f"{path}: its name promises a different number of haystack sessions")
        if instance["question_id"] in seen:
            raise SystemExit(f"{path}: question {instance['question_id']} repeats")
        seen.add(instance["question_id"])
        instances.append(instance)
    if len(instances) != expect:
        raise SystemExit(f"found {len(instances)} S questions in {git_dir}, expected {expect}")
    return instances


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.longmemeval_rebuild``."""
    parser = argparse.ArgumentParser(prog="python -m evals.longmemeval_rebuild", description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path, help="git directory of hussainzs/Memoria (bare is fine)")
    parser.add_argument("out", type=Path, help="where to write the JSON list, outside the repository")
    parser.add_argument("--commit", default="HEAD", help="commit to read (default HEAD; the README's is 959167b)")
    parser.add_argument("--expect", type=int, default=EXPECTED, help=f"questions expected (default {EXPECTED})")
    args = parser.parse_args(argv)
    instances = rebuild(args.git_dir, args.commit, args.expect)
    args.out.expanduser().parent.mkdir(parents=True, exist_ok=True)
    with args.out.expanduser().open("w", encoding="utf-8") as out:
        json.dump(instances, out)
    turns = sum(1 for i in instances for session in i["haystack_sessions"] for t in session if t.get("role") == "user")
    print(f"wrote {len(instances)} questions, {turns} user turns, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

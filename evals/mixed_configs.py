"""How updates reach the server in the mixed suite's supersession evaluation, and the scripted judge.

A configuration says whether ``store_memory`` gets the explicit ``supersedes`` the case file
records (``memories[].supersedes``), whether an LLM looks for supersession on store, and which
``RecallSettings`` it overrides. The LLM is ``ScriptedJudge``: the scripted OpenAI-compatible
server of ``tests/fake_openai.py`` on 127.0.0.1 with a chat handler that reads the supersede
request (the ``<new_memory>`` and ``<memory>`` lines of the supersession contract) and replies the
candidate ids the case file says the new memory supersedes. It is a perfect judge: figures with
it measure the plumbing (which candidates the server shows, how it marks and ranks), not a model.

Failure policy: a request that is not a supersede request gets HTTP 400 (the server then stores
the memory anyway and notes the failure in its audit); ``unexpected`` counts them.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.fake_openai import ChatReply, FakeOpenAI

__all__ = ["CONFIGS", "JUDGE_MODEL", "Config", "ScriptedJudge", "store_waves"]

JUDGE_MODEL = "scripted-judge"
_NEW = re.compile(r'<new_memory\b[^>]*>(.*?)</new_memory>', re.DOTALL)
_CANDIDATE = re.compile(r'<memory\s+id="([^"]+)"[^>]*>(.*?)</memory>', re.DOTALL)


@dataclass(frozen=True)
class Config:
    """One way of storing the suite.

    Attributes:
        name: short name for tables and ``--configs``.
        supersedes: pass the case file's ``supersedes`` to ``store_memory`` (as memory_ids).
        llm: configure ``llm.supersede_model`` against the scripted judge (in process only).
        recall: ``RecallSettings`` overrides.
        description: one line for the report.
    """

    name: str
    supersedes: bool
    llm: bool
    description: str
    recall: Mapping[str, Any] = field(default_factory=dict)


CONFIGS: dict[str, Config] = {
    config.name: config
    for config in (
        Config("plain", False, False, "neither supersedes nor an LLM: recall's own rules"),
        Config("plain-no-rule", False, False, "neither, and the no-LLM update rules off",
               {"implicit_updates": False, "subject_updates": False}),
        Config("plain-subject", False, False, "neither; the same-subject rule instead of the marked-change rule",
               {"implicit_updates": False, "subject_updates": True}),
        Config("plain-both", False, False, "neither; the marked-change and the same-subject rules",
               {"implicit_updates": True, "subject_updates": True}),
        Config("supersedes", True, False, "explicit supersedes on store_memory"),
        Config("llm", False, True, "the scripted LLM judge on store (a perfect judge)"),
        Config("supersedes+llm", True, True, "explicit supersedes and the scripted LLM judge"),
    )
}
"""The configurations the issue asks for, in report order."""


def store_waves(memories: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group memories so that each is stored after every memory it supersedes.

    Wave 0 holds the memories that supersede nothing, wave k those whose longest chain of
    ``supersedes`` below them has k links; order inside a wave is the file's.

    Raises:
        ValueError: ``supersedes`` names an unknown memory or forms a cycle.
    """
    by_id = {m["id"]: m for m in memories}
    depth: dict[str, int] = {}

    def depth_of(case_id: str, seen: frozenset[str]) -> int:
        if case_id in seen:
            raise ValueError(f"supersedes forms a cycle through {case_id}")
        if case_id not in depth:
            olds = by_id[case_id].get("supersedes", [])
            unknown = [old for old in olds if old not in by_id]
            if unknown:
                raise ValueError(f"{case_id} supersedes unknown memories {unknown}")
            depth[case_id] = 1 + max((depth_of(old, seen | {case_id}) for old in olds), default=-1)
        return depth[case_id]

    waves: list[list[dict[str, Any]]] = []
    for memory in memories:
        level = depth_of(memory["id"], frozenset())
        waves.extend([] for _ in range(level + 1 - len(waves)))
        waves[level].append(memory)
    return waves


class ScriptedJudge:
    """A perfect supersede judge served over HTTP on 127.0.0.1; use as a context manager.

    Attributes:
        base_url: the OpenAI-compatible endpoint (``http://127.0.0.1:<port>/v1``) once started.
        requests: supersede requests answered.
        marked: candidate ids replied as superseded, over all requests.
        missed: superseded memories the case file names that were not among the candidates shown.
        unexpected: chat requests that were not supersede requests.
    """

    def __init__(self, memories: Sequence[dict[str, Any]]) -> None:
        """Learn from the case file which content supersedes which case ids.

        Args:
            memories: the case file's memories (``id``, ``content``, optional ``supersedes``).
        """
        self._targets: dict[str, set[str]] = {}
        self._cases_of: dict[str, set[str]] = {}  # content -> case ids (the prompt numbers candidates)
        for memory in memories:
            self._cases_of.setdefault(memory["content"], set()).add(memory["id"])
            if memory.get("supersedes"):
                self._targets.setdefault(memory["content"], set()).update(memory["supersedes"])
        self._lock = threading.Lock()
        self._fake = FakeOpenAI()
        self._fake.set_chat_handler(self._reply)
        self.base_url = ""
        self.requests = self.marked = self.missed = self.unexpected = 0

    def __enter__(self) -> ScriptedJudge:
        self._fake.start()
        self.base_url = self._fake.base_url
        return self

    def __exit__(self, *exc: object) -> None:
        self._fake.stop()

    def _reply(self, body: dict[str, Any]) -> ChatReply:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
        new = _NEW.search(text)
        if new is None:
            with self._lock:
                self.unexpected += 1
            return ChatReply(status=400)
        new_content = html.unescape(new.group(1)).strip()
        wanted = self._targets.get(new_content, set())
        candidates = [(ref, html.unescape(content).strip()) for ref, content in _CANDIDATE.findall(text)]
        shown = {case for _, content in candidates for case in self._cases_of.get(content, set())}
        # Each pick names the whole old and new texts as its values: said in both, and different.
        chosen = [{"id": ref, "old": content, "new": new_content}
                  for ref, content in candidates if self._cases_of.get(content, set()) & wanted]
        with self._lock:
            self.requests += 1
            self.marked += len(chosen)
            self.missed += len(wanted - shown)
        reason = "the case file says so" if chosen else "no candidate is superseded by the new memory"
        return ChatReply(json.dumps({"superseded": chosen, "reason": reason}), model=JUDGE_MODEL)

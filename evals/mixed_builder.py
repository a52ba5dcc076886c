"""The machinery of the mixed suite's generator: memories, questions, the per-plan ``Builder``.

``evals.generate_mixed`` runs the plans (``evals.mixed_templates.PLANS``); each plan's template
function receives a ``Builder`` that stores memories at free times of the session's timeline and
offers candidate questions. Every choice is drawn from the one ``random.Random`` the builder is given.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

__all__ = ["MONTHS", "Builder", "Memory", "Plan", "Question", "day_en", "day_zh", "month_en", "month_zh", "split_pool"]

START, DAYS = datetime(2023, 1, 2), 880  # the timeline, in each session's local wall-clock time
MONTHS = "January February March April May June July August September October November December".split()


def split_pool(text: str) -> list[str]:
    """A pool written as ``"a|b|c"``."""
    return text.split("|")


def day_en(t: datetime) -> str:
    """``14 April 2024`` (no locale involved)."""
    return f"{t.day} {MONTHS[t.month - 1]} {t.year}"


def month_en(t: datetime) -> str:
    """``April 2024``."""
    return f"{MONTHS[t.month - 1]} {t.year}"


def day_zh(t: datetime) -> str:
    """``2024年4月14日``."""
    return f"{t.year}年{t.month}月{t.day}日"


def month_zh(t: datetime) -> str:
    """``2024年4月``."""
    return f"{t.year}年{t.month}月"


@dataclass
class Memory:
    """One memory to store; ``case_id`` is given once all sessions are built."""

    session: str
    content: str
    occurred_at: datetime
    language: str
    metadata: dict[str, str] | None = None
    case_id: str = ""
    supersedes: list[Memory] = field(default_factory=list)  # older memories whose value this one replaces


@dataclass
class Question:
    """One question; evidence and superseded hold the memories themselves until ids exist."""

    session: str
    kind: str
    language: str
    query: str
    expected_answer: str
    evidence: list[Memory]
    superseded: list[Memory] = field(default_factory=list)


class Builder:
    """Adds one plan's memories and candidate questions; every choice is drawn from the shared rng."""

    def __init__(self, rng: random.Random, plan: Plan, taken: set[int], seen: set[str], world: dict[str, str]) -> None:
        """Start a plan.

        Args:
            rng: the generator's only source of randomness.
            plan: session, language, time zone and size.
            taken: hour slots already used in this session (memories stay at least 2 hours apart,
                beyond the server's one-hour neighbour window).
            seen: contents already stored in this session (the server would de-duplicate them).
            world: values one session's templates hand to another's (a shared ticket number).
        """
        self.rng, self.plan, self.taken, self.seen, self.world = rng, plan, taken, seen, world
        self.tz = timezone(timedelta(hours=plan.utc_offset_h))
        self.memories: list[Memory] = []
        self.candidates: list[Question] = []

    def one(self, options: Sequence[str]) -> str:
        """One of ``options``."""
        return self.rng.choice(list(options))

    def pick(self, pool: str, k: int) -> list[str]:
        """``k`` distinct values of a ``"a|b|c"`` pool."""
        return self.rng.sample(split_pool(pool), k)

    def digits(self, n: int) -> str:
        """A random ``n``-digit number without a leading zero."""
        return str(self.rng.randrange(10 ** (n - 1), 10**n))

    def at(self, lo: float = 0.0, hi: float = 1.0) -> datetime:
        """A free local time between fractions ``lo`` and ``hi`` of the timeline, 08:00-21:59."""
        first, last = int(lo * DAYS), max(int(hi * DAYS), int(lo * DAYS) + 1)
        while True:
            day, hour = self.rng.randrange(first, last), self.rng.randrange(8, 22)
            slot = day * 24 + hour
            if not self.taken.intersection(range(slot - 2, slot + 3)):
                self.taken.add(slot)
                minute = self.rng.randrange(60)
                return (START + timedelta(days=day, hours=hour, minutes=minute)).replace(tzinfo=self.tz)

    def add(self, content: str, when: datetime | None = None) -> Memory:
        """Store ``content`` at ``when`` (a random time if None), sometimes with a source in metadata.

        Raises:
            ValueError: the session already holds this content.
        """
        if content in self.seen:
            raise ValueError(f"{self.plan.session}: duplicate content {content!r}")
        self.seen.add(content)
        source = self.one(self.plan.sources) if self.rng.random() < 0.4 else None
        memory = Memory(self.plan.session, content, when or self.at(), self.plan.language,
                        {"source": source} if source else None)
        self.memories.append(memory)
        return memory

    def ask(self, kind: str, queries: Sequence[str], answer: str, evidence: list[Memory],
            superseded: Sequence[Memory] = ()) -> None:
        """Offer a question (one of ``queries``); ``generate`` keeps as many per kind as the plan asks."""
        self.candidates.append(Question(self.plan.session, kind, self.plan.language, self.one(queries), answer,
                                        evidence, list(superseded)))

    def fact(self, kind: str, memories: Sequence[str], queries: Sequence[str], answer: str,
             when: datetime | None = None) -> Memory:
        """Store one of ``memories`` and offer a question whose evidence it is."""
        memory = self.add(self.one(memories), when)
        self.ask(kind, queries, answer, [memory])
        return memory

    def event(self, memories: Sequence[str], queries: Sequence[str], date_text: Callable[[datetime], str]) -> Memory:
        """Store a dated event and offer a when-question; the answer is its local date as ``date_text`` writes it."""
        when = self.at()
        return self.fact("temporal", memories, queries, date_text(when), when)

    def chain(self, steps: Sequence[Sequence[str]], queries: Sequence[str], answer: str,
              history: Sequence[str] = (), before: str = "") -> list[Memory]:
        """Store a fact and its updates in time order, each superseding the one before.

        Offers a current question (kind ``update``: evidence the newest, ``superseded`` the older
        ones) and, with ``history``, a historical one (kind ``historical``) whose answer ``before``
        is the value the newest replaced and whose evidence is the memory that stated it.
        """
        n = len(steps)
        stored = [self.add(self.one(step), self.at(0.05 + 0.9 * i / n, 0.05 + 0.9 * (i + 1) / n))
                  for i, step in enumerate(steps)]
        for older, newer in zip(stored, stored[1:]):
            newer.supersedes.append(older)
        self.ask("update", queries, answer, stored[-1:], stored[:-1])
        if history:
            self.ask("historical", history, before, stored[-2:-1])
        return stored

    def fill(self, templates: Sequence[str], pools: dict[str, str], count: int) -> None:
        """Add ``count`` distinct everyday memories from ``templates`` filled from ``pools``.

        Raises:
            RuntimeError: the templates cannot make that many distinct texts.
        """
        for _ in range(count * 50):
            if count <= 0:
                return
            text = self.one(templates).format(**{key: self.one(split_pool(pool)) for key, pool in pools.items()})
            if text not in self.seen:
                self.add(text)
                count -= 1
        raise RuntimeError(f"{self.plan.session}: filler templates ran out of distinct texts")


@dataclass(frozen=True)
class Plan:
    """One session (or one language's share of it) and how many questions of each kind it gets.

    Attributes:
        session: the MCP session name.
        language: ``en`` or ``zh``, for memories and questions alike.
        utc_offset_h: the session's time zone, hours east of UTC.
        size: memories in this plan, filler included.
        quota: questions per kind, in ``KINDS`` order.
        build: adds the plan's facts, updates, events and identifiers (filler is added after).
        fill: filler templates and their ``"a|b|c"`` pools.
        sources: values of ``metadata.source``.
        description: one line for the case file.
        person: (name, pronoun) for a user session; the filler's ``{n}`` is the name.
    """

    session: str
    language: str
    utc_offset_h: int
    size: int
    quota: tuple[int, int, int, int, int, int, int]
    build: Callable[[Builder], None]
    fill: tuple[tuple[str, ...], dict[str, str]]
    sources: tuple[str, ...]
    description: str
    person: tuple[str, str] = ("", "")

"""Same-subject updates: for a question about the present, the later of two candidates about what the
question asks ranks right above the earlier.

The rule reads time and subject, not change words. The **subject** of a pair is what the question
asks about: the question's content words (no stop words, no question words such as "how many" or
"current"; CJK: character pairs) that both memories hold. Two candidates of the fused pool are about
the same subject when they share at least ``MIN_SHARED`` of those words (all of them when the
question has fewer) and at least ``SHARED_FRACTION`` of the question's words, and when those words
weigh at least ``SHARED_WEIGHT`` of the question's: a word most candidates hold (the person a session
is about, a speaker's name in a transcript) weighs next to nothing. Words match on a common start
(``match``): "lives" holds "live", "restaurants" holds "restaurant". Only the first ``WINDOW``
candidates are paired, so the rule orders what the question found best and never pulls a memory up
from deep in a large pool (with the whole pool of a top_k 50 recall it took LoCoMo recall@10 from
76.5 to 58.6).

Why the question and not the memories' vectors: on LongMemEval's knowledge-update questions a user
turn holds the changed fact among other talk, so the cosine of the two evidence turns (median 0.48)
is no higher than that of other pairs of the pool (median 0.38, 90th percentile 0.64), while the
question's words they share separate them (median 4 shared, against 0 for other pairs and 2 at the
90th percentile; figures and the run in evals/README.md). Between short memories (both at most
``SHORT_CHARS`` characters: a sentence or two) the vectors do tell: there a pair must also have a
cosine similarity of at least ``SHORT_SIMILARITY``, which keeps "Mr. Petrov sold the building to Halden
Homes, who collect Mara's rent through an app" (0.46) below "Mara's rent is 950 euros a month" for
"What is Mara's rent?".

Detected pairs only reorder, as ``implicit_updates.raise_newer`` does: the newer moves to just above
the older; nothing is dropped. A question about the past (``supersede.asks_about_past``: "before",
"previously", "used to" ...) keeps the fused order.

Failure policy: ``order_by_subject`` reads vectors (in-process copy, else PostgreSQL) only for pairs of
short memories; ``DatabaseUnavailable`` propagates, as in the rest of recall. The rest is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from mcp_memory.deps import Ready
from mcp_memory.models import Candidate
from mcp_memory.pipeline.implicit_updates import content_words, raise_newer
from mcp_memory.pipeline.supersede import asks_about_past
from mcp_memory.pipeline.word_cache import text_cache

__all__ = ["MIN_SHARED", "SHARED_FRACTION", "SHARED_WEIGHT", "SHORT_CHARS", "SHORT_SIMILARITY", "WINDOW",
           "order_by_subject", "question_terms", "same_subject", "subject_pairs"]

MIN_SHARED = 2  # question words both memories hold (all of the question's, when it has fewer)
SHARED_FRACTION = 0.3  # ... and at least this share of the question's words
MIN_STEM = 4  # two words match when they start alike for at least this many letters ...
SUFFIX_SLACK = 2  # ... and the longer has at most two letters more past them ("live"/"lives"; not "apart"/"apartment")
WINDOW = 10  # the rule orders the first 10 fused candidates: it never brings in one the question found worse
SHARED_WEIGHT = 0.4  # share of the weight of the question's words the window holds that the pair must hold
SHORT_CHARS = 150  # a memory this short is about one thing: its vector can say whether two are about the same
SHORT_SIMILARITY = 0.5  # cosine two short memories of a pair need
_QUESTION_WORDS = frozenset(
    "how many much what which who whom whose when where why do does did done currently current still "
    "time times total number right today these days "
    "什么 哪里 哪儿 多少 现在 目前 几个 怎么 如今".split()
)


def match(term: str, word: str) -> bool:
    """Whether ``word`` holds the question word ``term``: equal, or (both of ``MIN_STEM`` letters or more)
    one starts with the other's first letters and they differ by at most ``SUFFIX_SLACK`` letters at the end."""
    if term == word:
        return True
    shortest = min(len(term), len(word))
    if shortest < MIN_STEM or term[:MIN_STEM] != word[:MIN_STEM]:
        return False
    common = MIN_STEM
    while common < shortest and term[common] == word[common]:
        common += 1
    return max(len(term), len(word)) - common <= SUFFIX_SLACK


def question_terms(query: str) -> frozenset[str]:
    """The question's content words less question words (lower case; CJK: character pairs)."""
    return frozenset(word for word in content_words(query) if word not in _QUESTION_WORDS)


@text_cache()
def _held(terms: frozenset[str], text: str) -> frozenset[str]:
    """The question words ``text`` holds (``match``)."""
    by_start: dict[str, list[str]] = {}
    words = content_words(text)
    for word in words:
        by_start.setdefault(word[:MIN_STEM], []).append(word)
    return frozenset(
        term for term in terms
        if term in words or any(match(term, word) for word in by_start.get(term[:MIN_STEM], ()))
    )


def same_subject(shared: int, terms: int) -> bool:
    """Whether two memories holding ``shared`` of a question's ``terms`` words are about its subject."""
    return terms > 0 and shared >= min(MIN_SHARED, terms) and shared >= SHARED_FRACTION * terms


def subject_pairs(query: str, candidates: Sequence[Candidate]) -> list[tuple[Candidate, Candidate]]:
    """(older, newer) pairs among the first ``WINDOW`` candidates about the question's subject, by words
    alone: they share ``same_subject`` words of the question, and those words weigh at least
    ``SHARED_WEIGHT`` of the question's words that any of the n candidates holds, each weighted
    ``log((n + 1) / (df + 0.5))`` by how many (df) of them hold it. None when the question asks about
    the past or has no content words."""
    terms = question_terms(query)
    window = list(candidates[:WINDOW])
    if len(window) < 2 or not terms or asks_about_past(query):
        return []
    held = [_held(terms, candidate.content) for candidate in window]
    holders = {term: sum(term in h for h in held) for term in terms}
    weight = {term: math.log((len(window) + 1) / (count + 0.5)) for term, count in holders.items() if count}
    total = sum(weight.values())  # a word no candidate holds tells nothing about which of them pair
    pairs: list[tuple[Candidate, Candidate]] = []
    for i, first in enumerate(window):
        if not same_subject(len(held[i]), len(terms)):
            continue
        for j in range(i + 1, len(window)):
            second, shared = window[j], held[i] & held[j]
            if first.occurred_at == second.occurred_at or not same_subject(len(shared), len(terms)):
                continue
            if sum(weight[term] for term in shared) < SHARED_WEIGHT * total:
                continue
            pairs.append((first, second) if first.occurred_at < second.occurred_at else (second, first))
    return pairs


def _short(candidate: Candidate) -> bool:
    return len(candidate.content) <= SHORT_CHARS


def prefer_later(
    pairs: Sequence[tuple[Candidate, Candidate]], candidates: Sequence[Candidate], vectors: Mapping[str, np.ndarray]
) -> list[Candidate]:
    """``candidates`` with the newer of each pair raised above the older (``raise_newer``), except pairs of
    two short memories whose vectors (memory_id -> unit vector) are less than ``SHORT_SIMILARITY`` alike
    or missing."""
    kept = []
    for older, newer in pairs:
        if _short(older) and _short(newer):
            a, b = vectors.get(older.memory_id), vectors.get(newer.memory_id)
            if a is None or b is None or float(a @ b) < SHORT_SIMILARITY:
                continue
        kept.append((older.memory_id, newer.memory_id))
    return raise_newer(candidates, kept)


async def order_by_subject(ready: Ready, session: str, query: str, candidates: list[Candidate]) -> list[Candidate]:
    """Rank the later memory of every same-subject pair right above the earlier one, for a question
    about the present (``subject_pairs``, ``prefer_later``).

    Vectors are read only when a pair of short memories needs them: from the session's in-process copy,
    else PostgreSQL.

    Raises:
        DatabaseUnavailable: the vectors had to come from PostgreSQL and it could not be reached.
    """
    pairs = subject_pairs(query, candidates)
    if not pairs:
        return candidates
    ids = list(dict.fromkeys(c.memory_id for pair in pairs if _short(pair[0]) and _short(pair[1]) for c in pair))
    vectors: Mapping[str, np.ndarray] | None = {}
    if ids:
        vectors = ready.vectors.vectors(session, ids)
        if vectors is None:  # no in-process copy of this session
            vectors = await ready.repository.embeddings(session, ids)
    return prefer_later(pairs, candidates, vectors)

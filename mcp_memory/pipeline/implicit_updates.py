"""Implicit updates: without recorded supersession, the newer of two memories that state different
values of the same thing for the same subject ranks right above the older.

Cosine similarity alone does not tell an update from an unrelated neighbour: on the mixed suite
(evals/cases/mixed.json, the product's MiniLM vectors) 70% of update pairs have cosine > 0.7, but
so do 10% of all other pairs of a session and 53% of each memory's five nearest. A pair counts as
an update only when the vectors agree (``similarity``) *and* the words show one of two shapes:

- **restated**: both open with the same frame of at least ``FRAME_TOKENS`` tokens that holds a
  copula ("Alice's GP is Dr." / "Alice's GP is Dr."; "王芳的家庭医生是" / ...), then differ
  ("... Keller at the health centre" / "... Almeida at the clinic"); or the frames stop where both
  put a copula ("The refund for INV-1 is ..." / "... was ...");
- **marked change**: the newer holds a change marker ("moved", "switched", "no longer",
  "from X to Y", "换成", "搬到", "不再" ...) and, after the marker, a content word of the older
  ("moved from **Berlin** to Lisbon" after "lives in Berlin"): the change is about the older's value.

Measured separation, precision and recall, is in evals/README.md (``python -m evals.update_pairs``).
Detected pairs only reorder: ``prefer_newer`` moves the newer memory of a pair to just above the
older when it ranked below it; nothing is dropped and nothing else moves relative to each other.
A question about the past ("where did Alice live before?") keeps the fused order. Recorded
supersession (``pipeline/supersede.py``) runs after this and wins where both apply.

Failure policy: pure functions, no I/O; ``order_updates`` reads vectors from the in-process copy
or, without one, PostgreSQL (``DatabaseUnavailable`` propagates, as in the rest of recall).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from mcp_memory.deps import Ready
from mcp_memory.models import Candidate
from mcp_memory.pipeline.search import trigram_terms
from mcp_memory.pipeline.supersede import asks_about_past
from mcp_memory.pipeline.word_cache import text_cache

__all__ = ["FRAME_SIMILARITY", "MARKER_SIMILARITY", "confirms_update", "content_words", "is_update", "order_updates",
           "prefer_newer", "raise_newer"]

FRAME_SIMILARITY = 0.6  # cosine of a restated pair
MARKER_SIMILARITY = 0.5  # cosine of a pair whose newer memory marks a change
FRAME_TOKENS = 3  # content tokens in the frame a restated pair shares (CJK: characters)
_COPULAS = frozenset({"is", "are", "was", "were", "是", "为"})
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’.+-]*|[\u3400-\u9fff]")  # a word, or one CJK character
_MARKER = re.compile(
    r"\b(?:now|no longer|instead of|moved|relocated|switched|changed|swapped|renamed|upgraded|downgraded|slipped"
    r"|postponed|raised|lowered|left|last day|sold|traded in|has a new|new (?:mobile|phone|number|address|email|job|role"
    r"|owner)|from now on)\b|\bfrom\b[^.;:]*\bto\b"
    r"|换了|换成|改到|改成|改为|搬到|搬去|搬家|迁移到|推迟|不再|停用|调去|离职|从[^，。；]{1,20}(?:到|成|为)",
    re.IGNORECASE,
)
# An e-mail's parts are bounded (RFC 5321: 64 before the @, 63 per label): unbounded, ``[\w.+-]+@`` ran
# from every character of a run of \w (CJK characters are \w) to its end looking for an @, 4.5 s for a
# 32,000-character Chinese memory, three times per text on a session's first recall.
_WORD = re.compile(
    r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+|[A-Za-z][A-Za-z'’-]*|[0-9][0-9:.,/+-]*[0-9]|[0-9]"
)
_FROM = re.compile(r"\bfrom\b|从", re.IGNORECASE)
_CJK = re.compile(r"[\u3400-\u9fff]+")
_DISTINCTIVE = re.compile(r"\d{5}|[A-Za-z]{2}.*\d{3}|\d{3}.*[A-Za-z]{2}")  # INV-813807, KX-482; not 6pm, 10km
_STOP = frozenset(
    "a an the is are was were be been of in on at to for and or but with by from as it its this that these those has "
    "have had will would can not no into about over per than then there their they he she his her we our you your i "
    "my me so up out if when which who what where while after before again also just only very more most some any "
    "each every all both via now new".split()
)
_FUNCTION_CJK = frozenset("的了在是和把从到每一个这那也都就还又很说让给被着过为与及其中上下年月日号周已经今天")


def _lead(text: str) -> list[str]:
    return [token.lower() for token in _TOKEN.findall(text)]


def _content(text: str, values_only: bool = False) -> set[str]:
    """Content words: Latin words and numbers (lower case, no possessive 's, no stop words) and CJK
    character pairs that are not both function characters. ``values_only``: only words written with
    a capital or a digit (names, places, codes, numbers) and the CJK pairs."""
    words = set()
    for word in _WORD.findall(text):
        if values_only and word.islower() and "@" not in word:
            continue
        word = word.lower().removesuffix("'s").removesuffix("’s")
        if word not in _STOP and (len(word) > 1 or word.isdigit()):
            words.add(word)
    for run in _CJK.findall(text):
        words.update(run[i : i + 2] for i in range(len(run) - 1) if not set(run[i : i + 2]) <= _FUNCTION_CJK)
    return words


@text_cache()
def content_words(text: str) -> frozenset[str]:
    """The content words of ``text``: Latin words and numbers in lower case without possessive 's or stop
    words, and CJK character pairs that are not both function characters."""
    return frozenset(_content(text))


def _first_content(text: str) -> str | None:
    """The first content word (in CJK, character pair) of ``text``: usually its subject."""
    for token in _lead(text):
        if _CJK.fullmatch(token):
            pair = text[text.lower().index(token) :][:2]
            return pair if len(pair) == 2 and not set(pair) <= _FUNCTION_CJK else None
        word = token.removesuffix("'s").removesuffix("’s")
        if word not in _STOP and (len(word) > 1 or word.isdigit()):
            return word
    return None


class _Words(NamedTuple):
    """What the rule reads of one text, computed once per text (``_words`` is cached)."""

    lead: tuple[str, ...]  # every token in order, lower case (CJK: one character each)
    content: frozenset[str]
    values: frozenset[str]
    subject: str | None
    changed_values: frozenset[str] | None  # values from the change marker on; None without a marker


@text_cache()
def _words(text: str) -> _Words:
    marker = _MARKER.search(text)
    changed = None
    if marker is not None:
        start = min([marker.start(), *(m.start() for m in _FROM.finditer(text, 0, marker.start()))])  # "from X" first
        changed = frozenset(_content(text[start:], values_only=True))
    return _Words(tuple(_lead(text)), frozenset(_content(text)), frozenset(_content(text, values_only=True)),
                  _first_content(text), changed)


def _restated(x: tuple[str, ...], y: tuple[str, ...]) -> bool:
    """Both open with the same frame of at least ``FRAME_TOKENS`` content tokens that holds a copula (or the
    frames stop where both put one), and the texts go on differently."""
    shared = 0
    while shared < min(len(x), len(y)) and x[shared] == y[shared]:
        shared += 1
    if shared >= min(len(x), len(y)):
        return False
    content = [t for t in x[:shared] if t not in _STOP and t not in _FUNCTION_CJK and t not in _COPULAS]
    return len(content) >= FRAME_TOKENS and bool(
        _COPULAS & set(x[:shared]) or (x[shared] in _COPULAS and y[shared] in _COPULAS)
    )


def _marked_change(older: _Words, newer: _Words) -> bool:
    """The newer marks a change, names the older's subject, shares two content words with it, and from the
    marker on (or from a "from"/"从" before it) names one of the older's values (a word with a capital
    or a digit, an e-mail address, or CJK)."""
    return (
        newer.changed_values is not None
        and older.subject is not None
        and older.subject in newer.content
        and len(newer.content & older.content) >= 2
        and bool(newer.changed_values & older.values)
    )


def is_update(older: str, newer: str, similarity: float) -> bool:
    """Whether ``newer`` states a different value of the same thing, for the same subject, as ``older``.

    Args:
        older: the earlier memory's content.
        newer: the later memory's content.
        similarity: cosine similarity of their vectors (1 - pgvector distance).

    Returns:
        True for a restated or a marked-change pair (see the module docstring); False otherwise,
        including identical texts.
    """
    if older == newer or similarity < MARKER_SIMILARITY:
        return False
    x, y = _words(older), _words(newer)
    return (similarity >= FRAME_SIMILARITY and _restated(x.lead, y.lead)) or _marked_change(x, y)


def confirms_update(older: str, newer: str, similarity: float) -> bool:
    """Whether the words bear out a supersession a model proposed: ``is_update``, or the newer names one
    of the older's values after a change marker at any similarity ("The migration from **MySQL** to
    PostgreSQL 16 is finished" after "Atlas stores invoices in MySQL 8", cosine 0.16, whose subject the
    newer does not repeat), or both name the same identifier ("The refund for INV-813807 was paid out"
    after "... INV-813807 is approved": a status moving on, which has no marker). The value after the
    marker is not either text's subject ("Now Alice walks to work" names Alice, not a value of "Alice is
    allergic to penicillin") nor a number of one or two digits. An identifier counts when it holds 5 digits
    in a row, or 2 letters and 3 digits: a bare group of 3-4 digits is as often a mobile prefix or a room as
    a ticket ("158 4428 6558" and another person's "158 4324 6063"), and "6pm" or "10km" is no identifier.

    It keeps what a model marks wrongly least often: the same shape with another value, which is not an
    update ("Bob had lunch with Anya at a trattoria" / "... with Sam at a trattoria"). On the mixed
    suite, Qwen2.5-1.5B's 113 marks on three sessions (16 right) keep all 16 right and at most 4 of the 97 wrong
    ones, and all 46 of the suite's update links pass (evals/README.md).
    """
    if older == newer:
        return False
    x, y = _words(older), _words(newer)
    if is_update(older, newer, similarity):
        return True
    if y.changed_values is not None:  # a value the older names, other than who the texts are about
        named = y.changed_values & x.values - {x.subject, y.subject}
        if any(not value.isdigit() or len(value) >= 3 for value in named):
            return True
    shared = set(trigram_terms([older])[1]) & set(trigram_terms([newer])[1])
    return any(_DISTINCTIVE.search(term) for term in shared)


def prefer_newer(candidates: Sequence[Candidate], vectors: Mapping[str, np.ndarray]) -> list[Candidate]:
    """Rank the newer memory of every detected update pair right above the older one.

    Args:
        candidates: best first, each with ``occurred_at``.
        vectors: memory_id -> unit vector; a candidate without one is never part of a pair.

    Returns:
        The same candidates, reordered: for each pair (older ranked above newer, ``occurred_at``
        strictly earlier), the newer moves to the older's place (taking the older's score if it
        was lower) and the older and everything between move down one. Chains resolve newest first.
    """
    ranked = list(candidates)
    with_vectors = [c for c in ranked if c.memory_id in vectors]
    pairs: list[tuple[str, str]] = []
    if len(with_vectors) < 2:
        return ranked
    matrix = np.stack([vectors[c.memory_id] for c in with_vectors])
    similarities = (matrix @ matrix.T).tolist()
    for i, first in enumerate(with_vectors):
        for j in range(i + 1, len(with_vectors)):
            second = with_vectors[j]
            if similarities[i][j] < MARKER_SIMILARITY or first.occurred_at == second.occurred_at:
                continue
            older, newer = (first, second) if first.occurred_at < second.occurred_at else (second, first)
            if is_update(older.content, newer.content, similarities[i][j]):
                pairs.append((older.memory_id, newer.memory_id))
    return raise_newer(ranked, pairs)


def raise_newer(candidates: Sequence[Candidate], pairs: Sequence[tuple[str, str]]) -> list[Candidate]:
    """Move the newer memory of each (older_id, newer_id) pair to just above the older when it ranks below it.

    The newer takes the older's place (and its score, if that was higher); the older and everything
    between move down one. Chains resolve newest first; a pair naming a memory not in ``candidates``
    is ignored.
    """
    ranked = list(candidates)
    for _ in range(len(pairs) + 1):  # each pass fixes at least one pair; a chain of n needs n passes
        moved = False
        for older_id, newer_id in pairs:
            places = {c.memory_id: place for place, c in enumerate(ranked)}
            if older_id not in places or newer_id not in places:
                continue
            old_place, new_place = places[older_id], places[newer_id]
            if new_place > old_place:
                newer = ranked.pop(new_place)
                score = max(newer.score, ranked[old_place].score)
                ranked.insert(old_place, newer.model_copy(update={"score": score}))
                moved = True
        if not moved:
            break
    return ranked


async def order_updates(ready: Ready, session: str, query: str, candidates: list[Candidate]) -> list[Candidate]:
    """``prefer_newer`` with the candidates' vectors from the session's in-process copy, else PostgreSQL;
    the candidates as they are when ``query`` asks about the past (``supersede.asks_about_past``).

    Raises:
        DatabaseUnavailable: the vectors had to come from PostgreSQL and it could not be reached.
    """
    if len(candidates) < 2 or asks_about_past(query):
        return candidates
    ids = [c.memory_id for c in candidates]
    vectors = ready.vectors.vectors(session, ids)
    if vectors is None:
        vectors = await ready.repository.embeddings(session, ids)
    return prefer_newer(candidates, vectors)

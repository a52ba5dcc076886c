"""Search: the query embedding, then per retrieval query, vector and keyword lists inside one
session, plus the chronological supplement: the most recent memories, and the time window's (the
planner's or a time expression's) memories nearest the question's first vector, or its first by
time when the embedding failed.

Every list is a ranked list of memory_ids, best first, named ``<kind>[:<query index>]``:
``vector:i``, ``keyword:i`` (BM25), ``bigram:cjk`` (Chinese/Japanese/Korean character bigrams),
``trigram:id`` (identifiers), ``recent``, ``window``, and with ``entity_weight`` set ``entity``
(BM25 among the memories naming the question's names). Failure policy: a database
error raises (no partial recall is passed off as complete); an embedding failure drops the
vector lists only, and ``Searched.embed_note`` says why (recall audits it).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio
import numpy as np

from mcp_memory.db.repository import Repository
from mcp_memory.db.retrieval import SessionVersion
from mcp_memory.errors import EmbeddingError, McpMemoryError
from mcp_memory.models import Plan, RecallFilter
from mcp_memory.pipeline.filters import inside
from mcp_memory.settings import RecallSettings
from mcp_memory.embedding.vector_cache import VectorCache

__all__ = ["CJK_CHARACTERS", "Searched", "cjk_bigrams", "cjk_characters", "query_names", "search", "trigram_terms"]

logger = logging.getLogger(__name__)

# Han, kana and Hangul: text without spaces between words. Migration 013's memory_cjk_grams indexes
# memories by the same ranges (a test compares the two).
CJK_CHARACTERS = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
_CJK_RUN = re.compile(CJK_CHARACTERS + "{2,}")
# Identifiers: tokens holding a digit, or joined by - _ . / (order numbers, file names, error codes).
_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-_./:#][A-Za-z0-9]+)+|[A-Za-z]*\d[A-Za-z0-9]*")
# ... but not hyphenated words ("self-portrait", "open-world", "Jean-Luc"): BM25 already has them
# (PostgreSQL's parser indexes the compound and its parts), and their common trigrams made the
# identifier list read thousands of memories (39-58 ms in a 10k session; benchmarks/RESULTS.md).
_HYPHENATED_WORD = re.compile(r"[A-Za-z][a-z]*(?:-[A-Za-z][a-z]*)+")
# ... nor years and ordinals ("2023", "4th"): BM25 indexes them whole, and a year's trigrams
# (" 20", "202") sit in every date, so the list took 14 ms of PostgreSQL CPU per LoCoMo question
# that named a year, 60% of the database's work at concurrency 10. Other numbers stay: a memory's
# "PR-4521" or "HTTP-502" is 'pr' + '-4521' to PostgreSQL's parser, so BM25 cannot match "4521".
_DATE_NUMBER = re.compile(r"(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)", re.IGNORECASE)
# ... nor codes whose parts are all shorter than 3 ("CS:GO", "J.K", "2.4", "v2.8.0"): pg_trgm cuts
# at punctuation and a part of 1-2 characters gives only trigrams every word of its first letter
# shares, so the list read the whole session (40 ms for "CS:GO" in 10k memories). BM25 keeps
# them: PostgreSQL's parser indexes "2.4" and "v2.8.0" as one lexeme.
_SELECTIVE_PART = re.compile(r"[A-Za-z0-9]{3}")
# ... nor the groups of a number written with thousands separators ("000" of "10,000").
_THOUSANDS = re.compile(r"\d,$")  # matched against the two characters before a token
_IDENTIFIER_THRESHOLD = 0.6
# Names: capitalised words of 3+ letters (an optional 's dropped) that do not start a sentence.
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][A-Za-z]{2,})(?:'s)?\b")
# ... other than the capitalised words of English that are not names (months and days are times,
# kept by occurred_at, and "May" is a stop word).
_NOT_NAMES = frozenset(
    "January February March April May June July August September October November December Monday Tuesday"
    " Wednesday Thursday Friday Saturday Sunday What When Where Which Who Whom Whose Why How Did Does Was Were"
    " Has Have Had Would Could Should Will Can Are The And But For Not".split()
)


def cjk_bigrams(runs: list[str]) -> list[str]:
    """Overlapping character bigrams of CJK runs, each once, in order.

    Text without spaces has no words to match, and a question rarely repeats a memory's
    phrase in the same order; bigrams are the usual unit for indexing it (Lucene's
    CJKBigramFilter).
    """
    return list(dict.fromkeys(run[i : i + 2] for run in runs for i in range(len(run) - 1)))


def cjk_characters(runs: list[str]) -> list[str]:
    """The single characters of CJK runs, each once, in order.

    A question and the memory that answers it often share a word's character but no bigram
    ("看牙" and "补了一颗牙", "号码" and "手机号"); indexing characters beside bigrams is the usual
    remedy for Chinese retrieval, and idf keeps the common ones (的, 了, the session's own name) near 0.
    """
    return list(dict.fromkeys(character for run in runs for character in run))


def trigram_terms(queries: list[str]) -> tuple[list[str], list[str]]:
    """Terms for text matching: (CJK runs, identifiers with a part of 3+ characters), each once, in order."""
    cjk: dict[str, None] = {}
    identifiers: dict[str, None] = {}
    for query in queries:
        for run in _CJK_RUN.findall(query):
            cjk[run] = None
        for match in _IDENTIFIER.finditer(query):
            token = match.group()
            if (
                _SELECTIVE_PART.search(token)
                and not _HYPHENATED_WORD.fullmatch(token)
                and not _DATE_NUMBER.fullmatch(token)
                and not _THOUSANDS.match(query, max(match.start() - 2, 0), match.start())
            ):
                identifiers[token] = None
    return list(cjk), list(identifiers)


def query_names(query: str) -> list[str]:
    """The names a question asks about: capitalised words that do not start a sentence, each once.

    ``"What did Melanie's kids paint with Caroline?"`` -> ``["Melanie", "Caroline"]``. English
    capitalisation only; months, days and capitalised function words are left out.
    """
    names = (match.group(1) for match in _NAME.finditer(query.strip()))
    return list(dict.fromkeys(name for name in names if name not in _NOT_NAMES))


async def search(
    repository: Repository,
    vector_cache: VectorCache,
    session: str,
    plan: Plan,
    embed: Callable[[list[str]], Awaitable[list[np.ndarray]]],
    settings: RecallSettings,
    filters: RecallFilter | None = None,
) -> Searched:
    """Embed the plan's queries and run every list of one recall, all at once.

    The text lists (BM25, identifiers, CJK bigrams, recent) and the session's version
    read do not need the query vectors, so they run while the model embeds; only the vector
    lists wait for it (same-run A/B at 10k memories against the sequential order: c=1 unchanged,
    1.12x recalls/s at c=10; benchmarks/RESULTS.md). The recent list comes from the session's
    in-process copy when the version read finds it current (no round trip competing with the
    model for the cores), else from PostgreSQL.

    Args:
        vector_cache: the vector lists' source (in-process copies, else PostgreSQL).
        plan: retrieval queries (original first) and an optional time window.
        embed: the embedder's ``embed_batch``; called once, with all of the plan's queries.
        filters: the caller's since/until/metadata; every list is searched inside it (each list's
            LIMIT applies to the memories that pass, never before).

    Returns:
        Searched: list name -> memory_ids, best first (empty lists left out), the
        milliseconds until the query vectors were ready, and ``embed_note`` when the embedding
        failed (the keyword and time lists were searched without the vector lists; the window
        list then holds the window's first memories by time).

    Raises:
        DatabaseUnavailable: the first error of any list, unwrapped.
    """
    lists: dict[str, list[str]] = {}
    embed_ms = 0.0
    embed_note: str | None = None
    cjk, identifiers = trigram_terms(plan.queries)
    # Each list's work grows with its terms times the session (a 4,000-character query of 800
    # identifiers took 14 s in 300 memories; benchmarks/RESULTS.md): the longest identifiers are
    # the most selective (more trigrams to share), and a question has far fewer than the caps.
    identifiers = sorted(identifiers, key=len, reverse=True)[: settings.max_identifier_terms]
    bigrams = cjk_bigrams(cjk)[: settings.max_bigram_terms]
    characters = cjk_characters(cjk)[: settings.max_bigram_terms] if settings.cjk_unigram_weight else []
    started = time.perf_counter()

    async def vector_lists() -> None:
        version = await repository.session_version(session)
        versioned.set(version)
        vectors = await embedded.wait()
        if not vectors:  # the embedding failed: keyword and time lists only
            return
        found = await vector_cache.nearest(
            repository, session, vectors, settings.vector_candidates, settings.hnsw_ef_search, version, filters
        )
        for index, hits in enumerate(found):
            lists[f"vector:{index}"] = [memory_id for memory_id, _ in hits]
        if windowed:  # the window's memories nearest the question, not its first by time
            assert plan.time_window is not None
            [hits] = await vector_cache.nearest(
                repository, session, vectors[:1], settings.window_candidates, settings.hnsw_ef_search, version,
                inside(filters, plan.time_window),
            )
            lists["window"] = [memory_id for memory_id, _ in hits]

    async def embed_queries() -> None:
        nonlocal embed_ms, embed_note
        try:
            vectors = await embed(plan.queries)
        except EmbeddingError as exc:
            embed_note = f"embedding failed, keyword lists only: {exc}"
            logger.warning("recall without vector lists: %s (cause: %r)", exc, exc.__cause__)
            vectors = []
        embed_ms = (time.perf_counter() - started) * 1000
        embedded.set(vectors)

    async def keyword_list(index: int, query: str) -> None:
        hits = await repository.keyword_search(
            session, query, settings.keyword_candidates, settings.max_keyword_terms, filters
        )
        lists[f"keyword:{index}"] = [memory_id for memory_id, _ in hits]

    async def trigram_list(name: str, terms: list[str], threshold: float) -> None:
        hits = await repository.trigram_search(session, terms, settings.keyword_candidates, threshold, filters)
        lists[name] = [memory_id for memory_id, _ in hits]

    async def cjk_list() -> None:
        weights = [1.0] * len(bigrams) + [settings.cjk_unigram_weight] * len(characters)
        hits = await repository.gram_search(
            session, bigrams + characters, settings.keyword_candidates, weights, filters
        )
        lists["bigram:cjk"] = [memory_id for memory_id, _ in hits]

    async def entity_list(names: list[str]) -> None:
        hits = await repository.entity_keyword_search(
            session, plan.queries[0], names, settings.keyword_candidates, filters
        )
        lists["entity"] = [memory_id for memory_id, _ in hits]

    async def recent_list() -> None:  # from the session's copy when it is current, else PostgreSQL
        held = vector_cache.recent(session, settings.recent_candidates, await versioned.wait(), filters)
        lists["recent"] = held if held is not None else await repository.recent(
            session, settings.recent_candidates, filters
        )

    async def window_list() -> None:  # without query vectors: the window's first memories by time
        assert plan.time_window is not None
        if await embedded.wait():
            return
        window = plan.time_window
        lists["window"] = await repository.in_window(
            session, window.start, window.end, settings.window_candidates, filters
        )

    embedded: _Result[list[np.ndarray]] = _Result([])
    versioned: _Result[SessionVersion] = _Result(SessionVersion(0, 0, 0))
    windowed = plan.time_window is not None and settings.window_candidates > 0
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(embed_queries)
            group.start_soon(vector_lists)
            for number, query in enumerate(plan.queries):
                group.start_soon(keyword_list, number, query)
            if bigrams:
                group.start_soon(cjk_list)
            if identifiers:
                group.start_soon(trigram_list, "trigram:id", identifiers, _IDENTIFIER_THRESHOLD)
            if settings.entity_weight and (names := query_names(plan.queries[0])):
                group.start_soon(entity_list, names)
            if settings.recent_candidates:
                group.start_soon(recent_list)
            if windowed:
                group.start_soon(window_list)
    except ExceptionGroup as failed:  # raise the list's own error, not "unhandled errors in a TaskGroup"
        known, rest = failed.split(McpMemoryError)
        first = (known or rest or failed).exceptions[0]
        raise first from first.__cause__  # `from None` would also wipe the error's own cause
    return Searched({name: ids for name, ids in sorted(lists.items()) if ids}, embed_ms, embed_note)


T = TypeVar("T")


class _Result(Generic[T]):
    """A value one task hands to another once."""

    def __init__(self, unset: T) -> None:
        self._event = anyio.Event()
        self._value = unset

    def set(self, value: T) -> None:
        self._value = value
        self._event.set()

    async def wait(self) -> T:
        await self._event.wait()
        return self._value


@dataclass(frozen=True)
class Searched:
    """What ``search`` found: the ranked lists, and how long the query embedding took (ms)."""

    lists: dict[str, list[str]]
    embed_ms: float
    embed_note: str | None = None  # why there are no vector lists (the embedding failed)

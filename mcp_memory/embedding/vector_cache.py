"""Exact vector search from an in-process copy of a session's embeddings.

An exact scan in PostgreSQL reads every row of the session: 7-11 ms for 10,000 memories here,
the largest stage of a recall. The same cosine distances from a float32 matrix already in memory
take 0.33 ms, 1.5 ms once the matrix has left the CPU cache between recalls (benchmarks/RESULTS.md). The copy is never trusted blindly: every recall reads
the session's row of ``memory_stats`` (migration 006; one primary-key read, which choosing exact or
HNSW needed anyway) and uses the copy only when its ``version`` is the one the copy was taken at
(every change to the session's memories draws a new version from a sequence). Otherwise it reads
the memories created since a second before the copy's newest and appends those it lacks if they
account for every change counted in ``changes`` and the stats row is the one the copy was taken
from (``born``, migration 007); if not (a delete, an update, a TRUNCATE, windows changed alone,
stats emptied by hand, or an insert whose transaction started more than a second before one it
committed after), it reloads the session. A memory stored or deleted through any server, this one or another
on the same database, is therefore seen by the next recall.

Sessions larger than ``exact_search_max_memories`` go to HNSW in PostgreSQL and are never copied.
The copies together stay within ``vector_cache_mb``, least recently used dropped first; a session
too large for the budget is scanned in PostgreSQL as before. Each copy also keeps the session's
memories in (occurred_at, storage order, memory_id) order, for the chronological neighbours that
score spreading asks for.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import timedelta

import anyio
import numpy as np
from threadpoolctl import threadpool_limits

from mcp_memory.db.repository import Repository
from mcp_memory.db.retrieval import SessionVersion
from mcp_memory.embedding.vector_copy import ID_BYTES, Copy, copy_nbytes, without
from mcp_memory.models import RecallFilter

__all__ = ["VectorCache", "copy_nbytes"]

_LATE_COMMIT = timedelta(seconds=1)
class VectorCache:
    """Exact nearest memories per session, from memory when the session allows, else PostgreSQL."""

    def __init__(self, budget_bytes: int, exact_max: int) -> None:
        # One BLAS thread for the whole process: a 10k x 384 product is too small to share, and
        # OpenBLAS's idle workers spin on the cores the embedding model needs (recall p50 at 10k
        # went from 17 to 33 ms with them; benchmarks/RESULTS.md).
        threadpool_limits(limits=1, user_api="blas")
        self._budget = budget_bytes
        self._exact_max = exact_max
        self._copies: OrderedDict[str, Copy] = OrderedDict()
        self._memory_bytes = 384 * 4 + ID_BYTES  # per memory, until a copy shows the real dimension
        self._refresh_lock = anyio.Lock()
        self.loads = 0  # whole sessions read into a copy
        self.appends = 0  # copies brought up to date with only the memories added since
        self.hits = 0  # searches answered from a copy that was already current (metrics read these three)

    @property
    def nbytes(self) -> int:
        """Bytes held by all copies (matrices and ids)."""
        return sum(copy.nbytes for copy in self._copies.values())

    @property
    def sessions(self) -> int:
        """Sessions with a copy."""
        return len(self._copies)

    async def nearest(
        self,
        repository: Repository,
        session: str,
        vectors: list[np.ndarray],
        limit: int,
        ef_search: int,
        version: SessionVersion | None = None,
        filters: RecallFilter | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Per query vector, the ``limit`` nearest memories of ``session`` that pass ``filters`` as
        (memory_id, distance), nearest first, ties by memory_id; the same lists as ``Repository.vector_search``.

        Exact up to float32 rounding (distances agree with pgvector's within 1e-6) for sessions of
        at most ``exact_max`` memories; HNSW (recall@10 0.97 at ef_search 800, measured) above.
        ``version``: the session's version if the caller has just read it (saves a round trip).
        A time filter is applied to the copy's columns before the cut; a metadata filter, which
        the copy does not hold, makes PostgreSQL scan the session (exactly).

        Raises:
            DatabaseUnavailable: PostgreSQL could not be reached.
        """
        if version is None:
            version = await repository.session_version(session)
        if version.memories == 0:
            self._copies.pop(session, None)
            return [[] for _ in vectors]
        if version.memories > self._exact_max:
            self._copies.pop(session, None)
            return await repository.vector_search(
                session, vectors, limit, ef_search, exact=False, filters=filters, exact_max=self._exact_max
            )
        if filters is not None and filters.metadata:
            return await repository.vector_search(session, vectors, limit, ef_search, exact=True, filters=filters)
        copy = self._copies.get(session)
        if copy is None or copy.version != version:
            copy = await self._refresh(repository, session, version)
        else:
            self.hits += 1
        if copy is None:
            return await repository.vector_search(session, vectors, limit, ef_search, exact=True, filters=filters)
        self._copies.move_to_end(session)
        columns = copy.passing(filters.since, filters.until) if filters is not None else None
        return [copy.nearest(vector, limit, columns) for vector in vectors]

    def neighbours(
        self, session: str, memory_ids: list[str], span: int, max_gap_s: float, filters: RecallFilter | None = None
    ) -> dict[str, list[str]] | None:
        """The chronological neighbours of ``memory_ids`` that pass ``filters`` from the session's copy,
        as ``Repository.neighbours`` returns them; None when the session has no copy or the filter
        names metadata, which the copy does not hold (ask PostgreSQL).

        Call it after ``nearest`` in the same recall: the copy was then checked against the
        session's version a few milliseconds before.
        """
        copy = self._copies.get(session)
        if copy is None or (filters is not None and filters.metadata):
            return None
        return copy.neighbours(memory_ids, span, max_gap_s, *((filters.since, filters.until) if filters else (None, None)))

    def recent(
        self, session: str, limit: int, version: SessionVersion, filters: RecallFilter | None = None
    ) -> list[str] | None:
        """``Repository.recent`` from the session's copy; None when the copy is missing or not at
        ``version`` (the session's version just read), or the filter names metadata, which the copy
        does not hold (ask PostgreSQL)."""
        copy = self._copies.get(session)
        if copy is None or copy.version != version or (filters is not None and filters.metadata):
            return None
        return copy.recent(limit, *((filters.since, filters.until) if filters else (None, None)))

    def vectors(self, session: str, memory_ids: list[str]) -> dict[str, np.ndarray] | None:
        """Unit vectors (window 0) of ``memory_ids`` from the session's copy, keyed by id (ids it lacks
        are absent); None when the session has no copy (ask ``Repository.embeddings``).

        Call it after ``nearest`` in the same recall, as ``neighbours``.
        """
        copy = self._copies.get(session)
        return None if copy is None else copy.vectors(memory_ids)

    async def _refresh(self, repository: Repository, session: str, seen: SessionVersion) -> Copy | None:
        """Bring the session's copy up to date; None when it does not fit the budget."""
        if seen.memories * self._memory_bytes > self._budget:
            self._copies.pop(session, None)
            return None
        async with self._refresh_lock:  # one load at a time; a waiter finds the copy already fresh
            copy = self._copies.get(session)
            if copy is not None and copy.version == seen:
                return copy
            if copy is not None:
                # A second back from the newest: concurrent stores to one session often commit in
                # another order than they started (created_at is the start), and those are found
                # here instead of forcing a reload.
                since = copy.newest - _LATE_COMMIT if copy.newest else None
                delta = without(await repository.session_vectors(session, since), copy.known)
                now, then = delta.version, copy.version
                added = set(delta.memory_ids)
                if now.version == then.version:
                    pass  # another recall refreshed it meanwhile
                elif (
                    added
                    and now.born == then.born  # the same row: its count of changes never restarted
                    and now.memories == then.memories + len(added)
                    and now.changes == then.changes + len(added)  # every change is an insert found here
                ):
                    copy.extend(delta)
                    self.appends += 1
                else:
                    copy = None  # a delete, an update, or an insert the delta missed
            if copy is None:
                snapshot = await repository.session_vectors(session, None)
                self.loads += 1
                copy = Copy(snapshot) if snapshot.memory_ids else None
                if copy is not None:
                    self._memory_bytes = max(copy.nbytes // copy.memories, 1)
            if copy is None or copy.memories > self._exact_max:  # emptied, or grown past the exact scan
                self._copies.pop(session, None)
                return None
            self._copies[session] = copy
            self._copies.move_to_end(session)
            while self._copies and self.nbytes > self._budget:
                self._copies.popitem(last=False)
            return self._copies.get(session)

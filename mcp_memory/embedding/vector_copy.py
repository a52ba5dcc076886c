"""One session's vectors held in process: the matrix the exact scan multiplies, the timeline the
neighbours are read from (``vector_cache.py`` keeps these copies current and within their budget)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from mcp_memory.db.retrieval import SessionVectors

__all__ = ["ID_BYTES", "Copy", "copy_nbytes", "without"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
ID_BYTES = 350  # a memory_id's str, its entries in a list, a set, the timeline and its index, with a datetime


def copy_nbytes(vectors: int, dim: int) -> int:
    """Bytes that copies holding ``vectors`` vectors (windows) of length ``dim`` take, counted as
    the budget (``vector_cache_mb``) counts them."""
    return vectors * (dim * 4 + ID_BYTES)


class Copy:
    """One session's unit-length vectors, one column each (a memory may have several: the later
    windows of a long text). Column-major because one product of a query with a (dim, n) matrix
    reads memory in order: 0.33 ms for 10,000 x 384 on one core here, 0.80 ms row-major."""

    def __init__(self, snapshot: SessionVectors) -> None:
        self.memory_ids: list[str] = []
        self.known: set[str] = set()
        # (occurred_at, created_at, memory_id) of each memory, in order: storage order breaks ties of time
        self.timeline: list[tuple[datetime, datetime, str]] = []
        self._places: dict[str, int] | None = None  # memory_id -> index in timeline, rebuilt after a change
        self._first: dict[str, int] | None = None  # memory_id -> its first column, rebuilt after a change
        self.columns = np.empty((1, 0), dtype=np.float32)
        self.times = np.empty(0, dtype=np.int64)  # each column's occurred_at, microseconds since 1970 UTC
        self.rows = 0
        self.memories = 0
        self.version = snapshot.version
        self.newest: datetime | None = None
        self.extend(snapshot)

    @property
    def nbytes(self) -> int:
        return self.columns.nbytes + ID_BYTES * len(self.memory_ids)

    def neighbours(
        self, memory_ids: list[str], span: int, max_gap_s: float, since: datetime | None, until: datetime | None
    ) -> dict[str, list[str]]:
        """``RetrievalQueries.neighbours`` from the copy: for each id, up to ``span`` memories just
        before and after it in (occurred_at, created_at, memory_id) order, at most ``max_gap_s`` seconds
        away, with occurred_at in [since, until] (the memories outside lie beyond either end of the
        timeline's stretch, so dropping them is the same as stepping over them)."""
        if self._places is None:
            self._places = {memory_id: place for place, (_, _, memory_id) in enumerate(self.timeline)}
        timeline, found = self.timeline, {}
        for memory_id in memory_ids:
            place = self._places.get(memory_id)
            if place is None:
                continue
            at = timeline[place][0]
            near = [
                other
                for when, _, other in (
                    *reversed(timeline[max(place - span, 0) : place]), *timeline[place + 1 : place + 1 + span]
                )
                if abs((when - at).total_seconds()) <= max_gap_s
                and (since is None or when >= since)
                and (until is None or when <= until)
            ]
            if near:
                found[memory_id] = near
        return found

    def recent(self, limit: int, since: datetime | None, until: datetime | None) -> list[str]:
        """``ChronologyQueries.recent`` from the copy: the ``limit`` latest memories with occurred_at in
        [since, until], latest first, ties by created_at then memory_id, both descending (a uuid's
        lowercase text sorts as its bytes do)."""
        timeline = self.timeline
        start = 0 if since is None else bisect_left(timeline, since, key=_occurred_at)
        end = len(timeline) if until is None else bisect_right(timeline, until, key=_occurred_at)
        return [memory_id for _, _, memory_id in reversed(timeline[max(start, end - limit) : end])]

    def vectors(self, memory_ids: list[str]) -> dict[str, np.ndarray]:
        """Each known id's first column (window 0 as loaded first), unit length."""
        if self._first is None:
            self._first = {}
            for column, memory_id in enumerate(self.memory_ids):
                self._first.setdefault(memory_id, column)
        return {m: self.columns[:, self._first[m]] for m in memory_ids if m in self._first}

    def extend(self, snapshot: SessionVectors) -> None:
        """Append the snapshot's vectors; the caller has checked they are the only change."""
        added = snapshot.embeddings.reshape(len(snapshot.memory_ids), -1)
        if len(added):
            norms = np.linalg.norm(added, axis=1, keepdims=True)
            added = added / np.where(norms == 0, 1, norms)  # pgvector gives NaN for a zero vector; we give 1.0
            needed = self.rows + len(added)
            if needed > self.columns.shape[1]:  # a first load fits exactly; appends grow by a quarter
                capacity = needed if self.rows == 0 else max(needed, self.rows * 5 // 4 + 64)
                grown = np.empty((added.shape[1], capacity), np.float32)
                grown[:, : self.rows] = self.columns[:, : self.rows]
                self.columns = grown
            self.columns[:, self.rows : needed] = added.T
            times = np.fromiter(((o - _EPOCH) // _MICROSECOND for o in snapshot.occurred_at), np.int64, len(added))
            self.times = np.concatenate([self.times[: self.rows], times])
            self.rows = needed
        new = {
            m: (o, c)
            for m, o, c in zip(snapshot.memory_ids, snapshot.occurred_at, snapshot.created_at, strict=True)
            if m not in self.known
        }
        if new:
            self.timeline = sorted([*self.timeline, *((o, c, m) for m, (o, c) in new.items())])
            self._places = None
        self.memory_ids.extend(snapshot.memory_ids)
        self._first = None
        self.known.update(snapshot.memory_ids)
        self.memories = len(self.known)
        self.version = snapshot.version
        self.newest = max([*snapshot.created_at, *([self.newest] if self.newest else [])], default=None)

    def passing(self, since: datetime | None, until: datetime | None) -> np.ndarray | None:
        """The columns whose occurred_at lies in [since, until]; None when both are open (every column)."""
        if since is None and until is None:
            return None
        keep = np.ones(self.rows, dtype=bool)
        if since is not None:
            keep &= self.times[: self.rows] >= (since - _EPOCH) // _MICROSECOND
        if until is not None:
            keep &= self.times[: self.rows] <= (until - _EPOCH) // _MICROSECOND
        return np.flatnonzero(keep)

    def nearest(self, vector: np.ndarray, limit: int, columns: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The ``limit`` nearest memories as (memory_id, cosine distance), ordered like the SQL
        (distance, then memory_id); a memory counts through its nearest window. ``columns``: only
        these (``passing``), else all."""
        if self.rows == 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        distances = 1.0 - (query / (norm or 1.0)) @ self.columns[:, : self.rows]
        among = distances if columns is None else distances[columns]
        depth = min(len(among), limit + self.rows - self.memories)  # enough rows to hold `limit` memories
        if depth == 0:
            return []
        if depth < len(among):
            kth = np.partition(among, depth - 1)[depth - 1]
            picked = np.flatnonzero(among <= kth)  # every row tied at the cut, so ties break by id
        else:
            picked = np.arange(len(among))
        if columns is not None:
            picked = columns[picked]
        ids = self.memory_ids
        ranked = sorted(zip(distances[picked].tolist(), [ids[i] for i in picked.tolist()], strict=True))
        found: dict[str, float] = {}
        for distance, memory_id in ranked:
            found.setdefault(memory_id, distance)
            if len(found) == limit:
                break
        return list(found.items())


def _occurred_at(entry: tuple[datetime, datetime, str]) -> datetime:
    return entry[0]


def without(snapshot: SessionVectors, known: set[str]) -> SessionVectors:
    """The snapshot without the rows of memories already held."""
    keep = [i for i, memory_id in enumerate(snapshot.memory_ids) if memory_id not in known]
    if len(keep) == len(snapshot.memory_ids):
        return snapshot
    return replace(
        snapshot,
        memory_ids=[snapshot.memory_ids[i] for i in keep],
        created_at=[snapshot.created_at[i] for i in keep],
        occurred_at=[snapshot.occurred_at[i] for i in keep],
        embeddings=snapshot.embeddings.reshape(len(snapshot.memory_ids), -1)[keep],
    )

"""Coalescing: concurrent embedding calls merged into a few model batches.

Used by the local embedder (``embed.FastembedEmbedder``), where one batched inference of N texts
costs less than N single ones and at most ``leaders`` batches should run at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable

import anyio
import numpy as np

__all__ = ["Coalescer"]


class _Request:
    __slots__ = ("done", "error", "queued", "texts", "vectors")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.queued = time.perf_counter()
        self.vectors: list[np.ndarray] = []
        self.error: BaseException | None = None
        self.done = anyio.Event()


class Coalescer:
    """Merges concurrent ``embed`` calls into model batches, at most ``leaders`` batches at once.

    A caller that finds fewer than ``leaders`` batches running becomes a leader: it embeds the
    texts queued so far (up to ``max_texts``) in one call, hands each caller its vectors, and
    repeats while callers keep arriving. Under load, N concurrent stores cost a few batched
    inferences instead of N. A leader's loop is shielded from cancellation so a disconnecting
    client never strands the others.

    ``observe``, when given, is told of every batch: its number of texts and, per call in it,
    the seconds it waited in the queue before the batch started (metrics).
    """

    def __init__(
        self, embed: Callable[[list[str]], Awaitable[list[np.ndarray]]], max_texts: int, leaders: int = 1,
        observe: Callable[[int, Iterable[float]], None] | None = None,
    ) -> None:
        self._embed = embed
        self._observe = observe
        self._max_texts = max_texts
        self._max_leaders = leaders
        self._queue: list[_Request] = []
        self._leaders = 0

    async def embed(self, texts: list[str]) -> list[np.ndarray]:
        """One vector per text, same order; raises what the underlying call raised."""
        request = _Request(texts)
        self._queue.append(request)
        if self._leaders < self._max_leaders:
            self._leaders += 1
            try:
                with anyio.CancelScope(shield=True):
                    await self._drain()
            finally:
                self._leaders -= 1
        await request.done.wait()
        if request.error is not None:
            raise request.error
        return request.vectors

    async def _drain(self) -> None:
        while self._queue:
            batch: list[_Request] = []
            size = 0
            while self._queue and (not batch or size + len(self._queue[0].texts) <= self._max_texts):
                request = self._queue.pop(0)
                batch.append(request)
                size += len(request.texts)
            if self._observe is not None:
                started = time.perf_counter()
                self._observe(size, [started - request.queued for request in batch])
            try:
                vectors = await self._embed([text for request in batch for text in request.texts])
            except Exception as exc:
                for request in batch:
                    request.error = exc
                    request.done.set()
                continue
            offset = 0
            for request in batch:
                request.vectors = vectors[offset : offset + len(request.texts)]
                offset += len(request.texts)
                request.done.set()

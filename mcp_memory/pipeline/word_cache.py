"""A cache of what the update rules read from a text, bounded by the characters of the texts it holds.

``implicit_updates`` and ``subject_updates`` read the words of every candidate they compare; the same
memories come back recall after recall, so each function keeps its results. ``functools.lru_cache``
bounds entries, not size: 4,096 entries of 32,000-character memories held about 5 GB (each result
holds every token of its text), and a caller who stored long memories could grow the server that
far. Here the texts held add up to at most ``max_chars`` characters (their results take a few tens
of bytes per character), least recently used dropped first; a text longer than a tenth of the budget
is computed and not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import wraps
from typing import Any, TypeVar

__all__ = ["MAX_CHARS", "text_cache"]

MAX_CHARS = 1_000_000  # per cache: about 3,800 memories of 260 characters, as many as lru_cache held
R = TypeVar("R")


def text_cache(max_chars: int = MAX_CHARS) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Decorate a function whose last argument is a text (other arguments hashable and small)."""

    def decorate(compute: Callable[..., R]) -> Callable[..., R]:
        held: OrderedDict[tuple[Hashable, ...], R] = OrderedDict()
        size = [0]
        lock = threading.Lock()

        @wraps(compute)
        def cached(*args: Any) -> R:
            chars = len(args[-1])
            with lock:
                if args in held:
                    held.move_to_end(args)
                    return held[args]
            value = compute(*args)
            if chars * 10 > max_chars:
                return value
            with lock:
                if args not in held:
                    held[args] = value
                    size[0] += chars
                    while size[0] > max_chars:
                        dropped, _ = held.popitem(last=False)
                        size[0] -= len(dropped[-1])
            return value

        return cached

    return decorate

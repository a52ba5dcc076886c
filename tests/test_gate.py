"""The rate limiter's buckets: a full minute may be spent at once, and calls come back at the limit's pace."""

from __future__ import annotations

from mcp_memory.access.gate import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_allows_its_limit_then_says_when_the_next_call_is_free() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    assert [limiter.take("a", 6) for _ in range(6)] == [0] * 6
    assert limiter.take("a", 6) == 10  # 6 per minute: one call every 10 s
    clock.now += 4
    assert limiter.take("a", 6) == 6  # a refused call spends nothing
    clock.now += 6
    assert limiter.take("a", 6) == 0
    assert limiter.take("a", 6) == 10


def test_buckets_refill_to_the_limit_and_no_further_and_are_per_caller() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    assert limiter.take("a", 2) == 0 and limiter.take("a", 2) == 0
    assert limiter.take("b", 2) == 0  # another caller's bucket is full
    clock.now += 3600
    assert [limiter.take("a", 2) for _ in range(3)] == [0, 0, 30]


def test_forgetting_full_buckets_never_refills_a_bucket_that_is_not_full() -> None:
    """Past max_callers buckets the full ones are dropped; a caller 55 calls into its 60 keeps its 5 left
    (it used to be dropped too, and came back with a whole minute's calls)."""
    clock = Clock()
    limiter = RateLimiter(clock, max_callers=3)
    assert limiter.take("a", 60) == 0 and limiter.take("b", 60) == 0
    clock.now += 10  # a and b are full again (one call back per second)
    assert [limiter.take("busy", 60) for _ in range(55)] == [0] * 55
    assert limiter.take("c", 60) == 0  # the 4th bucket: the full ones (a, b) are forgotten
    assert [limiter.take("busy", 60) for _ in range(6)] == [0] * 5 + [1]

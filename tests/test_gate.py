"""The rate limiter's buckets: a full minute may be spent at once, and calls come back at the limit's pace."""

from __future__ import annotations

from mcp_memory.gate import RateLimiter


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

"""New memory ids: UUID version 7 (RFC 9562, section 5.7), in storage order within a process.

Recall breaks ties of equal scores by ``memory_id`` (the SQL lists, the in-process vector copies, the
fusion). With random ids (version 4) that order changed from run to run, and between one node and a
Citus cluster holding the same memories. A version 7 id starts with its Unix time in milliseconds,
then a counter (RFC 9562's "fixed bit-length dedicated counter", method 1, in the 12 bits of
``rand_a``) that keeps ids made in one millisecond, or after the clock stepped back, in the order
they were made. Ties therefore go to the memory stored first, and the same stores in the same order
give the same order on every backend. The last 62 bits are random, so ids stay unique across
processes; between processes, the order within one millisecond is arbitrary.
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid

__all__ = ["new_memory_id"]

_COUNTER_MAX = 0xFFF  # rand_a: 12 bits
_lock = threading.Lock()
_last_ms = 0
_counter = 0


def new_memory_id() -> uuid.UUID:
    """A version 7 UUID greater than every one this process made before (compared as UUIDs or text).

    When the 12-bit counter of one millisecond runs out, the next id takes the following
    millisecond, so the order holds even above 4,096 ids per millisecond.
    """
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms > _last_ms:
            _last_ms, _counter = now_ms, 0
        elif _counter < _COUNTER_MAX:
            _counter += 1
        else:
            _last_ms, _counter = _last_ms + 1, 0
        ms, counter = _last_ms, _counter
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | secrets.randbits(62)
    return uuid.UUID(int=value)

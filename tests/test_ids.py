"""New memory ids (mcp_memory/db/ids.py): UUID version 7, each greater than the one before."""

from __future__ import annotations

import time
import uuid

from mcp_memory.db.ids import new_memory_id


def test_ids_made_in_a_burst_are_version_7_unique_and_increasing_as_uuids_and_as_text() -> None:
    ids = [new_memory_id() for _ in range(20_000)]  # many per millisecond: the counter orders them
    assert all(made.version == 7 and made.variant == uuid.RFC_4122 for made in ids)
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert [str(made) for made in ids] == sorted(str(made) for made in ids)  # as recall's Python sorts compare them


def test_an_id_starts_with_the_time_it_was_made_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    made = new_memory_id()
    # at or after the clock (the counter may have carried into a later millisecond), never far ahead
    assert before <= made.int >> 80 <= time.time_ns() // 1_000_000 + 5

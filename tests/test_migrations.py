"""Migrations upgrade a database that already holds memories, keeping every row."""

from __future__ import annotations

import re
import uuid

import asyncpg
import numpy as np
import pytest

from mcp_memory.db import migrate as migrations
from mcp_memory.db import postings
from mcp_memory.pipeline.search import CJK_CHARACTERS
from databases import database_at

pytestmark = pytest.mark.anyio

LONG = "Minutes of the budget review. " + " ".join(f"line {i}: the travel budget moves by {i * 13} euros" for i in range(50))


async def test_migration_005_moves_existing_embeddings_into_the_row_and_keeps_the_postings(pg_url):
    """A database at migration 004 holds a memory whose embedding PostgreSQL moved to TOAST; after
    the upgrade it sits in the row, and the BM25 postings are intact and read from the index."""
    async with database_at(pg_url, 4) as url:
        connection = await asyncpg.connect(url)
        try:
            vector = np.random.default_rng(1).normal(size=384).astype(np.float32)
            vector /= np.linalg.norm(vector)
            memory_id = uuid.uuid4()
            await connection.execute(
                "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, embedding,"
                " embedding_model) VALUES ('s', $1, $2, '\\x01', now(), $3::real[]::vector, 'm')",
                memory_id, LONG, vector.tolist(),
            )
            toasted_before = await connection.fetchval("SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL FROM memories")
            postings_before = await connection.fetch("SELECT lexeme, tf, dl FROM memory_terms ORDER BY lexeme")
        finally:
            await connection.close()
        assert toasted_before  # the layout migration 005 fixes

        await migrations.migrate(url, "m", 384)

        connection = await asyncpg.connect(url)
        try:
            toasted_after = await connection.fetchval("SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL FROM memories")
            stored = await connection.fetchval("SELECT embedding::real[] FROM memories WHERE memory_id = $1", memory_id)
            postings_after = await connection.fetch("SELECT lexeme, tf, dl FROM memory_terms ORDER BY lexeme")
            key = await connection.fetchval(
                "SELECT pg_get_indexdef(conindid) FROM pg_constraint WHERE conname = 'memory_terms_pkey'"
            )
            stats = await connection.fetchrow("SELECT n, changes, version, born FROM memory_stats WHERE session = 's'")
        finally:
            await connection.close()
    assert toasted_after is False
    assert np.array_equal(np.array(stored, dtype=np.float32), vector)
    assert [tuple(r) for r in postings_after] == [tuple(r) for r in postings_before]
    assert len(postings_before) > 20
    assert "INCLUDE (tf, dl)" in key
    assert (stats["n"], stats["changes"]) == (1, 1)  # migration 006 counts the memory already there
    assert stats["version"] > 0 and stats["born"] > 0  # 006 and 007 number the existing row


async def test_migration_008_adds_supersessions_to_a_database_with_memories_and_cascades_deletes(pg_url):
    """A database at migration 007 with two memories upgrades; a supersession between them goes
    with either memory, and marking leaves memory_stats (the vector copies' version) as it was."""
    async with database_at(pg_url, 7) as url:
        connection = await asyncpg.connect(url)
        try:
            ids = [uuid.uuid4(), uuid.uuid4()]
            for number, memory_id in enumerate(ids):
                await connection.execute(
                    "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, embedding,"
                    " embedding_model) VALUES ('s', $1, $2, $3, now(), $4::real[]::vector, 'm')",
                    memory_id, f"memory {number}", bytes([number]), [1.0] + [0.0] * 383,
                )
        finally:
            await connection.close()

        await migrations.migrate(url, "m", 384)

        connection = await asyncpg.connect(url)
        try:
            version = await connection.fetchval("SELECT version FROM memory_stats WHERE session = 's'")
            await connection.execute(
                "INSERT INTO memory_supersessions (session, memory_id, superseded_by) VALUES ('s', $1, $2)", *ids
            )
            unchanged = await connection.fetchval("SELECT version FROM memory_stats WHERE session = 's'") == version
            await connection.execute("DELETE FROM memories WHERE memory_id = $1", ids[1])
            left = await connection.fetchval("SELECT count(*) FROM memory_supersessions")
            with pytest.raises(asyncpg.ForeignKeyViolationError):
                await connection.execute(
                    "INSERT INTO memory_supersessions (session, memory_id, superseded_by) VALUES ('other', $1, $2)",
                    ids[0], uuid.uuid4(),
                )
        finally:
            await connection.close()
    assert unchanged
    assert left == 0


async def test_migration_011_moves_usage_resets_out_of_the_client_session_and_keeps_the_totals(pg_url):
    """Before 011 resets were audit rows in the session 'mcp-memory/usage' and totals had no session."""
    async with database_at(pg_url, 9) as url:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(
                "INSERT INTO audits (session, kind, detail) VALUES"
                " ('mcp-memory/usage', 'usage_reset', '{\"cleared\": [{\"operation\": \"answer\", \"calls\": 3}]}'),"
                " ('mcp-memory/usage', 'recall', '{\"query\": \"a client recall there\"}')"
            )
            await connection.execute("INSERT INTO llm_usage (operation, model, calls, prompt_tokens) VALUES ('plan', 'm', 4, 40)")
        finally:
            await connection.close()

        await migrations.migrate(url, "m", 384)

        connection = await asyncpg.connect(url)
        try:
            audits = await connection.fetch("SELECT session, kind FROM audits")
            resets = await connection.fetch("SELECT scope, cleared::text FROM usage_resets")
            usage = await connection.fetch("SELECT session, operation, calls, prompt_tokens FROM llm_usage")
            key = await connection.fetchval(
                "SELECT pg_get_indexdef(conindid) FROM pg_constraint WHERE conname = 'llm_usage_pkey'"
            )
        finally:
            await connection.close()
    assert [tuple(row) for row in audits] == [("mcp-memory/usage", "recall")]  # a client's own row stays
    assert [(list(row["scope"]), row["cleared"]) for row in resets] == [(["*"], '[{"calls": 3, "operation": "answer"}]')]
    assert [tuple(row) for row in usage] == [("", "plan", 4, 40)]
    assert "(session, operation, model)" in key


async def test_migration_012_gives_memories_stored_at_infinity_the_time_they_were_stored(pg_url):
    """Before the store refused them, asyncpg's datetime.min and datetime.max were written as -infinity
    and infinity and read back without a zone, and every recall of the session failed; 012 replaces
    them with created_at and leaves finite times alone."""
    async with database_at(pg_url, 11) as url:
        connection = await asyncpg.connect(url)
        try:
            ids = [uuid.uuid4() for _ in range(3)]
            for number, (memory_id, occurred_at) in enumerate(zip(ids, ("-infinity", "infinity", "2024-05-01T10:00:00Z"))):
                await connection.execute(
                    "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, created_at, embedding,"
                    " embedding_model) VALUES ('s', $1, $2, $3, $4::text::timestamptz, $5::text::timestamptz,"
                    " $6::real[]::vector, 'm')",
                    memory_id, f"memory {number}", bytes([number]), occurred_at, f"2025-01-0{number + 1}T08:00:00Z",
                    [1.0] + [0.0] * 383,
                )
            version_before = await connection.fetchval("SELECT version FROM memory_stats WHERE session = 's'")
        finally:
            await connection.close()

        await migrations.migrate(url, "m", 384)

        connection = await asyncpg.connect(url)
        try:
            times = await connection.fetch(
                "SELECT memory_id, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS at FROM memories"
            )
            version_after = await connection.fetchval("SELECT version FROM memory_stats WHERE session = 's'")
        finally:
            await connection.close()
    assert {row["memory_id"]: row["at"] for row in times} == {
        ids[0]: "2025-01-01 08:00", ids[1]: "2025-01-02 08:00", ids[2]: "2024-05-01 10:00"
    }
    assert version_after != version_before  # in-memory copies of the session are rebuilt


def _python_grams(text: str) -> set[str]:
    """What the CJK list can ask for: the characters and adjacent pairs of each CJK run."""
    runs = re.findall(CJK_CHARACTERS + "+", text)
    return {run[i : i + n] for run in runs for n in (1, 2) for i in range(len(run) - n + 1)}


async def test_migration_013_indexes_the_cjk_grams_of_memories_already_stored_and_of_new_ones(pg_url):
    """A database at migration 012 holding a Chinese memory upgrades with its characters and
    character pairs in memory_grams; later inserts are indexed by db/postings.py, deletes cascade, and
    English text has no rows. The SQL's CJK ranges are the query side's (search._CJK_RUN)."""
    texts = ["王芳换了新手机号：186 5718 1687，旧号已停用。", "Alice moved to Lisbon.",
             "牙 pain; 東京タワーに行った, 서울에서 만나요 and 看牙医 ☕️ 𠀀"]
    async with database_at(pg_url, 12) as url:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(
                "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, embedding,"
                " embedding_model) VALUES ('s', $1, $2, '\\x01', now(), $3::real[]::vector, 'm')",
                uuid.uuid4(), texts[0], [1.0] + [0.0] * 383,
            )
        finally:
            await connection.close()

        await migrations.migrate(url, "m", 384)

        connection = await asyncpg.connect(url)
        try:
            backfilled = {r["gram"] for r in await connection.fetch("SELECT gram FROM memory_grams")}
            ids = {}
            for number, text in enumerate(texts[1:], start=1):
                ids[text] = uuid.uuid4()
                async with connection.transaction():  # as the repository stores (db/postings.py)
                    length = await connection.fetchval(
                        "INSERT INTO memories (session, memory_id, content, content_hash, occurred_at, embedding,"
                        " embedding_model) VALUES ('s', $1, $2, $3, now(), $4::real[]::vector, 'm')"
                        " RETURNING length(search_text)",
                        ids[text], text, bytes([number + 1]), [1.0] + [0.0] * 383,
                    )
                    await postings.added(connection, "s", ids[text], length)
            grams = {
                text: {r["gram"] for r in await connection.fetch("SELECT gram FROM memory_grams WHERE memory_id = $1",
                                                                 memory_id)}
                for text, memory_id in ids.items()
            }
            await connection.execute("DELETE FROM memories WHERE memory_id = $1", ids[texts[2]])
            left = {r["gram"] for r in await connection.fetch("SELECT DISTINCT gram FROM memory_grams")}
        finally:
            await connection.close()
    assert backfilled == _python_grams(texts[0])
    assert {"王", "王芳", "号", "手机", "机号"} <= backfilled and "号：" not in backfilled
    assert grams[texts[1]] == set()
    assert grams[texts[2]] == _python_grams(texts[2])
    assert {"牙", "看牙", "東京", "タワ", "서울", "에서"} <= grams[texts[2]]
    assert left == backfilled


async def test_no_table_has_two_btree_indexes_on_the_same_columns(pg_url):
    """Two B-tree indexes with the same key columns (in either direction) and no predicate serve
    the same queries, as a B-tree reads backwards as cheaply as forwards; the second one only costs
    every write. audits had one (session, audit_id DESC) beside its primary key until migration 016."""
    last = max(version for version, _, _ in migrations._migration_files())
    async with database_at(pg_url, last) as url:
        connection = await asyncpg.connect(url)
        try:
            rows = await connection.fetch(
                "SELECT i.indrelid::regclass::text AS tab, i.indexrelid::regclass::text AS idx, i.indkey::text AS keys"
                " FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE a.amname = 'btree' AND i.indpred IS NULL AND i.indexprs IS NULL AND n.nspname = 'public'"
            )
        finally:
            await connection.close()
    seen: dict[tuple[str, str], str] = {}
    twins = []
    for row in rows:
        key = (row["tab"], row["keys"])
        if key in seen:
            twins.append(f"{row['tab']}: {seen[key]} and {row['idx']} on columns {row['keys']}")
        seen[key] = row["idx"]
    assert twins == []

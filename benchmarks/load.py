"""Bulk-load filler memories with COPY, reusing real embeddings of real text.

Texts are real chat turns: every LoCoMo turn (``Speaker: text``) and the LongMemEval turns of
at most 600 characters, de-duplicated. Each text is embedded once with the server's own model
(cached in ``<data_dir>/bench-texts.npz``). A session of n memories cycles through the texts;
the first use of a text keeps its exact vector, later uses add N(0, 0.01^2) noise per dimension
and renormalise, so repeated texts are near, not identical, neighbours (no exact distance ties).
Repeated content gets a content_hash over (content, ordinal) so the unique constraint holds.
Memories are one minute apart, so chronological neighbours exist.

Indexes are dropped before a load and rebuilt after (``rebuild_indexes``, timed), as a bulk
load would be done in production.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import asyncpg
import numpy as np

from evals.locomo import default_data_path
from mcp_memory.db.embedded import start_embedded
from mcp_memory.db.migrate import migrate
from mcp_memory.db.pool import open_pool
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings

__all__ = ["INDEXES", "connect", "derive", "drop_indexes", "fill", "load_texts", "rebuild_indexes", "real_texts"]

# LoCoMo and LongMemEval, where the evals find them: beside $MCP_MEMORY_LOCOMO_PATH, else ../shared/data.
DATA = default_data_path().parent
INDEXES = {
    "memories_embedding_hnsw": "CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops)",
    "memories_content_trgm": "CREATE INDEX memories_content_trgm ON memories USING gin (content gin_trgm_ops)",
}
_COLUMNS = ["session", "memory_id", "content", "content_hash", "occurred_at", "metadata", "importance",
            "embedding", "embedding_model"]


def real_texts() -> list[str]:
    """LoCoMo turns, then LongMemEval turns of <= 600 characters; each once, in file order."""
    seen: dict[str, None] = {}
    for sample in json.loads((DATA / "locomo10.json").read_text()):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    seen[f"{turn['speaker']}: {turn['text']}"] = None
    for item in json.loads((DATA / "longmemeval_s_cleaned.sample50.json").read_text()):
        for session in item["haystack_sessions"]:
            for turn in session:
                if 0 < len(turn["content"]) <= 600:
                    seen[turn["content"]] = None
    return list(seen)


async def load_texts(settings: Settings, limit: int = 2000) -> tuple[list[str], np.ndarray, float]:
    """(texts, unit vectors, seconds spent embedding now; 0 when cached).

    ``limit`` real texts are embedded (evenly spread over LoCoMo and LongMemEval; at most the
    18,849 there are) and cached in ``<data_dir>/bench-texts-<limit>.npz``. Larger sessions reuse
    them with noise (see the module docstring): the fewer the texts, the more near-duplicates.
    """
    cache = settings.data_dir / f"bench-texts-{limit}.npz"
    if cache.exists():
        data = np.load(cache, allow_pickle=False)
        return [str(t) for t in data["texts"]], data["vectors"], 0.0
    texts = real_texts()
    texts = texts[:: max(1, len(texts) // limit)][:limit]
    embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
    started = time.perf_counter()
    chunks = [texts[start : start + 32] for start in range(0, len(texts), 32)]
    embedded: list[list[np.ndarray]] = [[] for _ in chunks]

    async def embed(index: int) -> None:
        embedded[index] = await embedder.embed_batch(chunks[index])

    async with anyio.create_task_group() as group:  # concurrent calls keep both model workers busy
        for index in range(len(chunks)):
            group.start_soon(embed, index)
    seconds = time.perf_counter() - started
    array = np.stack([vector for chunk in embedded for vector in chunk]).astype(np.float32)
    np.savez(cache, texts=np.array(texts), vectors=array)
    return texts, array, seconds


async def connect(settings: Settings) -> asyncpg.Pool:
    """Start (or join) the embedded PostgreSQL of ``settings.data_dir``, migrate, open a pool."""
    url = settings.database_url or start_embedded(settings.data_dir)
    embedder_model = settings.embedding.model
    await migrate(url, embedder_model, 384)
    return await open_pool(url, 1, 4)


async def drop_indexes(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as connection:
        for name in INDEXES:
            await connection.execute(f"DROP INDEX IF EXISTS {name}")


async def rebuild_indexes(pool: asyncpg.Pool) -> dict[str, float]:
    """Create the dropped indexes; seconds per index."""
    seconds: dict[str, float] = {}
    async with pool.acquire() as connection:
        await connection.execute("SET maintenance_work_mem = '4GB'")
        await connection.execute("SET max_parallel_maintenance_workers = 1")
        for name, sql in INDEXES.items():
            exists = await connection.fetchval("SELECT to_regclass($1) IS NOT NULL", name)
            if exists:
                continue
            started = time.perf_counter()
            await connection.execute(sql, timeout=7200)  # the pool default (60 s) is too short at 1M
            seconds[name] = round(time.perf_counter() - started, 1)
        await connection.execute("ANALYZE memories")
    return seconds


def _rows(session: str, n: int, texts: list[str], vectors: np.ndarray, offset: int, model: str, seed: int):
    rng = np.random.default_rng(seed)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    count = len(texts)
    for i in range(n):
        j = (offset + i) % count
        content = texts[j]
        if i < count:
            vector = vectors[j]
            digest = hashlib.sha256(content.encode()).digest()
        else:
            vector = vectors[j] + rng.normal(0, 0.01, vectors.shape[1]).astype(np.float32)
            vector /= np.linalg.norm(vector)
            digest = hashlib.sha256(f"{content}\x00{i}".encode()).digest()
        yield (session, uuid.uuid4(), content, digest, base + timedelta(minutes=i), "{}", None, vector, model)


async def derive(connection: asyncpg.Connection, session: str) -> None:
    """Write the BM25 postings, CJK grams and stats row of every memory of ``session`` after a COPY:
    what ``mcp_memory/db/postings.py`` writes per store (triggers did it for COPY until migration 014)."""
    await connection.execute(
        "INSERT INTO memory_terms (session, lexeme, memory_id, tf, dl)"
        " SELECT m.session, u.lexeme, m.memory_id, coalesce(array_length(u.positions, 1), 1), length(m.search_text)"
        " FROM memories m CROSS JOIN LATERAL unnest(m.search_text) u WHERE m.session = $1", session, timeout=3600)
    await connection.execute(
        "INSERT INTO memory_grams (session, gram, memory_id) SELECT m.session, g.gram, m.memory_id"
        " FROM memories m CROSS JOIN LATERAL memory_cjk_grams(m.content) AS g(gram) WHERE m.session = $1", session,
        timeout=3600)
    await connection.execute("DELETE FROM memory_stats WHERE session = $1", session)
    await connection.execute(
        "INSERT INTO memory_stats (session, n, total_length, changes) SELECT session, count(*),"
        " coalesce(sum(length(search_text)), 0), count(*) FROM memories WHERE session = $1 GROUP BY session", session)


async def fill(
    pool: asyncpg.Pool, session: str, n: int, texts: list[str], vectors: np.ndarray, offset: int = 0,
    model: str = "sentence-transformers/all-MiniLM-L6-v2", batch: int = 20_000,
) -> float:
    """COPY ``n`` memories into ``session`` and derive their rows (``derive``); returns seconds."""
    started = time.perf_counter()
    rows = _rows(session, n, texts, vectors, offset, model, seed=zlib.crc32(session.encode()))
    async with pool.acquire() as connection:
        while True:
            chunk = [row for _, row in zip(range(batch), rows, strict=False)]
            if not chunk:
                break
            await connection.copy_records_to_table("memories", records=chunk, columns=_COLUMNS)
        await derive(connection, session)
    return time.perf_counter() - started

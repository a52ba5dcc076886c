"""Citus: a database with the citus extension gets its tables distributed by session.

Every table that holds session rows is hash-distributed on ``session`` and colocated with
``memories``, so each tool call's statements reach one shard group (router queries) and the
foreign keys, joins and derived-row statements of a session stay on one node; the tables without a
session column are reference tables (a copy on every node). ``migrate`` calls ``distribute`` in its
transaction, under the migration lock, at every start: a table already distributed is left as it
is, so it runs once per table, also for a table a later migration adds. ``distribute = false``
(settings) leaves the distribution to the operator.

``settings`` names what every pooled connection needs on Citus: ``citus.propagate_set_commands =
'local'`` carries recall's ``SET LOCAL`` (``hnsw.ef_search``, ``pg_trgm.word_similarity_threshold``)
to the shards, so a cluster ranks as one node does.
"""

from __future__ import annotations

import asyncpg

__all__ = ["REFERENCE_TABLES", "SESSION_TABLES", "distribute", "has_citus", "pool_settings"]

# memories first: the others are colocated with it (and reference it by foreign key).
SESSION_TABLES = (
    "memories", "memory_chunks", "memory_terms", "memory_grams", "memory_supersessions", "memory_stats",
    "idempotency_keys", "audits", "llm_usage",
)
REFERENCE_TABLES = ("embedding_model", "schema_migrations", "usage_resets")
# Functions the statements call inside a shard's query (db/postings.py): each node needs them.
FUNCTIONS = ("memory_cjk_grams(text)",)


async def has_citus(connection: asyncpg.Connection) -> bool:
    """Whether the connected database has the citus extension."""
    return bool(await connection.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'citus'"))


async def distribute(connection: asyncpg.Connection) -> list[str]:
    """Distribute or replicate every table not yet known to Citus; call in migrate's transaction.

    Returns:
        The tables distributed or made reference tables now (empty when all already were, or
        when the database has no citus extension).
    """
    if not await has_citus(connection):
        return []
    known = {row["name"] for row in await connection.fetch(
        "SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition")}
    done: list[str] = []
    for table in SESSION_TABLES:
        if table not in known:
            if table == "memories":
                await connection.execute("SELECT create_distributed_table('memories', 'session')")
            else:
                await connection.execute(
                    "SELECT create_distributed_table($1::text::regclass, 'session', colocate_with => 'memories')", table
                )
            done.append(table)
    for table in REFERENCE_TABLES:
        if table not in known:
            await connection.execute("SELECT create_reference_table($1::text::regclass)", table)
            done.append(table)
    for function in FUNCTIONS:
        if not await connection.fetchval(
            "SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass AND objid = $1::text::regprocedure", function
        ):
            await connection.execute("SELECT create_distributed_function($1::text)", function)
    return done


def pool_settings(citus: bool) -> dict[str, str]:
    """PostgreSQL settings every pooled connection gets on a Citus coordinator (none otherwise)."""
    return {"citus.propagate_set_commands": "local"} if citus else {}

"""Ready for Citus, distributed by session (docs/scale-out.md, "Citus, distributed by session").

The catalog after every migration: each table that holds session rows has ``session`` in its
primary key, in every unique constraint or index, and in every foreign key (so all are colocated
on one distribution column); the others are the few reference tables named here. The repository's
SQL (tests/repository_sql.py, parsed by PostgreSQL's own parser): each statement reaches the rows
of one session, chosen by one parameter, and joins session tables only on ``session``, except the
cross-session statements an operator runs, listed here with why Citus runs them as it is.
"""

from __future__ import annotations

import asyncpg
import pytest
from repository_sql import session_params, statements

from mcp_memory.db import citus
from mcp_memory.deps import Deps

pytestmark = pytest.mark.anyio

# Tables without a session column: replicated to every node (create_reference_table).
REFERENCE_TABLES = {
    "embedding_model": "one row: the model and dimension of every vector, read at start",
    "schema_migrations": "the applied migrations, read and written at start under an advisory lock",
    "usage_resets": "the operator's record of `mcp-memory usage --reset`: a scope of patterns, no session's rows",
}
# Statements that read or write many sessions on purpose, each a multi-shard query on Citus.
CROSS_SESSION = {
    "transfer.<module>": "mcp-memory export: the sessions of a scope, joined on (session, memory_id) within each shard",
    "usage.usage_totals": "usage_stats: token totals summed over the sessions a caller may see",
    "usage.reset_usage": "mcp-memory usage --reset: clears the totals of a scope, records it in a reference table",
    "migrate._check_embedding_model": "the count of all memories in the error that refuses a changed model at start",
    "browse.sessions": "the page's session list: the sessions a token may see, with counts from memory_stats",
    "redaction.audit_rows": "mcp-memory redact: the audit rows of a scope's sessions, read through one cursor as export reads",
    "health.vector_sessions": "mcp-memory doctor: how many sessions fit the in-process vector copies' budget",
}


async def _catalog(pg_url: str) -> dict[str, list[asyncpg.Record]]:
    connection = await asyncpg.connect(pg_url)
    try:
        return {
            "tables": await connection.fetch(
                "SELECT c.relname AS table, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid"
                "  AND a.attname = 'session' AND NOT a.attisdropped) AS has_session"
                " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1"),
            "unique": await connection.fetch(  # primary keys, unique constraints and unique indexes alike
                "SELECT t.relname AS table, i.relname AS index, array_agg(a.attname::text) AS columns"
                " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid"
                " JOIN pg_namespace n ON n.oid = t.relnamespace"
                " LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey)"
                " WHERE n.nspname = 'public' AND x.indisunique GROUP BY 1, 2 ORDER BY 1, 2"),
            "foreign": await connection.fetch(
                "SELECT conrelid::regclass::text AS table, confrelid::regclass::text AS referenced,"
                # in the key's order (conkey[i] references confkey[i]), not the tables' column order
                " ARRAY(SELECT a.attname::text FROM unnest(conkey) WITH ORDINALITY k(attnum, n)"
                "  JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns,"
                " ARRAY(SELECT a.attname::text FROM unnest(confkey) WITH ORDINALITY k(attnum, n)"
                "  JOIN pg_attribute a ON a.attrelid = confrelid AND a.attnum = k.attnum ORDER BY k.n)"
                "  AS referenced_columns"
                " FROM pg_constraint WHERE contype = 'f' AND connamespace = 'public'::regnamespace ORDER BY 1"),
        }
    finally:
        await connection.close()


async def test_every_table_with_session_rows_has_session_in_every_key_and_the_rest_are_reference_tables(
    pg_url: str, deps: Deps  # deps: the server has migrated the test database
) -> None:
    catalog = await _catalog(pg_url)
    session_tables = {row["table"] for row in catalog["tables"] if row["has_session"]}
    others = {row["table"] for row in catalog["tables"] if not row["has_session"]}
    assert others == set(REFERENCE_TABLES) == set(citus.REFERENCE_TABLES)  # what the server makes reference tables
    assert session_tables == set(citus.SESSION_TABLES)  # what the server distributes by session (db/citus.py)

    keys = {(row["table"], row["index"]): set(row["columns"]) for row in catalog["unique"]}
    assert {table for table, _ in keys} >= session_tables  # each has a primary key
    assert [(table, index) for (table, index), columns in keys.items()
            if table in session_tables and "session" not in columns] == []

    assert catalog["foreign"], "memory_chunks, memory_terms and memory_supersessions reference memories"
    for row in catalog["foreign"]:
        assert row["table"] in session_tables and row["referenced"] in session_tables, dict(row)
        pairs = dict(zip(row["columns"], row["referenced_columns"], strict=True))
        assert pairs.get("session") == "session", dict(row)  # colocated: the key joins on the session


async def test_every_statement_of_the_repository_reaches_one_session_and_joins_only_on_session(
    pg_url: str, deps: Deps
) -> None:
    catalog = await _catalog(pg_url)
    session_tables = {row["table"] for row in catalog["tables"] if row["has_session"]}
    found = statements()
    assert len(found) >= 50  # the db modules' statements were found, not skipped

    crossing = {}
    for statement in found:
        params = session_params(statement.sql, session_tables)
        if params is None or len(params) > 1:
            crossing.setdefault(statement.where, []).append(" ".join(statement.sql.split())[:120])
    assert set(crossing) == set(CROSS_SESSION), crossing


@pytest.mark.parametrize(
    ("sql", "params"),
    [
        ("SELECT memory_id FROM memories WHERE session = $1 AND memory_id = $2", {"$1"}),
        ("SELECT c.memory_id FROM memory_chunks c JOIN memories m USING (session, memory_id) WHERE c.session = $1",
         {"$1"}),
        ("SELECT 1 FROM memories a JOIN memory_terms t ON t.session = a.session WHERE a.session = ANY($1::text[])",
         {"$1"}),
        ("INSERT INTO audits (session, kind, detail) VALUES ($1, $2, $3)", {"$1"}),
        # INSERT ... SELECT: the row goes to the session it was read from (db/postings.py)
        ("INSERT INTO memory_terms (session, lexeme) SELECT m.session, m.content FROM memories m WHERE m.session = $1",
         {"$1"}),
        ("INSERT INTO memory_terms (session, lexeme) SELECT m.session, m.content FROM memories m", None),
        # a join of two sessions, a join on memory_id alone, a filter under OR, no filter at all
        ("SELECT 1 FROM memories a JOIN memories b ON a.content = b.content WHERE a.session = $1 AND b.session = $2",
         {"$1", "$2"}),
        ("SELECT 1 FROM memories a JOIN memory_chunks c ON c.memory_id = a.memory_id WHERE a.session = $1", None),
        ("SELECT 1 FROM memories WHERE session = $1 OR importance > 0.5", None),
        ("SELECT count(*) FROM memories", None),
        ("SELECT t.i FROM unnest($1::text[]) AS t(session) WHERE EXISTS"
         " (SELECT 1 FROM memories m WHERE m.session = t.session)", None),
    ],
)
def test_the_sql_reader_tells_one_session_from_many(sql: str, params: set[str] | None) -> None:
    tables = {"memories", "memory_chunks", "memory_terms", "audits"}
    assert session_params(sql, tables) == params

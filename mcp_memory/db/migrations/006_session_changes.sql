-- What a server needs to keep a session's vectors in its own memory and know, with one
-- primary-key read per recall, whether they are still the database's (mcp_memory/vector_cache.py).
--
-- memory_stats.version: a new value from one sequence at every insert, delete or update in the
--   session, in the same transaction, so two different contents of a session never share a version.
-- memory_stats.changes: how many memories were inserted, deleted or updated in (or out of) the
--   session; TRUNCATE counts one more than it removed. A copy appends the memories created since its
--   newest (memories_session_created_at) only when they account for every change; otherwise (a
--   delete, an update, a TRUNCATE, or an insert that started well before one it committed after)
--   it reloads the session.
-- A session's row now stays when its last memory goes (and through TRUNCATE, with n = 0), so its
-- counter never starts again at zero.

CREATE SEQUENCE memory_stats_version;
ALTER TABLE memory_stats ADD COLUMN changes bigint NOT NULL DEFAULT 0;
ALTER TABLE memory_stats ADD COLUMN version bigint NOT NULL DEFAULT nextval('memory_stats_version');
UPDATE memory_stats SET changes = n;

CREATE INDEX memories_session_created_at ON memories (session, created_at);

CREATE OR REPLACE FUNCTION memory_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_stats AS s (session, n, total_length, changes)
    SELECT session, count(*), sum(length(search_text)), count(*) FROM new_rows GROUP BY session
    ON CONFLICT (session) DO UPDATE SET n = s.n + EXCLUDED.n, total_length = s.total_length + EXCLUDED.total_length,
        changes = s.changes + EXCLUDED.changes, version = EXCLUDED.version;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_stats s SET n = s.n - d.n, total_length = s.total_length - d.total_length,
        changes = s.changes + d.n, version = nextval('memory_stats_version')
    FROM (SELECT session, count(*) AS n, sum(length(search_text)) AS total_length FROM old_rows GROUP BY session) d
    WHERE s.session = d.session;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memory_stats_replace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_stats s SET n = s.n - d.n, total_length = s.total_length - d.total_length,
        changes = s.changes + d.n, version = nextval('memory_stats_version')
    FROM (SELECT session, count(*) AS n, sum(length(search_text)) AS total_length FROM old_rows GROUP BY session) d
    WHERE s.session = d.session;
    INSERT INTO memory_stats AS s (session, n, total_length, changes)
    SELECT session, count(*), sum(length(search_text)), count(*) FROM new_rows GROUP BY session
    ON CONFLICT (session) DO UPDATE SET n = s.n + EXCLUDED.n, total_length = s.total_length + EXCLUDED.total_length,
        changes = s.changes + EXCLUDED.changes, version = EXCLUDED.version;
    RETURN NULL;
END $$;

-- TRUNCATE keeps the rows too, and counts as a change of every session (one more than it removed).
CREATE OR REPLACE FUNCTION memory_stats_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_stats SET changes = changes + n + 1, n = 0, total_length = 0,
        version = nextval('memory_stats_version');
    RETURN NULL;
END $$;

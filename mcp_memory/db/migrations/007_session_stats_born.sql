-- memory_stats.born: drawn once when a session's row is created and never updated, so a row made
-- again (memory_stats emptied by an operator, e.g. TRUNCATE with the other tables) is told apart
-- from the one a vector copy was taken from: its `changes` starts again at zero and could match
-- the copy's count plus the memories created since (mcp_memory/vector_cache.py).
ALTER TABLE memory_stats ADD COLUMN born bigint NOT NULL DEFAULT nextval('memory_stats_version');

-- Windows (memory_chunks) deleted, updated or truncated without their memory count as a change of
-- the session too, so copies holding them reload (an insert is stored with its memory, counted there).
CREATE FUNCTION memory_chunks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_stats SET changes = changes + 1, version = nextval('memory_stats_version')
    WHERE session IN (SELECT DISTINCT session FROM old_rows);
    RETURN NULL;
END $$;
CREATE FUNCTION memory_chunks_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_stats SET changes = changes + 1, version = nextval('memory_stats_version');
    RETURN NULL;
END $$;
CREATE TRIGGER memory_chunks_stats_delete AFTER DELETE ON memory_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_chunks_changed();
CREATE TRIGGER memory_chunks_stats_update AFTER UPDATE ON memory_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_chunks_changed();
CREATE TRIGGER memory_chunks_stats_truncate AFTER TRUNCATE ON memory_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunks_cleared();

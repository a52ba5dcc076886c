-- The derived rows of a memory (its BM25 postings in memory_terms, its CJK grams in memory_grams,
-- and its session's memory_stats row) are now written by the repository's own statements in the
-- memory's transaction (mcp_memory/db/postings.py), no longer by triggers. Citus runs neither
-- statement triggers with transition tables (new_rows, old_rows) nor a volatile function
-- (nextval) in an UPDATE of a distributed table, and one set of SQL serves one node and a cluster.
--
-- What the triggers also counted, and the statements do not: memories or windows written by hand
-- (an operator's INSERT, UPDATE, DELETE or TRUNCATE). After such a change, count the sessions
-- changed again; a row made again has a new `born`, so every server's vector copy of the session is
-- read again (migration 007). TRUNCATE memory_stats with the other tables; for sessions S:
--   DELETE FROM memory_stats WHERE session IN (S);
--   INSERT INTO memory_stats (session, n, total_length, changes)
--   SELECT session, count(*), sum(length(search_text)), count(*) FROM memories WHERE session IN (S) GROUP BY session;
-- (memory_terms and memory_grams rows of memories inserted by hand: see migrations 003 and 013.)
DROP TRIGGER memories_stats_insert ON memories;
DROP TRIGGER memories_stats_delete ON memories;
DROP TRIGGER memories_stats_update ON memories;
DROP TRIGGER memories_stats_truncate ON memories;
DROP TRIGGER memories_terms_insert ON memories;
DROP TRIGGER memories_grams_insert ON memories;
DROP TRIGGER memory_chunks_stats_delete ON memory_chunks;
DROP TRIGGER memory_chunks_stats_update ON memory_chunks;
DROP TRIGGER memory_chunks_stats_truncate ON memory_chunks;
DROP FUNCTION memory_stats_add();
DROP FUNCTION memory_stats_remove();
DROP FUNCTION memory_stats_replace();
DROP FUNCTION memory_stats_clear();
DROP FUNCTION memory_terms_add();
DROP FUNCTION memory_grams_add();
DROP FUNCTION memory_chunks_changed();
DROP FUNCTION memory_chunks_cleared();

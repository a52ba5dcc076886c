-- Keyword search reads memory_terms (migration 003) since then; nothing queries
-- memories.search_text with @@ any more, so its GIN index only cost every store an update.
-- The column stays: the memory_terms and memory_stats triggers read it.
DROP INDEX IF EXISTS memories_search_text;

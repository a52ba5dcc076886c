-- Two read-path changes measured in benchmarks/RESULTS.md ("Round 3").
--
-- 1. Embeddings stay in the heap row. pgvector's vector type defaults to EXTERNAL storage, and a
--    memory row (a 1,544-byte embedding for 384 dimensions plus content and tsvector) crosses
--    PostgreSQL's 2 kB TOAST threshold, so the embedding went out of line: an exact scan of a
--    10k-memory session read about 10 buffers per memory and took 36 ms. With MAIN storage
--    the text columns are compressed or moved out instead and the scan takes about 9 ms. MAIN,
--    not PLAIN: a vector too large for a page is still moved out rather than refused. Existing
--    rows are rewritten once so they get the new layout.
-- 2. BM25 postings are read by index-only scans: the primary key of memory_terms carries tf and
--    dl. Reading 12k postings in a 100k-memory session went from 11.5 ms (one heap page per
--    posting) to 2 ms. Insert-only tables are vacuumed (which marks pages all-visible for
--    index-only scans) after 2% new rows instead of the default 20%.

ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE memory_chunks ALTER COLUMN embedding SET STORAGE MAIN;
UPDATE memories SET embedding = embedding::real[]::vector;
UPDATE memory_chunks SET embedding = embedding::real[]::vector;

ALTER TABLE memory_terms DROP CONSTRAINT memory_terms_pkey;
ALTER TABLE memory_terms ADD PRIMARY KEY (session, lexeme, memory_id) INCLUDE (tf, dl);
ALTER TABLE memory_terms SET (autovacuum_vacuum_insert_scale_factor = 0.02);

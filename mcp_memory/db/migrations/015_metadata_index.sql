-- recall_memory's metadata filter (issue 26) is `metadata @> $n::jsonb` on every list. Without an
-- index each of those statements read the session's whole heap (the embedding lives in the row,
-- migration 005): in a 100k-memory session a filter keeping 100 memories took 376 ms per statement
-- and recall p50 553 ms; with this index the statement reads the 100 rows in 1.3 ms
-- (benchmarks/RESULTS.md). jsonb_path_ops: a hash per key path and value, the smaller GIN operator
-- class, and the one that serves @>, the only operator the filter uses. Built in 1.3 s per 100k
-- memories; writes wait for the build.
CREATE INDEX memories_metadata ON memories USING gin (metadata jsonb_path_ops);

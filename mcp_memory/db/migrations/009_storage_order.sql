-- Storage order breaks ties of occurred_at wherever recall orders memories by time (neighbours,
-- the recent list, the time window): transcripts and notes often carry one time per conversation
-- or a date only, and a random memory_id would shuffle the conversation. Storage order is
-- created_at, the start of the inserting transaction; each store_memory is its own transaction.
--
-- The time-ordered queries now sort by (occurred_at, created_at, memory_id); this index serves them
-- in that order (the recent list reads it backwards) and replaces (session, occurred_at DESC,
-- memory_id). Measured in a 10k-memory session whose memories share one occurred_at, 30 anchors,
-- 2 neighbours each side: 913 ms with the old index (it reads the whole tie group per anchor and
-- sorts), 0.66 ms with this one; the recent list 7.7-14.7 ms -> 0.07 ms. In LoCoMo sessions (about
-- 20 memories per time) both take about 1 ms. The exact vector scan reads the session through any
-- btree that starts with session.
CREATE INDEX memories_session_time_order ON memories (session, occurred_at, created_at, memory_id);
DROP INDEX memories_session_occurred_at;

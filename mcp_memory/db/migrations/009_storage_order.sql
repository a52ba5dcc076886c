-- Storage order breaks ties of occurred_at wherever recall orders memories by time (neighbours,
-- the recent list, the time window): transcripts and notes often carry one time per conversation
-- or a date only, and a random memory_id would shuffle the conversation.
--
-- created_at took now(), the transaction's start, so memories inserted in one transaction (an
-- import, a script) shared one value. clock_timestamp() is the insert's own time, so they keep the
-- order they were inserted in. Each store_memory is its own transaction either way.
ALTER TABLE memories ALTER COLUMN created_at SET DEFAULT clock_timestamp();

-- Idempotency keys of store_memory: a retry with the same key in the same session returns the
-- first call's memory_id and stores nothing new, also when the first reply was lost and when two
-- retries race (the primary key makes the second insert wait for the first transaction, then see
-- its row). The key row commits in the memory's transaction, so a key never names a memory that
-- was not stored.
--
-- content_hash and request_hash (sha256 of content, and of every argument as given) tell a real
-- retry from a reuse of the key for another memory, which is an error. The row outlives a delete of
-- its memory (a late retry must not bring a deleted memory back; it is an error instead) and goes
-- with the whole session (delete_memory all=true).
CREATE TABLE idempotency_keys (
    session text NOT NULL,
    idempotency_key text NOT NULL,
    memory_id uuid NOT NULL,
    content_hash bytea NOT NULL,
    request_hash bytea NOT NULL,
    superseded uuid[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session, idempotency_key)
);

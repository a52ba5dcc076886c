-- Memories, their long-text chunks, audits and LLM usage.
-- {dim} is the embedding dimension recorded in embedding_model at first start.
-- Every table that holds session data has session in its primary key, so the schema can be
-- distributed by session (Citus) without a rewrite.

CREATE TABLE embedding_model (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model text NOT NULL,
    dim integer NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memories (
    session text NOT NULL,
    memory_id uuid NOT NULL,
    content text NOT NULL,
    content_hash bytea NOT NULL,
    occurred_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
    importance real,
    embedding vector({dim}) NOT NULL,
    embedding_model text NOT NULL,
    search_text tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    PRIMARY KEY (session, memory_id),
    UNIQUE (session, content_hash)
);
-- Chronological supplement and small-session exact vector scans.
CREATE INDEX memories_session_occurred_at ON memories (session, occurred_at DESC, memory_id);
-- Large sessions: approximate search with pgvector 0.8 iterative scans.
CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops);
CREATE INDEX memories_search_text ON memories USING gin (search_text);
CREATE INDEX memories_content_trgm ON memories USING gin (content gin_trgm_ops);

-- Windows 1..n of memories longer than the model reads; window 0 is memories.embedding.
CREATE TABLE memory_chunks (
    session text NOT NULL,
    memory_id uuid NOT NULL,
    chunk_no integer NOT NULL,
    embedding vector({dim}) NOT NULL,
    PRIMARY KEY (session, memory_id, chunk_no),
    FOREIGN KEY (session, memory_id) REFERENCES memories (session, memory_id) ON DELETE CASCADE
);
CREATE INDEX memory_chunks_embedding_hnsw ON memory_chunks USING hnsw (embedding vector_cosine_ops);

CREATE TABLE audits (
    session text NOT NULL,
    audit_id bigint GENERATED ALWAYS AS IDENTITY,
    kind text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    detail jsonb NOT NULL,
    PRIMARY KEY (session, audit_id)
);
CREATE INDEX audits_session_newest ON audits (session, audit_id DESC);

CREATE TABLE llm_usage (
    operation text NOT NULL,
    model text NOT NULL,
    calls bigint NOT NULL DEFAULT 0,
    errors bigint NOT NULL DEFAULT 0,
    prompt_tokens bigint NOT NULL DEFAULT 0,
    cached_prompt_tokens bigint NOT NULL DEFAULT 0,
    completion_tokens bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (operation, model)
);

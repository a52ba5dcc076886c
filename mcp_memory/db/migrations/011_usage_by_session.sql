-- LLM usage is kept per (session, operation, model), so usage_stats can sum only the sessions a
-- caller may see. Totals from before this migration were not attributed to a session: they keep
-- the empty session '' (never a client session: names are at least one character), which only a
-- caller that may see every session ('*') sums.
ALTER TABLE llm_usage ADD COLUMN session text NOT NULL DEFAULT '';
ALTER TABLE llm_usage ALTER COLUMN session DROP DEFAULT;
ALTER TABLE llm_usage DROP CONSTRAINT llm_usage_pkey;
ALTER TABLE llm_usage ADD PRIMARY KEY (session, operation, model);

-- Usage resets are the operator's bookkeeping, never a client's rows: they lived as audit rows in
-- the session 'mcp-memory/usage', a name any client could read with list_audits and store into.
-- They now live in a table no tool reads or writes; the old rows move here.
CREATE TABLE usage_resets (
    reset_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reset_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    scope text[] NOT NULL,  -- the session patterns whose totals were cleared
    cleared jsonb NOT NULL  -- the totals per operation that were cleared
);
INSERT INTO usage_resets (reset_at, scope, cleared)
    SELECT created_at, ARRAY['*'], coalesce(detail -> 'cleared', '[]'::jsonb)
    FROM audits WHERE session = 'mcp-memory/usage' AND kind = 'usage_reset' ORDER BY audit_id;
DELETE FROM audits WHERE session = 'mcp-memory/usage' AND kind = 'usage_reset';

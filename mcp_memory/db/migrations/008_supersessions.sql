-- Supersession (issue 10): a memory replaced by a newer one stays, marked with the newer one's id
-- and the time of marking. A table of its own, so marking never updates `memories` (that would
-- bump the session's version in memory_stats and make every server reload its vector copy).
--
-- One row per superseded memory (a memory has at most one successor; marking it again names the
-- new one). Both ids are memories of the same session; deleting either memory deletes the row, so
-- deleting the successor makes the old memory current again, and deleting a session removes all.
-- `source` says who marked it: the caller (store_memory's `supersedes`) or the LLM on store.
CREATE TABLE memory_supersessions (
    session text NOT NULL,
    memory_id uuid NOT NULL,
    superseded_by uuid NOT NULL,
    superseded_at timestamptz NOT NULL DEFAULT now(),
    source text NOT NULL DEFAULT 'explicit' CHECK (source IN ('explicit', 'llm')),
    PRIMARY KEY (session, memory_id),
    CHECK (memory_id <> superseded_by),
    FOREIGN KEY (session, memory_id) REFERENCES memories (session, memory_id) ON DELETE CASCADE,
    FOREIGN KEY (session, superseded_by) REFERENCES memories (session, memory_id) ON DELETE CASCADE
);
-- Recall reads a candidate's row by the primary key (joined to the memories it fetches); finding
-- what a memory superseded (history, delete's cascade, the current end of a chain) goes by this.
CREATE INDEX memory_supersessions_successor ON memory_supersessions (session, superseded_by);

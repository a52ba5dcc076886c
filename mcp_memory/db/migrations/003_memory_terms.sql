-- An inverted index for BM25: one row per (memory, English lexeme) with the lexeme's count in
-- the memory (tf) and the memory's length (dl, its number of distinct lexemes). A keyword search
-- reads the postings of the query's words by primary key instead of unnesting the tsvector of
-- every matching memory (see benchmarks/RESULTS.md). Kept by a statement trigger on insert;
-- rows go with their memory through the foreign key.

CREATE TABLE memory_terms (
    session text NOT NULL,
    lexeme text NOT NULL,
    memory_id uuid NOT NULL,
    tf integer NOT NULL,
    dl integer NOT NULL,
    PRIMARY KEY (session, lexeme, memory_id),
    FOREIGN KEY (session, memory_id) REFERENCES memories (session, memory_id) ON DELETE CASCADE
);

INSERT INTO memory_terms (session, lexeme, memory_id, tf, dl)
SELECT m.session, u.lexeme, m.memory_id, coalesce(array_length(u.positions, 1), 1), length(m.search_text)
FROM memories m CROSS JOIN LATERAL unnest(m.search_text) u;

CREATE FUNCTION memory_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_terms (session, lexeme, memory_id, tf, dl)
    SELECT n.session, u.lexeme, n.memory_id, coalesce(array_length(u.positions, 1), 1), length(n.search_text)
    FROM new_rows n CROSS JOIN LATERAL unnest(n.search_text) u;
    RETURN NULL;
END $$;

CREATE TRIGGER memories_terms_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_add();

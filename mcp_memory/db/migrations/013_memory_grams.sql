-- An inverted index for the CJK list: one row per (memory, CJK character or pair of adjacent CJK
-- characters) of the memory's content. Chinese and Japanese have no spaces between words, so recall
-- matches a question's character bigrams and single characters. It used to test each term with
-- strpos against every memory of the session: 22 ms for the bigrams of a question in a 10k-memory
-- Chinese session, 44 ms with single characters too. Read by primary key, the same terms take 2.7
-- and 9.8 ms with the same scores (benchmarks/RESULTS.md). Kept by a statement trigger on insert,
-- as memory_terms is; rows go with their memory through the foreign key. English text has none.
--
-- A CJK character is one of the ranges of mcp_memory/pipeline/search.py's _CJK_RUN (Han, kana,
-- Hangul); a run here may be one character long (a question's characters match it anywhere). Each
-- run is split into characters once and paired with the next (linear in the text: substr at each
-- offset walks the UTF-8 text from its start, and took over 5 s for 32,000 characters).

CREATE FUNCTION memory_cjk_grams(content text) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT DISTINCT g.gram
    FROM (
        SELECT c.ch, lead(c.ch) OVER (PARTITION BY r.run ORDER BY c.i) AS next
        FROM regexp_matches(content, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)', 'g')
             WITH ORDINALITY AS r(m, run)
        CROSS JOIN LATERAL unnest(string_to_array(r.m[1], NULL)) WITH ORDINALITY AS c(ch, i)
    ) x
    CROSS JOIN LATERAL (VALUES (x.ch), (x.ch || x.next)) AS g(gram)
    WHERE g.gram IS NOT NULL
$$;

CREATE TABLE memory_grams (
    session text NOT NULL,
    gram text NOT NULL,
    memory_id uuid NOT NULL,
    PRIMARY KEY (session, gram, memory_id),
    FOREIGN KEY (session, memory_id) REFERENCES memories (session, memory_id) ON DELETE CASCADE
);
ALTER TABLE memory_grams SET (autovacuum_vacuum_insert_scale_factor = 0.02);

INSERT INTO memory_grams (session, gram, memory_id)
SELECT m.session, g.gram, m.memory_id FROM memories m CROSS JOIN LATERAL memory_cjk_grams(m.content) AS g(gram);

CREATE FUNCTION memory_grams_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_grams (session, gram, memory_id)
    SELECT n.session, g.gram, n.memory_id FROM new_rows n CROSS JOIN LATERAL memory_cjk_grams(n.content) AS g(gram);
    RETURN NULL;
END $$;

CREATE TRIGGER memories_grams_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_grams_add();

-- A chunk's tsvector may come with the chunk: pgstore builds it in the
-- client from what the server makes of each distinct piece of the text
-- between white space (vectors.go); a text with a tag is left out. The
-- trigger now computes the vector on insert only when none came (the
-- column's empty default), and on every update of the text, so a chunk's
-- vector is still always to_tsvector('pg_catalog.english', text).
-- Processes of an older version insert no vector, and the trigger serves
-- them as before. The WHEN clause is checked before the trigger is
-- called, so a vector that came costs no call at all.

DROP TRIGGER chunks_tsv ON chunks;

CREATE TRIGGER chunks_tsv BEFORE INSERT ON chunks
    FOR EACH ROW WHEN (NEW.tsv = ''::tsvector)
    EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', text);

CREATE TRIGGER chunks_tsv_text BEFORE UPDATE OF text ON chunks
    FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', text);

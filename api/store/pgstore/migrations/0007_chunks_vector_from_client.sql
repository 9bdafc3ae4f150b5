-- A chunk's tsvector may come with the chunk: pgstore computes it in the
-- client for text whose words PostgreSQL's parser provably reads alone,
-- asking the server what each distinct word becomes (vectors.go). The
-- trigger now computes the vector only when none came (the column's
-- empty default) or when the text itself is updated, so a chunk's vector
-- is still always to_tsvector('pg_catalog.english', text). Processes of
-- an older version insert no vector, and the trigger serves them as
-- before.

CREATE FUNCTION chunks_tsv_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' OR NEW.tsv = ''::tsvector THEN
        NEW.tsv := to_tsvector('pg_catalog.english', NEW.text);
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER chunks_tsv ON chunks;

CREATE TRIGGER chunks_tsv BEFORE INSERT OR UPDATE OF text ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunks_tsv_fill();

-- The users being erased (DELETE /api/v1/me), from the request until the
-- erasure completes. Meanwhile nothing new of theirs may be stored: a
-- trigger on each table that starts something of a user's refuses the
-- row, whichever code path inserts it, with one primary-key lookup in the
-- inserting statement. The store reads the refusal by its constraint
-- name, erasure_in_progress.

CREATE TABLE erasures (
    user_id      text        PRIMARY KEY,
    requested_at timestamptz NOT NULL
);

CREATE FUNCTION refuse_erased_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id) THEN
        RAISE EXCEPTION 'the user is being erased'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'erasure_in_progress';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER conversations_erasure BEFORE INSERT ON conversations
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();
CREATE TRIGGER runs_erasure BEFORE INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();
CREATE TRIGGER documents_erasure BEFORE INSERT ON documents
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();
CREATE TRIGGER memories_erasure BEFORE INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();
CREATE TRIGGER profiles_erasure BEFORE INSERT ON profiles
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();

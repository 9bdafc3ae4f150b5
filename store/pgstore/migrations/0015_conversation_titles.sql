-- A conversation's title is the user's once they rename it
-- (PATCH /api/v1/conversations/{id}); until then the service may replace
-- it with one it generates after the first answer, never after.
ALTER TABLE conversations ADD COLUMN title_by_user boolean NOT NULL DEFAULT false;

-- A renamed title is something new of the user's: refused while the user
-- is being erased, like the inserts of 0013.
CREATE TRIGGER conversations_title_erasure BEFORE UPDATE OF title ON conversations
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();

-- A conversation's title is the user's once they rename it
-- (PATCH /api/v1/conversations/{id}); until then the service may replace
-- it with one it generates after the first answer, never after.
ALTER TABLE conversations ADD COLUMN title_by_user INTEGER NOT NULL DEFAULT 0;

-- A renamed title is something new of the user's: refused while the user
-- is being erased, like the inserts of 0010.
CREATE TRIGGER conversations_title_erasure BEFORE UPDATE OF title ON conversations
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

-- The users being erased (DELETE /api/v1/me), from the request until the
-- erasure completes. Meanwhile nothing new of theirs may be stored: a
-- trigger on each table that starts something of a user's refuses the
-- row, whichever code path inserts it, with one primary-key lookup in the
-- inserting statement. The store reads the refusal by its message,
-- erasure_in_progress.

CREATE TABLE erasures (
    user_id      TEXT NOT NULL PRIMARY KEY,
    requested_at TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TRIGGER conversations_erasure BEFORE INSERT ON conversations
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

CREATE TRIGGER runs_erasure BEFORE INSERT ON runs
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

CREATE TRIGGER documents_erasure BEFORE INSERT ON documents
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

CREATE TRIGGER memories_erasure BEFORE INSERT ON memories
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

CREATE TRIGGER profiles_erasure BEFORE INSERT ON profiles
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

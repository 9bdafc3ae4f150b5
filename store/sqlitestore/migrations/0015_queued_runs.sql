-- Messages sent to a busy conversation with the enqueue strategy
-- (multitask_strategy): each waits here until the runs before it have
-- ended, then becomes a run of the same id in the transaction that
-- deletes it, so it starts once, whichever process starts it. seq keeps
-- the order the messages came in.

CREATE TABLE queued_runs (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id         TEXT    NOT NULL,
    user_message    TEXT    NOT NULL,
    request_id      TEXT    NOT NULL,
    input           TEXT    NOT NULL,
    created_at      TEXT    NOT NULL
) STRICT;

CREATE INDEX queued_runs_by_conversation ON queued_runs (conversation_id, seq);

CREATE TRIGGER queued_runs_erasure BEFORE INSERT ON queued_runs
WHEN EXISTS (SELECT 1 FROM erasures WHERE user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'erasure_in_progress');
END;

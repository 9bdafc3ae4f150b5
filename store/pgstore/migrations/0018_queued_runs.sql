-- Messages sent to a busy conversation with the enqueue strategy
-- (multitask_strategy): each waits here until the runs before it have
-- ended, then becomes a run of the same id in the transaction that
-- deletes it, so it starts once, whichever process starts it. seq keeps
-- the order the messages came in.

CREATE TABLE queued_runs (
    seq             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text        COLLATE "C" NOT NULL UNIQUE,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    user_message    text        NOT NULL,
    request_id      text        NOT NULL,
    input           text        NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE INDEX queued_runs_by_conversation ON queued_runs (conversation_id, seq);

CREATE TRIGGER queued_runs_erasure BEFORE INSERT ON queued_runs
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_user();

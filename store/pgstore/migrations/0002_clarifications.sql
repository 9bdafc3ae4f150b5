-- A clarifying question the agent asked, as a human request beside
-- approvals and elicitations: the message that starts the conversation's
-- next run answers it.

CREATE TABLE clarifications (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    question        text        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'answered', 'expired')),
    answer          text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    resolved_at     timestamptz
);

CREATE INDEX clarifications_pending ON clarifications (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX clarifications_by_run ON clarifications (run_id);
CREATE INDEX clarifications_by_conversation ON clarifications (conversation_id);

-- A clarifying question the agent asked, as a human request beside
-- approvals and elicitations: the message that starts the conversation's
-- next run answers it.

CREATE TABLE clarifications (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    question        TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'expired')),
    answer          TEXT NOT NULL DEFAULT '',
    created_at      TEXT NOT NULL,
    resolved_at     TEXT
) STRICT;

CREATE INDEX clarifications_pending ON clarifications (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX clarifications_by_run ON clarifications (run_id);
CREATE INDEX clarifications_by_conversation ON clarifications (conversation_id);

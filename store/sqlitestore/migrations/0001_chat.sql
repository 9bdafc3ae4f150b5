-- The chat service's record. Times are UTC text of fixed width
-- (2006-01-02T15:04:05.000000Z), so they sort as text; JSON is text, kept
-- as given. Deleting a conversation cascades to everything below it.

CREATE TABLE conversations (
    id         TEXT    PRIMARY KEY,
    user_id    TEXT    NOT NULL,
    title      TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    run_count  INTEGER NOT NULL DEFAULT 0 -- numbers the runs: runs.num
) STRICT;

CREATE INDEX conversations_by_user ON conversations (user_id, created_at DESC, id DESC);

CREATE TABLE runs (
    id               TEXT    PRIMARY KEY,
    conversation_id  TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id          TEXT    NOT NULL,
    num              INTEGER NOT NULL, -- 1, 2, … within the conversation: "later" for edits
    status           TEXT    NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'cancelled', 'failed')),
    interrupt_reason TEXT    NOT NULL DEFAULT '',
    superseded       INTEGER NOT NULL DEFAULT 0,
    user_message     TEXT    NOT NULL,
    usage            TEXT    NOT NULL DEFAULT '{}',
    request_id       TEXT    NOT NULL,
    owner            TEXT    NOT NULL,
    checkpoint_id    TEXT    NOT NULL,
    last_seq         INTEGER NOT NULL DEFAULT 0, -- the seq of the run's last event
    created_at       TEXT    NOT NULL,
    completed_at     TEXT,
    UNIQUE (conversation_id, num)
) STRICT;

-- One active run per conversation (store.Run.Active).
CREATE UNIQUE INDEX runs_one_active ON runs (conversation_id)
    WHERE superseded = 0
      AND (status = 'running' OR (status = 'interrupted' AND interrupt_reason <> 'clarification'));

CREATE TABLE events (
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    data       TEXT    NOT NULL, -- the SSE data line, verbatim
    created_at TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    citations       TEXT,
    meta            TEXT,
    created_at      TEXT NOT NULL
) STRICT;

CREATE INDEX messages_by_run ON messages (run_id, created_at, id);
CREATE INDEX messages_by_conversation ON messages (conversation_id);

CREATE TABLE approvals (
    id              TEXT    PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         TEXT    NOT NULL,
    tool_call_id    TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    args            TEXT    NOT NULL,
    revision        INTEGER NOT NULL,
    status          TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'edited', 'rejected', 'expired')),
    decision        TEXT    NOT NULL DEFAULT '',
    edited_args     TEXT,
    reason          TEXT    NOT NULL DEFAULT '',
    created_at      TEXT    NOT NULL,
    resolved_at     TEXT
) STRICT;

CREATE INDEX approvals_pending ON approvals (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX approvals_by_run ON approvals (run_id);
CREATE INDEX approvals_by_conversation ON approvals (conversation_id);

CREATE TABLE elicitations (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    source          TEXT NOT NULL,
    message         TEXT NOT NULL,
    schema          TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled', 'expired')),
    content         TEXT,
    created_at      TEXT NOT NULL,
    resolved_at     TEXT
) STRICT;

CREATE INDEX elicitations_pending ON elicitations (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX elicitations_by_run ON elicitations (run_id);
CREATE INDEX elicitations_by_conversation ON elicitations (conversation_id);

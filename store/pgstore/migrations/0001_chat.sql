-- The chat service's record. Several processes may share it: ids are made
-- by the application (UUIDv7, unique without coordination), and every
-- rule that must hold across processes is a constraint here: one active
-- run per conversation (runs_one_active), one event per (run, seq), one
-- run per (conversation, num). Deleting a conversation cascades to
-- everything below it.
--
-- Ids are COLLATE "C" so they compare as bytes, as the SQLite store's do.
-- JSON the user reads back is json, not jsonb, which keeps its bytes; an
-- event's data is text, the SSE line exactly.

CREATE TABLE conversations (
    id         text        COLLATE "C" PRIMARY KEY,
    user_id    text        NOT NULL,
    title      text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    run_count  bigint      NOT NULL DEFAULT 0 -- numbers the runs: runs.num
);

CREATE INDEX conversations_by_user ON conversations (user_id, created_at DESC, id DESC);

CREATE TABLE runs (
    id               text        COLLATE "C" PRIMARY KEY,
    conversation_id  text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_id          text        NOT NULL,
    num              bigint      NOT NULL, -- 1, 2, … within the conversation: "later" for edits
    status           text        NOT NULL CHECK (status IN ('running', 'interrupted', 'completed', 'cancelled', 'failed')),
    interrupt_reason text        NOT NULL DEFAULT '',
    superseded       boolean     NOT NULL DEFAULT false,
    user_message     text        NOT NULL,
    usage            json        NOT NULL DEFAULT '{}',
    request_id       text        NOT NULL,
    owner            text        NOT NULL,
    checkpoint_id    text        NOT NULL,
    last_seq         bigint      NOT NULL DEFAULT 0, -- the seq of the run's last event
    created_at       timestamptz NOT NULL,
    completed_at     timestamptz,
    UNIQUE (conversation_id, num)
);

-- One active run per conversation (store.Run.Active).
CREATE UNIQUE INDEX runs_one_active ON runs (conversation_id)
    WHERE NOT superseded
      AND (status = 'running' OR (status = 'interrupted' AND interrupt_reason <> 'clarification'));

CREATE TABLE events (
    run_id     text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        bigint      NOT NULL,
    type       text        NOT NULL,
    data       text        NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE messages (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    role            text        NOT NULL CHECK (role IN ('user', 'assistant')),
    content         text        NOT NULL,
    citations       json,
    meta            json,
    created_at      timestamptz NOT NULL
);

CREATE INDEX messages_by_run ON messages (run_id, created_at, id);
CREATE INDEX messages_by_conversation ON messages (conversation_id);

CREATE TABLE approvals (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    tool_call_id    text        NOT NULL,
    tool            text        NOT NULL,
    args            json        NOT NULL,
    revision        integer     NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'approved', 'edited', 'rejected', 'expired')),
    decision        text        NOT NULL DEFAULT '',
    edited_args     json,
    reason          text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    resolved_at     timestamptz
);

CREATE INDEX approvals_pending ON approvals (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX approvals_by_run ON approvals (run_id);
CREATE INDEX approvals_by_conversation ON approvals (conversation_id);

CREATE TABLE elicitations (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    source          text        NOT NULL,
    message         text        NOT NULL,
    schema          json        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'cancelled', 'expired')),
    content         json,
    created_at      timestamptz NOT NULL,
    resolved_at     timestamptz
);

CREATE INDEX elicitations_pending ON elicitations (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX elicitations_by_run ON elicitations (run_id);
CREATE INDEX elicitations_by_conversation ON elicitations (conversation_id);

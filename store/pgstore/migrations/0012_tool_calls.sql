-- At most once, or a person decides. tool_calls is the record of the
-- calls of tools that are neither read-only nor idempotent: a row is
-- written before such a call starts and updated when it ends, so a run
-- recovered after a crash knows which call may have run; again names the
-- uncertain call whose "run it again" last let it start. uncertain_calls
-- are the human requests such a run parks on: run the call again, skip
-- it, or treat it as failed.

CREATE TABLE tool_calls (
    id         text        COLLATE "C" PRIMARY KEY,
    run_id     text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tool       text        NOT NULL,
    state      text        NOT NULL CHECK (state IN ('started', 'asking', 'ended')),
    outcome    json,
    again      text        NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL
);

CREATE INDEX tool_calls_by_run ON tool_calls (run_id);

CREATE TABLE uncertain_calls (
    id              text        COLLATE "C" PRIMARY KEY,
    conversation_id text        COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    run_id          text        COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id         text        NOT NULL,
    tool_call_id    text        NOT NULL,
    tool            text        NOT NULL,
    args            json        NOT NULL,
    status          text        NOT NULL CHECK (status IN ('pending', 'retried', 'skipped', 'failed', 'expired')),
    created_at      timestamptz NOT NULL,
    resolved_at     timestamptz
);

CREATE INDEX uncertain_calls_pending ON uncertain_calls (user_id, created_at, id) WHERE status = 'pending';
CREATE INDEX uncertain_calls_by_run ON uncertain_calls (run_id);
CREATE INDEX uncertain_calls_by_conversation ON uncertain_calls (conversation_id);

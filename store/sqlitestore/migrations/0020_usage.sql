-- A run's model, as its starter named it (store.NewRun.Model): the
-- usage record attributes the run's tokens to it.
ALTER TABLE runs ADD COLUMN model TEXT NOT NULL DEFAULT '';
-- and a queued message's, which its run takes when it starts.
ALTER TABLE queued_runs ADD COLUMN model TEXT NOT NULL DEFAULT '';

-- Usage per user, model and UTC day (store.UsageLog), added to in the
-- transaction that ends a run, never recomputed from events.
CREATE TABLE usage_days (
    user_id       TEXT    NOT NULL,
    day           TEXT    NOT NULL, -- YYYY-MM-DD, UTC
    model         TEXT    NOT NULL,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens  INTEGER NOT NULL DEFAULT 0,
    tool_calls    INTEGER NOT NULL DEFAULT 0,
    runs          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day, model)
);
-- The admins' view reads every user's days in order.
CREATE INDEX usage_days_day ON usage_days (day, user_id, model);

-- Three tables, after LangGraph's layout: a checkpoint row names field
-- versions, blobs hold each version once per thread namespace, and writes
-- hang off the checkpoint their task started from.

CREATE TABLE checkpoints (
    thread_id     TEXT    NOT NULL,
    ns            TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    parent_id     TEXT    NOT NULL,
    step          INTEGER NOT NULL,
    source        TEXT    NOT NULL,
    created_at    TEXT    NOT NULL, -- UTC, RFC 3339 with nanoseconds, fixed width so it sorts
    body          BLOB    NOT NULL, -- graph.EncodeCheckpoint
    PRIMARY KEY (thread_id, ns, checkpoint_id)
);

CREATE TABLE checkpoint_blobs (
    thread_id TEXT    NOT NULL,
    ns        TEXT    NOT NULL,
    field     TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    delta     INTEGER NOT NULL,
    base      TEXT    NOT NULL,
    data      BLOB    NOT NULL,
    PRIMARY KEY (thread_id, ns, field, version)
);

CREATE TABLE checkpoint_writes (
    thread_id     TEXT    NOT NULL,
    ns            TEXT    NOT NULL,
    checkpoint_id TEXT    NOT NULL,
    task_id       TEXT    NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT    NOT NULL,
    value         BLOB    NOT NULL,
    PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx),
    -- A write against no checkpoint could never be read; deleting a
    -- checkpoint takes its writes along.
    FOREIGN KEY (thread_id, ns, checkpoint_id)
        REFERENCES checkpoints (thread_id, ns, checkpoint_id) ON DELETE CASCADE
);

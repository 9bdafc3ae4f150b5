-- Three tables, after LangGraph's layout: a checkpoint row names field
-- versions, blobs hold each version once per thread namespace, and writes
-- hang off the checkpoint their task started from.
--
-- Ids are COLLATE "C": checkpoint ids sort in creation order as byte
-- strings, and a locale collation would order them differently.

CREATE TABLE checkpoints (
    thread_id     text        NOT NULL,
    ns            text        NOT NULL,
    checkpoint_id text        COLLATE "C" NOT NULL,
    parent_id     text        NOT NULL,
    step          integer     NOT NULL,
    source        text        NOT NULL,
    created_at    timestamptz NOT NULL,
    body          json        NOT NULL, -- graph.EncodeCheckpoint; json, not jsonb, keeps its bytes
    PRIMARY KEY (thread_id, ns, checkpoint_id)
);

CREATE TABLE checkpoint_blobs (
    thread_id text    NOT NULL,
    ns        text    NOT NULL,
    field     text    COLLATE "C" NOT NULL,
    version   text    COLLATE "C" NOT NULL,
    delta     boolean NOT NULL,
    base      text    COLLATE "C" NOT NULL,
    data      bytea   NOT NULL,
    PRIMARY KEY (thread_id, ns, field, version)
);

CREATE TABLE checkpoint_writes (
    thread_id     text    NOT NULL,
    ns            text    NOT NULL,
    checkpoint_id text    COLLATE "C" NOT NULL,
    task_id       text    COLLATE "C" NOT NULL,
    idx           integer NOT NULL,
    channel       text    NOT NULL,
    value         bytea   NOT NULL,
    PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx),
    -- A write against no checkpoint could never be read; deleting a
    -- checkpoint takes its writes along.
    FOREIGN KEY (thread_id, ns, checkpoint_id)
        REFERENCES checkpoints (thread_id, ns, checkpoint_id) ON DELETE CASCADE
);

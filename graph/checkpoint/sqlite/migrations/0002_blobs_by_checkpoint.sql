-- A checkpoint's blobs share their version (the checkpoint's id), so with
-- the version before the field they sit side by side in the primary key's
-- index: a put of ten fields changes one or two index pages instead of one
-- per field, and a commit writes that many fewer pages to the WAL. Lookups
-- name all four columns, so they use the index as before.

CREATE TABLE checkpoint_blobs_by_version (
    thread_id TEXT    NOT NULL,
    ns        TEXT    NOT NULL,
    field     TEXT    NOT NULL,
    version   TEXT    NOT NULL,
    delta     INTEGER NOT NULL,
    base      TEXT    NOT NULL,
    data      BLOB    NOT NULL,
    PRIMARY KEY (thread_id, ns, version, field)
);

INSERT INTO checkpoint_blobs_by_version (thread_id, ns, field, version, delta, base, data)
SELECT thread_id, ns, field, version, delta, base, data FROM checkpoint_blobs;

DROP TABLE checkpoint_blobs;

ALTER TABLE checkpoint_blobs_by_version RENAME TO checkpoint_blobs;

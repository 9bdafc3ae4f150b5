-- Webhooks. webhook_routes says which endpoint (as the operator's
-- configuration names it) receives which event type; the service
-- replaces it at start. webhook_deliveries are the events to send: a
-- row per event and endpoint, written in the transaction that stores the
-- event, so an event stored is never an event forgotten, whatever
-- happens to the process or the job queue (a file of its own) after the
-- commit. queued records that a job delivers it; a delivery goes with
-- its event.

CREATE TABLE webhook_routes (
    endpoint   TEXT NOT NULL,
    event_type TEXT NOT NULL,
    PRIMARY KEY (event_type, endpoint)
) STRICT, WITHOUT ROWID;

CREATE TABLE webhook_deliveries (
    id           TEXT    PRIMARY KEY,
    endpoint     TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    event_type   TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    queued       INTEGER NOT NULL DEFAULT 0,
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_status  INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT    NOT NULL DEFAULT '',
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    delivered_at TEXT,
    UNIQUE (run_id, seq, endpoint),
    FOREIGN KEY (run_id, seq) REFERENCES events (run_id, seq) ON DELETE CASCADE
) STRICT;

CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (created_at, id);
CREATE INDEX webhook_deliveries_unqueued ON webhook_deliveries (created_at, id) WHERE status = 'pending' AND NOT queued;

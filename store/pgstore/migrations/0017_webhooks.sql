-- Webhooks. webhook_routes says which endpoint (as the operator's
-- configuration names it) receives which event type; the service
-- replaces it at start. webhook_deliveries are the events to send: a
-- row per event and endpoint, written in the transaction that stores the
-- event, so an event stored is never an event forgotten, whatever
-- happens to the process after the commit. queued records that a job
-- delivers it; a delivery goes with its event.

CREATE TABLE webhook_routes (
    endpoint   text COLLATE "C" NOT NULL,
    event_type text COLLATE "C" NOT NULL,
    PRIMARY KEY (event_type, endpoint)
);

CREATE TABLE webhook_deliveries (
    id           text        COLLATE "C" PRIMARY KEY,
    endpoint     text        COLLATE "C" NOT NULL,
    run_id       text        COLLATE "C" NOT NULL,
    seq          bigint      NOT NULL,
    event_type   text        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    queued       boolean     NOT NULL DEFAULT false,
    attempts     integer     NOT NULL DEFAULT 0,
    last_status  integer     NOT NULL DEFAULT 0,
    last_error   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    delivered_at timestamptz,
    UNIQUE (run_id, seq, endpoint),
    FOREIGN KEY (run_id, seq) REFERENCES events (run_id, seq) ON DELETE CASCADE
);

CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (created_at, id);
CREATE INDEX webhook_deliveries_unqueued ON webhook_deliveries (created_at, id) WHERE status = 'pending' AND NOT queued;

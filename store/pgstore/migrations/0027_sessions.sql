-- Sessions of people signed in on the web page through the OpenID
-- Connect provider. Only the SHA-256 hash of a session's secret (its
-- cookie) is kept. Erasing a user deletes their sessions.
CREATE TABLE sessions (
    hash         bytea       PRIMARY KEY,
    user_id      text        NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);

CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- Sessions of people signed in on the web page through the OpenID
-- Connect provider. Only the SHA-256 hash of a session's secret (its
-- cookie) is kept. Erasing a user deletes their sessions.
CREATE TABLE sessions (
    hash         BLOB NOT NULL PRIMARY KEY,
    user_id      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
) STRICT;

CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- API keys issued in the service (trellis keys, /api/v1/admin/keys),
-- beside those of TRELLIS_API_KEYS. Only a key's SHA-256 hash is kept,
-- with the first characters of the key to tell keys apart in a list. A
-- revoked key stays listed, with when it was revoked, and names no user.
CREATE TABLE api_keys (
    id         text        PRIMARY KEY,
    user_id    text        NOT NULL,
    name       text        NOT NULL,
    prefix     text        NOT NULL,
    hash       bytea       NOT NULL UNIQUE,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);

CREATE INDEX api_keys_created ON api_keys (created_at, id);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at, id);

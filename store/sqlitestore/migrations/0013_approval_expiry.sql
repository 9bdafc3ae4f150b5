-- An approval may have a deadline (expires_at) and what happens then
-- (on_expiry: reject, approve or cancel). timed_out records that the
-- deadline, not a person, decided it.
ALTER TABLE approvals ADD COLUMN expires_at TEXT;
ALTER TABLE approvals ADD COLUMN on_expiry TEXT NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'reject', 'approve', 'cancel'));
ALTER TABLE approvals ADD COLUMN timed_out INTEGER NOT NULL DEFAULT 0;

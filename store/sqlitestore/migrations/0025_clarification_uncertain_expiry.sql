-- A clarifying question and an uncertain call may have a deadline
-- (expires_at) and what happens then (on_expiry), as an approval and an
-- elicitation may: a question continue or cancel, an uncertain call skip
-- or fail (never retry: running a call that may have run again needs a
-- person). timed_out records that the deadline, not a person, decided it.
ALTER TABLE clarifications ADD COLUMN expires_at TEXT;
ALTER TABLE clarifications ADD COLUMN on_expiry TEXT NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'continue', 'cancel'));
ALTER TABLE clarifications ADD COLUMN timed_out INTEGER NOT NULL DEFAULT 0;
ALTER TABLE uncertain_calls ADD COLUMN expires_at TEXT;
ALTER TABLE uncertain_calls ADD COLUMN on_expiry TEXT NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'skip', 'fail'));
ALTER TABLE uncertain_calls ADD COLUMN timed_out INTEGER NOT NULL DEFAULT 0;

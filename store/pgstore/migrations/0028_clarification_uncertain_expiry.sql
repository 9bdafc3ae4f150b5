-- A clarifying question and an uncertain call may have a deadline
-- (expires_at) and what happens then (on_expiry), as an approval and an
-- elicitation may: a question continue or cancel, an uncertain call skip
-- or fail (never retry: running a call that may have run again needs a
-- person). timed_out records that the deadline, not a person, decided it.
ALTER TABLE clarifications ADD COLUMN expires_at timestamptz;
ALTER TABLE clarifications ADD COLUMN on_expiry text NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'continue', 'cancel'));
ALTER TABLE clarifications ADD COLUMN timed_out boolean NOT NULL DEFAULT false;
ALTER TABLE uncertain_calls ADD COLUMN expires_at timestamptz;
ALTER TABLE uncertain_calls ADD COLUMN on_expiry text NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'skip', 'fail'));
ALTER TABLE uncertain_calls ADD COLUMN timed_out boolean NOT NULL DEFAULT false;

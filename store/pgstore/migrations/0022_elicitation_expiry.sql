-- An elicitation may have a deadline (expires_at) and what happens then
-- (on_expiry: decline or cancel), as an approval may. timed_out records
-- that the deadline, not a person, decided it.
ALTER TABLE elicitations ADD COLUMN expires_at timestamptz;
ALTER TABLE elicitations ADD COLUMN on_expiry text NOT NULL DEFAULT '' CHECK (on_expiry IN ('', 'decline', 'cancel'));
ALTER TABLE elicitations ADD COLUMN timed_out boolean NOT NULL DEFAULT false;

-- What a run needs to start again when its process dies between storing
-- the run and the agent's first checkpoint of it: the runs service's
-- encoding of the run's input. '' once the run's stream has ended, and
-- for runs stored before this column.

ALTER TABLE runs ADD COLUMN input TEXT NOT NULL DEFAULT '';

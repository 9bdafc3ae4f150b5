-- Which run each run follows (store.Run.ParentID): a conversation's runs
-- form a tree, whose forks are edited (or retried) turns, and the runs
-- not superseded are one path of it, the active branch. '' for a first
-- turn.
ALTER TABLE runs ADD COLUMN parent_id text COLLATE "C" NOT NULL DEFAULT '';

-- Runs stored before this migration: the active branch is exact, each
-- run following the run not superseded before it; a superseded run
-- follows the run started just before it, since the record did not keep
-- which turn an edit replaced, so each stretch of superseded runs reads
-- as one earlier branch, in the order its turns were taken.
UPDATE runs SET parent_id = coalesce((SELECT p.id FROM runs p
    WHERE p.conversation_id = runs.conversation_id AND p.num < runs.num AND (runs.superseded OR NOT p.superseded)
    ORDER BY p.num DESC LIMIT 1), '');

-- A turn's versions (store.Runs.Branches), and the walks of the tree.
CREATE INDEX runs_by_parent ON runs (conversation_id, parent_id, num);

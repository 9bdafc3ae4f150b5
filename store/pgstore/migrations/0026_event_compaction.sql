-- A retention policy compacts the events of runs that ended long ago to
-- what their conversation needs to read (store.Events.CompactEvents);
-- compacted marks a run done with, and the index finds the runs still to
-- do, oldest end first, without reading those done.
ALTER TABLE runs ADD COLUMN compacted BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX runs_compactable ON runs (completed_at)
    WHERE NOT compacted AND status IN ('completed', 'failed', 'cancelled');

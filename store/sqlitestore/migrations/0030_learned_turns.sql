-- How far memory has learned from a conversation: the runs numbered up to
-- learned_num (runs.num) are learned. A learning job learns the turns
-- after it, then moves it on (store.Memories.MarkLearned). Conversations
-- from before learned each turn by a job of its own, enqueued with the
-- answer, so they start learned to their last run.
ALTER TABLE conversations ADD COLUMN learned_num INTEGER NOT NULL DEFAULT 0;
UPDATE conversations SET learned_num = run_count;

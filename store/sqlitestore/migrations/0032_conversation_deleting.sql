-- deleting marks a conversation whose delete has begun: from then on no
-- run starts on it, no message queues on it and no document joins it,
-- so that nothing is written for it after its checkpoints and files
-- are gone (store.Conversations.BeginDelete).
ALTER TABLE conversations ADD COLUMN deleting INTEGER NOT NULL DEFAULT 0;

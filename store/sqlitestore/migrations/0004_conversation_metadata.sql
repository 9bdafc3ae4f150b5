-- A JSON object a client keeps with each conversation: the LangGraph
-- adapter's thread metadata (graph_id, assistant_id, the app's own keys),
-- which threads/search filters by.

ALTER TABLE conversations ADD COLUMN metadata text NOT NULL DEFAULT '{}';

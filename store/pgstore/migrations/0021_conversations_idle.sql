-- A retention policy finds the conversations idle longer than it keeps
-- them (store.Conversations.IdleConversations) by when they were last
-- updated, across users.
CREATE INDEX conversations_updated ON conversations (updated_at);

package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// insertMessage adds a message to its run's conversation; no row comes
// back when the run is unknown.
const insertMessage = `
INSERT INTO messages (id, conversation_id, run_id, role, content, citations, meta, created_at)
SELECT ?, conversation_id, id, ?, ?, ?, ?, ? FROM runs WHERE id = ?
RETURNING conversation_id, (SELECT superseded FROM runs WHERE id = run_id)`

// AddMessage implements store.Conversations.
func (s *Store) AddMessage(ctx context.Context, nm store.NewMessage) (store.Message, error) {
	if err := cmp.Or(nm.Validate(), storeutil.CheckIDs(nm.RunID)); err != nil {
		return store.Message{}, fmt.Errorf("sqlitestore: add message: %w", err)
	}
	m := store.Message{ID: ids.New(), RunID: nm.RunID, Role: nm.Role, Content: nm.Content,
		Citations: nm.Citations, Meta: nm.Meta, CreatedAt: storeutil.Now()}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		return addMessage(ctx, tx, &m)
	})
	if err != nil {
		return store.Message{}, fmt.Errorf("sqlitestore: add message to run %s: %w", nm.RunID, err)
	}
	return m, nil
}

// addMessage stores m and fills in its conversation.
func addMessage(ctx context.Context, tx *txn, m *store.Message) error {
	err := tx.QueryRowContext(ctx, insertMessage, m.ID, m.Role, m.Content, nullJSON(m.Citations), nullJSON(m.Meta),
		formatTime(m.CreatedAt), m.RunID).Scan(&m.ConversationID, &m.Superseded)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// ListMessages implements store.Conversations.
func (s *Store) ListMessages(ctx context.Context, userID, conversationID string) ([]store.Message, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return nil, fmt.Errorf("sqlitestore: list messages: %w", err)
	}
	var out []store.Message
	err := s.read(ctx, func(tx *txn) error {
		if err := ownsConversation(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE m.conversation_id = ? ORDER BY r.num, m.created_at, m.id`, conversationID)
		if err != nil {
			return err
		}
		out, err = collect(rows, scanMessage)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list messages of conversation %s: %w", conversationID, err)
	}
	if out == nil {
		out = []store.Message{}
	}
	return out, nil
}

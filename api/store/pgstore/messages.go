package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// insertMessage adds a message to its run's conversation; no row comes
// back when the run is unknown.
const insertMessage = `
INSERT INTO messages (id, conversation_id, run_id, role, content, citations, meta, created_at)
SELECT $1, conversation_id, id, $2, $3, $4, $5, $6 FROM runs WHERE id = $7
RETURNING conversation_id, (SELECT superseded FROM runs WHERE id = $7)`

// AddMessage implements store.Conversations.
func (s *Store) AddMessage(ctx context.Context, nm store.NewMessage) (store.Message, error) {
	if err := cmp.Or(nm.Validate(), storeutil.CheckIDs(nm.RunID)); err != nil {
		return store.Message{}, fmt.Errorf("pgstore: add message: %w", err)
	}
	m := store.Message{ID: ids.New(), RunID: nm.RunID, Role: nm.Role, Content: nm.Content,
		Citations: nm.Citations, Meta: nm.Meta, CreatedAt: storeutil.Now()}
	if err := addMessage(ctx, s.pool, &m); err != nil {
		return store.Message{}, fmt.Errorf("pgstore: add message to run %s: %w", nm.RunID, err)
	}
	return m, nil
}

// addMessage stores m and fills in its conversation.
func addMessage(ctx context.Context, q querier, m *store.Message) error {
	err := q.QueryRow(ctx, insertMessage, m.ID, m.Role, m.Content, nullJSON(m.Citations), nullJSON(m.Meta),
		m.CreatedAt, m.RunID).Scan(&m.ConversationID, &m.Superseded)
	// A foreign key fails when the conversation is deleted meanwhile.
	if errors.Is(err, pgx.ErrNoRows) || violates(err, "messages_run_id_fkey") || violates(err, "messages_conversation_id_fkey") {
		return store.ErrNotFound
	}
	return err
}

// ListMessages implements store.Conversations.
func (s *Store) ListMessages(ctx context.Context, userID, conversationID string) ([]store.Message, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return nil, fmt.Errorf("pgstore: list messages: %w", err)
	}
	var out []store.Message
	err := s.read(ctx, func(tx pgx.Tx) error {
		if err := ownsConversation(ctx, tx, userID, conversationID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+messageCols+` FROM messages m JOIN runs r ON r.id = m.run_id
WHERE m.conversation_id = $1 ORDER BY r.num, m.created_at, m.id`, conversationID)
		if err != nil {
			return err
		}
		out, err = collect(rows, scanMessage)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list messages of conversation %s: %w", conversationID, err)
	}
	return out, nil
}

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// CreateConversation implements store.Conversations.
func (s *Store) CreateConversation(ctx context.Context, nc store.NewConversation) (store.Conversation, error) {
	if err := nc.Validate(); err != nil {
		return store.Conversation{}, fmt.Errorf("sqlitestore: create conversation: %w", err)
	}
	now := storeutil.Now()
	c := store.Conversation{ID: ids.New(), UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now, Status: store.StatusIdle}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		return insertConversation(ctx, tx, c)
	})
	if err != nil {
		return store.Conversation{}, fmt.Errorf("sqlitestore: create conversation: %w", err)
	}
	return c, nil
}

// insertConversation stores a conversation without runs.
func insertConversation(ctx context.Context, tx *txn, c store.Conversation) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		c.ID, c.UserID, c.Title, formatTime(c.CreatedAt), formatTime(c.UpdatedAt))
	return err
}

// GetConversation implements store.Conversations.
func (s *Store) GetConversation(ctx context.Context, userID, id string) (store.Conversation, error) {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return store.Conversation{}, fmt.Errorf("sqlitestore: get conversation: %w", err)
	}
	c, err := scanConversation(s.db.QueryRowContext(ctx,
		`SELECT `+conversationCols+` FROM conversations c WHERE c.id = ? AND c.user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Conversation{}, fmt.Errorf("sqlitestore: get conversation %s: %w", id, err)
	}
	return c, nil
}

// ListConversations implements store.Conversations.
func (s *Store) ListConversations(ctx context.Context, userID string, page store.Page) (store.ConversationPage, error) {
	out, err := s.listConversations(ctx, userID, page)
	if err != nil {
		return store.ConversationPage{}, fmt.Errorf("sqlitestore: list conversations: %w", err)
	}
	return out, nil
}

func (s *Store) listConversations(ctx context.Context, userID string, page store.Page) (store.ConversationPage, error) {
	size, err := page.Size()
	if err != nil {
		return store.ConversationPage{}, err
	}
	cur, after, err := storeutil.DecodeCursor(page.Cursor)
	if err != nil {
		return store.ConversationPage{}, err
	}
	if storeutil.CheckIDs(userID) != nil {
		return storeutil.ConversationPage(nil, size), nil // no such user
	}
	query := `SELECT ` + conversationCols + ` FROM conversations c WHERE c.user_id = ?`
	args := []any{userID}
	if after {
		query += ` AND (c.created_at, c.id) < (?, ?)`
		args = append(args, formatTime(cur.CreatedAt), cur.ID)
	}
	// One more than the page holds tells whether another page follows.
	query += ` ORDER BY c.created_at DESC, c.id DESC LIMIT ?`
	args = append(args, size+1)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return store.ConversationPage{}, err
	}
	cs, err := collect(rows, scanConversation)
	if err != nil {
		return store.ConversationPage{}, err
	}
	return storeutil.ConversationPage(cs, size), nil
}

// DeleteConversation implements store.Conversations. The schema's foreign
// keys cascade to everything below the conversation.
func (s *Store) DeleteConversation(ctx context.Context, userID, id string) error {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return fmt.Errorf("sqlitestore: delete conversation: %w", err)
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ? AND user_id = ?`, id, userID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitestore: delete conversation %s: %w", id, err)
	}
	return nil
}

// ownsConversation returns ErrNotFound unless the user has the
// conversation.
func ownsConversation(ctx context.Context, tx *txn, userID, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ? AND user_id = ?`, id, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

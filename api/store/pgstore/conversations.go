package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// CreateConversation implements store.Conversations.
func (s *Store) CreateConversation(ctx context.Context, nc store.NewConversation) (store.Conversation, error) {
	if err := nc.Validate(); err != nil {
		return store.Conversation{}, fmt.Errorf("pgstore: create conversation: %w", err)
	}
	now := storeutil.Now()
	c := store.Conversation{ID: ids.New(), UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now, Status: store.StatusIdle}
	if err := insertConversation(ctx, s.pool, c); err != nil {
		return store.Conversation{}, fmt.Errorf("pgstore: create conversation: %w", err)
	}
	return c, nil
}

// insertConversation stores a conversation without runs.
func insertConversation(ctx context.Context, q querier, c store.Conversation) error {
	_, err := q.Exec(ctx, `INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)`,
		c.ID, c.UserID, c.Title, c.CreatedAt, c.UpdatedAt)
	return err
}

// GetConversation implements store.Conversations.
func (s *Store) GetConversation(ctx context.Context, userID, id string) (store.Conversation, error) {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return store.Conversation{}, fmt.Errorf("pgstore: get conversation: %w", err)
	}
	c, err := scanConversation(s.pool.QueryRow(ctx,
		`SELECT `+conversationCols+` FROM conversations c WHERE c.id = $1 AND c.user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Conversation{}, fmt.Errorf("pgstore: get conversation %s: %w", id, err)
	}
	return c, nil
}

// ListConversations implements store.Conversations.
func (s *Store) ListConversations(ctx context.Context, userID string, page store.Page) (store.ConversationPage, error) {
	out, err := s.listConversations(ctx, userID, page)
	if err != nil {
		return store.ConversationPage{}, fmt.Errorf("pgstore: list conversations: %w", err)
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
	query := `SELECT ` + conversationCols + ` FROM conversations c WHERE c.user_id = $1`
	args := []any{userID}
	if after {
		query += ` AND (c.created_at, c.id) < ($2, $3)`
		args = append(args, cur.CreatedAt, cur.ID)
	}
	// One more than the page holds tells whether another page follows.
	query += fmt.Sprintf(` ORDER BY c.created_at DESC, c.id DESC LIMIT $%d`, len(args)+1)
	args = append(args, size+1)
	rows, err := s.pool.Query(ctx, query, args...)
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
// keys cascade to everything below the conversation, in this statement.
func (s *Store) DeleteConversation(ctx context.Context, userID, id string) error {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return fmt.Errorf("pgstore: delete conversation: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM conversations WHERE id = $1 AND user_id = $2`, id, userID)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("pgstore: delete conversation %s: %w", id, err)
	}
	return nil
}

// ownsConversation returns ErrNotFound unless the user has the
// conversation.
func ownsConversation(ctx context.Context, q querier, userID, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2`, id, userID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

package sqlstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/trellis-ai/trellis/internal/ids"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// CreateConversation implements store.Conversations.
func (s *Store) CreateConversation(ctx context.Context, nc store.NewConversation) (store.Conversation, error) {
	if err := nc.Validate(); err != nil {
		return store.Conversation{}, s.errorf("create conversation: %w", err)
	}
	now := storeutil.Now()
	c := store.Conversation{ID: cmp.Or(nc.ID, ids.New()), UserID: nc.UserID, Title: nc.Title, CreatedAt: now, UpdatedAt: now,
		Status: store.StatusIdle, Metadata: metadataOf(nc.Metadata)}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		if nc.ID == "" {
			return insertConversation(ctx, q, c, s.db.Time(now))
		}
		// A caller's id may be anyone's: taken is a conflict, not a
		// failure of the database.
		at := s.db.Time(now)
		n, err := q.Exec(ctx, insertConversationSQL+` ON CONFLICT (id) DO NOTHING`, c.ID, c.UserID, c.Title, at, at, string(c.Metadata), 0)
		if err == nil && n == 0 {
			err = fmt.Errorf("conversation id %q is taken: %w", nc.ID, store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Conversation{}, s.errorf("create conversation: %w", s.refused(err))
	}
	return c, nil
}

const insertConversationSQL = `INSERT INTO conversations (id, user_id, title, created_at, updated_at, metadata, run_count)
VALUES (?, ?, ?, ?, ?, ?, ?)`

// insertConversation stores a conversation without runs, created and
// updated at (DB.Time).
func insertConversation(ctx context.Context, q Querier, c store.Conversation, at any) error {
	return insertConversationRuns(ctx, q, c, at, 0)
}

// insertConversationRuns is insertConversation with runs run numbers
// taken already (runs.num): StartRun stores a new conversation with its
// first run counted, sparing the statement that would count it.
func insertConversationRuns(ctx context.Context, q Querier, c store.Conversation, at any, runs int64) error {
	_, err := q.Exec(ctx, insertConversationSQL,
		c.ID, c.UserID, c.Title, at, at, string(metadataOf(c.Metadata)), runs)
	return err
}

// metadataOf is metadata as stored: {} for none, else compacted.
func metadataOf(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	if json.Compact(&b, m) != nil {
		return m
	}
	return b.Bytes()
}

// SetConversationMetadata implements store.Conversations.
func (s *Store) SetConversationMetadata(ctx context.Context, userID, id string, metadata json.RawMessage) (store.Conversation, error) {
	if err := cmp.Or(storeutil.CheckIDs(userID, id), store.CheckMetadata(metadata)); err != nil {
		return store.Conversation{}, s.errorf("set conversation metadata: %w", err)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `UPDATE conversations SET metadata = ? WHERE id = ? AND user_id = ?`,
			string(metadataOf(metadata)), id, userID)
	})
	if err != nil {
		return store.Conversation{}, s.errorf("set conversation metadata %s: %w", id, err)
	}
	return s.GetConversation(ctx, userID, id)
}

// RenameConversation implements store.Conversations.
func (s *Store) RenameConversation(ctx context.Context, userID, id, title string) (store.Conversation, error) {
	if err := cmp.Or(storeutil.CheckIDs(userID, id), store.CheckTitle(title)); err != nil {
		return store.Conversation{}, s.errorf("rename conversation: %w", err)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `UPDATE conversations SET title = ?, title_by_user = TRUE WHERE id = ? AND user_id = ?`, title, id, userID)
	})
	if err != nil {
		return store.Conversation{}, s.errorf("rename conversation %s: %w", id, s.refused(err))
	}
	return s.GetConversation(ctx, userID, id)
}

// SetGeneratedTitle implements store.Conversations.
func (s *Store) SetGeneratedTitle(ctx context.Context, userID, id, title string) (bool, error) {
	if err := cmp.Or(storeutil.CheckIDs(userID, id), store.CheckTitle(title)); err != nil {
		return false, s.errorf("set generated title: %w", err)
	}
	var set bool
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		n, err := q.Exec(ctx, `UPDATE conversations SET title = ? WHERE id = ? AND user_id = ? AND NOT title_by_user`, title, id, userID)
		if err != nil || n > 0 {
			set = n > 0
			return err
		}
		// Renamed by the user, or gone.
		return owned(ctx, q, "conversations", userID, id)
	})
	if err != nil {
		return false, s.errorf("set generated title of %s: %w", id, s.refused(err))
	}
	return set, nil
}

// GetConversation implements store.Conversations.
func (s *Store) GetConversation(ctx context.Context, userID, id string) (store.Conversation, error) {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return store.Conversation{}, s.errorf("get conversation: %w", err)
	}
	c, err := scanConversation(s.db.QueryRow(ctx,
		`SELECT `+conversationCols+` FROM conversations c WHERE c.id = ? AND c.user_id = ?`, id, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Conversation{}, s.errorf("get conversation %s: %w", id, err)
	}
	return c, nil
}

// ListConversations implements store.Conversations.
func (s *Store) ListConversations(ctx context.Context, userID string, page store.Page) (store.ConversationPage, error) {
	items, next, err := newestFirst(ctx, s, `SELECT `+conversationCols+` FROM conversations c`, "c", userID, page, scanConversation,
		func(c store.Conversation) storeutil.Cursor { return storeutil.Cursor{CreatedAt: c.CreatedAt, ID: c.ID} },
		func(c store.Conversation) int { return len(c.Title) + len(c.Metadata) })
	if err != nil {
		return store.ConversationPage{}, s.errorf("list conversations: %w", err)
	}
	return store.ConversationPage{Conversations: items, NextCursor: next}, nil
}

// IdleConversations implements store.Conversations.
func (s *Store) IdleConversations(ctx context.Context, before time.Time, page store.Page) (store.ConversationPage, error) {
	items, next, err := readPage(ctx, s, s.db, keyed{sel: `SELECT ` + conversationCols + ` FROM conversations c`, alias: "c",
		where: `c.updated_at < ?`, args: []any{s.db.Time(before)}, oldest: true}, page, scanConversation,
		func(c store.Conversation) storeutil.Cursor { return storeutil.Cursor{CreatedAt: c.CreatedAt, ID: c.ID} },
		func(c store.Conversation) int { return len(c.Title) + len(c.Metadata) })
	if err != nil {
		return store.ConversationPage{}, s.errorf("idle conversations: %w", err)
	}
	return store.ConversationPage{Conversations: items, NextCursor: next}, nil
}

// BeginDelete implements store.Conversations.
func (s *Store) BeginDelete(ctx context.Context, userID, id string) error {
	if storeutil.CheckIDs(userID, id) != nil {
		return s.errorf("begin deleting conversation %s: %w", id, store.ErrNotFound)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `UPDATE conversations SET deleting = TRUE WHERE id = ? AND user_id = ?`, id, userID)
	})
	if err != nil {
		return s.errorf("begin deleting conversation %s: %w", id, err)
	}
	return nil
}

// DeleteConversation implements store.Conversations. The schema's foreign
// keys cascade to everything below the conversation, in this statement.
func (s *Store) DeleteConversation(ctx context.Context, userID, id string) error {
	return s.deleteOwned(ctx, "conversations", "conversation", userID, id)
}

// deleteOwned deletes row id of table if userID owns it, in its own
// statement; ErrNotFound if there is no such row. what names the row in
// errors.
func (s *Store) deleteOwned(ctx context.Context, table, what, userID, id string) error {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return s.errorf("delete %s: %w", what, err)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return changesOne(ctx, q, `DELETE FROM `+table+` WHERE id = ? AND user_id = ?`, id, userID)
	})
	if err != nil {
		return s.errorf("delete %s %s: %w", what, id, err)
	}
	return nil
}

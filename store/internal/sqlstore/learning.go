package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// UnlearnedTurns implements store.Memories: one read, along the
// conversation's runs by number (their unique index) after its
// learned_num, each with its answer by the messages' index on run.
func (s *Store) UnlearnedTurns(ctx context.Context, userID, conversationID string, limit int) ([]store.UnlearnedTurn, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return nil, s.errorf("unlearned turns: %w", err)
	}
	if limit <= 0 || limit > store.MaxLimit {
		limit = store.MaxLimit
	}
	var out []store.UnlearnedTurn
	err := s.db.Read(ctx, func(q Querier) error {
		var one int
		err := q.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = ? AND user_id = ?`, conversationID, userID).Scan(&one)
		if noRows(err) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		out, err = queryAll(ctx, q, scanUnlearned, `SELECT r.num, r.status, r.superseded, r.request_id, r.user_message,
    m.id IS NOT NULL, coalesce(m.content, ''), m.meta
FROM conversations c JOIN runs r ON r.conversation_id = c.id AND r.num > c.learned_num
LEFT JOIN messages m ON m.id = (SELECT a.id FROM messages a WHERE a.run_id = r.id AND a.role = 'assistant'
    ORDER BY a.created_at DESC, a.id DESC LIMIT 1)
WHERE c.id = ? ORDER BY r.num LIMIT ?`, conversationID, limit)
		return err
	})
	if err != nil {
		return nil, s.errorf("unlearned turns of conversation %s: %w", conversationID, err)
	}
	return out, nil
}

func scanUnlearned(row Row) (store.UnlearnedTurn, error) {
	var (
		t    store.UnlearnedTurn
		meta []byte
	)
	if err := row.Scan(&t.Num, &t.Status, &t.Superseded, &t.RequestID, &t.Query, &t.Answered, &t.Answer, &meta); err != nil {
		return t, err
	}
	if meta != nil {
		t.Meta = json.RawMessage(meta)
	}
	return t, nil
}

// MarkLearned implements store.Memories.
func (s *Store) MarkLearned(ctx context.Context, userID, conversationID string, num int64) error {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		return s.errorf("mark learned: %w", err)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var one int
		err := q.QueryRow(ctx, `UPDATE conversations SET learned_num = CASE WHEN learned_num < ? THEN ? ELSE learned_num END
WHERE id = ? AND user_id = ? RETURNING 1`, num, num, conversationID, userID).Scan(&one)
		if noRows(err) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return s.errorf("mark conversation %s learned to %d: %w", conversationID, num, err)
	}
	return nil
}

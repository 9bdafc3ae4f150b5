package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
		return markLearned(ctx, q, userID, conversationID, num)
	})
	if err != nil {
		return s.errorf("mark conversation %s learned to %d: %w", conversationID, num, err)
	}
	return nil
}

// markLearned is MarkLearned's statement, in the caller's transaction.
func markLearned(ctx context.Context, q Querier, userID, conversationID string, num int64) error {
	var one int
	err := q.QueryRow(ctx, `UPDATE conversations SET learned_num = CASE WHEN learned_num < ? THEN ? ELSE learned_num END
WHERE id = ? AND user_id = ? RETURNING 1`, num, num, conversationID, userID).Scan(&one)
	if noRows(err) {
		return store.ErrNotFound
	}
	return err
}

// Learn implements store.Memories: the statements of the methods the
// lesson stands for, in one transaction, and the full-text upkeep once
// for all the memories it writes.
func (s *Store) Learn(ctx context.Context, l store.Lesson) error {
	adds, updates, err := checkLesson(l)
	if err != nil {
		return s.errorf("learn: %w", err)
	}
	err = s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		if l.Profile != nil {
			if _, err := s.updateProfile(ctx, q, l.UserID, l.Profile); err != nil {
				return err
			}
		}
		for _, id := range l.Deletes {
			if storeutil.CheckIDs(id) != nil {
				continue
			}
			if _, err := q.Exec(ctx, `DELETE FROM memories WHERE id = ? AND user_id = ?`, id, l.UserID); err != nil {
				return err
			}
		}
		for _, u := range updates {
			if _, err := rewriteMemory(ctx, q, l.UserID, u.ID, u.Memory); err != nil {
				return err
			}
		}
		for _, nm := range adds {
			if _, err := s.addMemory(ctx, q, nm); err != nil {
				return err
			}
		}
		if len(updates)+len(adds) > 0 {
			if err := s.db.MemorySearch().Upkeep.run(ctx, q); err != nil {
				return err
			}
		}
		if err := addToolStats(ctx, q, l.UserID, l.Stats); err != nil {
			return err
		}
		if l.ConversationID == "" {
			return nil
		}
		return markLearned(ctx, q, l.UserID, l.ConversationID, l.Learned)
	})
	if err != nil {
		return s.errorf("learn: %w", s.refused(err))
	}
	return nil
}

// checkLesson refuses what the methods l stands for refuse, and returns
// its memories as they are written: the user's, an update's
// conversation left alone.
func checkLesson(l store.Lesson) ([]store.NewMemory, []store.MemoryUpdate, error) {
	if l.UserID == "" || !store.ValidText(l.UserID) {
		return nil, nil, fmt.Errorf("%w: a user id is required", store.ErrInvalid)
	}
	if l.ConversationID != "" {
		if err := storeutil.CheckIDs(l.ConversationID); err != nil {
			return nil, nil, err
		}
	}
	adds := slices.Clone(l.Adds)
	for i := range adds {
		adds[i].UserID = l.UserID
		if err := adds[i].Validate(); err != nil {
			return nil, nil, err
		}
	}
	updates := slices.Clone(l.Updates)
	for i := range updates {
		updates[i].Memory.UserID, updates[i].Memory.ConversationID = l.UserID, ""
		if err := updates[i].Memory.Validate(); err != nil {
			return nil, nil, err
		}
	}
	return adds, updates, checkStats(l.UserID, l.Stats)
}

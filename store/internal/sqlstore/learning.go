package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
		err := owned(ctx, q, "conversations", userID, conversationID)
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
// for all the memories it writes. It takes its rows' locks in one order,
// the order TouchMemories and DeleteMemories take theirs in (on
// PostgreSQL; SQLite has one writer): the memories it deletes or
// rewrites by id, then the profile, the tools' stats by tool, and the
// conversation, so that two of these transactions never wait on each
// other in a circle.
func (s *Store) Learn(ctx context.Context, l store.Lesson) error {
	adds, changes, stats, err := checkLesson(l)
	if err != nil {
		return s.errorf("learn: %w", err)
	}
	err = s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		for _, c := range changes {
			var err error
			if c.delete {
				_, err = q.Exec(ctx, `DELETE FROM memories WHERE id = ? AND user_id = ?`, c.id, l.UserID)
			} else {
				_, err = rewriteMemory(ctx, q, l.UserID, c.id, c.memory)
			}
			if err != nil {
				return err
			}
		}
		for _, nm := range adds {
			if _, err := s.addMemory(ctx, q, nm); err != nil {
				return err
			}
		}
		if len(adds) > 0 || slices.ContainsFunc(changes, func(c memoryChange) bool { return !c.delete }) {
			if err := s.db.MemorySearch().Upkeep.run(ctx, q); err != nil {
				return err
			}
		}
		if l.Profile != nil {
			if _, err := s.updateProfile(ctx, q, l.UserID, l.Profile); err != nil {
				return err
			}
		}
		if err := addToolStats(ctx, q, l.UserID, stats); err != nil {
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

// memoryChange is a deletion or a rewrite of a stored memory in a
// lesson.
type memoryChange struct {
	id     string
	delete bool
	memory store.NewMemory
}

// checkLesson refuses what the methods l stands for refuse, and returns
// what Learn writes: the additions (the user's), the deletions and
// rewrites (an update's conversation left alone) by id, leaving out ids
// no memory can have, and the stats by tool.
func checkLesson(l store.Lesson) ([]store.NewMemory, []memoryChange, []store.ToolStat, error) {
	if l.UserID == "" || !store.ValidText(l.UserID) {
		return nil, nil, nil, fmt.Errorf("%w: a user id is required", store.ErrInvalid)
	}
	if l.ConversationID != "" {
		if err := storeutil.CheckIDs(l.ConversationID); err != nil {
			return nil, nil, nil, err
		}
	}
	adds := slices.Clone(l.Adds)
	for i := range adds {
		adds[i].UserID = l.UserID
		if err := adds[i].Validate(); err != nil {
			return nil, nil, nil, err
		}
	}
	changes := make([]memoryChange, 0, len(l.Deletes)+len(l.Updates))
	for _, id := range l.Deletes {
		if storeutil.CheckIDs(id) == nil {
			changes = append(changes, memoryChange{id: id, delete: true})
		}
	}
	for _, u := range l.Updates {
		nm := u.Memory
		nm.UserID, nm.ConversationID = l.UserID, ""
		if err := nm.Validate(); err != nil {
			return nil, nil, nil, err
		}
		if storeutil.CheckIDs(u.ID) == nil {
			changes = append(changes, memoryChange{id: u.ID, memory: nm})
		}
	}
	slices.SortStableFunc(changes, func(a, b memoryChange) int { return strings.Compare(a.id, b.id) })
	if err := checkStats(l.UserID, l.Stats); err != nil {
		return nil, nil, nil, err
	}
	stats := slices.Clone(l.Stats)
	slices.SortStableFunc(stats, func(a, b store.ToolStat) int { return strings.Compare(a.Tool, b.Tool) })
	return adds, changes, stats, nil
}

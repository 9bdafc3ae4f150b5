package sqlstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/internal/storeutil"
)

// userTables hold rows of a user's own, beside conversations and the
// projects they own (whose foreign keys cascade to everything below
// them), and last the mark of the user's erasure.
var userTables = []string{"memories", "profiles", "tool_stats", "usage_days", "sessions", "workspace_files", "workspace_usage", "project_members", "erasures"}

// erasing is the constraint, as Violates names it, that the schema's
// triggers raise when a row of a user being erased is inserted into
// conversations, runs, documents, memories or profiles: each insert
// looks up the user in erasures, by its primary key, within its own
// statement.
const erasing = "erasure_in_progress"

// refused is err, or ErrErasing when err is the refusal of a write of
// a user being erased.
func (s *Store) refused(err error) error {
	if err != nil && s.db.Violates(err, erasing) {
		return store.ErrErasing
	}
	return err
}

// BeginErasure implements store.Users.
func (s *Store) BeginErasure(ctx context.Context, userID string) error {
	if userID == "" || !store.ValidText(userID) {
		return s.errorf("begin erasure: %w: a user id is required", store.ErrInvalid)
	}
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO erasures (user_id, requested_at) VALUES (?, ?) ON CONFLICT (user_id) DO NOTHING`,
			userID, s.db.Time(storeutil.Now()))
		return err
	})
	if err != nil {
		return s.errorf("begin erasure of %s: %w", userID, err)
	}
	return nil
}

// EraseUser implements store.Users.
func (s *Store) EraseUser(ctx context.Context, userID string) (int, error) {
	if userID == "" || !store.ValidText(userID) {
		return 0, s.errorf("erase user: %w: a user id is required", store.ErrInvalid)
	}
	var n int64
	err := s.db.Tx(ctx, func(ctx context.Context, q Querier) error {
		var err error
		if n, err = q.Exec(ctx, `DELETE FROM conversations WHERE user_id = ?`, userID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM projects WHERE owner_id = ?`, userID); err != nil {
			return err
		}
		for _, table := range userTables {
			if _, err := q.Exec(ctx, `DELETE FROM `+table+` WHERE user_id = ?`, userID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, s.errorf("erase user %s: %w", userID, err)
	}
	return int(n), nil
}

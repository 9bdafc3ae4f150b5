package sqlstore

import (
	"context"

	"github.com/trellis-ai/trellis/store"
)

// userTables hold rows of a user's own, beside conversations (whose
// foreign keys cascade to everything below them).
var userTables = []string{"memories", "profiles", "tool_stats"}

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

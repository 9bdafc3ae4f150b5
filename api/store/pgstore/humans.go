package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
)

// Approvals and elicitations are both records a run waits on, owned by a
// user and pending until answered; these read either table.

// getOwned reads one record of table by id, scoped to its user.
func getOwned[T any](ctx context.Context, s *Store, table, cols string, scan func(pgx.Row) (T, error), userID, id string) (T, error) {
	if err := storeutil.CheckIDs(userID, id); err != nil {
		var zero T
		return zero, fmt.Errorf("pgstore: get %s: %w", table, err)
	}
	v, err := scan(s.pool.QueryRow(ctx, `SELECT `+cols+` FROM `+table+` WHERE id = $1 AND user_id = $2`, id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("pgstore: get %s %s: %w", table, id, err)
	}
	return v, nil
}

// pending lists the user's pending records of table, oldest first, of one
// conversation when conversationID is set (ErrNotFound if it is not the
// user's).
func pending[T any](ctx context.Context, s *Store, table, cols string, scan func(pgx.Row) (T, error), userID, conversationID string) ([]T, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		if conversationID != "" {
			return nil, fmt.Errorf("pgstore: pending %s: %w", table, err)
		}
		return []T{}, nil // no such user, so nothing is pending
	}
	var out []T
	err := s.read(ctx, func(tx pgx.Tx) error {
		query, args := `SELECT `+cols+` FROM `+table+` WHERE user_id = $1 AND status = 'pending'`, []any{userID}
		if conversationID != "" {
			if err := ownsConversation(ctx, tx, userID, conversationID); err != nil {
				return err
			}
			query, args = query+` AND conversation_id = $2`, append(args, conversationID)
		}
		rows, err := tx.Query(ctx, query+` ORDER BY created_at, id`, args...)
		if err != nil {
			return err
		}
		out, err = collect(rows, scan)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: pending %s: %w", table, err)
	}
	return out, nil
}

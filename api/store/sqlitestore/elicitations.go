package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// CreateElicitation implements store.Elicitations. The conversation and
// user come from the run, in the statement that inserts.
func (s *Store) CreateElicitation(ctx context.Context, ne store.NewElicitation) (store.Elicitation, error) {
	if err := cmp.Or(ne.Validate(), storeutil.CheckIDs(ne.RunID)); err != nil {
		return store.Elicitation{}, fmt.Errorf("sqlitestore: create elicitation: %w", err)
	}
	e := store.Elicitation{ID: ne.ID, RunID: ne.RunID, Source: ne.Source, Message: ne.Message,
		Schema: []byte(objectOr(ne.Schema)), Status: store.ElicitationPending, CreatedAt: storeutil.Now()}
	if e.ID == "" {
		e.ID = ids.New()
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO elicitations (id, conversation_id, run_id, user_id, source, message, schema,
    status, created_at)
SELECT ?, conversation_id, id, user_id, ?, ?, ?, 'pending', ? FROM runs WHERE id = ?
RETURNING conversation_id, user_id`,
			e.ID, e.Source, e.Message, string(e.Schema), formatTime(e.CreatedAt), e.RunID).Scan(&e.ConversationID, &e.UserID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound
		case isUnique(err, "elicitations.id"):
			return fmt.Errorf("id is taken: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("sqlitestore: create elicitation %s for run %s: %w", e.ID, ne.RunID, err)
	}
	return e, nil
}

// GetElicitation implements store.Elicitations.
func (s *Store) GetElicitation(ctx context.Context, userID, id string) (store.Elicitation, error) {
	return getOwned(ctx, s, "elicitations", elicitationCols, scanElicitation, userID, id)
}

// PendingElicitations implements store.Elicitations.
func (s *Store) PendingElicitations(ctx context.Context, userID, conversationID string) ([]store.Elicitation, error) {
	return pending(ctx, s, "elicitations", elicitationCols, scanElicitation, userID, conversationID)
}

// ResolveElicitation implements store.Elicitations, as ResolveApproval
// does approvals.
func (s *Store) ResolveElicitation(ctx context.Context, userID, id string, ans store.ElicitationAnswer) (store.Elicitation, error) {
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.Elicitation{}, fmt.Errorf("sqlitestore: resolve elicitation %s: %w", id, err)
	}
	var content any
	if ans.Action == store.ActionAccept {
		content = nullJSON(ans.Content)
	}
	var e store.Elicitation
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		e, err = scanElicitation(tx.QueryRowContext(ctx, `UPDATE elicitations SET status = ?, content = ?, resolved_at = ?
WHERE id = ? AND user_id = ? AND status = 'pending' RETURNING `+elicitationCols,
			ans.Status(), content, formatTime(storeutil.Now()), id, userID))
		if errors.Is(err, sql.ErrNoRows) {
			return existsOr(ctx, tx, `SELECT 1 FROM elicitations WHERE id = ? AND user_id = ?`, id, userID)
		}
		return err
	})
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("sqlitestore: resolve elicitation %s: %w", id, err)
	}
	return e, nil
}

package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// CreateElicitation implements store.Elicitations. The conversation and
// user come from the run, in the statement that inserts.
func (s *Store) CreateElicitation(ctx context.Context, ne store.NewElicitation) (store.Elicitation, error) {
	if err := cmp.Or(ne.Validate(), storeutil.CheckIDs(ne.RunID)); err != nil {
		return store.Elicitation{}, fmt.Errorf("pgstore: create elicitation: %w", err)
	}
	e := store.Elicitation{ID: ne.ID, RunID: ne.RunID, Source: ne.Source, Message: ne.Message,
		Schema: []byte(objectOr(ne.Schema)), Status: store.ElicitationPending, CreatedAt: storeutil.Now()}
	if e.ID == "" {
		e.ID = ids.New()
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO elicitations (id, conversation_id, run_id, user_id, source, message, schema,
    status, created_at)
SELECT $1, conversation_id, id, user_id, $2, $3, $4, 'pending', $5 FROM runs WHERE id = $6
RETURNING conversation_id, user_id`,
		e.ID, e.Source, e.Message, string(e.Schema), e.CreatedAt, e.RunID).Scan(&e.ConversationID, &e.UserID)
	switch {
	case errors.Is(err, pgx.ErrNoRows), violates(err, "elicitations_run_id_fkey"):
		err = store.ErrNotFound
	case violates(err, "elicitations_pkey"):
		err = fmt.Errorf("id is taken: %w", store.ErrConflict)
	}
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("pgstore: create elicitation %s for run %s: %w", e.ID, ne.RunID, err)
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
		return store.Elicitation{}, fmt.Errorf("pgstore: resolve elicitation %s: %w", id, err)
	}
	var content any
	if ans.Action == store.ActionAccept {
		content = nullJSON(ans.Content)
	}
	e, err := scanElicitation(s.pool.QueryRow(ctx, `UPDATE elicitations SET status = $1, content = $2, resolved_at = $3
WHERE id = $4 AND user_id = $5 AND status = 'pending' RETURNING `+elicitationCols,
		ans.Status(), content, storeutil.Now(), id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = existsOr(ctx, s.pool, `SELECT 1 FROM elicitations WHERE id = $1 AND user_id = $2`, id, userID)
	}
	if err != nil {
		return store.Elicitation{}, fmt.Errorf("pgstore: resolve elicitation %s: %w", id, err)
	}
	return e, nil
}

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

// CreateApproval implements store.Approvals. The conversation and user
// come from the run, in the statement that inserts.
func (s *Store) CreateApproval(ctx context.Context, na store.NewApproval) (store.Approval, error) {
	if err := cmp.Or(na.Validate(), storeutil.CheckIDs(na.RunID)); err != nil {
		return store.Approval{}, fmt.Errorf("pgstore: create approval: %w", err)
	}
	a := store.Approval{ID: na.ID, RunID: na.RunID, ToolCallID: na.ToolCallID, Tool: na.Tool,
		Args: []byte(objectOr(na.Args)), Revision: na.Revision, Status: store.ApprovalPending, CreatedAt: storeutil.Now()}
	if a.ID == "" {
		a.ID = ids.New()
	}
	err := s.pool.QueryRow(ctx, `INSERT INTO approvals (id, conversation_id, run_id, user_id, tool_call_id, tool, args,
    revision, status, created_at)
SELECT $1, conversation_id, id, user_id, $2, $3, $4, $5, 'pending', $6 FROM runs WHERE id = $7
RETURNING conversation_id, user_id`,
		a.ID, a.ToolCallID, a.Tool, string(a.Args), a.Revision, a.CreatedAt, a.RunID).Scan(&a.ConversationID, &a.UserID)
	switch {
	case errors.Is(err, pgx.ErrNoRows), violates(err, "approvals_run_id_fkey"):
		err = store.ErrNotFound
	case violates(err, "approvals_pkey"):
		err = fmt.Errorf("id is taken: %w", store.ErrConflict)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("pgstore: create approval %s for run %s: %w", a.ID, na.RunID, err)
	}
	return a, nil
}

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, userID, id string) (store.Approval, error) {
	return getOwned(ctx, s, "approvals", approvalCols, scanApproval, userID, id)
}

// PendingApprovals implements store.Approvals.
func (s *Store) PendingApprovals(ctx context.Context, userID, conversationID string) ([]store.Approval, error) {
	return pending(ctx, s, "approvals", approvalCols, scanApproval, userID, conversationID)
}

// ResolveApproval implements store.Approvals: one conditional update, so
// only an answer that finds the approval pending changes it. A concurrent
// answer waits for the row's lock and then finds it answered.
func (s *Store) ResolveApproval(ctx context.Context, userID, id string, ans store.ApprovalAnswer) (store.Approval, error) {
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.Approval{}, fmt.Errorf("pgstore: resolve approval %s: %w", id, err)
	}
	var edited any
	if ans.Decision == store.DecisionEdit {
		edited = string(ans.Args)
	}
	a, err := scanApproval(s.pool.QueryRow(ctx, `UPDATE approvals
SET status = $1, decision = $2, edited_args = $3, reason = $4, resolved_at = $5
WHERE id = $6 AND user_id = $7 AND status = 'pending' RETURNING `+approvalCols,
		ans.Status(), ans.Decision, edited, ans.Reason, storeutil.Now(), id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = existsOr(ctx, s.pool, `SELECT 1 FROM approvals WHERE id = $1 AND user_id = $2`, id, userID)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("pgstore: resolve approval %s: %w", id, err)
	}
	return a, nil
}

// existsOr tells why a conditional update of a pending record found
// nothing: ErrAlreadyResolved when query finds the record, else
// ErrNotFound.
func existsOr(ctx context.Context, q querier, query string, args ...any) error {
	var one int
	switch err := q.QueryRow(ctx, query, args...).Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	}
	return store.ErrAlreadyResolved
}

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

// CreateApproval implements store.Approvals. The conversation and user
// come from the run, in the statement that inserts.
func (s *Store) CreateApproval(ctx context.Context, na store.NewApproval) (store.Approval, error) {
	if err := cmp.Or(na.Validate(), storeutil.CheckIDs(na.RunID)); err != nil {
		return store.Approval{}, fmt.Errorf("sqlitestore: create approval: %w", err)
	}
	a := store.Approval{ID: na.ID, RunID: na.RunID, ToolCallID: na.ToolCallID, Tool: na.Tool,
		Args: []byte(objectOr(na.Args)), Revision: na.Revision, Status: store.ApprovalPending, CreatedAt: storeutil.Now()}
	if a.ID == "" {
		a.ID = ids.New()
	}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO approvals (id, conversation_id, run_id, user_id, tool_call_id, tool, args,
    revision, status, created_at)
SELECT ?, conversation_id, id, user_id, ?, ?, ?, ?, 'pending', ? FROM runs WHERE id = ?
RETURNING conversation_id, user_id`,
			a.ID, a.ToolCallID, a.Tool, string(a.Args), a.Revision, formatTime(a.CreatedAt), a.RunID).Scan(&a.ConversationID, &a.UserID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.ErrNotFound
		case isUnique(err, "approvals.id"):
			return fmt.Errorf("id is taken: %w", store.ErrConflict)
		}
		return err
	})
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlitestore: create approval %s for run %s: %w", a.ID, na.RunID, err)
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
// only an answer that finds the approval pending changes it.
func (s *Store) ResolveApproval(ctx context.Context, userID, id string, ans store.ApprovalAnswer) (store.Approval, error) {
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.Approval{}, fmt.Errorf("sqlitestore: resolve approval %s: %w", id, err)
	}
	var edited any
	if ans.Decision == store.DecisionEdit {
		edited = string(ans.Args)
	}
	var a store.Approval
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		a, err = scanApproval(tx.QueryRowContext(ctx, `UPDATE approvals
SET status = ?, decision = ?, edited_args = ?, reason = ?, resolved_at = ?
WHERE id = ? AND user_id = ? AND status = 'pending' RETURNING `+approvalCols,
			ans.Status(), ans.Decision, edited, ans.Reason, formatTime(storeutil.Now()), id, userID))
		if errors.Is(err, sql.ErrNoRows) {
			return existsOr(ctx, tx, `SELECT 1 FROM approvals WHERE id = ? AND user_id = ?`, id, userID)
		}
		return err
	})
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlitestore: resolve approval %s: %w", id, err)
	}
	return a, nil
}

// existsOr tells why a conditional update of a pending record found
// nothing: ErrAlreadyResolved when query finds the record, else
// ErrNotFound.
func existsOr(ctx context.Context, tx *txn, query string, args ...any) error {
	var one int
	switch err := tx.QueryRowContext(ctx, query, args...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	}
	return store.ErrAlreadyResolved
}

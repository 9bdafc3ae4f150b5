package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-ai/trellis/api/store"
	"github.com/trellis-ai/trellis/api/store/internal/storeutil"
	"github.com/trellis-ai/trellis/internal/ids"
)

// Approvals and elicitations are both records a run waits on, owned by a
// user and pending until answered; a human is one of the two tables, and
// the functions below do for either what is the same for both.
type human[T any] struct {
	table string // approvals or elicitations
	cols  string // read by scan
	scan  func(Row) (T, error)
}

var (
	approvals    = human[store.Approval]{"approvals", approvalCols, scanApproval}
	elicitations = human[store.Elicitation]{"elicitations", elicitationCols, scanElicitation}
)

// create inserts a pending record of h's table for a run, with cols (a
// column list) set to vals, and reads the run's conversation and user
// into conversationID and userID: they come from the run, in the
// statement that inserts.
func (h human[T]) create(ctx context.Context, s *Store, id, runID string, created time.Time, cols string, vals []any,
	conversationID, userID *string) error {
	args := append(append([]any{id}, vals...), s.db.Time(created), runID)
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, `INSERT INTO `+h.table+` (id, conversation_id, run_id, user_id, `+cols+`, status, created_at)
SELECT ?, conversation_id, id, user_id, `+strings.Repeat("?, ", len(vals))+`'pending', ? FROM runs WHERE id = ?
RETURNING conversation_id, user_id`, args...).Scan(conversationID, userID)
	})
	switch {
	case noRows(err), s.db.Violates(err, h.table+"_run_id_fkey"):
		return store.ErrNotFound
	case s.db.Violates(err, h.table+"_pkey"):
		return fmt.Errorf("id is taken: %w", store.ErrConflict)
	}
	return err
}

// resolve sets what set names (columns = ?, with vals) on the user's
// record if it is still pending: one conditional update, so only an
// answer that finds it pending changes it. On PostgreSQL a concurrent
// answer waits for the row's lock and then finds it answered.
func (h human[T]) resolve(ctx context.Context, s *Store, userID, id, set string, vals ...any) (T, error) {
	var v T
	args := append(vals, s.db.Time(storeutil.Now()), id, userID)
	err := s.db.Auto(ctx, func(ctx context.Context, q Querier) error {
		var err error
		v, err = h.scan(q.QueryRow(ctx, `UPDATE `+h.table+` SET `+set+`, resolved_at = ?
WHERE id = ? AND user_id = ? AND status = 'pending' RETURNING `+h.cols, args...))
		if noRows(err) {
			return h.existsOr(ctx, q, userID, id)
		}
		return err
	})
	return v, err
}

// existsOr tells why a conditional update of a pending record found
// nothing: ErrAlreadyResolved when the record exists, else ErrNotFound.
func (h human[T]) existsOr(ctx context.Context, q Querier, userID, id string) error {
	var one int
	switch err := q.QueryRow(ctx, `SELECT 1 FROM `+h.table+` WHERE id = ? AND user_id = ?`, id, userID).Scan(&one); {
	case noRows(err):
		return store.ErrNotFound
	case err != nil:
		return err
	}
	return store.ErrAlreadyResolved
}

// get reads one record by id, scoped to its user.
func (h human[T]) get(ctx context.Context, s *Store, userID, id string) (T, error) {
	var zero T
	if err := storeutil.CheckIDs(userID, id); err != nil {
		return zero, s.errorf("get %s: %w", h.table, err)
	}
	v, err := h.scan(s.db.QueryRow(ctx, `SELECT `+h.cols+` FROM `+h.table+` WHERE id = ? AND user_id = ?`, id, userID))
	if noRows(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return zero, s.errorf("get %s %s: %w", h.table, id, err)
	}
	return v, nil
}

// pending lists the user's pending records, oldest first, of one
// conversation when conversationID is set (ErrNotFound if it is not the
// user's). It never returns nil.
func (h human[T]) pending(ctx context.Context, s *Store, userID, conversationID string) ([]T, error) {
	if err := storeutil.CheckIDs(userID, conversationID); err != nil {
		if conversationID != "" {
			return nil, s.errorf("pending %s: %w", h.table, err)
		}
		return []T{}, nil // no such user, so nothing is pending
	}
	var out []T
	err := s.db.Read(ctx, func(q Querier) error {
		query, args := `SELECT `+h.cols+` FROM `+h.table+` WHERE user_id = ? AND status = 'pending'`, []any{userID}
		if conversationID != "" {
			if err := ownsConversation(ctx, q, userID, conversationID); err != nil {
				return err
			}
			query, args = query+` AND conversation_id = ?`, append(args, conversationID)
		}
		rows, err := q.Query(ctx, query+` ORDER BY created_at, id`, args...)
		if err != nil {
			return err
		}
		out, err = Collect(rows, h.scan)
		return err
	})
	if err != nil {
		return nil, s.errorf("pending %s: %w", h.table, err)
	}
	return out, nil
}

// CreateApproval implements store.Approvals.
func (s *Store) CreateApproval(ctx context.Context, na store.NewApproval) (store.Approval, error) {
	if err := cmp.Or(na.Validate(), storeutil.CheckIDs(na.RunID)); err != nil {
		return store.Approval{}, s.errorf("create approval: %w", err)
	}
	a := store.Approval{ID: na.ID, RunID: na.RunID, ToolCallID: na.ToolCallID, Tool: na.Tool,
		Args: []byte(objectOr(na.Args)), Revision: na.Revision, Status: store.ApprovalPending, CreatedAt: storeutil.Now()}
	if a.ID == "" {
		a.ID = ids.New()
	}
	err := approvals.create(ctx, s, a.ID, a.RunID, a.CreatedAt, "tool_call_id, tool, args, revision",
		[]any{a.ToolCallID, a.Tool, string(a.Args), a.Revision}, &a.ConversationID, &a.UserID)
	if err != nil {
		return store.Approval{}, s.errorf("create approval %s for run %s: %w", a.ID, na.RunID, err)
	}
	return a, nil
}

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, userID, id string) (store.Approval, error) {
	return approvals.get(ctx, s, userID, id)
}

// PendingApprovals implements store.Approvals.
func (s *Store) PendingApprovals(ctx context.Context, userID, conversationID string) ([]store.Approval, error) {
	return approvals.pending(ctx, s, userID, conversationID)
}

// ResolveApproval implements store.Approvals.
func (s *Store) ResolveApproval(ctx context.Context, userID, id string, ans store.ApprovalAnswer) (store.Approval, error) {
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.Approval{}, s.errorf("resolve approval %s: %w", id, err)
	}
	var edited any
	if ans.Decision == store.DecisionEdit {
		edited = string(ans.Args)
	}
	a, err := approvals.resolve(ctx, s, userID, id, `status = ?, decision = ?, edited_args = ?, reason = ?`,
		ans.Status(), ans.Decision, edited, ans.Reason)
	if err != nil {
		return store.Approval{}, s.errorf("resolve approval %s: %w", id, err)
	}
	return a, nil
}

// CreateElicitation implements store.Elicitations.
func (s *Store) CreateElicitation(ctx context.Context, ne store.NewElicitation) (store.Elicitation, error) {
	if err := cmp.Or(ne.Validate(), storeutil.CheckIDs(ne.RunID)); err != nil {
		return store.Elicitation{}, s.errorf("create elicitation: %w", err)
	}
	e := store.Elicitation{ID: ne.ID, RunID: ne.RunID, Source: ne.Source, Message: ne.Message,
		Schema: []byte(objectOr(ne.Schema)), Status: store.ElicitationPending, CreatedAt: storeutil.Now()}
	if e.ID == "" {
		e.ID = ids.New()
	}
	err := elicitations.create(ctx, s, e.ID, e.RunID, e.CreatedAt, "source, message, schema",
		[]any{e.Source, e.Message, string(e.Schema)}, &e.ConversationID, &e.UserID)
	if err != nil {
		return store.Elicitation{}, s.errorf("create elicitation %s for run %s: %w", e.ID, ne.RunID, err)
	}
	return e, nil
}

// GetElicitation implements store.Elicitations.
func (s *Store) GetElicitation(ctx context.Context, userID, id string) (store.Elicitation, error) {
	return elicitations.get(ctx, s, userID, id)
}

// PendingElicitations implements store.Elicitations.
func (s *Store) PendingElicitations(ctx context.Context, userID, conversationID string) ([]store.Elicitation, error) {
	return elicitations.pending(ctx, s, userID, conversationID)
}

// ResolveElicitation implements store.Elicitations, as ResolveApproval
// does approvals.
func (s *Store) ResolveElicitation(ctx context.Context, userID, id string, ans store.ElicitationAnswer) (store.Elicitation, error) {
	if err := cmp.Or(ans.Validate(), storeutil.CheckIDs(userID, id)); err != nil {
		return store.Elicitation{}, s.errorf("resolve elicitation %s: %w", id, err)
	}
	var content any
	if ans.Action == store.ActionAccept {
		content = nullJSON(ans.Content)
	}
	e, err := elicitations.resolve(ctx, s, userID, id, `status = ?, content = ?`, ans.Status(), content)
	if err != nil {
		return store.Elicitation{}, s.errorf("resolve elicitation %s: %w", id, err)
	}
	return e, nil
}
